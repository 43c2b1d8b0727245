"""Rewrite the accuracy tables of docs/accuracy.md, and the headline row README.md quotes, from `trainsizer validate
--view user` (no case files: every shipped case, each scored as a user states it and as annotated).

The rows tests/test_shipped_fit.py checks: leave-one-source-out over all cases, leave-one-family-out over all cases, the
shared cases alone held out by source, every case in-sample, and the signed table per GPU family and per method (both
holdouts) and per China-market part (H20, H800, A800, Ascend 910B ...: each with cases);
and the 80 % ranges' nested coverage, overall and per regime with its median half-width (tests/test_ranges.py).
Each row gives the user view (what a user states: the framework's profile sets the internals) beside the annotated
view (every key as the case writes it); the signed table and the ranges' coverage are the user view's (the shipped
ranges are fitted on it), the other views' coverage in its last rows.
README.md carries the first of these rows (all cases, leave-one-source-out) as its headline, and the signed table's
China-market part and MoE rows.
Run it after a change to the model, its parameters or the cases:

    PYTHONPATH=src python3 tools/readme_accuracy.py          # prints the rows
    PYTHONPATH=src python3 tools/readme_accuracy.py --write  # rewrites them in docs/accuracy.md and README.md
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ACCURACY = ROOT / "docs" / "accuracy.md"  # every table
README = ROOT / "README.md"  # the headline row, the part and MoE rows
HEADLINE = "| all "
SIGNED_HEADER = "| group | memory: cases |"
COVERAGE_HEADER = "| 80 % ranges, each publication held out |"
METHODS = ("full", "lora", "qlora", "freeze")


def _pct(cell: dict[str, Any]) -> str:
    return f"{100 * cell['median_abs_error']:.1f} % / {100 * cell['p90_abs_error']:.1f} %"


def _signed(cell: dict[str, Any] | None) -> str:
    if not cell:
        return "-"
    sign = f"{100 * cell['signed_median_error']:+.1f} %".replace("-", "\u2212")
    return f"{_pct(cell)}, {sign}"


def _pair(row: dict[str, Any], other: dict[str, Any], kind: str, bold: bool) -> str:
    """The user view's cell (bold on the headline row) and the annotated view's beside it."""
    mine = f"**{_pct(row[kind])}**" if bold else _pct(row[kind])
    return f"{mine} | {_pct(other[kind])}"


def accuracy_rows(summary: dict[str, Any]) -> dict[str, str]:
    """Row prefix -> the whole row, for the four rows of the accuracy table: each cell the user view's figure
    (``validate --view user``) then the annotated view's."""
    acc = {(r.get("view", "annotated"), r["cases"], r["method"]): r for r in summary["accuracy"]}

    def both(cases: str, method: str) -> tuple[dict[str, Any], dict[str, Any]]:
        return acc[("user", cases, method)], acc[("annotated", cases, method)]
    (a, a0), (f, f0) = both("all", "leave-one-source-out"), both("all", "leave-one-family-out")
    (s, s0), (i, i0) = both("shared", "leave-one-source-out"), both("all", "in-sample")
    m, t = "memory", "throughput"
    return {
        "| all ": f"| all {a['count']} ({a[m]['sources']} memory, {a[t]['sources']} speed publications; "
                  f"{a[m]['count']} / {a[t]['count']} cases) | {_pair(a, a0, m, True)} | {_pair(a, a0, t, True)} |",
        "| leave-one-family-out, all ": f"| leave-one-family-out, all {f['count']} ({f[m]['sources']} memory, "
                                       f"{f[t]['sources']} speed GPU families) | {_pair(f, f0, m, False)} | "
                                       f"{_pair(f, f0, t, False)} |",
        "| validation/cases only": f"| validation/cases only, {s['count']} ({s[m]['sources']} / {s[t]['sources']} "
                                  f"publications) | {_pair(s, s0, m, False)} | {_pair(s, s0, t, False)} |",
        "| every case in-sample": f"| every case in-sample, {i['count']} (flatters the model) | "
                                 f"{_pair(i, i0, m, False)} | {_pair(i, i0, t, False)} |",
    }


def signed_rows(summary: dict[str, Any]) -> list[str]:
    """The signed table's body: all, each GPU family (most cases first), each China-market part with cases (most
    first), each method, the MoE models."""
    from trainsizer.evidence.case_terms import china_market_parts
    from trainsizer.report.text import FAMILY_NAMES, part_label

    source, family = summary["holdout"], summary["holdout_family"]
    kinds = ("memory", "throughput")

    def row(label: str, group: str | None, name: str | None) -> str:
        cells = [label]
        for k in kinds:
            src = source[k] if group is None else source[k]["signed"][group].get(name)
            fam = family[k] if group is None else family[k]["signed"][group].get(name)
            cells += [str(src["count"]) if src else "-", _signed(src), _signed(fam)]
        return "| " + " | ".join(cells) + " |"

    def count(name: str, group: str = "family") -> int:
        return sum(source[k]["signed"][group].get(name, {"count": 0})["count"] for k in kinds)

    families = sorted({n for k in kinds for n in source[k]["signed"]["family"]}, key=lambda n: (-count(n), n))
    parts = sorted(china_market_parts({n for k in kinds for n in source[k]["signed"]["part"]}),
                   key=lambda n: (-count(n, "part"), n))
    methods = [n for n in METHODS if any(n in source[k]["signed"]["method"] for k in kinds)]
    moe = [row("MoE (routed experts)", "model", "moe")] if any("moe" in source[k]["signed"]["model"] for k in kinds) \
        else []
    return ([row("all", None, None)] + [row(FAMILY_NAMES.get(n, n.title()), "family", n) for n in families]
            + [row(f"part {part_label(n)}", "part", n) for n in parts]
            + [row(f"method {n}", "method", n) for n in methods] + moe)


VIEW_ROWS = {"annotated": "every key as annotated", "unstated": "no framework named (the wider ranges)"}


def coverage_rows(summary: dict[str, Any]) -> list[str]:
    """The coverage table's body: the user view's (the shipped ranges are fitted on it) overall share inside and
    median half-width, each regime value with at least MIN_CASES held-out cases of either kind (share inside, cases,
    median half-width), then the other views' overall share inside."""
    from trainsizer.report.coverage_text import DIMENSION, MIN_CASES

    cov = summary["range_coverage"]
    kinds = ("memory", "speed")
    rows = ["| held-out cases inside their range | " + " | ".join(
                f"**{100 * cov[k]['coverage']:.1f} %** ({cov[k]['count']} cases)" for k in kinds) + " |",
            "| median half-width, log(measured / predicted) | " + " | ".join(
                f"{cov[k]['median_half_width']:.2f}" for k in kinds) + " |"]
    for dim, label in DIMENSION.items():  # the English labels validate's table prints
        values = sorted({v for k in kinds for v, r in cov[k]["by_regime"][dim].items() if r["count"] >= MIN_CASES})
        for value in values:
            cells = []
            for k in kinds:
                r = cov[k]["by_regime"][dim].get(value)
                cells.append(f"{100 * r['coverage']:.1f} % ({r['count']}), {r['median_half_width']:.2f}"
                             if r and r["count"] >= MIN_CASES else "-")
            rows.append(f"| {label} {value} | " + " | ".join(cells) + " |")
    for view, label in VIEW_ROWS.items():
        other = summary.get("views", {}).get(view, {}).get("range_coverage")
        if other:
            rows.append(f"| {label}: inside / median half-width | " + " | ".join(
                f"{100 * other[k]['coverage']:.1f} % ({other[k]['count']}), {other[k]['median_half_width']:.2f}"
                for k in kinds) + " |")
    return rows


def _replace_table(lines: list[str], header: str, body: list[str]) -> None:
    head = next(i for i, line in enumerate(lines) if line.startswith(header))
    start = head + 2  # header and separator
    end = next(i for i in range(start, len(lines)) if not lines[i].startswith("|"))
    lines[start:end] = body


def rewrite(text: str, summary: dict[str, Any]) -> str:
    """docs/accuracy.md with its three tables' rows from ``summary``."""
    lines = text.splitlines()
    for prefix, new in accuracy_rows(summary).items():
        at = next(i for i, line in enumerate(lines) if line.startswith(prefix))
        lines[at] = new
    _replace_table(lines, SIGNED_HEADER, signed_rows(summary))
    _replace_table(lines, COVERAGE_HEADER, coverage_rows(summary))
    return "\n".join(lines) + ("\n" if text.endswith("\n") else "")


def readme_signed_rows(summary: dict[str, Any]) -> list[str]:
    """The signed table's rows README.md shows: the China-market parts and the MoE models."""
    return [row for row in signed_rows(summary) if row.startswith(("| part ", "| MoE"))]


def rewrite_headline(text: str, summary: dict[str, Any]) -> str:
    """README.md with its accuracy row (all cases, leave-one-source-out) and its part and MoE rows from ``summary``."""
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(HEADLINE))
    lines[at] = accuracy_rows(summary)[HEADLINE]
    _replace_table(lines, SIGNED_HEADER, readme_signed_rows(summary))
    return "\n".join(lines) + ("\n" if text.endswith("\n") else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true",
                        help="rewrite docs/accuracy.md and README.md (default: print the rows)")
    args = parser.parse_args(argv)
    from trainsizer.evidence.validate import validate_files

    _, summary = validate_files(view="user")
    if args.write:
        ACCURACY.write_text(rewrite(ACCURACY.read_text(encoding="utf-8"), summary), encoding="utf-8")
        README.write_text(rewrite_headline(README.read_text(encoding="utf-8"), summary), encoding="utf-8")
    else:
        print("\n".join([*accuracy_rows(summary).values(), "", *signed_rows(summary), "", *coverage_rows(summary)]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
