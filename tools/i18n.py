"""The message catalog's cycle with Babel: extract the English messages from the code, templates and site
names (babel.cfg) into trainsizer.pot, merge them into the Chinese .po, and compile the .mo that ships.

    python tools/i18n.py            # extract + update + compile (then translate the new msgstr and rerun)
    python tools/i18n.py --check    # exit 1 if the .pot, .po or .mo is out of date or a msgstr is empty

Needs Babel (the test extra); the package itself reads the compiled .mo with the standard library.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LOCALE = REPO / "src" / "trainsizer" / "locale"
POT = LOCALE / "trainsizer.pot"
LOCALES = ("zh_CN",)
KEYWORDS = ["-k", "tr", "-k", "N_", "-k", "NP_:1,2"]


def pybabel(*args: str) -> None:
    env_path = str(REPO / "src")
    cmd = [sys.executable, "-c", "import sys; from babel.messages.frontend import main; sys.exit(main())", *args]
    proc = subprocess.run(cmd, cwd=REPO, env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"}, capture_output=True,
                          text=True)
    # f-strings passed as tr(..., name=f"...") values are figures, not messages: Babel's warning is noise
    noise = ("Skipping f-string", "extracting messages from", "writing PO", "more translations than num_plurals",
             "Problem on line")
    print("\n".join(line for line in (proc.stdout + proc.stderr).splitlines() if not any(n in line for n in noise)))
    proc.check_returncode()


def extract(pot: Path) -> None:
    pybabel("extract", "-F", "babel.cfg", *KEYWORDS, "--no-default-keywords", "--sort-by-file", "--omit-header",
            "--add-location=file", "-w", "120", "-o", str(pot), "src/trainsizer")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only check that the catalog is complete and compiled")
    args = ap.parse_args()
    if args.check:
        return check()
    extract(POT)
    for loc in LOCALES:
        po = LOCALE / loc / "LC_MESSAGES" / "trainsizer.po"
        if po.exists():
            pybabel("update", "-i", str(POT), "-d", str(LOCALE), "-D", "trainsizer", "-l", loc, "-w", "120",
                    "--no-fuzzy-matching", "--ignore-obsolete")
        else:
            pybabel("init", "-i", str(POT), "-d", str(LOCALE), "-D", "trainsizer", "-l", loc, "-w", "120")
    pybabel("compile", "-d", str(LOCALE), "-D", "trainsizer", "--statistics")
    return 0


def check() -> int:
    import tempfile

    from babel.messages.mofile import read_mo
    from babel.messages.pofile import read_po

    def text(string: object) -> tuple[str, ...]:
        return tuple(string) if isinstance(string, list | tuple) else (str(string),)

    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp) / "fresh.pot"
        extract(fresh)
        with fresh.open("rb") as f:
            wanted = {m.id for m in read_po(f) if m.id}
    for loc in LOCALES:
        po_path = LOCALE / loc / "LC_MESSAGES" / "trainsizer.po"
        with po_path.open("rb") as f:
            po = read_po(f)
        with po_path.with_suffix(".mo").open("rb") as f:
            mo = read_mo(f)
        have = {m.id for m in po if m.id}
        problems += [f"{loc}: not in the .po (run tools/i18n.py): {i!r}" for i in wanted - have]
        problems += [f"{loc}: no longer in the code: {i!r}" for i in have - wanted]
        problems += [f"{loc}: empty msgstr: {m.id!r}" for m in po if m.id and not all(text(m.string))]
        problems += [f"{loc}: fuzzy (not compiled): {m.id!r}" for m in po if m.id and m.fuzzy]
        problems += [f"{loc}: the .mo differs from the .po (run tools/i18n.py): {m.id!r}" for m in po
                     if m.id and (mo.get(m.id) is None or text(mo.get(m.id).string) != text(m.string))]
    print("\n".join(problems) or "catalog complete and compiled")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
