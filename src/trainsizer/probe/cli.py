"""The ``trainsizer probe`` sub-app: memory (real GPU steps, or ``--simulate`` on the CPU), profile, comm.

Only typer is imported at module level; torch and the probes load inside the commands, so that
``trainsizer --help`` stays fast and the base install does not need the ``[probe]`` extra.
"""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from trainsizer.errors import InputError
from trainsizer.jsonout import dumps_strict
from trainsizer.messages import msg
from trainsizer.outputs import check_output_path
from trainsizer.probe import require_packages
from trainsizer.probe.common.command_group import TrailingCommandGroup

if TYPE_CHECKING:  # the simulation's JSON
    from trainsizer.probe.memory.simulate import SimulationVsEstimate

probe_app = typer.Typer(cls=TrailingCommandGroup, no_args_is_help=True, add_completion=False,
                        pretty_exceptions_enable=False,
                        help="Check a plan on the real machine: peak memory of real training steps (or a CPU "
                             "simulation), where a step's time goes, and the interconnect's bandwidth. Needs "
                             "pip install -e '.\\[probe]'.")  # \\[ : a literal [ in typer's rich markup


def _pick_device(device: str, cpu: bool) -> str:
    """cuda, or cpu only when asked (--cpu / --device cpu): CPU steps count live tensors, not a GPU's peaks."""
    from trainsizer.probe.workload.safety import pick_device

    return pick_device(device, cpu, "probe memory", "; or --simulate for a simulation on fake tensors")


def _multi_gpu(scenario: Any, device: str, layers: int | None, steps: int) -> Any:
    """Run the probe on ``parallel.gpus`` local processes and keep the most loaded rank."""
    import torch

    from trainsizer.probe.common.launch import LaunchError
    from trainsizer.probe.memory.distributed import launch

    gpus = scenario.parallel.gpus
    if device == "cuda" and torch.cuda.device_count() < gpus:
        raise InputError("parallel.gpus", f"{gpus} but this node has {torch.cuda.device_count()} GPUs; run "
                         "`torchrun --nnodes N ... -m trainsizer.probe.memory.distributed` on each node for more")
    try:
        return launch(scenario, layers, steps, device)
    except LaunchError as exc:
        raise InputError("probe memory", str(exc)) from None


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
    device: Annotated[str, typer.Option("--device", help="auto (a CUDA GPU, refused without one) | cuda | cpu "
                                        "(= --cpu).")] = "auto",
    cpu: Annotated[bool, typer.Option("--cpu", help="Real steps on this CPU, counting live tensors (tests and dry "
                                      "runs); a model too big for half this machine's memory is refused.")] = False,
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
    from trainsizer.probe.common.progress import StatusLine, progress_console
    from trainsizer.probe.workload.build import load_probe_scenario

    scenario = load_probe_scenario(scenario_path)
    if not 2 <= steps <= 100:
        raise InputError("--steps", f"{steps}; accepted: 2 to 100 (the first step allocates optimizer states)")
    if simulate:
        with StatusLine(progress_console(as_json), "probe memory --simulate: ") as say:
            data = _simulate(scenario, layers, say)
        _show_simulation(data, as_json)
        return
    dev = _pick_device(device, cpu)
    if dev == "cpu":
        from trainsizer.probe.workload.safety import check_cpu_size

        check_cpu_size(scenario, layers, extrapolate=True,
                       otherwise="use --simulate, a smaller micro-batch or sequence, or a bigger machine")
    _measure(scenario, scenario_path, layers, steps, dev, gpu_id, out, overwrite, as_json)


def _simulate(scenario: Any, layers: int | None, progress: Any = None) -> "SimulationVsEstimate":
    from trainsizer.estimate.estimator import estimate
    from trainsizer.probe.memory.simulate import PredictedJSON, SimulationVsEstimate, simulate
    from trainsizer.probe.workload.config import scaled_scenario

    sim = simulate(scenario, layers, progress=progress)
    if progress is not None:
        progress(msg("progress.comparing"))
    compared = scaled_scenario(scenario, sim.layers) if sim.layers < sim.layers_full else scenario
    predicted = estimate(compared, with_limits=False, with_performance=False).memory
    return SimulationVsEstimate(
        simulation=sim.to_dict(),
        predicted=PredictedJSON(allocated_gib=round(predicted.allocated_gib, 4),
                                components_gib=predicted.to_dict()["components_gib"], peak_phase=predicted.peak_phase),
        error_of_estimate=round((predicted.allocated_gib - sim.peak_gib) / sim.peak_gib, 4))


def _show_simulation(data: "SimulationVsEstimate", as_json: bool) -> None:
    if as_json:
        typer.echo(dumps_strict(data))
        return
    from trainsizer.report.probe_text import print_simulation

    print_simulation(data)


def _measure(scenario: Any, scenario_path: Path, layers: int | None, steps: int, device: str, gpu_id: str | None,
             out: Path | None, overwrite: bool, as_json: bool) -> None:
    from trainsizer.estimate.estimator import resolve_gpu
    from trainsizer.hardware.catalog import default_catalog
    from trainsizer.probe.common.gpu_match import local_gpu
    from trainsizer.probe.memory.cases import (
        MemoryProbeJSON,
        compare_with_estimate,
        environment,
        measured_cases,
        write_cases,
    )
    from trainsizer.probe.memory.measure import measure

    if out is None and device == "cuda":
        out = Path("probe-cases.yaml")
    if check_output_path(out, "--out", overwrite=overwrite, append=True) is not None and out.exists() \
            and not overwrite:
        from trainsizer.evidence.validate import load_cases

        load_cases(out)  # appended to after the run: a file that is not a case file is refused before it
    env = environment()
    gpu: Any = scenario.hardware.gpu if isinstance(scenario.hardware.gpu, str) else scenario.hardware.gpu.name
    if gpu_id is not None:
        default_catalog().accelerator(gpu_id, "--gpu-id")
        gpu = gpu_id
    else:
        gpu = local_gpu() or gpu
    if scenario.parallel.gpus > 1:
        measurement = _multi_gpu(scenario, device, layers, steps)
    else:
        from trainsizer.probe.common.progress import StatusLine, progress_console

        capacity = env.get("gpu_memory_gib") if device == "cuda" else None
        with StatusLine(progress_console(as_json), f"probe memory on {device}: ") as say:
            measurement = measure(scenario, device, layers, steps, capacity, progress=say)
    cases = measured_cases(scenario, gpu, measurement, env, f"trainsizer probe memory on {env['hostname']}, "
                           f"{env['date']} ({env.get('gpu_name') or 'CPU'})")
    from trainsizer.scenario import scenario_from_dict

    as_run = scenario_from_dict(cases[0]["scenario"])
    rows = compare_with_estimate(measurement, as_run)
    if out is not None:
        write_cases(out, cases, overwrite=overwrite, append=not overwrite)
    data = MemoryProbeJSON(gpu=gpu if isinstance(gpu, str) else gpu.model_dump(exclude_none=True), environment=env,
                           measurement=measurement.to_dict(), comparison=rows,
                           capacity_gib=round(resolve_gpu(as_run).memory_gib, 2) if isinstance(gpu, str) else None,
                           cases_file=None if out is None else str(out), cases=[c["id"] for c in cases])
    if as_json:
        typer.echo(dumps_strict(data))
        return
    from trainsizer.report.probe_text import print_memory_probe

    print_memory_probe(data)


def _register_commands() -> None:
    """The profile and comm probes keep their commands beside their code (typer and rich only at import)."""
    from trainsizer.probe.comm.cli import comm_command
    from trainsizer.probe.profile.cli import profile_command

    probe_app.command("profile")(profile_command)
    probe_app.command("comm")(comm_command)


_register_commands()
