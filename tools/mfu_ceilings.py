"""Derive the evidence-bound MFU ceilings from measured throughput cases; write them as data.

Usage: python tools/mfu_ceilings.py [CASES.yaml ...] [--margin 0.03] [--write]
(default: every shipped case file of this repository, evidence/shipped_cases.shipped_files)

For every dense throughput case not listed under ``fit.exclude`` in performance_model.yaml, the measured MFU and the
ceiling of each (GPU architecture, precision) as evidence/mfu_evidence.py derives them (each cross-validation fold
derives its own the same way from its training cases).
``--write`` replaces the ``mfu_ceiling:`` block of src/trainsizer/estimate/performance_model.yaml; its date stays
when the ceilings do not change, so a rerun on the same cases rewrites the file byte for byte.
"""

from __future__ import annotations

import re
import sys
from datetime import date
from pathlib import Path
from typing import Any

import yaml

from trainsizer.estimate.memory import default_memory_model
from trainsizer.estimate.step import default_performance_model
from trainsizer.evidence.case_terms import build_case_terms
from trainsizer.evidence.cases import Case, load_cases
from trainsizer.evidence.mfu_evidence import case_runs, ceilings
from trainsizer.evidence.shipped_cases import shipped_files

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "src/trainsizer/estimate/performance_model.yaml"
# every shipped case file (its speed cases are the evidence; validation/cases/README.md): each cross-validation fold
# derives its own ceilings from its training cases the same way (evidence/mfu_evidence.fold_ceilings)
DEFAULT_CASES = shipped_files()
EVERY_SHIPPED = "every speed case of validation/ (evidence/shipped_cases.shipped_files)"
DEFAULT_MARGIN = 0.03


def derive_from_cases(cases: list[Case], margin: float) -> dict[str, Any]:
    """The ceilings block from the speed cases among ``cases`` (``fit.exclude`` cases left out)."""
    params = default_performance_model()
    terms, failed = build_case_terms(cases, "performance", default_memory_model(), params)
    if failed:
        raise SystemExit("cases that cannot be estimated: " + "; ".join(f"{i}: {r}" for i, r in failed))
    if not len(terms):
        raise SystemExit("no throughput case to derive ceilings from")
    return ceilings(case_runs(terms, terms.fit_rows(range(len(terms))), params), margin)


def block(data: dict[str, Any], sources: list[str], written: str | None = None) -> str:
    """The ``mfu_ceiling:`` block of the data file, ``written`` on that date (default: today)."""
    head = ("mfu_ceiling:\n"
            "  # Evidence-bound planning: no step is priced faster than its model FLOPs at this MFU (model FLOPs over\n"
            "  # the dense peak of the precision times the part's measured matmul share over its family reference's,\n"
            "  # estimate/peak.peak_share) for its GPU architecture and precision: the highest measured in the\n"
            "  # validation cases plus the margin (fit.exclude cases left out). Written by tools/mfu_ceilings.py on\n"
            f"  # {written or date.today().isoformat()} from {', '.join(sources)};\n"
            "  # rerun it after changing the model or the cases.\n")
    body = yaml.safe_dump(data, sort_keys=False, width=120)
    return head + "".join(f"  {line}\n" for line in body.splitlines())


def write(text: str, path: Path = DATA) -> None:
    current = path.read_text(encoding="utf-8")
    pattern = re.compile(r"^mfu_ceiling:\n(?:(?:  .*|\s*)\n)*", re.M)
    if pattern.search(current):
        current = pattern.sub(lambda _: text, current, count=1)
    else:
        current = current.replace("\nfit:\n", "\n" + text + "\nfit:\n", 1)
    path.write_text(current, encoding="utf-8")


def written_date(data: dict[str, Any], path: Path = DATA) -> str | None:
    """The date of the shipped block when it holds exactly ``data`` (a rerun changes nothing), else None."""
    text = path.read_text(encoding="utf-8")
    shipped = (yaml.safe_load(text) or {}).get("mfu_ceiling")
    found = re.search(r"Written by tools/mfu_ceilings.py on\s*(?:#\s*)?(\d{4}-\d{2}-\d{2})", text)
    same = shipped == yaml.safe_load(yaml.safe_dump(data, sort_keys=False))
    return found.group(1) if same and found else None


def _label(path: Path) -> str:
    """A case file as the data file names it: relative to the repository, or as given when outside it."""
    resolved = path.resolve()
    return str(resolved.relative_to(ROOT)) if resolved.is_relative_to(ROOT) else str(path)


def derive(paths: list[Path], margin: float = DEFAULT_MARGIN) -> tuple[dict[str, Any], str]:
    """The ceilings from the case files (default: the repository's) and the block that stores them."""
    files = paths or DEFAULT_CASES
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise SystemExit(f"case file not found: {', '.join(missing)}")
    cases = [c for f in files for c in load_cases(f)]
    data = derive_from_cases(cases, margin)
    sources = [EVERY_SHIPPED] if not paths else [_label(f) for f in files]
    return data, block(data, sources, written_date(data))


def main(argv: list[str]) -> None:
    margin = DEFAULT_MARGIN
    if "--margin" in argv:
        margin = float(argv[argv.index("--margin") + 1])
    paths = [a for i, a in enumerate(argv) if not a.startswith("--") and (i == 0 or argv[i - 1] != "--margin")]
    data, text = derive([Path(p) for p in paths], margin)
    for arch, row in data["table"].items():
        for dtype, entry in row.items():
            print(f"{arch:16s} {dtype:11s} ceiling {entry['mfu']:.3f} ({entry.get('basis', 'assumed')}, "
                  f"{entry['runs']} runs: {', '.join(entry.get('cases', []))})")
    print(f"fallback {data['fallback']['mfu']:.3f} ({data['fallback']['reason']})")
    if "--write" in argv:
        write(text)
        print(f"written to {DATA}")


if __name__ == "__main__":
    main(sys.argv[1:])
