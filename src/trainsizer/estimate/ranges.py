"""80 % ranges around the point estimates, from the model's cross-validated errors (``ranges.yaml``).

``tools/fit_ranges.py`` writes ``ranges.yaml`` from the leave-one-source-out errors of every shipped case
(``evidence/ranges_fit.py``): for memory and for speed, the conformal 10 % and 90 % quantiles of
``u = log(measured / predicted)`` over all cases (``pooled``; ``weighting``: each case weighs one, or each publication
one in all) and per value of each regime dimension the fit chose
for the kind (``dimensions``, among ``regimes.py``'s GPU family, method, scale: for memory the set whose ranges
scored best on publications held out in turn, ``ranges_fit.select_dimensions``; for speed all three and the model's
kind, dense or MoE). A scenario's
range combines its dimensions: each dimension's quantiles shrunk toward the pooled ones by
``s / (s + shrinkage_sources)`` over the s publications that show it (errors within one publication move together,
so its publications, not its cases, are the evidence); the median is the mean of the dimensions' shrunk medians, and
each side as wide as the widest dimension's (:func:`combine`: shrunk once, by publications, not a second time by
averaging with dimensions that pool every family). A dimension whose value no
case shows (a GPU family never measured, where the kind's ranges are conditioned on the family) gives the wide range
(``no_evidence``: symmetric about the median, every measured family weighing one), and the range says so; so does a
speed range whose GPU part no case measured (``gpu_parts``: an H20 in the measured Hopper family). Each end
is then moved by its conformal correction (``correction``: the GPU family's where the ranges are conditioned on it,
else the pooled one; a wide range only by ``unseen``, calibrated where a regime was unseen and never narrowing;
``ranges_fit.corrections``), so that a new publication's cases fall inside at the stated level.

Split conformal prediction: Vovk, Gammerman & Shafer, "Algorithmic Learning in a Random World" (2005); Lei et al.,
"Distribution-Free Predictive Inference for Regression", JASA 2018 (the ceil((n+1)(1-a)) rank); Romano, Patterson &
Candes, "Conformalized Quantile Regression", NeurIPS 2019 (the corrections). The choice of dimensions: Gneiting &
Raftery, "Strictly Proper Scoring Rules, Prediction, and Estimation", JASA 2007 (the interval score). Shrinkage toward
the pooled estimate: James & Stein 1961; Efron & Morris, "Stein's Paradox in Statistics", Sci. Am. 1977.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from statistics import NormalDist
from typing import Any

from trainsizer.datafiles import packaged_yaml
from trainsizer.estimate.regimes import DIMENSIONS

PACKAGE = "trainsizer.estimate"
RISK = 0.05  # a chance of running out of memory above this is a real risk, said where the option is shown
RANGES_FILE = "ranges.yaml"
KINDS = ("memory", "speed")
# ranges.yaml's block of ranges fitted on the cases scored with no framework named (evidence/user_view.UNSTATED): a
# scenario that names none gets, per end, the wider of its regime's range and this block's
NOT_STATED = "framework_not_stated"


@dataclass(frozen=True)
class Band:
    """The 80 % range of ``measured / predicted`` as log factors: the truth lies in
    [estimate x e^lo, estimate x e^hi] in 80 % of runs like this one (speed: tokens per second)."""

    kind: str
    lo: float
    hi: float
    level: float
    cases: int  # cases behind the regime (the fewest over its dimensions)
    no_evidence: tuple[str, ...] = ()  # dimension=value pairs no case shows
    mid: float | None = None  # the median log factor (None: the middle of the range)
    framework_widened: bool = False  # widened because the scenario names no framework (NOT_STATED)

    def scale(self, value: float) -> tuple[float, float]:
        """[lo, hi] of a quantity that grows with the measured one (memory; speed: tokens per second)."""
        return value * math.exp(self.lo), value * math.exp(self.hi)

    def scale_inverse(self, value: float) -> tuple[float, float]:
        """[lo, hi] of a quantity inverse to speed (step time, time to train, GPU-hours, cost per run)."""
        return value * math.exp(-self.hi), value * math.exp(-self.lo)

    @property
    def center(self) -> float:
        """The median log factor: the residuals' median where fitted, else the middle of the range."""
        return (self.lo + self.hi) / 2 if self.mid is None else min(max(self.mid, self.lo), self.hi)

    def draw(self, z: Any) -> Any:
        """``u`` at standard normal draws ``z`` (numbers or arrays) from the split normal :meth:`p_above` reads: the
        median at :attr:`center`, each side spread from that side of the range, so sampled outcomes and the chances
        said beside them agree."""
        import numpy as np  # only sampling needs numpy: an estimate's ranges do not

        z80 = 1.2815516
        below = max((self.center - self.lo) / z80, 1e-6)
        above = max((self.hi - self.center) / z80, 1e-6)
        return self.center + z * np.where(np.asarray(z) < 0, below, above)

    def p_above(self, predicted: float, limit: float) -> float:
        """The chance the measured value exceeds ``limit`` given the estimate ``predicted``: ``u`` a split normal
        with its median at :attr:`center` and each side's spread from that side of the range (the errors are
        skewed: memory's upper tail is longer; John 1982, "The three-parameter two-piece normal family")."""
        if predicted <= 0:
            return 0.0
        if limit <= 0:
            return 1.0
        x, z80 = math.log(limit / predicted), 1.2815516
        if x >= self.center:
            side = max((self.hi - self.center) / z80, 1e-6)
            return 0.5 * math.erfc((x - self.center) / side / math.sqrt(2))
        side = max((self.center - self.lo) / z80, 1e-6)
        return 1.0 - 0.5 * math.erfc((self.center - x) / side / math.sqrt(2))

    def safe_fraction(self, risk: float) -> float:
        """The largest estimate, as a share of the capacity, whose chance of exceeding it (:meth:`p_above`) is at
        most ``risk`` (below one half): the capacity over e^(center + z(1 - risk) x the upper side's spread)."""
        side = max((self.hi - self.center) / 1.2815516, 1e-6)
        return math.exp(-(self.center + side * _upper_quantile(risk)))

    def to_dict(self) -> dict[str, Any]:
        return {"level": self.level, "cases": self.cases, "no_evidence": list(self.no_evidence)}


@cache
def _upper_quantile(risk: float) -> float:
    """The standard normal's quantile at 1 - ``risk`` (a plan asks it of one risk some hundreds of times)."""
    return NormalDist().inv_cdf(1.0 - risk)


def framework_regime(regime: dict[str, str], framework: str | None) -> dict[str, str]:
    """``regime`` with whether the scenario names its framework (``training.framework``; ``frameworks.resolve``
    leaves an assumed one unnamed): a scenario that names none gets the wider range (``NOT_STATED``)."""
    return {**regime, "framework": "stated" if framework else "not_stated"}


@cache
def shipped_ranges() -> dict[str, Any]:
    """The fitted ranges shipped with the package (``ranges.yaml``)."""
    return packaged_yaml(PACKAGE, RANGES_FILE)


def band(kind: str, regime: dict[str, str], data: dict[str, Any] | None = None, corrected: bool = True) -> Band:
    """The range of ``kind`` (memory | speed) for a scenario in ``regime`` (``regimes.regime``): the quantiles,
    each end then moved by its conformal correction (the GPU family's, else the pooled one), unless not
    ``corrected`` (the fit scores the uncorrected ranges). The shipped ranges' bands are computed once per regime
    (a plan asks for the same few hundreds of times)."""
    if data is None:
        return _shipped_band(kind, tuple(sorted(regime.items())), corrected)
    return _band(kind, regime, data, corrected)


def combine(los: list[float], mids: list[float], his: list[float], pooled: dict[str, Any]) -> tuple[float, Any, float]:
    """(lo, mid, hi) of a regime from its dimensions' shrunk rows: the median the mean of theirs, each side as wide as
    the widest dimension's on that side (its end's distance from its own median). A dimension's row is its shrunk
    quantiles; averaging their ends would shrink a dimension that shows a wide spread (a GPU family whose
    publications disagree) toward dimensions that pool every family (the method ``full``: nearly all cases) a second
    time, after its shrinkage by publications. No row: the pooled range."""
    if not los:
        return pooled["lo"], pooled.get("mid"), pooled["hi"]
    mid = sum(mids) / len(mids)
    below = max(m - end for end, m in zip(los, mids, strict=True))
    above = max(end - m for end, m in zip(his, mids, strict=True))
    return mid - below, mid, mid + above


@cache
def _shipped_band(kind: str, regime: tuple[tuple[str, str], ...], corrected: bool) -> Band:
    return _band(kind, dict(regime), shipped_ranges(), corrected)


def _band(kind: str, regime: dict[str, str], data: dict[str, Any], corrected: bool) -> Band:
    """The regime's band; a scenario that names no framework (``regime["framework"]`` ``not_stated``) the widest of
    that band and the one fitted on the errors of the cases scored with no framework named (``NOT_STATED``)."""
    own = _regime_band(kind, regime, data, corrected)
    other = (data.get(NOT_STATED) or {}).get(kind)
    if regime.get("framework") != "not_stated" or not other:
        return own
    wide = _regime_band(kind, regime, {**data, kind: other}, corrected)
    lo, hi = min(own.lo, wide.lo), max(own.hi, wide.hi)
    return Band(kind, lo, hi, own.level, min(own.cases, wide.cases),
                tuple(dict.fromkeys(own.no_evidence + wide.no_evidence)), wide.mid,
                framework_widened=(lo, hi) != (own.lo, own.hi))


def _regime_band(kind: str, regime: dict[str, str], data: dict[str, Any], corrected: bool) -> Band:
    fit = data[kind]
    pooled = fit["pooled"]
    k = float(data["shrinkage_sources"])
    los, mids, his, counts, missing = [], [], [], [], []
    chosen = fit.get("dimensions")  # the dimensions the fit chose for this kind (ranges_fit); [] = the pooled range
    for dim in DIMENSIONS if chosen is None else chosen:
        row = (fit.get(dim) or {}).get(regime.get(dim, ""))
        n = int(row["sources"]) if row else 0
        counts.append(int(row["cases"]) if row else 0)
        if not n:
            missing.append(f"{dim}={regime.get(dim, '?')}")
            continue
        w = n / (n + k)
        los.append(w * row["lo"] + (1 - w) * pooled["lo"])
        mids.append(w * row.get("mid", 0.0) + (1 - w) * pooled.get("mid", 0.0))
        his.append(w * row["hi"] + (1 - w) * pooled["hi"])
    part = regime.get("gpu_part")
    new_part = "gpu_parts" in fit and part and part not in fit["gpu_parts"] and not missing
    if new_part:
        missing.append(f"gpu_part={part}")  # a seen family, a part no case measured: its speed is a new regime
    lo, mid, hi = combine(los, mids, his, pooled)
    if missing:
        wide = fit["no_evidence"]
        lo, hi = min(lo, wide["lo"]), max(hi, wide["hi"])
    fix = fit.get("correction") if corrected else None
    if fix:
        if missing:  # the wide range: corrected only by what unseen regimes needed, never narrowed (ranges_fit)
            shift = fix.get("unseen") or {e: max(fix["pooled"][e], 0.0) for e in ("lo", "hi")}
        else:
            shift = fix["gpu_family"].get(regime.get("gpu_family", "")) or fix["pooled"]
            model_fix = (fix.get("model") or {}).get(regime.get("model", ""))  # what the model's kind still needs
            if model_fix:
                shift = {e: shift[e] + model_fix[e] for e in ("lo", "hi")}
        lo, hi = lo - shift["lo"], hi + shift["hi"]
        if mid is not None:  # a negative correction never takes an end past the median
            lo, hi = min(lo, mid), max(hi, mid)
    if new_part:  # never narrower than its family's own range, whichever way the two were corrected
        family = _regime_band(kind, {**regime, "gpu_part": ""}, data, corrected)
        lo, hi = min(lo, family.lo), max(hi, family.hi)
    return Band(kind, lo, hi, float(data["level"]), min(counts, default=int(pooled["cases"])), tuple(missing), mid)
