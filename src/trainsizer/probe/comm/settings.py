"""What one ``trainsizer probe comm`` run measures: the collectives, message sizes, iterations and backend,
validated before torch is imported; and the bus-bandwidth arithmetic of NVIDIA/nccl-tests doc/PERFORMANCE.md."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from trainsizer.errors import InputError
from trainsizer.probe import require_packages
from trainsizer.probe.comm.result import format_size

OPS = ("all_reduce", "all_gather", "reduce_scatter")
BACKENDS = ("auto", "nccl", "gloo")

# Defaults: nccl-tests prints "warmup iters: 5 iters: 20"; sizes 1 KiB..1 GiB x4 on GPUs. CPU/gloo runs are for
# checking the machinery, so their sizes and iterations are tiny.
GPU_DEFAULTS = {"min_size_bytes": 1 << 10, "max_size_bytes": 1 << 30, "iters": 20, "warmup": 5}
CPU_DEFAULTS = {"min_size_bytes": 1 << 10, "max_size_bytes": 1 << 20, "iters": 5, "warmup": 2}
DEFAULT_FACTOR = 4
MAX_SIZE_LIMIT_BYTES = 64 << 30  # one buffer of this size has to fit in one GPU's memory
MAX_ITERS = 100_000

_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b)?\s*$", re.IGNORECASE)


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
        """The same settings as ``python -m trainsizer.probe.comm.measure`` arguments."""
        return ["--ops", ",".join(self.ops), "--min-size", str(self.min_size_bytes), "--max-size",
                str(self.max_size_bytes), "--factor", str(self.factor), "--iters", str(self.iters),
                "--warmup", str(self.warmup), "--backend", self.backend]


def _check_counts(factor: int, iters: int | None, warmup: int | None) -> None:
    if isinstance(factor, bool) or not isinstance(factor, int) or factor < 2:
        raise InputError("--factor", f"must be an integer >= 2 (each size is the previous x factor), got {factor!r}")
    for name, value in (("--iters", iters), ("--warmup", warmup)):
        low = 1 if name == "--iters" else 0
        if value is not None and not low <= value <= MAX_ITERS:
            raise InputError(name, f"must be between {low} and {MAX_ITERS}, got {value}")


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
    _check_counts(factor, iters, warmup)
    if backend != "gloo" and cuda_available is None:
        cuda_available = _cuda_available()
    if backend == "auto":
        backend = "nccl" if cuda_available else "gloo"
    if backend == "nccl" and not cuda_available:
        raise InputError("--backend", "nccl needs CUDA GPUs and none is visible; use --cpu (gloo on this CPU)")
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
