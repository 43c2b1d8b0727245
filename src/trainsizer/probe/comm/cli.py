"""``trainsizer probe comm``: the interconnect probe's command (all-reduce / all-gather / reduce-scatter bandwidth).

Only typer is imported here; rich, torch and the probe itself are imported inside the functions, so registering it
keeps ``trainsizer --help`` fast.
"""

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from trainsizer.jsonout import dumps_strict

if TYPE_CHECKING:
    from rich.console import Console

    from trainsizer.probe.comm.result import CommProbeResult
    from trainsizer.probe.comm.settings import CommProbeSettings


def _bw(value: float) -> str:
    return f"{value:.2f}" if value >= 1 else f"{value:.3g}"


def print_result(result: "CommProbeResult", console: "Console | None" = None) -> None:
    """nccl-tests-like tables: one per collective, then the summary."""
    from rich.console import Console
    from rich.table import Table

    from trainsizer.probe.comm.result import format_size

    con = console or Console(highlight=False, width=120)
    env = result.environment
    nccl = f", NCCL {env.nccl_version}" if env.nccl_version else ""
    nccl_env = " ".join(f"{k}={v}" for k, v in env.nccl_env.items())
    con.print(f"[bold]Collectives[/bold] on {env.layout} ({', '.join(env.device_names)}), backend {env.backend}, "
              f"{env.dtype}, torch {env.torch_version}{nccl}; host {env.hostname}, {env.date}; "
              f"{result.warmup} warm-up + {result.iters} timed iterations per size"
              + (f"; {nccl_env}" if nccl_env else ""))
    for op, rows in result.ops.items():
        table = Table(title=op, title_justify="left")
        for col in ("size (B)", "size", "count (elements)", "time (us)", "algbw (GB/s)", "busbw (GB/s)"):
            table.add_column(col, justify="right")
        for r in rows:
            table.add_row(str(r.size_bytes), format_size(r.size_bytes), str(r.count), f"{r.time_us:.1f}",
                          _bw(r.algbw_gbps), _bw(r.busbw_gbps))
        con.print(table)
    summary = result.summary()
    if summary:
        table = Table(title="Summary (bus bandwidth, nccl-tests PERFORMANCE.md)", title_justify="left")
        for col, just in (("collective", "left"), ("peak busbw (GB/s)", "right"), ("at size", "right"),
                          ("busbw at largest size (GB/s)", "right"), ("largest size", "right")):
            table.add_column(col, justify=just)
        for s in summary.values():
            table.add_row(s.op, _bw(s.peak_busbw_gbps), format_size(s.peak_size_bytes),
                          _bw(s.busbw_at_largest_gbps), format_size(s.largest_size_bytes))
        con.print(table)
    for note in result.notes:
        con.print(f"[yellow]note:[/yellow] {note}")


# long: typer reads the options from this signature and --help from the docstring
def comm_command(
    nproc: Annotated[int | None, typer.Option("--nproc", help="Ranks on this node (default: the CUDA GPUs, or 2 "
                                              "on CPU).")] = None,
    ops: Annotated[str, typer.Option("--ops", help="Comma list of all_reduce, all_gather, reduce_scatter.")]
    = "all_reduce,all_gather,reduce_scatter",
    min_size: Annotated[str | None, typer.Option("--min-size", help="Smallest message: bytes or 1K, 64M, 1G "
                                                 "(binary units; default 1K).")] = None,
    max_size: Annotated[str | None, typer.Option("--max-size", help="Largest message (default 1G on GPUs, 1M on "
                                                 "CPU).")] = None,
    factor: Annotated[int, typer.Option("--factor", help="Each size is the previous x this (nccl-tests -f).")] = 4,
    iters: Annotated[int | None, typer.Option("--iters", help="Timed iterations per size (default 20 on GPUs, 5 "
                                              "on CPU).")] = None,
    warmup: Annotated[int | None, typer.Option("--warmup", help="Warm-up iterations per size (default 5 on GPUs, "
                                               "2 on CPU).")] = None,
    backend: Annotated[str, typer.Option("--backend", help="auto (nccl with CUDA GPUs; refused without them) | "
                                         "nccl | gloo (= --cpu).")] = "auto",
    cpu: Annotated[bool, typer.Option("--cpu", help="Run over gloo on this CPU: checks the machinery; its link "
                                      "profile is marked gloo and never preferred over the shipped figures.")] = False,
    out: Annotated[Path | None, typer.Option("--out", help="Write the result as JSON here.")] = None,
    link_profile: Annotated[Path | None, typer.Option("--link-profile", help="Write a link profile (catalog YAML "
                                                      "for --catalog) with the measured all-reduce busbw.")] = None,
    link_id: Annotated[str | None, typer.Option("--link-id", help="Catalog link measured: nvlink4, pcie4, "
                                                "ib-ndr-400, ... (default: the GPU's intra-node link).")] = None,
    nics_per_node: Annotated[int | None, typer.Option("--nics-per-node", help="NICs per node, for a scale-out "
                                                      "link (the profile records busbw per NIC).")] = None,
    from_json: Annotated[Path | None, typer.Option("--from-json", help="Show (and profile) a saved result instead "
                                                   "of running, e.g. a multi-node torchrun's --out.")] = None,
    timeout: Annotated[float | None, typer.Option("--timeout", help="Stop the run after this many seconds.")] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace existing --out / --link-profile "
                                            "files.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Interconnect probe like nccl-tests: all-reduce, all-gather and reduce-scatter over message sizes with
    torch.distributed (NCCL on GPUs, gloo on CPUs); prints time, algorithm bandwidth and bus bandwidth per size, and
    --link-profile saves a catalog file that `estimate` and `plan` use via --catalog instead of the defaults.

    One node: this command relaunches itself under torchrun, one rank per GPU.

    Many nodes: run the worker with torchrun on every node; rank 0 writes
    the result (NCCL_ALGO=Ring measures the network rather than NCCL's tree):

    torchrun --nnodes N --nproc-per-node G --rdzv-backend c10d
    --rdzv-endpoint NODE0:29500 --rdzv-id comm -m trainsizer.probe.comm.measure
    --out result.json --link-profile ib.yaml --link-id ib-ndr-400
    --nics-per-node 8

    then show it here: trainsizer probe comm --from-json result.json
    """
    from trainsizer.errors import InputError
    from trainsizer.outputs import check_output_path
    from trainsizer.probe.comm import measure as probe

    check_output_path(out, "--out", overwrite=overwrite)
    check_output_path(link_profile, "--link-profile", overwrite=overwrite)
    if timeout is not None and timeout <= 0:
        raise InputError("--timeout", f"must be > 0 seconds, got {timeout:g}")
    if from_json is not None:
        result = probe.load_result(from_json)
    else:
        settings = probe.resolve_settings(ops=ops, min_size=min_size, max_size=max_size, factor=factor,
                                          iters=iters, warmup=warmup, backend="gloo" if _cpu(backend, cpu) else backend)
        _refuse_silent_cpu(backend, cpu, settings.backend)
        result = _measure(settings, nproc, timeout, link_profile, link_id, nics_per_node)
        if result is None:
            return  # under torchrun: rank 0 reports
    _save_and_show(result, out, link_profile, link_id, nics_per_node, as_json)


def _cpu(backend: str, cpu: bool) -> bool:
    from trainsizer.errors import InputError

    if cpu and (backend or "").lower() == "nccl":
        raise InputError("--cpu", "conflicts with --backend nccl; give one of them")
    return cpu


def _refuse_silent_cpu(asked: str, cpu: bool, resolved: str) -> None:
    """gloo only when asked (--cpu or --backend gloo): without CUDA GPUs, auto is refused rather than measuring
    the CPU's loopback as if it were a GPU link."""
    from trainsizer.errors import InputError

    if not cpu and (asked or "auto").lower() == "auto" and resolved != "nccl":
        raise InputError("--backend", "no CUDA GPU here: probe comm measures GPU links with NCCL; pass --cpu (or "
                                      "--backend gloo) to run it over gloo on this CPU, a check of the machinery, not "
                                      "a link figure")


def _measure(settings: "CommProbeSettings", nproc: int | None, timeout: float | None, link_profile: Path | None,
             link_id: str | None, nics_per_node: int | None) -> "CommProbeResult | None":
    """Run the probe (None on ranks other than 0 under torchrun); a link profile that could not be written is
    refused before the run."""
    from trainsizer.hardware.catalog import load_catalog
    from trainsizer.probe.comm import measure as probe
    from trainsizer.probe.comm.link_profile import resolve_link

    if link_profile is not None and not os.environ.get("WORLD_SIZE"):
        # fail before a long run: the launcher runs on this one node
        names = [_cuda_device_name()] if settings.backend == "nccl" else ["cpu"]
        resolve_link(load_catalog(), link_id, names, 1, nics_per_node)
    try:
        result = probe.run_comm_probe(settings, nproc=nproc, timeout_s=timeout,
                                      progress=lambda line: typer.echo(line, err=True))
    except probe.CommProbeError as exc:
        typer.echo(f"error: comm probe failed: {exc}", err=True)
        raise SystemExit(1) from None  # not typer.Exit: with standalone_mode=False click would swallow its code
    return result if int(os.environ.get("RANK", "0")) == 0 else None


def _save_and_show(result: "CommProbeResult", out: Path | None, link_profile: Path | None, link_id: str | None,
                   nics_per_node: int | None, as_json: bool) -> None:
    """--out first (a long run is never lost to a profile mistake), then the profile, the tables or JSON, and
    how to use the profile."""
    from trainsizer.hardware.catalog import load_catalog
    from trainsizer.probe.comm.link_profile import link_profile as build_profile
    from trainsizer.probe.comm.link_profile import write_link_profile
    from trainsizer.probe.comm.result import write_result

    if out is not None:
        write_result(result, out)
    profile = build_profile(result, load_catalog(), link_id, nics_per_node) if link_profile is not None else None
    if profile is not None and link_profile is not None:
        write_link_profile(profile, link_profile)
    if as_json:
        typer.echo(dumps_strict(result.to_dict()))
    else:
        print_result(result)
    if profile is not None:
        link = profile["links"][0]
        cpu = (f" ({profile['backend']} on CPU: prefer_measured false, not a GPU link figure)"
               if profile.get("measured_on") == "cpu" else "")
        hint = (f"link profile for {link['id']} written to {link_profile}{cpu}; passed with --catalog it replaces "
                f"{profile.get('replaces')}: trainsizer estimate job.yaml --catalog {link_profile}  |  trainsizer "
                f"plan ... --catalog {link_profile}")
    else:
        hint = ("save the measured bandwidth for estimate/plan with --link-profile PROFILE.yaml [--link-id ID], then "
                "trainsizer estimate job.yaml --catalog PROFILE.yaml  |  trainsizer plan ... --catalog PROFILE.yaml")
    typer.echo(hint, err=as_json)


def _cuda_device_name() -> str:
    import torch

    return str(torch.cuda.get_device_name(0))
