"""The ``trainsizer burnin`` sub-app: run (the default) and ``report RUN.db``.

Only typer is imported here; the burn-in itself (and torch, pynvml, prometheus-client) is imported inside
the commands, so mounting this sub-app keeps ``trainsizer --help`` fast.
"""

from pathlib import Path
from typing import Annotated, Any

import typer

from trainsizer.probe.common.command_group import META_KEY, TrailingCommandGroup

burnin_app = typer.Typer(
    cls=TrailingCommandGroup, invoke_without_command=True, add_completion=False, pretty_exceptions_enable=False,
    help="Burn-in: load every GPU (bf16 matmuls + memory copies, or your command after --) for a set time, "
         "sample NVML every interval into SQLite, and judge STABLE / WARN / FAIL. "
         "Example: trainsizer burnin --duration 72h --db rack1.db -- python train.py")

JsonOpt = Annotated[bool, typer.Option("--json", help="Print the verdict as JSON.")]


def _show(verdict: Any, as_json: bool) -> None:
    from trainsizer.probe.burnin.render import print_verdict

    if as_json:
        from trainsizer.probe.burnin.render import verdict_json

        typer.echo(verdict_json(verdict))
    else:
        print_verdict(verdict)
    if verdict.status == "FAIL":
        raise SystemExit(1)  # not typer.Exit: with standalone_mode=False click would swallow its code


@burnin_app.callback()
def burnin(
    ctx: typer.Context,
    duration: Annotated[str | None, typer.Option(help="Load time: 90s, 2m, 72h, 3d, 1h30m (default 2m; with "
                                                 "--resume: the stored total unless given).")] = None,
    interval: Annotated[float, typer.Option(help="Seconds between samples (0.05-3600).")] = 1.0,
    backend: Annotated[str, typer.Option(help="auto | nvml | fake (simulated GPUs, no torch needed).")] = "auto",
    db: Annotated[Path | None, typer.Option("--db", help="Run database to create (default "
                                            "burnin-YYYYMMDD-HHMMSS.db).")] = None,
    resume: Annotated[Path | None, typer.Option("--resume", help="Continue the run in RUN.db: appends, keeps its "
                                                "start time, runs the remaining duration.")] = None,
    metrics_port: Annotated[int | None, typer.Option("--metrics-port", help="Serve Prometheus gauges on this "
                                                     "port.")] = None,
    metrics_host: Annotated[str, typer.Option("--metrics-host", help="Address for --metrics-port.")] = "127.0.0.1",
    fake_gpus: Annotated[int, typer.Option("--fake-gpus", help="Simulated GPUs (--backend fake).")] = 2,
    fake_seed: Annotated[int, typer.Option("--fake-seed", help="Seed of the simulated GPUs.")] = 0,
    fake_event: Annotated[list[str] | None, typer.Option(
        "--fake-event", help="Inject into the simulation (repeatable): throttle@5s-20s, ecc@30s:gpu=1, xid79@1m, "
                             "ecc-corrected@10s, remap-pending@10s.")] = None,
    matmul_size: Annotated[int, typer.Option("--matmul-size", help="n of the n x n bf16 matmuls (torch load).")] = 8192,
    copy_mib: Annotated[int, typer.Option("--copy-mib", help="MiB per device memory copy (torch load).")] = 1024,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress lines on stderr.")] = False,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing --db (its run is lost).")
                         ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Run (or resume) a burn-in, then print the verdict; exit 1 on FAIL."""
    if ctx.invoked_subcommand is not None:
        return
    from trainsizer.outputs import check_output_path
    from trainsizer.probe.burnin.run import run_burnin
    from trainsizer.probe.common.progress import StatusLine, progress_console

    if resume is None:
        check_output_path(db, "--db", overwrite=overwrite, exists_hint=f"pass --resume {db} to continue that run, "
                                                                       "or --overwrite to replace it")
    with StatusLine(progress_console(as_json, quiet), "burnin: ") as say:  # start-up only, on a terminal
        verdict = run_burnin(duration=duration, interval=interval, backend=backend,
                             command=ctx.meta.get(META_KEY) or None, db=db, resume=resume,
                             metrics_port=metrics_port, metrics_host=metrics_host, fake_gpus=fake_gpus,
                             fake_seed=fake_seed, fake_events=fake_event, matmul_size=matmul_size, copy_mib=copy_mib,
                             quiet=quiet, overwrite=overwrite, progress=say)
    _show(verdict, as_json)


@burnin_app.command("report")
def report_cmd(
    run_db: Annotated[Path, typer.Argument(metavar="RUN.db", help="A burn-in database.")],
    as_json: JsonOpt = False,
) -> None:
    """Rebuild the verdict of a burn-in from its database alone; exit 1 on FAIL."""
    from trainsizer.probe.burnin.run import report

    _show(report(run_db), as_json)
