"""Fitting the 80 % ranges (``estimate/ranges.yaml``) from the leave-one-source-out errors, and checking them.

Every case's held-out error (``holdout.leave_one_source_out``: the prediction of a publication's cases by parameters
fitted without that publication) becomes ``u = log(measured / predicted)`` (speed: tokens per second, so a step time's
error turns sign). :func:`fit_ranges` takes the conformal quantiles of ``u``, pooled and per value of the regime
dimensions (``estimate/regimes.py``) that :func:`select_dimensions` picks for the kind (for memory, the subset of GPU
family, method and scale whose ranges give held-out publications the lowest mean interval score, Gneiting & Raftery
2007; speed: all three and the model's kind), then conformalises them (:func:`corrections`): each publication's cases
are scored against the ranges fitted on the other publications' errors, and the 90 % conformal quantile of how far they
fall below the low end (and above the high end) moves each end (conformalized quantile regression, Romano, Patterson &
Candes, "Conformalized Quantile Regression", NeurIPS 2019; the quantile at its fractional rank, so that coverage is the
level in expectation rather than at least it: :func:`conformal_upper`), pooled and per GPU family (Mondrian conformal
prediction, Vovk et al. 2005 ch. 4: coverage per category), a family's correction shrunk to the pooled one by its
publications. Each case weighs one, or each publication one in all (``WEIGHTING``, each kind's by its held-out interval
score; Dunn, Wasserman & Ramdas, JASA 2023, the pooled CDF of the groups). The procedure calibrates
itself on whatever errors the model makes: nothing is tuned by hand.
:func:`coverage` checks it the way it will be used, nested: each publication's cases against ranges fitted (and
corrected, their dimensions selected) on the errors of the other publications predicted by parameters that never saw
it (``nested_holdout.nested_source_out``)."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np

from trainsizer.estimate.ranges import KINDS, NOT_STATED, Band, band
from trainsizer.estimate.regimes import DIMENSIONS, SPEED_DIMENSIONS, scenario_regime
from trainsizer.evidence.case_terms import source_key
from trainsizer.evidence.cases import Case, CaseResult
from trainsizer.evidence.fold_pool import fold_map
from trainsizer.evidence.validate_json import CoverageRowJSON, KindCoverageJSON

LEVEL = 0.8
SHRINKAGE_SOURCES = 3  # a regime seen in s publications weighs s / (s + 3) against the pooled errors
HOLDOUT_KIND = {"memory": "memory", "speed": "throughput"}
# The kinds whose range needs the GPU part measured, not only its family: a part's speed follows its own ratios of
# compute, memory bandwidth and links (in accelerators.yaml an H20 has about a seventh of an H100's dense FLOP/s on
# HBM3 as fast), which the family's other parts do not show; its memory follows the family's kernels and allocator.
PART_KINDS = ("speed",)
# The regime dimensions each kind's ranges may be conditioned on. Memory: any subset of regimes.DIMENSIONS (none: the
# pooled range) picked by select_dimensions on the held-out interval score (held out by family its median error barely
# grows, 0.069 -> 0.074: the data says whether family, method or scale move it). Speed: all three and the model's kind,
# fixed: an unseen family's speed error grows (Hopper 0.08 -> 0.17 held out by family) and a MoE model's is 17 % against
# 9 %; layout dimensions (sharding, variable lengths, torch.compile) were tried and not kept (docs/accuracy.md).
CANDIDATES: dict[str, tuple[tuple[str, ...], ...]] = {
    "memory": tuple(c for k in range(len(DIMENSIONS), -1, -1) for c in combinations(DIMENSIONS, k)),
    "speed": (SPEED_DIMENSIONS,)}
# How the cases of one publication weigh in a kind's quantiles and corrections: "case", each case one (split
# conformal over cases), or "publication", each publication one in all (each case 1 / its publication's cases: the
# pooled CDF of the groups, Dunn, Wasserman & Ramdas, "Distribution-Free Prediction Sets for Two-Layer Hierarchical
# Models", JASA 2023: the prediction of a new group's member; a user's run is a new publication's case). Where one
# publication brings many cases whose errors move together (ms-swift's 42 single-A100 memory rows), case weights let
# it set the quantiles while it is in and leave the ranges narrow for it when it is the one held out. Each kind's
# weighting is the one whose best candidate scores lower on all publications held out in turn (weighting_scores,
# written to ranges.yaml; tests/test_ranges.py fails when the data come to prefer the other), fixed, like speed's
# dimensions, inside the nested check's folds (docs/accuracy.md, "80 % ranges": what a choice made again in each fold
# gives). Scored on the user view's errors (the ranges' residuals since they are fitted on it), memory prefers case
# weights (0.438 against 0.521: the profiles' errors are spread over more publications than the annotated ones
# were) and so does speed (0.763 against 0.794, 41 publications of 1 to 38 runs; docs/accuracy.md, "80 % ranges").
WEIGHTINGS = ("case", "publication")
WEIGHTING = {"memory": "case", "speed": "case"}


@dataclass(frozen=True)
class Residual:
    """One held-out case's error: ``u = log(measured / predicted)`` (speed: tokens per second), its publication
    (``case_terms.source_key``) and its regime (``regimes.scenario_regime``)."""

    id: str
    source: str
    u: float
    regime: Mapping[str, str]


@dataclass(frozen=True)
class Score:
    """A held-out case scored against a range fitted without its publication: how far below the low end
    (``lo - u``) and above the high end (``u - hi``) it falls (negative: inside)."""

    row: Residual
    below: float
    above: float


@dataclass(frozen=True)
class Hit:
    """A held-out case in the nested coverage check: how far out it lies as a share of its range's side
    (:func:`reach`; at most 1 inside) and its range's half-width."""

    row: Residual
    reach: float
    half_width: float


Residuals = dict[str, list[Residual]]  # per kind (memory | speed)
NestedResiduals = dict[str, Residuals]  # per outer publication P: the residuals of every other publication
Block = dict[str, Any]  # one kind's fitted block of ranges.yaml (the data file's shape, read by estimate/ranges.py)


def residuals(cases: list[Case], held: Mapping[str, Sequence[CaseResult]]) -> Residuals:
    """Per kind (memory | speed): each held-out case's ``u``, its publication and its regime; ``held``: per holdout
    kind (memory | throughput), the held-out predictions (``holdout.predictions``, ``nested_holdout``)."""
    by_id = {c.id: c for c in cases}
    out: Residuals = {}
    for kind in KINDS:
        rows = []
        for r in held.get(HOLDOUT_KIND[kind], ()):
            case = by_id[r.id]
            if not r.predicted or r.predicted <= 0:
                continue
            u = math.log(r.measured / r.predicted)
            m = case.measured
            if kind == "speed" and m.step_time_s is not None and m.tokens_per_s is None \
                    and m.tokens_per_s_per_gpu is None:
                u = -u  # a longer step than predicted is a slower run
            rows.append(Residual(r.id, source_key(case), u, scenario_regime(case.scenario)))
        out[kind] = rows
    return out


def conformal(values: list[float] | np.ndarray, level: float) -> tuple[float, float]:
    """The split-conformal lower and upper ranks for a central ``level`` range (Lei et al. 2018): the
    floor((n+1)a/2)-th and ceil((n+1)(1-a/2))-th smallest, clipped to the sample."""
    v = np.sort(np.asarray(values, dtype=float))
    n = len(v)
    a = (1 - level) / 2
    lo = int(math.floor((n + 1) * a)) - 1
    hi = int(math.ceil((n + 1) * (1 - a))) - 1
    return float(v[min(max(lo, 0), n - 1)]), float(v[min(max(hi, 0), n - 1)])


def group_weights(rows: list[Any], key: Callable[[Any], str] = lambda r: r.source) -> np.ndarray:
    """Each row's weight when every group (by default its publication) weighs one: 1 / (rows of its group)."""
    per = Counter(key(r) for r in rows)
    return np.asarray([1.0 / per[key(r)] for r in rows])


def _row(rows: list[Residual], level: float, weighting: str = "case") -> Block:
    us = [r.u for r in rows]
    if weighting == "publication":  # the pooled CDF of the publications (WEIGHTINGS)
        v, w, a = np.asarray(us, dtype=float), group_weights(rows), (1 - level) / 2
        lo, hi, median = weighted_quantile(v, w, a), weighted_quantile(v, w, 1 - a), weighted_quantile(v, w, 0.5)
    else:
        (lo, hi), median = conformal(us, level), float(np.median(us))
    mid = min(max(median, lo), hi)  # the typical error: the ranges are skewed (memory's long upper tail)
    return {"cases": len(rows), "sources": len({r.source for r in rows}), "lo": round(lo, 4),
            "mid": round(mid, 4), "hi": round(hi, 4)}


def _wide(rows: list[Residual], level: float) -> Block:
    """The range of a regime no case shows (a GPU family never measured): symmetric about the median, its
    half-width the ``level`` quantile of |u - median|, each case weighted by 1 / (cases of its GPU family) so that
    every family counts once. A new family is exchangeable with the measured families, not with their cases
    (Dunn, Wasserman & Ramdas, "Distribution-Free Prediction Sets for Two-Layer Hierarchical Models", JASA 2023:
    the pooled CDF of the groups); unweighted, the family with most cases would set the width alone."""
    us = np.asarray([r.u for r in rows], dtype=float)
    w = group_weights(rows, lambda r: r.regime["gpu_family"])
    mid = weighted_quantile(us, w, 0.5)
    half = weighted_quantile(np.abs(us - mid), w, level)
    return {"cases": len(rows), "sources": len({r.source for r in rows}), "lo": round(mid - half, 4),
            "mid": round(mid, 4), "hi": round(mid + half, 4)}


def weighted_quantile(values: np.ndarray, weights: np.ndarray, q: float) -> float:
    """The smallest value whose weighted share of the sample at or below it reaches ``q``."""
    order = np.argsort(values)
    v, cum = values[order], np.cumsum(weights[order]) / float(np.sum(weights))
    return float(v[min(int(np.searchsorted(cum, q - 1e-12)), len(v) - 1)])


def conformal_upper(values: list[float] | np.ndarray, level: float) -> float:
    """A one-sided conformal quantile of the scores ``values`` whose expected coverage is about ``level``, not at
    least ``level``: the order statistic at rank (n+1) level, interpolated between its two neighbours (Hyndman & Fan,
    "Sample Quantiles in Statistical Packages", Am. Stat. 1996, definition 6; clipped to the sample). A new
    exchangeable score falls at or below the k-th smallest of n with probability k / (n+1), so the fractional rank
    is the deterministic counterpart of the smoothed conformal predictor, which picks the upper neighbour with the
    fraction's probability and is exactly valid (Vovk, Gammerman & Shafer 2005, ch. 2.4); deterministic, so a refit
    is reproducible (on 15 normal scores: 90.8 % for a 90 % level). The ceil rank of split conformal (Lei et al.
    2018) is conservative by up to 1 / (n+1) a side (15 scores: the largest, 93.75 %): per GPU family (Mondrian, 10
    to 100 scores) 1 to 9 points of coverage beyond the level."""
    return float(np.quantile(np.asarray(values, dtype=float), level, method="weibull"))


def quantile_kind(rows: list[Residual], level: float = LEVEL, kind: str = "",
                  dims: tuple[str, ...] = DIMENSIONS, weighting: str = "case") -> Block:
    """One kind's quantiles: the dimensions they are conditioned on, how the cases weigh (WEIGHTINGS), pooled, the
    wide range, each dimension's values (no conformal correction yet), and for speed the GPU parts measured."""
    out: Block = {"dimensions": list(dims), "weighting": weighting, "pooled": _row(rows, level, weighting),
                           "no_evidence": _wide(rows, level)}
    for dim in dims:
        groups: dict[str, list[Residual]] = defaultdict(list)
        for r in rows:
            groups[r.regime[dim]].append(r)
        out[dim] = {value: _row(groups[value], level, weighting) for value in sorted(groups)}
    if kind in PART_KINDS:  # the GPU parts some case measured (ranges.py: an unmeasured part takes the wide range)
        out["gpu_parts"] = sorted({r.regime.get("gpu_part", r.regime["gpu_family"]) for r in rows})
    return out


def _wrap(kind: str, block: Block, level: float) -> dict[str, Any]:
    return {"level": level, "shrinkage_sources": SHRINKAGE_SOURCES, kind: block}


def _held_out_bands(kind: str, rows: list[Residual], level: float, fit: Callable[[list[Residual]], Block],
                    corrected: bool = True) -> Iterator[tuple[Residual, Band]]:
    """Each row with its band from the kind's block that ``fit`` builds on the other publications' rows, one
    publication held out at a time (rows in publication order)."""
    for source in dict.fromkeys(r.source for r in rows):
        fitted = _wrap(kind, fit([r for r in rows if r.source != source]), level)
        for r in rows:
            if r.source == source:
                yield r, band(kind, dict(r.regime), fitted, corrected=corrected)


def corrections(kind: str, rows: list[Residual], level: float = LEVEL,
                dims: tuple[str, ...] = DIMENSIONS, weighting: str = "case") -> Block:
    """How far to move each end of the quantile ranges so that a new publication's cases fall inside at ``level``:
    each publication's cases scored against the quantiles of the others (``lo - u`` below, ``u - hi`` above), the
    (1 + level) / 2 conformal quantile of each score, pooled and per GPU family (shrunk to the pooled one by
    s / (s + SHRINKAGE_SOURCES) over the family's s publications), from the scores of ranges that had evidence.
    ``unseen`` corrects the wide range of a regime no case shows: calibrated only on the scores of publications
    whose regime the others did not show (the only source of their GPU family), shrunk toward no correction by
    their publications, and never negative. A correction learned where the evidence was (a family's range too
    wide for its own family) says nothing about a family never measured (Mondrian conformal prediction: each
    category calibrated on its own scores, Vovk, Gammerman & Shafer 2005 ch. 4.5); ``model``: :func:`_kind_fixes`.
    Per GPU family only where the quantiles are conditioned on it (``dims``): else a family's correction would bring
    back what the selection left out. ``weighting`` "publication": each held-out publication's scores weigh one."""
    scores: list[Score] = []
    unseen: list[Score] = []
    for r, b in _held_out_bands(kind, rows, level, lambda rest: quantile_kind(rest, level, kind, dims, weighting),
                                False):
        (unseen if b.no_evidence else scores).append(Score(r, b.lo - r.u, r.u - b.hi))
    side = (1 + level) / 2

    def upper(group: list[Score], below: bool) -> float:
        """The ``side`` quantile of the group's scores below (or above) the range."""
        if not group:
            return 0.0
        values = [g.below if below else g.above for g in group]
        if weighting == "publication":
            return weighted_quantile(np.asarray(values), group_weights(group, lambda g: g.row.source), side)
        return conformal_upper(values, side)

    def row(group: list[Score]) -> dict[str, Any]:
        return {"cases": len(group), "sources": len({g.row.source for g in group}),
                "lo": upper(group, True), "hi": upper(group, False)}
    # by model kind: a family's correction fitted on its dense models' cases, each kind's on top (``model``)
    base = [g for g in scores if g.row.regime.get("model") == "dense"] if "model" in dims else scores
    pooled = row(scores or unseen)
    families: dict[str, list[Score]] = defaultdict(list)
    for g in base if "gpu_family" in dims else ():
        families[g.row.regime["gpu_family"]].append(g)
    out: Block = {"pooled": {k: round(v, 4) if isinstance(v, float) else v for k, v in pooled.items()},
                           "gpu_family": {}}
    for fam in sorted(families):
        own = row(families[fam])
        w = own["sources"] / (own["sources"] + SHRINKAGE_SOURCES)
        out["gpu_family"][fam] = {"cases": own["cases"], "sources": own["sources"],
                                  **{e: round(w * own[e] + (1 - w) * pooled[e], 4) for e in ("lo", "hi")}}
    new = row(unseen)
    w = new["sources"] / (new["sources"] + SHRINKAGE_SOURCES)
    out["unseen"] = {"cases": new["cases"], "sources": new["sources"],
                     **{e: round(max(w * new[e], 0.0), 4) for e in ("lo", "hi")}}
    if "model" in dims:
        out["model"] = _kind_fixes(scores, out, row)
    return out


def _kind_fixes(scores: list[Score], fixes: Block, row: Callable[[list[Score]], dict[str, Any]]) -> Block:
    """How much further each model kind's ends move out: its cases against the family-corrected ranges (``fixes``: a
    MoE model's errors are not its family's), ``row``'s quantiles shrunk toward none by publications, never in."""
    kinds: dict[str, list[Score]] = defaultdict(list)
    for g in scores:
        fix = fixes["gpu_family"].get(g.row.regime["gpu_family"]) or fixes["pooled"]
        kinds[g.row.regime["model"]].append(Score(g.row, g.below - fix["lo"], g.above - fix["hi"]))
    out: Block = {}
    for value in sorted(kinds):
        own = row(kinds[value])
        w = own["sources"] / (own["sources"] + SHRINKAGE_SOURCES)
        out[value] = {"cases": own["cases"], "sources": own["sources"],
                      **{e: round(max(w * own[e], 0.0), 4) for e in ("lo", "hi")}}
    return out


# A kind's ranges need the errors of two publications at least: their conformal corrections score each publication
# against the quantiles of the others (corrections), which one publication alone does not have.
MIN_FIT_SOURCES = 2


def fittable(rows: list[Residual]) -> bool:
    """Whether ``rows`` come from enough publications (:data:`MIN_FIT_SOURCES`) for :func:`fit_kind`."""
    return len({r.source for r in rows}) >= MIN_FIT_SOURCES


def fit_kind(kind: str, rows: list[Residual], level: float = LEVEL,
             dims: tuple[str, ...] | None = None, weighting: str | None = None) -> Block:
    """One kind's block of ranges.yaml: the quantiles (:func:`quantile_kind`) on ``dims`` (None: the candidate
    :func:`select_dimensions` picks on ``rows``, with its scores) weighted by ``weighting`` (None: the kind's
    WEIGHTING) and their conformal corrections. ``rows`` must be :func:`fittable`."""
    if not fittable(rows):
        raise ValueError(f"{kind} ranges need the errors of {MIN_FIT_SOURCES} publications at least")
    weighting = weighting or WEIGHTING[kind]
    chosen: dict[str, Any] = {}
    if dims is None:
        dims, chosen = select_dimensions(kind, rows, level, weighting)
    return {**quantile_kind(rows, level, kind, dims, weighting),
            "correction": corrections(kind, rows, level, dims, weighting), **chosen}


def interval_score(lo: float, hi: float, u: float, level: float = LEVEL) -> float:
    """The interval score of the central ``level`` range [lo, hi] for the outcome u (Gneiting & Raftery, "Strictly
    Proper Scoring Rules, Prediction, and Estimation", JASA 2007, eq. 43): its width plus 2 / (1 - level) times how
    far u falls outside. Lower is better; it rewards a narrow range only as long as it still holds the outcomes."""
    alpha = 1 - level
    return (hi - lo) + 2 / alpha * max(lo - u, 0.0) + 2 / alpha * max(u - hi, 0.0)


def held_out_scores(kind: str, rows: list[Residual], dims: tuple[str, ...],
                    level: float = LEVEL, weighting: str = "case") -> tuple[float, float]:
    """(mean interval score, share inside) of each publication's cases against the ranges fitted, corrected, on
    ``dims`` weighted by ``weighting`` from the other publications' errors."""
    scores, inside = [], 0
    for r, b in _held_out_bands(kind, rows, level, lambda rest: fit_kind(kind, rest, level, dims, weighting)):
        scores.append(interval_score(b.lo, b.hi, r.u, level))
        inside += b.lo <= r.u <= b.hi
    return (float(np.mean(scores)), inside / len(scores)) if scores else (math.inf, 0.0)


def select_dimensions(kind: str, rows: list[Residual], level: float = LEVEL,
                      weighting: str | None = None) -> tuple[tuple[str, ...], dict[str, Any]]:
    """The regime dimensions of ``kind``'s ranges: among CANDIDATES[kind], the one whose ranges (fitted and
    corrected on the other publications' errors) give each held-out publication's cases the lowest mean
    :func:`interval_score` (the first, the most dimensions, on a tie). The score is proper: it rewards the narrowest
    ranges that still hold their cases, so it needs no coverage filter (a filter on a share that moves a case at a
    time would flip the choice on one case); the nested check (``coverage``) then tests the share inside. Decided by
    this rule on whatever errors the cases show, at every refit and inside every fold of that check, never by hand
    (Varma & Simon 2006: the selection inside the outer fold). The cases weigh by ``weighting`` (None: the kind's
    WEIGHTING). With the dimensions, ``selection``: each candidate's score and share inside."""
    candidates = CANDIDATES[kind]
    weighting = weighting or WEIGHTING[kind]
    if len(candidates) == 1 or len({r.source for r in rows}) < 3:  # scoring one held out needs two to correct
        return candidates[0], {}
    scored = {dims: held_out_scores(kind, rows, dims, level, weighting) for dims in candidates}
    best = min(scored, key=lambda d: scored[d][0])
    return best, {"selection": {"criterion": "mean interval score of held-out publications", "candidates": [
        {"dimensions": list(d), "interval_score": round(sc, 4), "coverage": round(cov, 4)}
        for d, (sc, cov) in scored.items()]}}


def weighting_scores(kind: str, rows: list[Residual], level: float = LEVEL,
                     fitted: Block | None = None) -> dict[str, Any]:
    """Per weighting of WEIGHTINGS, the mean interval score of held-out publications for the best of the kind's
    candidate dimensions under it (:func:`held_out_scores`): the evidence for the kind's WEIGHTING. ``fitted``: the
    kind's block (:func:`fit_kind`), whose ``selection`` already scored every candidate under its own weighting."""
    fitted = fitted or {}
    own = [c["interval_score"] for c in fitted.get("selection", {}).get("candidates", [])]

    def best(weighting: str) -> float:
        if weighting == fitted.get("weighting") and own:
            return min(own)
        return round(min(held_out_scores(kind, rows, dims, level, weighting)[0] for dims in CANDIDATES[kind]), 4)
    return {"criterion": "mean interval score of held-out publications, best candidate dimensions",
            "scores": {w: best(w) for w in WEIGHTINGS}}


def fit_ranges(res: Residuals, level: float = LEVEL,
               dims: dict[str, tuple[str, ...]] | None = None) -> dict[str, Any]:
    """The fitted ranges (ranges.yaml's data, without its provenance header); ``dims`` per kind (None: selected)."""
    out: dict[str, Any] = {"level": level, "shrinkage_sources": SHRINKAGE_SOURCES}
    for k in KINDS:
        out[k] = fit_kind(k, res[k], level, (dims or {}).get(k))
        if dims is None:
            out[k]["weighting_selection"] = weighting_scores(k, res[k], level, out[k])
    return out


@dataclass(frozen=True, slots=True)
class CoverageRow:
    """A regime's nested coverage (:func:`coverage_row`)."""

    count: int
    sources: int
    coverage: float
    median_half_width: float | None
    widen_for_75: float | None

    def to_dict(self) -> CoverageRowJSON:
        return {"count": self.count, "sources": self.sources, "coverage": self.coverage,
                "median_half_width": self.median_half_width, "widen_for_75": self.widen_for_75}


@dataclass(frozen=True, slots=True)
class KindCoverage:
    """One kind's nested coverage: overall and per value of each regime dimension; ``unchecked``: the held-out cases
    whose publication left too few others to fit a range from (:data:`MIN_FIT_SOURCES`)."""

    overall: CoverageRow
    by_regime: dict[str, dict[str, CoverageRow]]
    unchecked: int = 0

    def to_dict(self) -> KindCoverageJSON:
        by_regime = {dim: {v: row.to_dict() for v, row in rows.items()} for dim, rows in self.by_regime.items()}
        return {**self.overall.to_dict(), "by_regime": by_regime, "unchecked": self.unchecked}


def coverage(res: Residuals, inner: NestedResiduals, level: float = LEVEL,
             floor: NestedResiduals | None = None) -> dict[str, KindCoverage]:
    """Nested leave-one-source-out coverage: each publication P's cases (``res``: predicted without P) against
    ranges fitted by the whole procedure on ``inner[P]`` (the other publications' errors, predicted by parameters
    fitted without P either: ``nested_holdout``), so nothing behind P's range comes from P. Per kind: the share
    inside (overall and per regime value, each with its median half-width in log units, about a share of the
    estimate) and the count. With ``floor`` (the framework-not-stated check: ``res`` and ``inner`` are the errors
    of the cases scored with no framework named), each range is the wider of the one fitted on ``inner[P]`` and the
    one fitted on ``floor[P]`` (the user view's), as ``estimate/ranges.py`` gives a scenario that names none."""
    out: dict[str, KindCoverage] = {}
    for kind in KINDS:
        hits = _hits(kind, res[kind], inner, level, floor)
        unchecked = len(res[kind]) - len(hits)
        per: dict[str, dict[str, CoverageRow]] = {}
        for dim in SPEED_DIMENSIONS:
            groups: dict[str, list[Hit]] = defaultdict(list)
            for hit in hits:
                groups[hit.row.regime[dim]].append(hit)
            per[dim] = {v: coverage_row(g) for v, g in sorted(groups.items())}
        out[kind] = KindCoverage(coverage_row(hits), per, unchecked)
    return out


def _hits(kind: str, rows: list[Residual], inner: NestedResiduals, level: float,
          floor: NestedResiduals | None) -> list[Hit]:
    """Each row against the band fitted without its publication (:func:`coverage`); a publication whose band has
    too few others to be fitted from (:func:`fittable`) is left out. Each publication's band in a worker."""
    def source_hits(source: str) -> list[Hit]:
        train = [r for r in inner.get(source, {}).get(kind, []) if r.source != source]
        stated = [r for r in (floor or {}).get(source, {}).get(kind, []) if r.source != source]
        if not fittable(train) or (floor is not None and not fittable(stated)):
            return []
        fitted = _wrap(kind, fit_kind(kind, train, level), level)
        if floor is not None:
            fitted = {**_wrap(kind, fit_kind(kind, stated, level), level), NOT_STATED: {kind: fitted[kind]}}
        extra = {"framework": "not_stated"} if floor is not None else {}
        bands = [(r, band(kind, {**r.regime, **extra}, fitted)) for r in rows if r.source == source]
        return [Hit(r, reach(b, r.u), (b.hi - b.lo) / 2) for r, b in bands]
    return [h for hits in fold_map(source_hits, list(dict.fromkeys(r.source for r in rows))) for h in hits]


def reach(b: Band, u: float) -> float:
    """How far ``u`` lies from the band's median, as a share of the band's side it lies on: at most 1 inside. The
    factor by which both sides would have to widen about the median for ``u`` to fall inside."""
    c = b.center
    side = (b.hi - c) if u >= c else (c - b.lo)
    return abs(u - c) / side if side > 0 else (0.0 if u == c else math.inf)


def coverage_row(hits: list[Hit]) -> CoverageRow:
    """A regime's nested coverage: its cases, the publications they come from (errors within one move together, so
    the publications are the independent draws), the share inside, the median half-width, and ``widen_for_75``: the
    factor on both sides of its ranges (about their medians) at which 75 % of its cases would fall inside (the issue's
    lower bound; at most 1 where they already do), what a regime below the band would cost in width."""
    if not hits:
        return CoverageRow(0, 0, 0.0, None, None)
    reaches = sorted(h.reach for h in hits)
    need = reaches[min(math.ceil(0.75 * len(reaches)), len(reaches)) - 1]
    return CoverageRow(len(hits), len({h.row.source for h in hits}),
                       round(sum(h.reach <= 1.0 for h in hits) / len(hits), 4),
                       round(float(np.median([h.half_width for h in hits])), 4),
                       _up_to_hundredths(need) if math.isfinite(need) else None)


def _up_to_hundredths(factor: float) -> float:
    """``factor`` rounded up to two decimals (a need of 1.003 reads 1.01, never the 1.0 of a regime already inside),
    float noise below a millionth ignored."""
    return math.ceil(round(factor * 100, 6)) / 100


def nested_residuals(cases: list[Case], memory_params: Any = None, perf_params: Any = None) -> NestedResiduals:
    """Per publication P: :func:`residuals` of every other publication's cases, predicted by parameters fitted
    without P and without their own publication (``nested_holdout.nested_source_out``): what :func:`coverage`
    builds P's ranges from."""
    from trainsizer.evidence.nested_holdout import nested_source_out

    return {source: residuals(cases, held)
            for source, held in nested_source_out(cases, memory_params, perf_params).items()}


def nested_residuals_views(cases: list[Case], views: dict[str, list[Case]], memory_params: Any = None,
                           perf_params: Any = None) -> dict[str, NestedResiduals]:
    """:func:`nested_residuals` per view (``user_view.case_views``), the fits made once on ``cases`` (as annotated)."""
    from trainsizer.evidence.nested_holdout import nested_source_out_views

    held = nested_source_out_views(cases, views, memory_params, perf_params)
    return {name: {source: residuals(views[name], h) for source, h in held[name].items()} for name in views}
