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
        -m trainsizer.probe.comm --out result.json --link-profile ib.yaml --link-id ib-ndr-400 --nics-per-node 8
    trainsizer probe comm --from-json result.json             # tables of a saved result

Across nodes set ``NCCL_ALGO=Ring`` to measure the network itself (tree / NVLS algorithms cross it fewer times;
see the ib-ndr-400 catalog notes). torch is imported only inside the functions that need it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from trainsizer.datafiles import refuse_overwrite
from trainsizer.errors import InputError
from trainsizer.probe import require_packages
from trainsizer.probe.launch import LaunchError, run_ranks

OPS = ("all_reduce", "all_gather", "reduce_scatter")
BACKENDS = ("auto", "nccl", "gloo")
RESULT_KIND = "trainsizer-comm-probe"
SCHEMA_VERSION = 1

# Defaults: nccl-tests prints "warmup iters: 5 iters: 20"; sizes 1 KiB..1 GiB x4 on GPUs. CPU/gloo runs are for
# checking the machinery, so their sizes and iterations are tiny.
GPU_DEFAULTS = {"min_size_bytes": 1 << 10, "max_size_bytes": 1 << 30, "iters": 20, "warmup": 5}
CPU_DEFAULTS = {"min_size_bytes": 1 << 10, "max_size_bytes": 1 << 20, "iters": 5, "warmup": 2}
DEFAULT_FACTOR = 4
MAX_SIZE_LIMIT_BYTES = 64 << 30  # one buffer of this size has to fit in one GPU's memory
MAX_ITERS = 100_000
PROFILE_SIZES = 3  # a link profile records all-reduce busbw at this many largest sizes; the estimator uses the median
PROGRESS_PREFIX = "[comm] "

_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b)?\s*$", re.IGNORECASE)


CommProbeError = LaunchError  # the benchmark job itself failed (torchrun exit status, timeout): not a user mistake


# --- bus bandwidth ---------------------------------------------------------------------------------------------

def busbw_factor(op: str, world_size: int) -> float:
    """busbw = algbw x factor. NVIDIA/nccl-tests doc/PERFORMANCE.md ("Bus bandwidth"): AllReduce 2(n-1)/n,
    ReduceScatter and AllGather (n-1)/n, so that busbw is comparable to the link's bandwidth whatever n is."""
    if world_size < 1:
        raise InputError("world size", f"must be >= 1, got {world_size}")
    n = world_size
    if op == "all_reduce":
        return 2 * (n - 1) / n
    if op in ("all_gather", "reduce_scatter"):
        return (n - 1) / n
    raise InputError("--ops", f"unknown collective {op!r}; accepted: {', '.join(OPS)}")


def algbw_gbps(size_bytes: int, time_s: float) -> float:
    """Algorithm bandwidth S / t in GB/s (1e9 bytes, as nccl-tests prints it; PERFORMANCE.md)."""
    return size_bytes / time_s / 1e9 if time_s > 0 else 0.0


def element_count(op: str, size_bytes: int, element_bytes: int, world_size: int) -> int:
    """Elements of the buffer that nccl-tests calls "size": all-reduce's buffer; all-gather's full output and
    reduce-scatter's full input, i.e. per-rank chunk x n (so it is rounded down to a multiple of n)."""
    count = max(1, size_bytes // element_bytes)
    if op == "all_reduce":
        return count
    return max(world_size, count // world_size * world_size)


# --- options -----------------------------------------------------------------------------------------------------

def parse_size(text: str | int, field_name: str) -> int:
    """Bytes from 1024, 1K, 64M, 1G, 1.5MiB, 512B (binary units, as nccl-tests' -b/-e)."""
    if isinstance(text, int) and not isinstance(text, bool):
        value = text
    else:
        match = _SIZE_RE.match(str(text))
        if not match:
            raise InputError(field_name, f"{text!r} is not a size; use bytes or a number with K, M, G "
                                         "(binary: 1K = 1024), e.g. 1K, 64M, 1G")
        value = int(float(match.group(1)) * _UNITS[match.group(2).lower()])
    if value < 1:
        raise InputError(field_name, f"must be at least 1 byte, got {text!r}")
    if value > MAX_SIZE_LIMIT_BYTES:
        raise InputError(field_name, f"{text!r} is above {format_size(MAX_SIZE_LIMIT_BYTES)} (one buffer must fit "
                                     "in one GPU's memory)")
    return value


def parse_ops(ops: str | Iterable[str]) -> tuple[str, ...]:
    names = [o.strip().lower().replace("-", "_") for o in (ops.split(",") if isinstance(ops, str) else ops)]
    names = [o for o in names if o]
    if not names:
        raise InputError("--ops", f"give at least one of {', '.join(OPS)} (comma separated)")
    unknown = [o for o in names if o not in OPS]
    if unknown:
        raise InputError("--ops", f"unknown collective {unknown[0]!r}; accepted: {', '.join(OPS)} (comma separated)")
    return tuple(dict.fromkeys(names))


def sig4(value: float) -> float:
    """Four significant digits (nccl-tests prints bandwidths so)."""
    return float(f"{value:.4g}")


def format_size(size_bytes: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size_bytes >= scale:
            value = size_bytes / scale
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.3g} {unit}"
    return f"{size_bytes} B"


def message_sizes(min_size_bytes: int, max_size_bytes: int, factor: int) -> list[int]:
    """min, min x factor, ... up to max (max itself is added if the progression steps over it)."""
    sizes, size = [], min_size_bytes
    while size <= max_size_bytes:
        sizes.append(size)
        size *= factor
    if sizes[-1] != max_size_bytes:
        sizes.append(max_size_bytes)
    return sizes


@dataclass(frozen=True)
class CommProbeSettings:
    """What one run measures; ``backend`` is resolved (nccl or gloo)."""

    ops: tuple[str, ...]
    min_size_bytes: int
    max_size_bytes: int
    factor: int
    iters: int
    warmup: int
    backend: str

    @property
    def sizes_bytes(self) -> list[int]:
        return message_sizes(self.min_size_bytes, self.max_size_bytes, self.factor)

    @property
    def dtype(self) -> str:
        return "bf16" if self.backend == "nccl" else "fp32"

    def worker_args(self) -> list[str]:
        """The same settings as ``python -m trainsizer.probe.comm`` arguments."""
        return ["--ops", ",".join(self.ops), "--min-size", str(self.min_size_bytes), "--max-size",
                str(self.max_size_bytes), "--factor", str(self.factor), "--iters", str(self.iters),
                "--warmup", str(self.warmup), "--backend", self.backend]


def resolve_settings(*, ops: str | Iterable[str] = OPS, min_size: str | int | None = None,
                     max_size: str | int | None = None, factor: int = DEFAULT_FACTOR, iters: int | None = None,
                     warmup: int | None = None, backend: str = "auto",
                     cuda_available: bool | None = None) -> CommProbeSettings:
    """Validated settings; unset sizes and iterations take the GPU or CPU defaults of the backend. Everything
    is checked before torch is imported (only ``backend`` auto / nccl needs it, to look for CUDA)."""
    op_names = parse_ops(ops)
    backend = (backend or "auto").lower()
    if backend not in BACKENDS:
        raise InputError("--backend", f"unknown backend {backend!r}; accepted: {', '.join(BACKENDS)}")
    given_min = parse_size(min_size, "--min-size") if min_size is not None else None
    given_max = parse_size(max_size, "--max-size") if max_size is not None else None
    if given_min is not None and given_max is not None and given_min > given_max:
        raise InputError("--max-size", f"{format_size(given_max)} is below --min-size {format_size(given_min)}")
    if isinstance(factor, bool) or not isinstance(factor, int) or factor < 2:
        raise InputError("--factor", f"must be an integer >= 2 (each size is the previous x factor), got {factor!r}")
    for name, value in (("--iters", iters), ("--warmup", warmup)):
        low = 1 if name == "--iters" else 0
        if value is not None and not low <= value <= MAX_ITERS:
            raise InputError(name, f"must be between {low} and {MAX_ITERS}, got {value}")
    if backend != "gloo" and cuda_available is None:
        cuda_available = _cuda_available()
    if backend == "auto":
        backend = "nccl" if cuda_available else "gloo"
    if backend == "nccl" and not cuda_available:
        raise InputError("--backend", "nccl needs CUDA GPUs and none is visible; use --backend gloo (CPU)")
    defaults = GPU_DEFAULTS if backend == "nccl" else CPU_DEFAULTS
    min_bytes = given_min if given_min is not None else defaults["min_size_bytes"]
    max_bytes = given_max if given_max is not None else max(defaults["max_size_bytes"], min_bytes)
    if min_bytes > max_bytes:  # only a --max-size below the default minimum gets here
        raise InputError("--max-size", f"{format_size(max_bytes)} is below --min-size {format_size(min_bytes)}")
    iters = defaults["iters"] if iters is None else iters
    warmup = defaults["warmup"] if warmup is None else warmup
    return CommProbeSettings(op_names, min_bytes, max_bytes, factor, iters, warmup, backend)


def _cuda_available() -> bool:
    require_packages("probe comm", ("torch",), "torch.distributed")
    import torch

    return bool(torch.cuda.is_available())


# --- result --------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class CommRow:
    """One message size of one collective (nccl-tests columns)."""

    size_bytes: int  # nccl-tests "size": all-reduce buffer; all-gather output; reduce-scatter input
    count: int  # elements of that buffer
    time_us: float  # slowest rank's mean time per iteration
    algbw_gbps: float
    busbw_gbps: float


@dataclass(frozen=True)
class OpSummary:
    op: str
    peak_busbw_gbps: float
    peak_size_bytes: int
    largest_size_bytes: int
    busbw_at_largest_gbps: float


@dataclass
class CommEnvironment:
    backend: str
    world_size: int
    nodes: int
    local_world_size: int
    dtype: str
    device_names: list[str]
    torch_version: str
    nccl_version: str | None
    hostname: str  # rank 0's
    hostnames: list[str]
    date: str  # ISO 8601, UTC, when the run started
    nccl_env: dict[str, str] = field(default_factory=dict)  # NCCL_* variables of rank 0 (NCCL_ALGO, ...)

    @property
    def layout(self) -> str:
        return f"{self.world_size} ranks = {self.nodes} node(s) x {self.local_world_size}"


@dataclass
class CommProbeResult:
    environment: CommEnvironment
    ops: dict[str, list[CommRow]]
    iters: int
    warmup: int
    notes: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, OpSummary]:
        out = {}
        for op, rows in self.ops.items():
            if not rows:
                continue
            peak = max(rows, key=lambda r: r.busbw_gbps)
            largest = max(rows, key=lambda r: r.size_bytes)
            out[op] = OpSummary(op, peak.busbw_gbps, peak.size_bytes, largest.size_bytes, largest.busbw_gbps)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"kind": RESULT_KIND, "schema_version": SCHEMA_VERSION,
                "environment": asdict(self.environment), "iters": self.iters, "warmup": self.warmup,
                "ops": {op: [asdict(r) for r in rows] for op, rows in self.ops.items()},
                "summary": {op: asdict(s) for op, s in self.summary().items()}, "notes": list(self.notes)}

    @classmethod
    def from_dict(cls, data: Any, origin: str = "result") -> CommProbeResult:
        if not isinstance(data, dict) or data.get("kind") != RESULT_KIND:
            raise InputError(origin, f"not a trainsizer probe comm result (expected kind: {RESULT_KIND})")
        try:
            env = CommEnvironment(**data["environment"])
            ops = {op: [CommRow(**row) for row in rows] for op, rows in data["ops"].items()}
            return cls(env, ops, int(data["iters"]), int(data["warmup"]), list(data.get("notes") or []))
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(origin, f"malformed probe result ({exc})") from None


def load_result(path: str | Path, field_name: str = "--from-json") -> CommProbeResult:
    target = Path(path)
    if not target.is_file():
        raise InputError(field_name, f"no such file: {target}")
    try:
        data = json.loads(target.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(field_name, f"{target} is not JSON ({exc})") from None
    return CommProbeResult.from_dict(data, field_name)


def write_result(result: CommProbeResult, path: str | Path) -> None:
    Path(path).write_text(json.dumps(result.to_dict(), indent=2) + "\n", encoding="utf-8")


# --- the per-rank worker -----------------------------------------------------------------------------------------

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


class PeerStopped(Exception):
    """Rank 0 refused the run (its ``preflight`` raised); the other ranks stop quietly."""


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
    if settings.backend == "nccl":
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)

        def sync() -> None:
            torch.cuda.synchronize(device)
    else:
        device = torch.device("cpu")

        def sync() -> None:
            return None
    if initialised_here:
        kwargs = {"device_id": device} if settings.backend == "nccl" else {}
        dist.init_process_group(settings.backend, **kwargs)
    try:
        env = _environment(settings, device, started)
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
        dtype = torch.bfloat16 if settings.dtype == "bf16" else torch.float32
        element_bytes = torch.tensor([], dtype=dtype).element_size()
        world, rank = env.world_size, dist.get_rank()
        result = CommProbeResult(env, {}, settings.iters, settings.warmup)
        if world == 1:
            result.notes.append("one rank: bus bandwidth is 0 by definition (nothing crosses a link)")
        for op in settings.ops:
            counts = list(dict.fromkeys(element_count(op, s, element_bytes, world) for s in settings.sizes_bytes))
            error = None
            try:  # gloo in older torch has no reduce_scatter: skip the op with a note, never crash
                _buffers(op, counts[0], world, dtype, device)()
                sync()
            except (RuntimeError, NotImplementedError, ValueError, TypeError) as exc:
                error = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
            if not _agree(error is None, device):
                result.notes.append(f"{op} skipped: not supported by the {settings.backend} backend here"
                                    + (f" ({error[:160]})" if error else " (on another rank)"))
                continue
            rows = []
            for count in counts:
                run = _buffers(op, count, world, dtype, device)
                time_s = _time_per_iter_s(run, settings.iters, settings.warmup, sync, device)
                size = count * element_bytes
                alg = algbw_gbps(size, time_s)
                rows.append(CommRow(size, count, time_s * 1e6, alg, alg * busbw_factor(op, world)))
                del run
                if progress and rank == 0:
                    print(f"{PROGRESS_PREFIX}{op:<14} {format_size(size):>9}  {time_s * 1e6:11.1f} us  "
                          f"busbw {sig4(rows[-1].busbw_gbps):>9g} GB/s", file=sys.stderr, flush=True)
            result.ops[op] = rows
        return result
    finally:
        if initialised_here:
            dist.destroy_process_group()


# --- launcher ------------------------------------------------------------------------------------------------------

def default_nproc(backend: str) -> int:
    if backend == "nccl":
        import torch

        return max(1, torch.cuda.device_count())
    return 2


def run_comm_probe(settings: CommProbeSettings, nproc: int | None = None, timeout_s: float | None = None,
                   progress: Callable[[str], None] | None = None) -> CommProbeResult:
    """Run the probe. Under torchrun (WORLD_SIZE set) this rank runs the worker; otherwise it relaunches itself as
    ``python -m torch.distributed.run --standalone --nproc-per-node N -m trainsizer.probe.comm`` on this node and
    reads rank 0's JSON result. ``progress`` receives rank 0's per-size lines."""
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
    text = run_ranks("trainsizer.probe.comm", nproc, args, timeout_s, PROGRESS_PREFIX, progress)
    return CommProbeResult.from_dict(json.loads(text), "result")


# --- python -m trainsizer.probe.comm ---------------------------------------------------------------------------------

def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m trainsizer.probe.comm",
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
                from trainsizer.probe.link_profile import link_profile, write_link_profile

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
    refuse_overwrite(args.out, "--out", args.overwrite)
    refuse_overwrite(args.link_profile, "--link-profile", args.overwrite)
    if args.link_profile:
        from trainsizer.hardware.catalog import load_catalog
        from trainsizer.probe.link_profile import resolve_link

        resolve_link(load_catalog(), args.link_id, env.device_names, env.nodes, args.nics_per_node)


if __name__ == "__main__":
    sys.exit(main())
