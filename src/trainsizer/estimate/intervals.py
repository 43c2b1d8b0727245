"""The 80 % ranges of one estimate's figures (memory, speed, time to train) and the chance it runs out of memory.

Each figure's range is its estimate scaled by the regime's range of ``measured / predicted`` (``ranges.py``):
memory figures and speeds with it, times (step time, time to train, GPU-hours) inversely. The chance that peak
memory exceeds the GPU's capacity reads the same range as a log-normal error (``Band.p_above``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainsizer.estimate.ranges import RISK, Band, band, framework_regime
from trainsizer.estimate.regimes import regime
from trainsizer.messages import Message, msg

if TYPE_CHECKING:
    from trainsizer.estimate.estimate_json import MemoryIntervalJSON, PerformanceIntervalJSON
    from trainsizer.estimate.memory import MemoryEstimate
    from trainsizer.estimate.step import Performance

SPEEDS = ("tokens_per_s", "tokens_per_s_per_gpu", "tflops_per_gpu", "mfu")
TIMES = ("step_time_s", "time_to_train_s", "gpu_hours")


def _pair(values: tuple[float, float], digits: int) -> list[float]:
    return [round(values[0], digits), round(values[1], digits)]


def scenario_bands(gpu_id: str | None, method: str, gpus: int, gpus_per_node: int,
                   framework: str | None = None, moe: bool = False) -> tuple[Band, Band]:
    """(memory, speed) ranges for a scenario's regime (``moe``: its model routes tokens to experts); wider where it
    names no ``framework`` (``ranges.py``)."""
    reg = framework_regime(regime(gpu_id, method, gpus, gpus_per_node, moe), framework)
    return band("memory", reg), band("speed", reg)


def evidence_notes(b: Band) -> list[Message]:
    """A range no case backs says so; so does the wider range of a scenario that names no framework."""
    notes = [msg(f"range.no_evidence_{b.kind}", what=", ".join(b.no_evidence))] if b.no_evidence else []
    if b.framework_widened:
        notes.append(msg(f"range.framework_not_stated_{b.kind}"))
    return notes


def memory_interval(memory: MemoryEstimate, b: Band) -> MemoryIntervalJSON:
    """``memory.interval``: the 80 % range of each memory figure, the chance the device figure exceeds the
    capacity, and how far above the estimate memory can be before it does not fit."""
    p = b.p_above(memory.device_gib, memory.capacity_gib)
    return {"level": b.level,
            "allocated_gib": _pair(b.scale(memory.allocated_gib), 3),
            "reserved_gib": _pair(b.scale(memory.reserved_gib), 3),
            "device_gib": _pair(b.scale(memory.device_gib), 3),
            "p_exceeds_capacity": round(p, 4),
            "fits_unless_above": round(memory.capacity_gib / memory.device_gib - 1, 4) if memory.device_gib else None,
            "at_risk": p > RISK, "cases": b.cases, "no_evidence": list(b.no_evidence), "notes": evidence_notes(b)}


def performance_interval(perf: Performance, b: Band) -> PerformanceIntervalJSON:
    """``performance.interval``: the 80 % range of each speed figure and time (time to train and GPU-hours where
    the job states its tokens)."""
    out: PerformanceIntervalJSON = {"level": b.level}  # type: ignore[typeddict-item]  # the rest below
    for key in TIMES:
        value = getattr(perf, key, None)
        if key == "step_time_s" or value is not None:
            out[key] = _pair(b.scale_inverse(float(value)), 4 if key == "step_time_s" else 1)
    for key in SPEEDS:
        out[key] = _pair(b.scale(float(getattr(perf, key))), 4 if key == "mfu" else 1)
    out.update({"cases": b.cases, "no_evidence": list(b.no_evidence), "notes": evidence_notes(b)})
    return out
