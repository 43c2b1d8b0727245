"""The measured cases shipped with the project (``validation/`` of the repository, validation/FORMAT.md "Case file"):
where they are and how the shipped parameters are fitted on them.

- ``validation/cases/``: the shared cases (the project's first evidence): the shipped fit starts with them alone
  (the ``fit.start`` block of memory_model.yaml and performance_model.yaml);
- ``validation/published/``: the publications gathered since: ``memory.yaml`` and ``throughput.yaml``, then every
  other ``*.yaml`` there in name order. Every shipped speed case is evidence for the MFU ceilings
  (tools/mfu_ceilings.py, evidence/mfu_evidence.py). The shipped parameters are the shared cases' fit refined on
  every shipped case (tools/fitting.py, ``fit_shipped``), as each cross-validation fold is refined on every case but
  its own.

They live beside ``src/`` in a clone (or an editable install), not inside the installed package.
"""

from __future__ import annotations

from pathlib import Path

from trainsizer.errors import InputError

# src/trainsizer/evidence/shipped_cases.py -> the repository root
VALIDATION_DIR = Path(__file__).resolve().parents[3] / "validation"
SHARED = {"memory": "cases/memory.yaml", "throughput": "cases/throughput.yaml"}
PUBLISHED = {"memory": "published/memory.yaml", "throughput": "published/throughput.yaml"}


def shipped_path(relative: str, root: Path | None = None) -> Path:
    """One shipped case file (``relative`` to ``validation/``); one error line when this is not a clone."""
    path = (root or VALIDATION_DIR) / relative
    if not path.is_file():
        raise InputError("cases", f"the shipped case file {path} is not here: the measured cases live in validation/ "
                         "of a clone of the repository (git clone, then pip install -e .); or name case files")
    return path


def shared_files(root: Path | None = None) -> list[Path]:
    """The shared case files, where the shipped fit starts (memory, then throughput)."""
    return [shipped_path(r, root) for r in SHARED.values()]


def shipped_files(root: Path | None = None) -> list[Path]:
    """Every shipped case file, all of which the shipped parameters are fitted on: the shared ones, then the
    publications gathered since (``PUBLISHED``, then the other files of ``validation/published/`` in name order)."""
    held = [shipped_path(r, root) for r in PUBLISHED.values()]
    folder = (root or VALIDATION_DIR) / "published"
    return shared_files(root) + held + sorted(p for p in folder.glob("*.yaml") if p not in held)


def label(path: Path) -> str:
    """``path`` as docs/accuracy.md names it: relative to the repository when it is a shipped file, else as given."""
    path = Path(path)
    root = VALIDATION_DIR.parent
    resolved = path.resolve()
    return str(resolved.relative_to(root)) if resolved.is_relative_to(root) else str(path)
