"""Rewrite README.md's accuracy tables from `trainsizer validate` (no arguments: every shipped case).

The rows tests/test_shipped_fit.py checks: leave-one-source-out over all cases, leave-one-family-out over all cases, the
fitted cases alone held out by source and in-sample, and the signed table per GPU family and per method (both holdouts).
Run it after a change to the model, its parameters or the cases:

    PYTHONPATH=src python3 tools/readme_accuracy.py          # prints the rows
    PYTHONPATH=src python3 tools/readme_accuracy.py --write  # rewrites them in README.md
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
SIGNED_HEADER = "| group | memory: cases |"
METHODS = ("full", "lora", "qlora", "freeze")


def _pct(cell: dict[str, Any]) -> str:
    return f"{100 * cell['median_abs_error']:.1f} % / {100 * cell['p90_abs_error']:.1f} %"


def _signed(cell: dict[str, Any] | None) -> str:
    if not cell:
        return "-"
    sign = f"{100 * cell['signed_median_error']:+.1f} %".replace("-", "\u2212")
    return f"{_pct(cell)}, {sign}"


def accuracy_rows(summary: dict[str, Any]) -> dict[str, str]:
    """README row prefix -> the whole row, for the four rows of the accuracy table."""
    acc = {(r["cases"], r["method"]): r for r in summary["accuracy"]}
    a, f = acc[("all", "leave-one-source-out")], acc[("all", "leave-one-family-out")]
    s, i = acc[("fitted", "leave-one-source-out")], acc[("fitted", "in-sample")]
    m, t = "memory", "throughput"
    return {
        "| all ": f"| all {a['count']} ({a[m]['sources']} memory, {a[t]['sources']} speed publications) | "
                  f"**{_pct(a[m])}** ({a[m]['count']} cases) | **{_pct(a[t])}** ({a[t]['count']} cases) |",
        "| leave-one-family-out, all ": f"| leave-one-family-out, all {f['count']} ({f[m]['sources']} memory, "
                                       f"{f[t]['sources']} speed GPU families) | {_pct(f[m])} ({f[m]['count']}) | "
                                       f"{_pct(f[t])} ({f[t]['count']}) |",
        "| validation/cases only": f"| validation/cases only, {s['count']} ({s[m]['sources']} / {s[t]['sources']} "
                                  f"publications) | {_pct(s[m])} ({s[m]['count']}) | {_pct(s[t])} ({s[t]['count']}) |",
        "| validation/cases in-sample": f"| validation/cases in-sample, {i['count']} (flatters the model) | "
                                       f"{_pct(i[m])} ({i[m]['count']}) | {_pct(i[t])} ({i[t]['count']}) |",
    }


def signed_rows(summary: dict[str, Any]) -> list[str]:
    """The signed table's body: all, each GPU family (most cases first), each method."""
    from trainsizer.report.text import FAMILY_NAMES

    source, family = summary["holdout"], summary["holdout_family"]
    kinds = ("memory", "throughput")

    def row(label: str, group: str | None, name: str | None) -> str:
        cells = [label]
        for k in kinds:
            src = source[k] if group is None else source[k]["signed"][group].get(name)
            fam = family[k] if group is None else family[k]["signed"][group].get(name)
            cells += [str(src["count"]) if src else "-", _signed(src), _signed(fam)]
        return "| " + " | ".join(cells) + " |"

    def count(name: str) -> int:
        return sum(source[k]["signed"]["family"].get(name, {"count": 0})["count"] for k in kinds)

    families = sorted({n for k in kinds for n in source[k]["signed"]["family"]}, key=lambda n: (-count(n), n))
    methods = [n for n in METHODS if any(n in source[k]["signed"]["method"] for k in kinds)]
    return ([row("all", None, None)] + [row(FAMILY_NAMES.get(n, n.title()), "family", n) for n in families]
            + [row(f"method {n}", "method", n) for n in methods])


def rewrite(text: str, summary: dict[str, Any]) -> str:
    lines = text.splitlines()
    for prefix, new in accuracy_rows(summary).items():
        at = next(i for i, line in enumerate(lines) if line.startswith(prefix))
        lines[at] = new
    head = next(i for i, line in enumerate(lines) if line.startswith(SIGNED_HEADER))
    body = head + 2  # header and separator
    end = next(i for i in range(body, len(lines)) if not lines[i].startswith("|"))
    lines[body:end] = signed_rows(summary)
    return "\n".join(lines) + ("\n" if text.endswith("\n") else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rewrite README.md (default: print the rows)")
    args = parser.parse_args(argv)
    from trainsizer.workflows.validate import validate_files

    _, summary = validate_files()
    if args.write:
        README.write_text(rewrite(README.read_text(encoding="utf-8"), summary), encoding="utf-8")
    else:
        print("\n".join([*accuracy_rows(summary).values(), "", *signed_rows(summary)]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
