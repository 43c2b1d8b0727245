"""The per-rank worker of ``trainsizer probe comm``: every collective at every message size, warm-up then timed
iterations, the slowest rank's mean time per iteration (as nccl-tests' src/common.cu). torch is imported inside
the functions only."""

from __future__ import annotations

import os
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from trainsizer.errors import InputError
from trainsizer.probe.comm.result import CommEnvironment, CommProbeResult, CommRow, format_size, sig4
from trainsizer.probe.comm.settings import CommProbeSettings, algbw_gbps, busbw_factor, element_count

PROGRESS_PREFIX = "[comm] "  # rank 0's per-size lines; the launcher passes lines with this prefix on


class PeerStopped(Exception):
    """Rank 0 refused the run (its ``preflight`` raised); the other ranks stop quietly."""


def _collective(op: str) -> Callable[..., Any]:
    """The torch.distributed call of ``op``; torch 2.13 renamed the *_into_tensor / *_tensor forms *_single."""
    import torch.distributed as dist

    if op == "all_reduce":
        return dist.all_reduce
    if op == "all_gather":
        return getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
    return getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor


def _buffers(op: str, count: int, world_size: int, dtype: Any, device: Any) -> Callable[[], Any]:
    import torch

    call = _collective(op)
    if op == "all_reduce":
        buf = torch.zeros(count, dtype=dtype, device=device)
        return lambda: call(buf)  # in place, as nccl-tests' in-place column
    chunk = torch.zeros(count // world_size, dtype=dtype, device=device)
    full = torch.zeros(count, dtype=dtype, device=device)
    if op == "all_gather":
        return lambda: call(full, chunk)
    return lambda: call(chunk, full)


def _agree(ok: bool, device: Any) -> bool:
    """True only if every rank says ok (all-reduce MIN of a flag)."""
    import torch
    import torch.distributed as dist

    flag = torch.tensor([1.0 if ok else 0.0], dtype=torch.float32, device=device)
    dist.all_reduce(flag, op=dist.ReduceOp.MIN)
    return bool(flag.item() == 1.0)


def _time_per_iter_s(run: Callable[[], Any], iters: int, warmup: int, sync: Callable[[], None], device: Any) -> float:
    """Slowest rank's mean seconds per iteration. Like nccl-tests (src/common.cu): a host clock around ``iters``
    back-to-back launches and one stream synchronize, after warm-up; ranks start together (a tiny all-reduce)."""
    import torch
    import torch.distributed as dist

    for _ in range(warmup):
        run()
    sync()
    dist.all_reduce(torch.zeros(1, device=device))
    sync()
    start = time.perf_counter()
    for _ in range(iters):
        run()
    sync()
    elapsed = torch.tensor([(time.perf_counter() - start) / iters], dtype=torch.float64, device=device)
    dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)  # the collective is as slow as its slowest rank
    return float(elapsed.item())


def _nccl_version(torch: Any) -> str | None:
    try:
        version = torch.cuda.nccl.version()
    except Exception:  # no NCCL in a CPU build
        return None
    if isinstance(version, tuple):
        return ".".join(str(v) for v in version)
    return str(version)


def _environment(settings: CommProbeSettings, device: Any, started: str) -> CommEnvironment:
    import torch
    import torch.distributed as dist

    world = dist.get_world_size()
    name = torch.cuda.get_device_name(device) if settings.backend == "nccl" else "cpu"
    gathered: list[Any] = [None] * world
    dist.all_gather_object(gathered, (socket.gethostname(), name))
    hostnames = [h for h, _ in gathered]
    local = int(os.environ.get("LOCAL_WORLD_SIZE") or 0)
    nodes = world // local if local and world % local == 0 else len(set(hostnames))
    local = local or max(1, world // max(1, nodes))
    return CommEnvironment(
        backend=settings.backend, world_size=world, nodes=nodes, local_world_size=local, dtype=settings.dtype,
        device_names=list(dict.fromkeys(n for _, n in gathered)), torch_version=torch.__version__,
        nccl_version=_nccl_version(torch) if settings.backend == "nccl" else None,
        hostname=hostnames[0], hostnames=list(dict.fromkeys(hostnames)), date=started,
        nccl_env={k: v for k, v in sorted(os.environ.items()) if k.startswith("NCCL_")})


@dataclass
class _Rank:
    """This rank's device, its synchronize, and what every size of every op needs."""

    settings: CommProbeSettings
    device: Any
    sync: Callable[[], None]
    dtype: Any = None
    element_bytes: int = 4
    world: int = 1
    rank: int = 0
    progress: bool = False


def _rank_device(settings: CommProbeSettings) -> tuple[Any, Callable[[], None]]:
    import torch

    if settings.backend != "nccl":
        return torch.device("cpu"), lambda: None
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
    torch.cuda.set_device(device)
    return device, lambda: torch.cuda.synchronize(device)


def _preflight_everywhere(env: CommEnvironment, preflight: Callable[[CommEnvironment], None] | None,
                          device: Any) -> None:
    """Rank 0 runs ``preflight``; every rank learns whether it passed, so none is left waiting in a collective."""
    import torch.distributed as dist

    refused: InputError | None = None
    if preflight is not None and dist.get_rank() == 0:
        try:
            preflight(env)
        except InputError as exc:
            refused = exc
    if not _agree(refused is None, device):
        if refused is not None:
            raise refused
        raise PeerStopped()


def _measure_op(op: str, r: _Rank, notes: list[str]) -> list[CommRow] | None:
    """Every size of one collective; None (with a note) when the backend lacks it on any rank."""
    s = r.settings
    counts = list(dict.fromkeys(element_count(op, size, r.element_bytes, r.world) for size in s.sizes_bytes))
    error = None
    try:  # gloo in older torch has no reduce_scatter: skip the op with a note, never crash
        _buffers(op, counts[0], r.world, r.dtype, r.device)()
        r.sync()
    except (RuntimeError, NotImplementedError, ValueError, TypeError) as exc:
        error = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
    if not _agree(error is None, r.device):
        notes.append(f"{op} skipped: not supported by the {s.backend} backend here"
                     + (f" ({error[:160]})" if error else " (on another rank)"))
        return None
    rows = []
    for count in counts:
        run = _buffers(op, count, r.world, r.dtype, r.device)
        time_s = _time_per_iter_s(run, s.iters, s.warmup, r.sync, r.device)
        size = count * r.element_bytes
        alg = algbw_gbps(size, time_s)
        rows.append(CommRow(size, count, time_s * 1e6, alg, alg * busbw_factor(op, r.world)))
        del run
        if r.progress and r.rank == 0:
            print(f"{PROGRESS_PREFIX}{op:<14} {format_size(size):>9}  {time_s * 1e6:11.1f} us  "
                  f"busbw {sig4(rows[-1].busbw_gbps):>9g} GB/s", file=sys.stderr, flush=True)
    return rows


def run_worker(settings: CommProbeSettings, progress: bool = False,
               preflight: Callable[[CommEnvironment], None] | None = None) -> CommProbeResult:
    """Run the benchmark in this rank of a torch.distributed job (initialised here from the torchrun environment
    if it is not yet); every rank returns the same rows. ``preflight(environment)`` runs on rank 0 before any
    measurement (output paths, link id); if it raises InputError, rank 0 re-raises it and the others PeerStopped,
    so no rank is left waiting in a collective."""
    import torch
    import torch.distributed as dist

    started = datetime.now(UTC).isoformat(timespec="seconds")
    initialised_here = not dist.is_initialized()
    device, sync = _rank_device(settings)
    if initialised_here:
        kwargs = {"device_id": device} if settings.backend == "nccl" else {}
        dist.init_process_group(settings.backend, **kwargs)
    try:
        env = _environment(settings, device, started)
        _preflight_everywhere(env, preflight, device)
        dtype = torch.bfloat16 if settings.dtype == "bf16" else torch.float32
        r = _Rank(settings, device, sync, dtype, torch.tensor([], dtype=dtype).element_size(), env.world_size,
                  dist.get_rank(), progress)
        result = CommProbeResult(env, {}, settings.iters, settings.warmup)
        if r.world == 1:
            result.notes.append("one rank: bus bandwidth is 0 by definition (nothing crosses a link)")
        for op in settings.ops:
            rows = _measure_op(op, r, result.notes)
            if rows is not None:
                result.ops[op] = rows
        return result
    finally:
        if initialised_here:
            dist.destroy_process_group()
