"""Chart axes chosen for reading: linear unless the data spans more than ``LOG_SPAN`` times, then
logarithmic with ticks at round values (1, 2, 5 x 10^k) labelled in the data's own unit."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

# Over ~20x a linear axis squeezes the small values into a few pixels at the bottom; under it a log
# axis exaggerates small differences and hides where zero is. 20 is about where a 300 px plot still
# separates the smallest value from zero by 15 px on a linear scale.
LOG_SPAN = 20.0


def use_log_axis(values: Iterable[float | None]) -> bool:
    """A log axis only for positive data whose largest value is more than ``LOG_SPAN`` times its smallest."""
    vals = [float(v) for v in values if v is not None and math.isfinite(v)]
    if not vals or min(vals) <= 0:
        return False
    return max(vals) / min(vals) > LOG_SPAN


def fmt_tick(v: float) -> str:
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 1e9:
        return f"{v / 1e9:.3g}G"
    if a >= 1e6:
        return f"{v / 1e6:.3g}M"
    if a >= 1e3:
        return f"{v / 1e3:.3g}k"
    return f"{v:.3g}"


def linear_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if hi <= lo:
        return [lo]
    step = 10 ** math.floor(math.log10((hi - lo) / n))
    for m in (1, 2, 5, 10):
        if (hi - lo) / (step * m) <= n:
            step *= m
            break
    start = math.floor(lo / step) * step
    out, v = [], start
    while v <= hi + 1e-9 * step:
        if v >= lo - 1e-9 * step:
            out.append(round(v, 10))
        v += step
    return out


def log_ticks(lo: float, hi: float) -> list[float]:
    """1-2-5 ticks within [lo, hi] when the range spans up to three decades, else decades only."""
    decades = range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
    mults = (1, 2, 5) if len(decades) <= 4 else (1,)
    out = [m * 10.0 ** d for d in decades for m in mults]
    return [round(v, 12) for v in out if lo * (1 - 1e-9) <= v <= hi * (1 + 1e-9)]


@dataclass(frozen=True)
class Axis:
    lo: float
    hi: float
    log: bool = False

    def frac(self, v: float) -> float:
        """Where ``v`` lies between lo (0) and hi (1)."""
        if self.log:
            return (math.log10(max(v, 1e-300)) - math.log10(self.lo)) / (math.log10(self.hi) - math.log10(self.lo))
        return (v - self.lo) / (self.hi - self.lo)

    def ticks(self) -> list[float]:
        return log_ticks(self.lo, self.hi) if self.log else linear_ticks(self.lo, self.hi)


def choose_axis(values: Iterable[float | None], from_zero: bool = False, pad: float = 0.0,
                log: bool | None = None) -> Axis:
    """The axis for ``values``: log by :func:`use_log_axis` unless ``log`` says; a linear one starts at zero
    when ``from_zero``; ``pad`` widens the top (linear) or both ends (log) by that fraction."""
    vals = [float(v) for v in values if v is not None and math.isfinite(v)]
    if not vals:
        return Axis(0.0, 1.0)
    if log is None:
        log = use_log_axis(vals)
    lo, hi = min(vals), max(vals)
    if log and lo > 0:
        return Axis(lo / (1 + pad), hi * (1 + pad), True)
    if from_zero:
        lo = min(lo, 0.0)
    hi = hi + (hi - lo) * pad if hi > lo else hi
    if hi <= lo:
        hi = lo + (abs(lo) or 1.0)
    return Axis(lo, hi)
