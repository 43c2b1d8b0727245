"""The interconnect probe's result: rows per collective and message size (nccl-tests columns), the run's
environment, and the JSON file a run is saved as (``--out``) and read back from (``--from-json``).

This module owns the data types of ``trainsizer probe comm``; the worker (``comm_worker``), the launcher
(``comm``) and the link profile (``link_profile``) import them from here, never from each other.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from trainsizer.errors import InputError
from trainsizer.jsonout import dumps_strict

RESULT_KIND = "trainsizer-comm-probe"
SCHEMA_VERSION = 1
PROFILE_SIZES = 3  # a link profile records all-reduce busbw at this many largest sizes; the estimator uses the median


def sig4(value: float) -> float:
    """Four significant digits (nccl-tests prints bandwidths so)."""
    return float(f"{value:.4g}")


def format_size(size_bytes: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size_bytes >= scale:
            value = size_bytes / scale
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.3g} {unit}"
    return f"{size_bytes} B"


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
    Path(path).write_text(dumps_strict(result.to_dict()) + "\n", encoding="utf-8")
