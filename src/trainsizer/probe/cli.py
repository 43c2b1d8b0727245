"""The ``trainsizer probe`` sub-app: memory (real GPU steps, or ``--simulate`` on the CPU), profile, comm.

Only typer is imported at module level; torch and the probes load inside the commands, so that
``trainsizer --help`` stays fast and the base install does not need the ``[probe]`` extra.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer

from trainsizer.errors import InputError
from trainsizer.probe import require_packages
from trainsizer.probe.command_group import TrailingCommandGroup

probe_app = typer.Typer(cls=TrailingCommandGroup, no_args_is_help=True, add_completion=False,
                        pretty_exceptions_enable=False,
                        help="Check a plan on the real machine: peak memory of real training steps (or a CPU "
                             "simulation), where a step's time goes, and the interconnect's bandwidth. Needs "
                             "pip install -e '.[probe]'.")


def _pick_device(device: str) -> str:
    import torch

    if device not in ("auto", "cuda", "cpu"):
        raise InputError("--device", f"{device!r}; accepted: auto, cuda, cpu")
    if device == "auto":
        if not torch.cuda.is_available():
            raise InputError("--device", "no CUDA GPU here; run `trainsizer probe memory --simulate` for a CPU "
                             "simulation, or --device cpu to count the live tensors of real CPU steps")
        return "cuda"
    if device == "cuda" and not torch.cuda.is_available():
        raise InputError("--device", "cuda: no CUDA GPU is visible (torch.cuda.is_available() is False)")
    return device


def _multi_gpu(scenario: Any, device: str, layers: int | None, steps: int) -> Any:
    """Run the probe on ``parallel.gpus`` local processes and keep the most loaded rank."""
    import torch
    import yaml

    from trainsizer.probe.distributed import launch
    from trainsizer.probe.memory import Measurement, Reading

    gpus = scenario.parallel.gpus
    if device == "cuda" and torch.cuda.device_count() < gpus:
        raise InputError("parallel.gpus", f"{gpus} but this node has {torch.cuda.device_count()} GPUs; run "
                         "`torchrun --nnodes N ... -m trainsizer.probe.distributed` on each node for more")
    with tempfile.TemporaryDirectory(prefix="trainsizer-probe-") as tmp:
        path = Path(tmp) / "scenario.yaml"
        path.write_text(yaml.safe_dump(scenario.model_dump(exclude_none=True)), encoding="utf-8")
        try:
            ranks = launch(path, gpus, layers, steps, device)
        except RuntimeError as exc:
            raise InputError("probe memory", str(exc)) from None
    worst = max(ranks, key=lambda r: r["allocated_gib"])
    readings = [Reading(x["layers"], x["allocated_gib"] * 2**30,
                        None if x["reserved_gib"] is None else x["reserved_gib"] * 2**30,
                        None if x["device_gib"] is None else x["device_gib"] * 2**30, x["step_times_s"])
                for x in worst["readings"]]
    notes = [*worst["notes"], f"most loaded of {len(ranks)} ranks: rank {worst['rank']}"]
    return Measurement(readings, worst["layers_full"], worst["meter"], worst["allocated_gib"], worst["reserved_gib"],
                       worst["device_gib"], worst["step_time_s"], len(ranks), notes)


@probe_app.command("memory")
def memory_cmd(
    scenario_path: Annotated[Path, typer.Argument(metavar="SCENARIO", help="Scenario YAML (FORMAT.md), or a plan job "
                                                "without parallel/hardware: this machine's GPU, one process.")],
    simulate: Annotated[bool, typer.Option("--simulate", help="No GPU: run the real model code on fake tensors "
                                           "(FakeTensorMode + MemTracker) and report components per module.")
                        ] = False,
    layers: Annotated[int | None, typer.Option("--layers", help="Scaled-down: run k and 2k layers and extrapolate "
                                               "(default: only when the model would not fit the GPU).")] = None,
    steps: Annotated[int, typer.Option("--steps", help="Training steps per run (2-100).")] = 4,
    device: Annotated[str, typer.Option("--device", help="auto | cuda | cpu (cpu counts live tensors of real "
                                        "CPU steps; for tests and dry runs).")] = "auto",
    gpu_id: Annotated[str | None, typer.Option("--gpu-id", help="Catalog id of this GPU (default: detected from "
                                               "its name and memory).")] = None,
    out: Annotated[Path | None, typer.Option("--out", help="Case file to write or append to (default on a GPU: "
                                             "probe-cases.yaml).")] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace --out instead of appending.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
) -> None:
    """Real training steps of SCENARIO: peak allocated, reserved and device memory and step time,
    against the estimate; writes validation cases that `trainsizer calibrate` fits to."""
    require_packages("probe memory")
    from trainsizer.probe.workload import load_probe_scenario

    scenario = load_probe_scenario(scenario_path)
    if not 2 <= steps <= 100:
        raise InputError("--steps", f"{steps}; accepted: 2 to 100 (the first step allocates optimizer states)")
    if simulate:
        _simulate(scenario, layers, as_json)
        return
    _measure(scenario, scenario_path, layers, steps, _pick_device(device), gpu_id, out, overwrite, as_json)


def _simulate(scenario: Any, layers: int | None, as_json: bool) -> None:
    from trainsizer.api import estimate
    from trainsizer.probe.memory import scaled_scenario
    from trainsizer.probe.simulate import simulate

    sim = simulate(scenario, layers)
    compared = scaled_scenario(scenario, sim.layers) if sim.layers < sim.layers_full else scenario
    predicted = estimate(compared, with_limits=False, with_performance=False).memory
    data = {"simulation": sim.to_dict(), "predicted": {"allocated_gib": round(predicted.allocated_gib, 4),
                                                       "components_gib": predicted.to_dict()["components_gib"],
                                                       "peak_phase": predicted.peak_phase},
            "error_of_estimate": round((predicted.allocated_gib - sim.peak_gib) / sim.peak_gib, 4)}
    if as_json:
        typer.echo(json.dumps(data, indent=2))
        return
    from trainsizer.report.probe_text import print_simulation

    print_simulation(data)


def _measure(scenario: Any, scenario_path: Path, layers: int | None, steps: int, device: str, gpu_id: str | None,
             out: Path | None, overwrite: bool, as_json: bool) -> None:
    from trainsizer.api import estimate, resolve_gpu
    from trainsizer.hardware.catalog import default_catalog
    from trainsizer.probe.cases import environment, measured_cases, write_cases
    from trainsizer.probe.gpu_match import detect_gpu_id
    from trainsizer.probe.memory import measure

    env = environment()
    gpu: Any = scenario.hardware.gpu if isinstance(scenario.hardware.gpu, str) else scenario.hardware.gpu.name
    if gpu_id is not None:
        default_catalog().accelerator(gpu_id, "--gpu-id")
        gpu = gpu_id
    elif env.get("gpu_name"):
        gpu = detect_gpu_id(env["gpu_name"], env["gpu_memory_gib"]) or {"name": env["gpu_name"],
                                                                         "memory_gib": env["gpu_memory_gib"]}
    if scenario.parallel.gpus > 1:
        measurement = _multi_gpu(scenario, device, layers, steps)
    else:
        capacity = env.get("gpu_memory_gib") if device == "cuda" else None
        measurement = measure(scenario, device, layers, steps, capacity)
    cases = measured_cases(scenario, gpu, measurement, env, f"trainsizer probe memory on {env['hostname']}, "
                           f"{env['date']} ({env.get('gpu_name') or 'CPU'})")
    from trainsizer.scenario import scenario_from_dict

    as_run = scenario_from_dict(cases[0]["scenario"])
    predicted = estimate(as_run, with_limits=False)
    rows = []
    for metric in ("allocated", "reserved", "device"):
        value = getattr(measurement, f"{metric}_gib")
        pred = predicted.memory.metric_gib(metric)
        rows.append({"metric": f"{metric}_gib", "predicted": round(pred, 3),
                     "measured": None if value is None else round(value, 3),
                     "error": None if not value else round((pred - value) / value, 4)})
    if predicted.performance is not None and measurement.meter == "cuda":
        pred_t = predicted.performance.step_time_s  # the case scenario's global batch is what ran
        rows.append({"metric": f"step_time_s ({as_run.grad_accumulation_steps} micro-batch(es))",
                     "predicted": round(pred_t, 4),
                     "measured": round(measurement.step_time_s, 4),
                     "error": round((pred_t - measurement.step_time_s) / measurement.step_time_s, 4)})
    if out is None and device == "cuda":
        out = Path("probe-cases.yaml")
    if out is not None:
        write_cases(out, cases, overwrite=overwrite, append=not overwrite)
    data = {"gpu": gpu, "environment": env, "measurement": measurement.to_dict(), "comparison": rows,
            "capacity_gib": round(resolve_gpu(as_run).memory_gib, 2) if isinstance(gpu, str) else None,
            "cases_file": None if out is None else str(out), "cases": [c["id"] for c in cases]}
    if as_json:
        typer.echo(json.dumps(data, indent=2, ensure_ascii=False))
        return
    from trainsizer.report.probe_text import print_memory_probe

    print_memory_probe(data)


def _register_commands() -> None:
    """The profile and comm probes keep their commands beside their code (typer and rich only at import)."""
    from trainsizer.probe.comm_cli import comm_command
    from trainsizer.probe.profile_cli import profile_command

    probe_app.command("profile")(profile_command)
    probe_app.command("comm")(comm_command)


_register_commands()
