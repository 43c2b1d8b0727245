"""Terminal tables (rich) for the memory probe and its CPU simulation."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:  # what the probes print: their JSON
    from trainsizer.probe.memory.cases import MemoryProbeJSON
    from trainsizer.probe.memory.simulate import SimulationVsEstimate


def _console() -> Console:
    return Console(highlight=False, width=140)


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:+.1%}"


def _num(x: float | None, fmt: str = "{:.2f}") -> str:
    return "-" if x is None else fmt.format(x)


def print_memory_probe(data: MemoryProbeJSON) -> None:
    con = _console()
    env, meas = data["environment"], data["measurement"]
    libs = ", ".join(f"{k} {v}" for k, v in env.get("libraries", {}).items())
    where = env.get("gpu_name") or f"CPU ({env.get('cpu', '?')})"
    con.print(f"[bold]probe memory[/bold] on {env['hostname']}: {where}, driver {env.get('driver') or '-'}, "
              f"CUDA {env.get('cuda') or '-'}; {libs}")
    con.print(f"  meter {meas['meter']}; {meas['world_size']} process(es); GPU as catalog id: {data['gpu']}")
    for note in meas["notes"]:
        con.print(f"  note: {note}")
    runs = Table(title="Runs", title_justify="left")
    for col in ("layers", "allocated GiB", "reserved GiB", "device GiB", "step times s"):
        runs.add_column(col, justify="right")
    for r in meas["readings"]:
        runs.add_row(str(r["layers"]), _num(r["allocated_gib"]), _num(r["reserved_gib"]), _num(r["device_gib"]),
                     " ".join(f"{t:.3f}" for t in r["step_times_s"]))
    con.print(runs)
    table = Table(title=f"Predicted vs measured (full depth, {meas['layers_full']} layers)", title_justify="left")
    for col in ("metric", "predicted", "measured", "error"):
        table.add_column(col, justify="right" if col != "metric" else "left")
    for row in data["comparison"]:
        table.add_row(row["metric"], _num(row["predicted"], "{:.3f}"), _num(row["measured"], "{:.3f}"),
                      _pct(row["error"]))
    con.print(table)
    if data["cases_file"]:
        con.print(f"wrote {len(data['cases'])} case(s) to {data['cases_file']}; check them with `trainsizer validate "
                  f"{data['cases_file']}`, fit with `trainsizer calibrate {data['cases_file']}`")


def print_simulation(data: SimulationVsEstimate) -> None:
    con = _console()
    sim, pred = data["simulation"], data["predicted"]
    depth = f"{sim['layers_simulated']} of {sim['layers_full']} layers"
    con.print(f"[bold]probe memory --simulate[/bold]: {depth}; {sim['trainable_params']:,} trainable of "
              f"{sim['total_params']:,} parameters")
    table = Table(title="Peak by component (GiB)", title_justify="left")
    for col in ("component", "simulated", "estimator"):
        table.add_column(col, justify="right" if col != "component" else "left")
    for group, value in sim["components_gib"].items():
        table.add_row(group, f"{value:.3f}", f"{pred['components_gib'].get(group, 0.0):.3f}")
    table.add_section()
    table.add_row("allocated", f"{sim['allocated_gib']:.3f}", f"{pred['allocated_gib']:.3f}")
    con.print(table)
    con.print(f"estimator vs simulation: {_pct(data['error_of_estimate'])} (estimator peak phase: "
              f"{pred['peak_phase']})")
    kinds = ", ".join(f"{k} {v:.3f}" for k, v in sim["by_kind_gib"].items())
    con.print(f"MemTracker kinds at the peak (GiB): {kinds}")
    modules = Table(title="Largest module peaks (GiB)", title_justify="left")
    modules.add_column("module")
    modules.add_column("peak", justify="right")
    for name, value in sim["modules_peak_gib"].items():
        modules.add_row(name, f"{value:.3f}")
    con.print(modules)
    for note in sim["notes"]:
        con.print(f"  note: {note}")
