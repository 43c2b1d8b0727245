"""``trainsizer validate --holdout source``: how honest the 80 % ranges are, as a table in the reader's language:
the share of held-out cases inside their range (overall and per regime value) and the median half-width."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from trainsizer.i18n import N_, tr

KIND = {"memory": N_("memory"), "speed": N_("throughput")}
DIMENSION = {"gpu_family": N_("GPU family"), "method": N_("method"), "scale": N_("scale"), "model": N_("model")}
UNCHECKED = N_("{figure}: {n} held-out cases not checked: a range is fitted on the errors of two other publications "
               "at least, and their files have fewer")
MIN_CASES = 10  # a regime value with fewer held-out cases says little about its coverage: not listed


def coverage_rows(cov: dict[str, Any]) -> list[tuple[str, str, str, dict[str, Any]]]:
    """(kind, dimension, value, {count, coverage, median_half_width}) rows: overall first (no dimension), then each
    regime value with at least MIN_CASES held-out cases."""
    rows = []
    for kind in ("memory", "speed"):
        c = cov.get(kind)
        if not c:
            continue
        rows.append((kind, "", "", {"count": c["count"], "coverage": c["coverage"],
                                    "median_half_width": c.get("median_half_width")}))
        for dim, values in c["by_regime"].items():
            rows += [(kind, dim, v, r) for v, r in values.items() if r["count"] >= MIN_CASES]
    return rows


def print_coverage(cov: dict[str, Any], con: Console, lang: str) -> None:
    level = cov.get("level", 0.8)
    table = Table(title=tr("How honest are the ranges? Share of held-out cases inside their {level} range "
                           "(fitted without their publication)", lang, level=f"{level:.0%}"), title_justify="left")
    for col, just in ((N_("figure"), "left"), (N_("regime"), "left"), (N_("cases"), "right"),
                      (N_("inside"), "right"), (N_("median half-width (log)"), "right")):
        table.add_column(tr(col, lang), justify=just)
    for kind, dim, value, r in coverage_rows(cov):
        width = "" if r.get("median_half_width") is None else f"{r['median_half_width']:.2f}"
        label = f"{tr(DIMENSION[dim], lang)} {value}" if dim else tr("all", lang)
        inside = f"{r['coverage']:.0%}" if r["count"] else "-"
        table.add_row(tr(KIND[kind], lang), label, str(r["count"]), inside, width)
    con.print(table)
    for kind in ("memory", "speed"):
        if cov.get(kind, {}).get("unchecked"):
            con.print(tr(UNCHECKED, lang, n=cov[kind]["unchecked"], figure=tr(KIND[kind], lang)))
