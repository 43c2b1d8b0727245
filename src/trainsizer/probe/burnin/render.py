"""The verdict as a terminal table (rich, like trainsizer.report.text) or JSON."""

from __future__ import annotations

import time

from rich.console import Console
from rich.table import Table

from trainsizer.probe.burnin.backend import REASON_LABELS
from trainsizer.probe.burnin.verdict import Verdict

COLOURS = {"STABLE": "green", "WARN": "yellow", "FAIL": "red"}


def _f(value: float | int | None, fmt: str = "{:g}") -> str:
    return "-" if value is None else fmt.format(value)


def verdict_json(verdict: Verdict) -> str:
    from trainsizer.jsonout import dumps_strict

    return dumps_strict(verdict.to_dict())


def print_verdict(verdict: Verdict, console: Console | None = None) -> None:
    con = console or Console(highlight=False, width=160)
    run = verdict.run
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(run["started_at"]))
    con.print(f"[bold]Burn-in[/bold] run {run['id']} in {run['db']}: started {started} on {run['hostname']}, "
              f"{run['elapsed_s']:.1f} s of {run['duration_s']:.1f} s, every {run['interval_s']:g} s, "
              f"backend {run['backend']}, load {run['load']}, {run['samples']} samples, status {run['status']}"
              + (f", {run['segments']} segments (resumed)" if run["segments"] > 1 else ""))
    table = Table(title="Per GPU", title_justify="left")
    for col, just in (("GPU", "left"), ("temp C\nmax/mean", "right"), ("headroom C\n(slowdown)", "right"),
                      ("power W\nmean/max", "right"), ("throttled\n% HW/therm", "right"), ("clock events %", "left"),
                      ("ECC new\ncorr/unc", "right"), ("remapped\nrows c/u", "right"), ("PCIe\nreplays", "right"),
                      ("XIDs", "left"), ("TFLOPS\nfirst/last", "right"), ("drift", "right")):
        table.add_column(col, justify=just, overflow="fold")
    for g in verdict.gpus:
        reasons = ", ".join(f"{REASON_LABELS.get(k, k)} {v:g}" for k, v in g.throttle_percent_by_reason.items())
        headroom = _f(g.headroom_c, "{:.1f}")
        if g.headroom_c is not None:
            headroom += f" ({g.slowdown_c:g})"
        remap = f"{_f(g.remapped_corrected)} / {_f(g.remapped_uncorrected)}"
        remap += (" pending" if g.remap_pending else "") + (" FAILED" if g.remap_failure else "")
        table.add_row(f"{g.gpu} {g.name}", f"{_f(g.temp_max_c, '{:.1f}')} / {_f(g.temp_mean_c, '{:.1f}')}", headroom,
                      f"{_f(g.power_mean_w, '{:.0f}')} / {_f(g.power_max_w, '{:.0f}')}", f"{g.throttled_percent:g}",
                      reasons or "-", f"{_f(g.ecc_corrected_new)} / {_f(g.ecc_uncorrected_new)}", remap,
                      _f(g.pcie_replays_new), ", ".join(map(str, g.xids)) or "-",
                      f"{_f(g.tflops_first, '{:.0f}')} / {_f(g.tflops_last, '{:.0f}')}",
                      _f(g.drift_percent, "{:+.1f} %"))
    con.print(table)
    colour = COLOURS[verdict.status]
    con.print(f"[bold]Verdict: [{colour}]{verdict.status}[/{colour}][/bold]")
    for r in verdict.reasons:
        c = COLOURS[r.level]
        con.print(f"  [{c}]{r.level}[/{c}] {r.message} [dim]({r.rule})[/dim]")
        con.print(f"       [dim]source: {r.source}[/dim]")
    if not verdict.reasons:
        con.print("  no ECC or XID errors, no HW/thermal throttling, thermal headroom and throughput within limits")
    for note in verdict.notes:
        con.print(f"  [dim]note: {note}[/dim]")
