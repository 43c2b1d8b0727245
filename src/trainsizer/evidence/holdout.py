"""Cross-validation: the accuracy a user can expect on runs the model has not seen.

Leave-one-source-out: for each publication (:func:`~trainsizer.evidence.case_terms.source_key`), the free
parameters are fitted again on every other publication's cases the way the shipped parameters were fitted on all of
them (``calibrate.REFINE_ROUNDS`` rounds of the same coordinate descent and grids as ``trainsizer calibrate``, from
the shared cases' fit, ``fit.start``), and that publication's cases are predicted with them. Leave-one-family-out:
the same with each GPU family (the catalog's ``architecture``: hopper, ampere, ada, davinci = Ascend, ...) held out,
as a new part arrives without data: the held-out family's own fitted efficiency is set to the model's ``default``
and its MFU ceiling rows are removed (it gets the ceiling of a GPU with no measured run), so nothing of it comes
from its cases. Every fold derives its MFU ceilings from its own training cases (``mfu_evidence.fold_ceilings``): a
held-out case never bounds its own prediction. In every fold a family that no training case shows takes its
efficiency from its measured matmul efficiency (``calibrate.family_prior``), so a publication that alone shows a
family does not lend it its own fitted value. Every case is predicted once and counted: cases the data flags as
implausible stay out of the fits but not out of the error. Beside the absolute errors, each summary gives the signed
median per GPU family and per training method (positive = predicted too fast / too large). """

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from trainsizer.estimate.model_params import MemoryModel, PerformanceModel
from trainsizer.estimate.typed_data import Table, value_at, with_value
from trainsizer.evidence.calibrate import (
    MEMORY_FREE,
    PERFORMANCE_FREE,
    REFINE_ROUNDS,
    family_prior,
    fit_split,
    fold_start,
    settle_priors,
)
from trainsizer.evidence.case_terms import CaseTerms, build_case_terms
from trainsizer.evidence.cases import Case, CaseResult, Summary, summarize
from trainsizer.evidence.fold_pool import fold_map
from trainsizer.evidence.mfu_evidence import fold_ceilings
from trainsizer.evidence.validate_json import KindHoldoutJSON, SignedSummaryJSON

KINDS = {"memory": MEMORY_FREE, "throughput": PERFORMANCE_FREE}
GROUPINGS = ("source", "family")
# A step-time figure is larger when the prediction is slower: its error is turned round so that every signed figure
# reads "positive = predicted too fast" for speed and "too large" for memory.
SLOWER_WHEN_LARGER = ("step_time_s",)


def compared_metric(label: str) -> str:
    """The quantity a result compares: ``tflops_per_gpu (as X)`` compares X."""
    return label.split("(as ", 1)[1].rstrip(")") if "(as " in label else label


def oriented_error(result: CaseResult) -> float | None:
    """``result.error`` signed so that positive means predicted too fast (speed) or too large (memory)."""
    if result.error is None:
        return None
    return -result.error if compared_metric(result.metric) in SLOWER_WHEN_LARGER else result.error


@dataclass(frozen=True, slots=True)
class SignedSummary:
    """Count, median and p90 of |error| and the signed median (:func:`oriented_error`), each rounded to 4 places."""

    count: int
    median_abs_error: float | None
    p90_abs_error: float | None
    signed_median_error: float | None

    def to_dict(self) -> SignedSummaryJSON:
        return {"count": self.count, "median_abs_error": self.median_abs_error, "p90_abs_error": self.p90_abs_error,
                "signed_median_error": self.signed_median_error}


def _rounded(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def signed_summary(results: Sequence[CaseResult]) -> SignedSummary:
    """The :class:`SignedSummary` of ``results``."""
    s = summarize(list(results))
    signed = [e for e in (oriented_error(r) for r in results) if e is not None]
    return SignedSummary(s.count, _rounded(s.median_abs_error), _rounded(s.p90_abs_error),
                         round(float(np.median(signed)), 4) if signed else None)


def _groups(results: Sequence[CaseResult], key_of: dict[str, str]) -> dict[str, SignedSummary]:
    keys = sorted(dict.fromkeys(key_of[r.id] for r in results))
    return {k: signed_summary([r for r in results if key_of[r.id] == k]) for k in keys}


@dataclass(frozen=True, slots=True, kw_only=True)
class KindHoldout:
    """One kind's (memory | throughput) held-out predictions, each group of ``by`` (source | family) held out in
    turn: their summary, the cases that could not be predicted at all (id, reason), the signed summary per held-out
    group and per GPU family, training method and model kind (``signed``), and every prediction."""

    by: str
    summary: Summary
    signed_median_error: float | None
    excluded_cases: tuple[tuple[str, str], ...]
    by_group: dict[str, SignedSummary]
    signed: dict[str, dict[str, SignedSummary]]
    results: tuple[CaseResult, ...]

    @property
    def groups(self) -> int:
        """How many groups were held out (publications or GPU families)."""
        return len(self.by_group)

    @property
    def cell(self) -> SignedSummary:
        """Count, median, p90 and signed median, as the accuracy tables show them."""
        s = self.summary
        return SignedSummary(s.count, _rounded(s.median_abs_error), _rounded(s.p90_abs_error),
                             self.signed_median_error)

    def to_dict(self) -> KindHoldoutJSON:
        """The JSON of ``trainsizer validate --holdout`` for this kind."""
        summary = self.summary.to_dict()
        return {"holdout": self.by, "count": summary["count"], "median_abs_error": summary["median_abs_error"],
                "p90_abs_error": summary["p90_abs_error"], "within_15pct": summary["within_15pct"],
                "signed_median_error": self.signed_median_error, "excluded": len(self.excluded_cases),
                "excluded_cases": [{"id": i, "reason": r} for i, r in self.excluded_cases],
                "sources" if self.by == "source" else "families": self.groups,
                f"by_{self.by}": {k: v.to_dict() for k, v in self.by_group.items()},
                "signed": {dim: {k: v.to_dict() for k, v in rows.items()} for dim, rows in self.signed.items()},
                "cases": [r.to_dict() for r in self.results]}


HeldOut = dict[str, KindHoldout]  # per kind: memory, throughput


def predictions(held: HeldOut) -> dict[str, tuple[CaseResult, ...]]:
    """Per kind, every held-out prediction (what ``ranges_fit.residuals`` reads)."""
    return {kind: h.results for kind, h in held.items()}


EFFICIENCY = "compute.max_efficiency"  # the per-family fitted efficiency (calibrate.PERFORMANCE_FREE)


def _without_family(params: Any, family: str, free: Any) -> Any:
    """``params`` as they stand for a family with no case: a performance model's efficiency of that family, where the
    fit sets it, at the table's ``default``, and the family's MFU ceiling rows removed; a memory model unchanged (it
    has no per-family parameter). A value the data assumes from a source (not fitted) is kept."""
    if not isinstance(params, PerformanceModel):
        return params
    out = params
    if (EFFICIENCY, family) in {(d, k) for d, k, _ in free}:
        out = with_value(out, EFFICIENCY, family, value_at(out, EFFICIENCY, "default"))
    ceilings = out.mfu_ceiling
    if ceilings is not None and family in ceilings.table:
        table = Table({a: rows for a, rows in ceilings.table.items() if a != family})
        out = replace(out, mfu_ceiling=replace(ceilings, table=table))
    return out


def _fold(terms: CaseTerms, groups: list[str], group: str, base: Any, free: Any, rounds: int,
          held_family: str | None) -> Any:
    """The parameters fitted, as the shipped fit is, on every case whose group is not ``group``."""
    candidates = [i for i, g in enumerate(groups) if g != group]
    train = terms.fit_rows(candidates)
    start = _without_family(base, held_family, free) if held_family else base
    seen = {terms.families[i] for i in train}  # the training cases' families: a family whose cases all stay out of
    # fits (fit.exclude) is seen by no fit, and its ceiling is not evidence for the prior of another
    if isinstance(start, PerformanceModel):  # a family no training case shows: its efficiency from physics
        start = family_prior(settle_priors(start, free, seen), seen)
        start = fold_ceilings(start, terms, train)  # MFU ceilings from the training cases alone
    free_here = [f for f in free if not (held_family and (f[0], f[1]) == (EFFICIENCY, held_family))]
    params = fit_split(terms, candidates, start, free_here, rounds)[0] if train else start
    return settle_priors(params, free, seen)  # as the shipped fit writes them (tools/fitting.fit_shipped)


GroupOf = Callable[[CaseTerms], list[str]]
GROUP_OF: dict[str, GroupOf] = {"source": lambda t: t.sources, "family": lambda t: t.families}


def leave_one_out(cases: list[Case], by: str = "source", memory_params: MemoryModel | None = None,
                  perf_params: PerformanceModel | None = None, rounds: int = REFINE_ROUNDS,
                  scored: list[Case] | None = None) -> HeldOut:
    """Per kind (memory, throughput), a :class:`KindHoldout` with each group of ``by`` (source | family) held out:
    count, median and p90 absolute error of the held-out predictions, ``excluded`` (cases that could not be predicted
    at all: 0 unless a case cannot be expressed), the error per held-out group (``by_source`` / ``by_family``) and
    the signed medians per GPU family and per training method (``signed``). The folds are fitted on ``cases``; the
    held-out predictions are of ``scored`` (the same cases in another view, ``user_view``; default ``cases``)."""
    return leave_one_out_views(cases, {"": scored if scored is not None else cases}, by, memory_params,
                               perf_params, rounds)[""]


def leave_one_out_views(cases: list[Case], views: dict[str, list[Case]], by: str = "source",
                        memory_params: MemoryModel | None = None, perf_params: PerformanceModel | None = None,
                        rounds: int = REFINE_ROUNDS) -> dict[str, HeldOut]:  # long: one fit, many views
    """:func:`leave_one_out` per view: every fold fitted once on ``cases`` (as the shipped parameters are fitted:
    on the cases as annotated), and each view's cases of the held-out group predicted by it (a view holds the same
    cases written another way: what a user states, with or without the framework)."""
    from trainsizer.estimate.memory import default_memory_model
    from trainsizer.estimate.step import default_performance_model

    mp = memory_params or default_memory_model()
    pp = perf_params or default_performance_model()
    out: dict[str, HeldOut] = {name: {} for name in views}
    for kind, free in KINDS.items():
        what = "memory" if kind == "memory" else "performance"
        terms, _failed = build_case_terms(cases, what, mp, pp)
        scored = {name: build_case_terms(view, what, mp, pp) for name, view in views.items()}
        # from the shared cases' fit, as the shipped fit starts (a mechanism no training case shows has no effect)
        base = fold_start(mp if kind == "memory" else pp)
        groups = GROUP_OF[by](terms)
        results: dict[str, list[CaseResult]] = {name: [] for name in views}
        by_group: dict[str, dict[str, SignedSummary]] = {name: {} for name in views}
        every = [g for name in views for g in GROUP_OF[by](scored[name][0])]

        def group_fold(group: str, kind: str = kind, terms: CaseTerms = terms, groups: list[str] = groups,
                       base: Any = base, free: Any = free, scored: dict = scored) -> dict[str, list[CaseResult]]:
            """Per view, the cases of ``group`` predicted by parameters fitted without it."""
            params = _fold(terms, groups, group, base, free, rounds, group if by == "family" else None)
            folds: dict[str, list[CaseResult]] = {}
            for name, (view, _) in scored.items():
                test = [i for i, g in enumerate(GROUP_OF[by](view)) if g == group]
                if not test:
                    continue
                predicted = view.predict(params, test)
                metrics = view.speed.metrics if view.speed is not None else [kind] * len(view)
                folds[name] = [CaseResult(view.ids[i], metrics[i], float(p), float(view.measured[i]),
                                          view.excluded_from_fit[i]) for i, p in zip(test, predicted, strict=True)]
            return folds

        held_out = list(dict.fromkeys(groups + every))
        for group, folds in zip(held_out, fold_map(group_fold, held_out), strict=True):  # each fold in a worker
            for name, fold in folds.items():
                results[name] += fold
                by_group[name][group] = signed_summary(fold)
        for name, (view, failed) in scored.items():
            out[name][kind] = _kind_summary(view, failed, results[name], by_group[name], by)
    return out


def _kind_summary(terms: CaseTerms, failed: list[tuple[str, str]], results: list[CaseResult],
                  by_group: dict[str, SignedSummary], by: str) -> KindHoldout:
    family_of = dict(zip(terms.ids, terms.families, strict=True))
    method_of = dict(zip(terms.ids, terms.methods, strict=True))
    model_of = dict(zip(terms.ids, terms.models, strict=True))
    part_of = dict(zip(terms.ids, terms.parts, strict=True))
    signed = signed_summary(results).signed_median_error
    return KindHoldout(by=by, summary=summarize(results), signed_median_error=signed,
                       excluded_cases=tuple(failed), by_group=by_group,
                       signed={"family": _groups(results, family_of), "method": _groups(results, method_of),
                               "model": _groups(results, model_of),
                               "part": _groups(results, part_of)}, results=tuple(results))


def leave_one_source_out(cases: list[Case], memory_params: MemoryModel | None = None,
                         perf_params: PerformanceModel | None = None, rounds: int = REFINE_ROUNDS,
                         scored: list[Case] | None = None) -> HeldOut:
    """:func:`leave_one_out` by publication."""
    return leave_one_out(cases, "source", memory_params, perf_params, rounds, scored)


def leave_one_family_out(cases: list[Case], memory_params: MemoryModel | None = None,
                         perf_params: PerformanceModel | None = None, rounds: int = REFINE_ROUNDS,
                         scored: list[Case] | None = None) -> HeldOut:
    """:func:`leave_one_out` by GPU family."""
    return leave_one_out(cases, "family", memory_params, perf_params, rounds, scored)
