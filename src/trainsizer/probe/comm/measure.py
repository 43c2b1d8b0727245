"""Interconnect probe: all-reduce, all-gather and reduce-scatter bandwidth over message sizes, like nccl-tests.

Each rank of a ``torch.distributed`` job (NCCL on GPUs, gloo on CPUs) runs every collective at every message size:
warm-up iterations, then timed iterations; the time of a size is the slowest rank's mean time per iteration. Bus
bandwidth follows NVIDIA/nccl-tests doc/PERFORMANCE.md, so the figures compare with nccl-tests logs and with the
``measured_allreduce_busbw_gbps`` entries of the link catalog. A run can be saved as a *link profile*: a catalog
YAML file (``--catalog``) whose measured bus bandwidth ``estimate`` and ``plan`` then use instead of the defaults.

One node (relaunches itself under torchrun, one rank per GPU)::

    trainsizer probe comm --link-profile node.yaml            # link id from the GPU (e.g. nvlink4 on H100 SXM)

Many nodes: start the worker yourself with torchrun on every node; rank 0 writes the result (and the profile)::

    torchrun --nnodes 2 --nproc-per-node 8 --rdzv-backend c10d --rdzv-endpoint NODE0:29500 --rdzv-id comm \\
        -m trainsizer.probe.comm.measure --out result.json --link-profile ib.yaml --link-id ib-ndr-400 --nics-per-node 8
    trainsizer probe comm --from-json result.json             # tables of a saved result

Across nodes set ``NCCL_ALGO=Ring`` to measure the network itself (tree / NVLS algorithms cross it fewer times;
see the ib-ndr-400 catalog notes). torch is imported only inside the functions that need it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence

from trainsizer.errors import InputError
from trainsizer.outputs import check_output_path
from trainsizer.probe import require_packages
from trainsizer.probe.comm.link_profile import link_profile, resolve_link, write_link_profile
from trainsizer.probe.comm.result import (
    PROFILE_SIZES,
    RESULT_KIND,
    SCHEMA_VERSION,
    CommEnvironment,
    CommProbeResult,
    CommRow,
    OpSummary,
    format_size,
    load_result,
    sig4,
    write_result,
)
from trainsizer.probe.comm.settings import (
    BACKENDS,
    CPU_DEFAULTS,
    DEFAULT_FACTOR,
    GPU_DEFAULTS,
    MAX_ITERS,
    MAX_SIZE_LIMIT_BYTES,
    OPS,
    CommProbeSettings,
    algbw_gbps,
    busbw_factor,
    element_count,
    message_sizes,
    parse_ops,
    parse_size,
    resolve_settings,
)
from trainsizer.probe.comm.worker import PROGRESS_PREFIX, PeerStopped, run_worker
from trainsizer.probe.common.launch import LaunchError, leave_rank, run_ranks

# The probe's names are importable from here (``from trainsizer.probe.comm import measure; measure.parse_size``).
__all__ = ["BACKENDS", "CPU_DEFAULTS", "DEFAULT_FACTOR", "GPU_DEFAULTS", "MAX_ITERS", "MAX_SIZE_LIMIT_BYTES", "OPS",
           "PROFILE_SIZES", "PROGRESS_PREFIX", "RESULT_KIND", "SCHEMA_VERSION", "CommEnvironment", "CommProbeError",
           "CommProbeResult", "CommProbeSettings", "CommRow", "OpSummary", "PeerStopped", "algbw_gbps", "busbw_factor",
           "default_nproc", "element_count", "format_size", "load_result", "main", "message_sizes", "parse_ops",
           "parse_size", "resolve_settings", "run_comm_probe", "run_worker", "sig4", "write_result"]

CommProbeError = LaunchError  # the benchmark job itself failed (torchrun exit status, timeout): not a user mistake


# --- launcher ------------------------------------------------------------------------------------------------------

def default_nproc(backend: str) -> int:
    if backend == "nccl":
        import torch

        return max(1, torch.cuda.device_count())
    return 2


def run_comm_probe(settings: CommProbeSettings, nproc: int | None = None, timeout_s: float | None = None,
                   progress: Callable[[str], None] | None = None) -> CommProbeResult:
    """Run the probe. Under torchrun (WORLD_SIZE set) this rank runs the worker; otherwise it relaunches itself as
    ``python -m torch.distributed.run --standalone --nproc-per-node N -m trainsizer.probe.comm.measure`` on this
    node and reads rank 0's JSON result. ``progress`` receives rank 0's per-size lines."""
    require_packages("probe comm", ("torch",), "torch.distributed")
    if os.environ.get("WORLD_SIZE"):
        return run_worker(settings, progress=progress is not None)
    nproc = default_nproc(settings.backend) if nproc is None else nproc
    if nproc < 1:
        raise InputError("--nproc", f"must be >= 1, got {nproc}")
    if settings.backend == "nccl":
        available = default_nproc("nccl")
        if nproc > available:
            raise InputError("--nproc", f"{nproc} ranks but only {available} CUDA GPU(s) visible (one rank per GPU)")
    args = [*settings.worker_args(), *(["--progress"] if progress is not None else [])]
    text = run_ranks("trainsizer.probe.comm.measure", nproc, args, timeout_s, PROGRESS_PREFIX, progress)
    return CommProbeResult.from_dict(json.loads(text), "result")


# --- python -m trainsizer.probe.comm.measure --------------------------------------------------------------------------

def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m trainsizer.probe.comm.measure",
                                description="Per-rank worker of `trainsizer probe comm`; start it with torchrun on "
                                            "every node. Rank 0 writes --out (JSON) and --link-profile (YAML).")
    p.add_argument("--ops", default=",".join(OPS))
    p.add_argument("--min-size")
    p.add_argument("--max-size")
    p.add_argument("--factor", type=int, default=DEFAULT_FACTOR)
    p.add_argument("--iters", type=int)
    p.add_argument("--warmup", type=int)
    p.add_argument("--backend", default="auto")
    p.add_argument("--out", required=True)
    p.add_argument("--link-profile")
    p.add_argument("--link-id")
    p.add_argument("--nics-per-node", type=int)
    p.add_argument("--overwrite", action="store_true")
    p.add_argument("--progress", action="store_true", help="rank 0 prints a line per size on stderr")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    rank = int(os.environ.get("RANK", "0"))
    try:
        settings = resolve_settings(ops=args.ops, min_size=args.min_size, max_size=args.max_size,
                                    factor=args.factor, iters=args.iters, warmup=args.warmup, backend=args.backend)
        result = run_worker(settings, progress=args.progress, preflight=lambda env: _preflight(args, env))
        if rank == 0:
            write_result(result, args.out)
            if args.link_profile:
                from trainsizer.hardware.catalog import load_catalog

                write_link_profile(link_profile(result, load_catalog(), args.link_id, args.nics_per_node),
                                   args.link_profile)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except PeerStopped:
        return 2
    return 0


def _preflight(args: argparse.Namespace, env: CommEnvironment) -> None:
    """Rank 0, before measuring: never overwrite a file by surprise, never measure for a profile that cannot be
    written."""
    check_output_path(args.out, "--out", overwrite=args.overwrite)
    check_output_path(args.link_profile, "--link-profile", overwrite=args.overwrite)
    if args.link_profile:
        from trainsizer.hardware.catalog import load_catalog

        resolve_link(load_catalog(), args.link_id, env.device_names, env.nodes, args.nics_per_node)


if __name__ == "__main__":
    leave_rank(main())
