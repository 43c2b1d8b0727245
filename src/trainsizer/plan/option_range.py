"""An option under the model's error (its ``range``, docs/plan-json.md): the 80 % ranges of its peak memory, step
time, time to train and cost per run, the chance its peak memory exceeds the GPU's and whether that is a real risk.
``workflows.robust.option_range`` works it out from the estimate's fitted error bands (``estimate/ranges.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from trainsizer.messages import Message

if TYPE_CHECKING:  # the JSON's types, for annotations
    from trainsizer.plan.option_json import RangeJSON

Interval = tuple[float, float]  # [low, high] of an 80 % range


@dataclass(frozen=True, slots=True, kw_only=True)
class OptionRange:
    """An option's 80 % ranges (memory, step time, time to train, a run's cost) and its chance of running out of
    memory."""

    level: float  # the share of outcomes the ranges hold (estimate.ranges.Band.level: 0.8)
    p_exceeds_capacity: float
    at_risk: bool  # the chance is above estimate.ranges.RISK
    fits_unless_above: float | None  # the memory error that would exceed the GPU (a fraction of the estimate)
    device_gib: Interval
    step_time_s: Interval
    time_to_train_s: Interval | None = None  # None without training.tokens
    per_run_cost: Interval | None = None  # None where the run has no cost
    notes: tuple[Message, ...] = ()  # the risk of running out of memory, where real

    def to_dict(self) -> RangeJSON:
        out: RangeJSON = {"level": self.level, "p_exceeds_capacity": self.p_exceeds_capacity,
                               "at_risk": self.at_risk, "fits_unless_above": self.fits_unless_above,
                               "device_gib": list(self.device_gib), "step_time_s": list(self.step_time_s)}
        if self.time_to_train_s is not None:
            out["time_to_train_s"] = list(self.time_to_train_s)
        if self.per_run_cost is not None:
            out["per_run_cost"] = list(self.per_run_cost)
        out["notes"] = list(self.notes)
        return out
