"""``trainsizer probe profile``: where a training step's time goes, and the seed guide's 20 % rule.

Three modes, exactly one per call:

    trainsizer probe profile SCENARIO.yaml [--layers 2] [--device auto]   # the scenario's built-in step
    trainsizer probe profile --trace TRACE.json[.gz]                      # analyze an existing trace
    trainsizer probe profile [--steps 5 --warmup 2] -- python train.py args...   # wrap your script
    trainsizer probe profile -- torchrun --nproc-per-node 8 train.py args...     # ... rank 0 profiles

Only typer (and rich for the output) are imported at module level; torch, the workload and subprocess
handling are imported inside the command.
"""

import re
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from trainsizer.errors import InputError
from trainsizer.jsonout import dumps_strict
from trainsizer.probe.common.command_group import META_KEY

RUNNER_MODULE = "trainsizer.probe.profile.runner"
PYTHON_NAME = re.compile(r"^python(\d+(\.\d+)*)?(\.exe)?$")
TORCHRUN_MODULES = ("torch.distributed.run", "torch.distributed.launch")
# python's own options that take no value / one value (python --help); others are refused, not guessed
PYTHON_FLAGS = {"-u", "-B", "-O", "-OO", "-E", "-s", "-S", "-I", "-P", "-q", "-b", "-bb"}
PYTHON_VALUE_OPTIONS = {"-X", "-W"}
LABELS = {"compute": "compute", "optimizer": "optimizer step", "communication": "communication (exposed)",
          "memcpy": "memory copies", "data_loading": "data loading (waited for)", "host_wait": "host wait (sync)",
          "idle": "idle"}
COLOURS = {"storage-bound": "red", "network-bound": "red", "host-bound": "yellow", "compute-bound": "green"}
WRAP_HELP = ("give `-- python train.py args...`, `-- python -m package.train args...` or `-- torchrun [opts] "
             "train.py args...`; with another launcher put `python -m trainsizer.probe.profile.runner --trace-out "
             "T.json -- train.py args...` where it runs the script, then `trainsizer probe profile --trace T.json`")


def _runner_args(trace_out: Path, steps: int, warmup: int) -> list[str]:
    return ["-m", RUNNER_MODULE, "--trace-out", str(trace_out), "--steps", str(steps), "--warmup", str(warmup), "--"]


def _torchrun(prefix: list[str], rest: list[str], runner: list[str]) -> list[str]:
    """torchrun [opts] train.py args -> torchrun [opts] -m trainsizer.probe.profile.runner ... -- train.py args."""
    if any(t in ("--no-python", "--no_python") for t in rest):
        raise InputError("command", f"torchrun --no-python runs no Python script to profile; {WRAP_HELP}")
    for i, token in enumerate(rest):
        if token in ("-m", "--module"):
            raise InputError("command", "torchrun -m MODULE: use `torchrun [opts] -m trainsizer.probe.profile.runner "
                                        "--trace-out T.json -- -m MODULE args...`, then `trainsizer probe profile "
                                        "--trace T.json`")
        if token.endswith(".py") and not token.startswith("-"):
            return [*prefix, *rest[:i], *runner, *rest[i:]]
    raise InputError("command", f"no training script (*.py) found in the torchrun command; {WRAP_HELP}")


def runner_command(command: list[str], trace_out: Path, steps: int, warmup: int) -> list[str]:
    """The user's command rewritten to run its script through trainsizer.probe.profile.runner.

    A bare ``python``/``python3`` becomes this interpreter (the one trainsizer is installed in); an explicit
    interpreter path is kept. ``torchrun`` / ``python -m torch.distributed.run`` get ``-m profile_runner``
    before the script, so every rank runs the runner and rank 0 profiles."""
    if not command:
        raise InputError("command", WRAP_HELP)
    runner = _runner_args(trace_out, steps, warmup)
    exe, rest = command[0], command[1:]
    name = Path(exe).name
    if name == "torchrun":
        return _torchrun([exe], rest, runner)
    if not PYTHON_NAME.match(name):
        raise InputError("command", f"cannot wrap '{exe}': not python or torchrun; {WRAP_HELP}")
    python = sys.executable if exe == name else exe
    options: list[str] = []
    i = 0
    while i < len(rest):
        token = rest[i]
        if token in PYTHON_FLAGS:
            options.append(token)
        elif token in PYTHON_VALUE_OPTIONS and i + 1 < len(rest):
            options += rest[i:i + 2]
            i += 1
        elif token == "-m" and i + 1 < len(rest):
            if rest[i + 1] in TORCHRUN_MODULES:
                return _torchrun([python, *options, "-m", rest[i + 1]], rest[i + 2:], runner)
            return [python, *options, *runner, *rest[i:]]
        elif token.startswith("-"):
            raise InputError("command", f"python option {token!r} is not supported here; {WRAP_HELP}")
        else:
            return [python, *options, *runner, *rest[i:]]
        i += 1
    raise InputError("command", f"no script after '{exe}'; {WRAP_HELP}")


def _trace_out_path(trace_out: Path | None, overwrite: bool) -> Path:
    path = trace_out or Path(f"trainsizer-profile-{time.strftime('%Y%m%d-%H%M%S')}.json")
    if not (path.name.endswith(".json") or path.name.endswith(".json.gz")):
        raise InputError("--trace-out", f"{path.name}: accepted extensions .json, .json.gz")
    from trainsizer.outputs import check_output_path

    check_output_path(path, "--trace-out", overwrite=overwrite)
    path.unlink(missing_ok=True)  # so a run that writes nothing cannot leave the old trace to be analyzed
    return path.resolve()


def _run_wrapped(cmd: list[str], as_json: bool) -> int:
    """Run the rewritten command; with --json its output goes to stderr so stdout stays pure JSON."""
    import subprocess

    from trainsizer.probe.common.launch import child_environment

    env = child_environment()  # the child imports this trainsizer
    if not as_json:
        return subprocess.run(cmd, env=env, check=False).returncode
    try:
        return subprocess.run(cmd, env=env, check=False, stdout=sys.stderr.fileno()).returncode
    except (AttributeError, OSError, ValueError):  # stderr without a file descriptor (captured)
        proc = subprocess.run(cmd, env=env, check=False, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, errors="replace")
        sys.stderr.write(proc.stdout)
        return proc.returncode


def _print(profile: Any, verdict: Any, trace_path: Path | None, notes: list[str]) -> None:
    from rich.console import Console
    from rich.table import Table

    con = Console(highlight=False, width=140)
    m = profile.mean
    con.print(f"[bold]Step profile[/bold] of {profile.source}: {len(profile.steps)} step(s), {profile.trace_kind} "
              f"trace, mean step {m.wall_s * 1e3:.2f} ms")
    table = Table(title="Step time by category (each instant counted once)", title_justify="left")
    for col, just in (("category", "left"), ("s / step", "right"), ("% of step", "right")):
        table.add_column(col, justify=just)
    for category, label in LABELS.items():
        table.add_row(label, f"{m.category_s[category]:.6f}", f"{100 * m.fraction(category):.1f}")
    table.add_row("[bold]step[/bold]", f"{m.wall_s:.6f}", "100.0")
    con.print(table)
    if m.communication_by_kind_s:
        kinds = Table(title="Communication by kind", title_justify="left")
        for col in ("kind", "total s / step", "exposed s / step", "exposed % of step"):
            kinds.add_column(col, justify="left" if col == "kind" else "right")
        for kind, total in m.communication_by_kind_s.items():
            exposed = m.communication_exposed_by_kind_s.get(kind, 0.0)
            kinds.add_row(kind, f"{total:.6f}", f"{exposed:.6f}", f"{100 * exposed / m.wall_s:.1f}")
        con.print(kinds)
    colour = COLOURS.get(verdict.verdict, "white")
    con.print(f"[bold {colour}]Verdict: {verdict.verdict}[/bold {colour}] - {verdict.reason}")
    for line in verdict.advice:
        con.print(f"  - {line}")
    for line in [*verdict.notes, *notes]:
        con.print(f"[dim]note: {line}[/dim]")
    con.print(f"[dim]rule: {verdict.source}[/dim]")
    if trace_path is not None:
        con.print(f"trace: {trace_path} (open in https://ui.perfetto.dev or chrome://tracing)")


# long: typer reads the options from this signature and --help from the docstring
def profile_command(
    ctx: typer.Context,
    scenario: Annotated[Path | None, typer.Argument(
        metavar="SCENARIO.yaml", help="Scenario YAML: profile its built-in training step (random weights, "
                                        "synthetic batch).")] = None,
    trace: Annotated[Path | None, typer.Option("--trace", help="Analyze this Chrome/Kineto trace (.json or "
                                               ".json.gz from torch.profiler) instead of running anything.")] = None,
    steps: Annotated[int, typer.Option("--steps", help="Training steps to record (1-1000).")] = 5,
    warmup: Annotated[int, typer.Option("--warmup", help="Steps traced then discarded before recording "
                                        "(0-100); one more step is always skipped first.")] = 2,
    trace_out: Annotated[Path | None, typer.Option("--trace-out", help="Trace to write (.json or .json.gz; "
                                                   "default trainsizer-profile-YYYYMMDD-HHMMSS.json).")] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing --trace-out.")] = False,
    device: Annotated[str, typer.Option("--device", help="Built-in step: auto (a CUDA GPU, refused without one) | "
                                        "cuda | cpu (= --cpu).")] = "auto",
    cpu: Annotated[bool, typer.Option("--cpu", help="Built-in step on this CPU (host timings, not a GPU's); a model "
                                      "too big for half this machine's memory is refused.")] = False,
    layers: Annotated[int | None, typer.Option("--layers", help="Built-in step: build only N decoder layers "
                                               "(scaled-down model).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the breakdown and verdict as JSON.")] = False,
) -> None:
    """Profile training steps and judge them by the 20 % rule: storage-, network-, host- or compute-bound.

    Run the scenario's built-in step, wrap your script (everything after --), or read a trace (--trace):

    trainsizer probe profile tiny.yaml --layers 2

    trainsizer probe profile -- python train.py --lr 3e-4

    trainsizer probe profile -- torchrun --nproc-per-node 8 train.py   (rank 0 profiles)

    trainsizer probe profile --trace run.pt.trace.json.gz"""
    from trainsizer.probe.profile.analysis import analyze_trace, verdict

    command = list(ctx.meta.get(META_KEY) or [])
    _check_options(scenario, trace, command, steps, warmup, device, layers)
    if cpu and scenario is None:
        raise InputError("--cpu", "only with a SCENARIO (the built-in step); a wrapped script or --trace picks no "
                                  "device")
    notes: list[str] = []
    trace_path: Path | None
    if trace is not None:
        if trace_out is not None:
            raise InputError("--trace-out", "only when something runs (SCENARIO or -- command); --trace reads a trace")
        profile = analyze_trace(trace)
        trace_path = None
    elif scenario is not None:
        profile, trace_path = _profile_scenario(scenario, trace_out, overwrite, device, cpu, layers, steps, warmup,
                                                notes)
    else:
        profile, trace_path = _profile_command(command, trace_out, overwrite, steps, warmup, as_json, notes)
    result = verdict(profile)
    if as_json:
        typer.echo(dumps_strict({"profile": profile.to_dict(), "verdict": result.to_dict(),
                                 "trace": str(trace_path) if trace_path else None, "notes": notes}))
    else:
        _print(profile, result, trace_path, notes)


def _check_options(scenario: Path | None, trace: Path | None, command: list[str], steps: int, warmup: int,
                   device: str, layers: int | None) -> None:
    given = [name for name, value in (("SCENARIO", scenario), ("--trace", trace), ("-- command", command)) if value]
    if len(given) != 1:
        what = "none" if not given else " and ".join(given)
        raise InputError("probe profile", f"give exactly one of SCENARIO.yaml (built-in step), --trace TRACE.json "
                                          f"(analyze) or -- python train.py ... (wrap); got {what}")
    if not 1 <= steps <= 1000:
        raise InputError("--steps", f"{steps}; accepted: 1 to 1000")
    if not 0 <= warmup <= 100:
        raise InputError("--warmup", f"{warmup}; accepted: 0 to 100")
    if device not in ("auto", "cuda", "cpu"):
        raise InputError("--device", f"{device!r} is not accepted; accepted: auto, cuda, cpu")
    if layers is not None and (scenario is None or layers < 1):
        raise InputError("--layers", f"{layers}: accepted: an integer >= 1, with a SCENARIO only")
    if scenario is not None:  # (a wrapped command runs in its own interpreter, which brings its own torch)
        from trainsizer.probe import require_packages

        require_packages("probe profile", hint="the built-in step; --trace TRACE.json needs none of them")


def _profile_scenario(scenario: Path, trace_out: Path | None, overwrite: bool, device: str, cpu: bool,
                      layers: int | None, steps: int, warmup: int, notes: list[str]) -> tuple[Any, Path]:
    """The scenario's built-in step (random weights, synthetic batch) under torch.profiler: on the GPU, or on
    the CPU when asked (and small enough)."""
    from trainsizer.probe.profile.analysis import profile_callable
    from trainsizer.probe.workload.build import build_workload, load_probe_scenario
    from trainsizer.probe.workload.safety import check_cpu_size, pick_device

    loaded = load_probe_scenario(scenario)
    dev = pick_device(device, cpu, "probe profile")
    if dev == "cpu":
        check_cpu_size(loaded, layers, extrapolate=False)
    trace_path = _trace_out_path(trace_out, overwrite)
    wl = build_workload(loaded, device=dev, layers=layers)
    profile, trace_path = profile_callable(wl.step, steps=steps, warmup=warmup, trace_out=trace_path, device=dev)
    notes.append("built-in step: a synthetic batch already in memory and one process, so data loading and "
                 "communication are not exercised; wrap your own script (-- python train.py) to judge storage "
                 "and network")
    notes += [f"workload: {n}" for n in getattr(wl, "notes", [])]
    return profile, trace_path


def _profile_command(command: list[str], trace_out: Path | None, overwrite: bool, steps: int, warmup: int,
                     as_json: bool, notes: list[str]) -> tuple[Any, Path]:
    """The user's own script, run through trainsizer.probe.profile.runner, and the trace it wrote."""
    from trainsizer.probe.profile.analysis import analyze_trace

    trace_path = _trace_out_path(trace_out, overwrite)
    cmd = runner_command(command, trace_path, steps, warmup)
    returncode = _run_wrapped(cmd, as_json)
    if not trace_path.is_file():
        raise InputError("command", f"no trace written to {trace_path} (exit status {returncode}): the script "
                                    f"must make at least {warmup + 2} optimizer steps (1 skipped + --warmup "
                                    f"{warmup} + 1); lower --warmup or let it run longer")
    if returncode != 0:
        notes.append(f"the command exited with status {returncode} after the trace was written")
    return analyze_trace(trace_path), trace_path
