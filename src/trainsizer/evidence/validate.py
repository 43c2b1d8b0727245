"""Replaying measured cases: predicted vs measured, per-case error, median and p90."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainsizer.errors import N_, InputError
from trainsizer.evidence.cases import (
    METRICS_SPEED,
    Case,
    CaseResult,
    FitExclusions,
    Summary,
    fit_exclusions,
    load_cases,
    speed_metric,
    summarize,
)
from trainsizer.evidence.validate_json import (
    AccuracyRowJSON,
    CellJSON,
    CrossValidationJSON,
    InSampleJSON,
    ValidationSummaryJSON,
    ViewSummaryJSON,
)
from trainsizer.scenario import scenario_from_dict

if TYPE_CHECKING:
    from trainsizer.estimate.model_params import MemoryModel, PerformanceModel
    from trainsizer.evidence.holdout import HeldOut, KindHoldout
    from trainsizer.evidence.ranges_fit import CoverageRow, KindCoverage

__all__ = ["Case", "CaseResult", "Summary", "load_cases", "run_case", "summarize", "validate_cases", "validate_files"]


def run_case(case: Case, exclusions: FitExclusions, memory_params: MemoryModel | None = None,
             perf_params: PerformanceModel | None = None) -> CaseResult:
    from trainsizer.estimate.estimator import estimate
    from trainsizer.estimate.regimes import is_moe
    from trainsizer.estimate.step import default_performance_model

    cid = case.id
    try:
        scenario = scenario_from_dict(case.scenario, source=cid)
    except InputError as exc:
        raise InputError(f"case {cid}", str(exc)) from None
    if case.measured.memory_gib is not None:
        metric = case.measured.memory_kind
        try:
            result = estimate(scenario, memory_params=memory_params, with_limits=False, with_performance=False,
                              source=cid)
        except InputError as exc:
            raise InputError(f"case {cid}", str(exc)) from None
        return CaseResult(cid, metric, result.memory.metric_gib(metric), float(case.measured.memory_gib),
                          exclusions.reason(cid, moe_speed_run=False))
    speed = case.measured.speed_figure()
    if speed is None:
        raise InputError(f"{cid}.measured", "needs memory_gib or one of " + ", ".join(METRICS_SPEED))
    name, value = speed
    pp = perf_params or default_performance_model()
    compare, _why = speed_metric(cid, name, pp)
    try:
        result = estimate(scenario, memory_params=memory_params, with_limits=False, performance_params=pp, source=cid)
    except InputError as exc:
        raise InputError(f"case {cid}", str(exc)) from None
    predicted = float(getattr(result.performance, compare))
    label = name if compare == name else f"{name} (as {compare})"
    return CaseResult(cid, label, predicted, value, exclusions.reason(cid, moe_speed_run=is_moe(scenario.model)))


def validate_cases(cases: list[Case], memory_params: MemoryModel | None = None,
                   perf_params: PerformanceModel | None = None) -> list[CaseResult]:
    from trainsizer.estimate.memory import default_memory_model
    from trainsizer.estimate.step import default_performance_model

    mparams = memory_params or default_memory_model()
    pparams = perf_params or default_performance_model()
    exclusions = fit_exclusions(mparams, pparams)
    return [run_case(c, exclusions, mparams, pparams) for c in cases]


HOLDOUTS = ("none", "source", "family", "both")
IN_SAMPLE_NOTE = N_("in-sample: the shipped parameters were fitted on every shipped case of validation/, so these "
                     "errors flatter the model; --holdout source (or family) gives the cross-validated figure")


def validate_files(paths: list[Path] | None = None, calibration: Path | None = None,
                   holdout: str | None = None,
                   view: str = "annotated") -> tuple[list[CaseResult], ValidationSummaryJSON]:
    """Every case of the files predicted (with a calibration profile's parameters, if given) and the
    summary: all cases, those the shipped fit used, those it left out, how many had no prediction, and
    with ``holdout="source"`` the leave-one-source-out errors (``summary["holdout"]``) and the nested coverage of
    the 80 % ranges, with ``"family"`` the leave-one-family-out ones (``summary["holdout_family"]``), ``"both"``
    both (:mod:`trainsizer.evidence.holdout`). ``view="user"``: each case with only what a user states, its
    internals from its framework's profile (:mod:`trainsizer.evidence.user_view`); the folds are fitted on the cases
    as annotated either way (as the shipped parameters are), so the views differ only in what is predicted. No
    files: the shipped cases (:mod:`trainsizer.evidence.shipped_cases`), held out both ways unless told otherwise,
    every view scored by the same folds (``summary["views"]``: in-sample, held out by source and the ranges'
    nested coverage per view), and ``summary["accuracy"]``, the tables of docs/accuracy.md."""
    from trainsizer.estimate.calibration import calibrated_params
    from trainsizer.evidence.shipped_cases import shared_files, shipped_files
    from trainsizer.evidence.user_view import VIEWS, case_views

    if view not in VIEWS:
        raise InputError("--view", N_("{value!r}; accepted: {accepted}"), value=view, accepted=", ".join(VIEWS))
    shipped = not paths
    holdout = holdout or ("both" if shipped else "none")
    if holdout not in HOLDOUTS:
        raise InputError("--holdout", N_("{value!r}; accepted: {accepted}"), value=holdout,
                         accepted=", ".join(HOLDOUTS))
    files = shipped_files() if shipped else list(paths or [])
    memory_params, perf_params = calibrated_params(calibration)
    annotated: list[Case] = [c for path in files for c in load_cases(path)]
    views = case_views(annotated) if shipped or view == "user" else {"annotated": annotated}
    if not shipped:
        views = {view: views[view]}
    results = validate_cases(views[view], memory_params, perf_params)
    held = cross_validate(annotated, views, holdout, memory_params, perf_params)
    summary: ValidationSummaryJSON = {**_in_sample_summary(results, view), **held.summary_of(view)}
    if shipped:
        from trainsizer.evidence.shipped_cases import label

        summary["files"] = [label(f) for f in files]
        in_sample = {name: results if name == view else validate_cases(v, memory_params, perf_params)
                     for name, v in views.items()}
        summary["views"] = {name: row.to_dict() for name, row in view_summaries(views, in_sample, held).items()}
        summary["accuracy"] = [row.to_dict() for row in accuracy_tables(
            annotated, views, in_sample, held, memory_params, perf_params, [label(f) for f in shared_files()])]
    return results, summary


def _in_sample_summary(results: list[CaseResult], view: str) -> InSampleJSON:
    """The summary's in-sample part: all cases, those the shipped fit used, those it left out, how many had no
    prediction."""
    predicted = [r for r in results if r.error is not None]
    fitted = [r for r in predicted if not r.excluded_from_fit]
    return {"all": summarize(predicted).to_dict(), "fitted": summarize(fitted).to_dict(),
            "excluded": summarize([r for r in predicted if r.excluded_from_fit]).to_dict(),
            "skipped": len(results) - len(predicted), "in_sample": True, "in_sample_note": IN_SAMPLE_NOTE,
            "view": view}


@dataclass(frozen=True, slots=True)
class CrossValidation:
    """Per view, the cross-validated figures: held out by publication (``source``) with the 80 % ranges' nested
    coverage (``coverage``), and held out by GPU family (``family``); a pass not run is empty."""

    source: dict[str, HeldOut] = field(default_factory=dict)
    coverage: dict[str, dict[str, KindCoverage]] = field(default_factory=dict)
    family: dict[str, HeldOut] = field(default_factory=dict)

    def summary_of(self, view: str) -> CrossValidationJSON:
        """The summary keys of ``view``: holdout, range_coverage, holdout_family (those run)."""
        from trainsizer.evidence.ranges_fit import LEVEL

        out: CrossValidationJSON = {}
        if self.source:
            out["holdout"] = {k: h.to_dict() for k, h in self.source[view].items()}
            out["range_coverage"] = {"level": LEVEL, **{k: c.to_dict() for k, c in self.coverage[view].items()}}
        if self.family:
            out["holdout_family"] = {k: h.to_dict() for k, h in self.family[view].items()}
        return out


def cross_validate(annotated: list[Case], views: dict[str, list[Case]], holdout: str, memory_params: Any,
                   perf_params: Any) -> CrossValidation:
    """The cross-validated figures of every view, each view's held-out cases predicted by the same folds, fitted
    on the cases as annotated."""
    from trainsizer.evidence.holdout import leave_one_out_views

    source: dict[str, HeldOut] = {}
    coverage: dict[str, dict[str, KindCoverage]] = {}
    if holdout in ("source", "both"):
        source = leave_one_out_views(annotated, views, "source", memory_params, perf_params)
        coverage = range_coverage_views(annotated, views, source, memory_params, perf_params)
    family = (leave_one_out_views(annotated, views, "family", memory_params, perf_params)
              if holdout in ("family", "both") else {})
    return CrossValidation(source, coverage, family)


def range_coverage_views(annotated: list[Case], views: dict[str, list[Case]], holdout: dict[str, HeldOut],
                         memory_params: Any = None, perf_params: Any = None) -> dict[str, dict[str, KindCoverage]]:
    """Per view: how often the held-out cases fall inside their 80 % range, the ranges fitted on that view's errors
    without their publication, the errors of parameters that never saw it either (``ranges_fit.coverage``, nested),
    with the median half-width. The framework-not-stated view (``user_view.UNSTATED``) is checked against its own
    ranges widened to at least the user view's, as an estimate naming no framework gets them."""
    from trainsizer.evidence.holdout import predictions
    from trainsizer.evidence.ranges_fit import coverage, nested_residuals_views, residuals
    from trainsizer.evidence.user_view import UNSTATED

    inner = nested_residuals_views(annotated, views, memory_params, perf_params)
    out = {}
    for name, cases in views.items():
        floor = inner["user"] if name == UNSTATED and "user" in inner else None
        out[name] = coverage(residuals(cases, predictions(holdout[name])), inner[name], floor=floor)
    return out


KINDS = ("memory", "throughput")


@dataclass(frozen=True, slots=True)
class ViewSummary:
    """One view's figures without the per-case rows: in-sample and held out (by source, by family) per kind, and
    the ranges' nested coverage per kind."""

    in_sample: dict[str, Cell]
    holdout: dict[str, Cell] | None
    holdout_family: dict[str, Cell] | None
    range_coverage: dict[str, CoverageRow] | None

    def to_dict(self) -> ViewSummaryJSON:
        out: ViewSummaryJSON = {"in_sample": {k: c.to_dict() for k, c in self.in_sample.items()}}
        for key, cells in (("holdout", self.holdout), ("holdout_family", self.holdout_family)):
            if cells is not None:
                out[key] = {k: c.to_dict() for k, c in cells.items()}
        if self.range_coverage is not None:
            out["range_coverage"] = {k: {"coverage": r.coverage, "count": r.count,
                                         "median_half_width": r.median_half_width}
                                     for k, r in self.range_coverage.items()}
        return out


def view_summaries(views: dict[str, list[Case]], in_sample: dict[str, list[CaseResult]],
                   held: CrossValidation) -> dict[str, ViewSummary]:
    """Per view: in-sample and held-out (by source, by family) median and p90 per kind, and the ranges' nested
    coverage per kind, without the per-case rows (``summary["holdout"]`` has the asked view's)."""
    out: dict[str, ViewSummary] = {}
    for name, cases in views.items():
        kind = _kinds(cases)
        out[name] = ViewSummary(
            {k: _in_sample_cell([r for r in in_sample[name] if kind.get(r.id) == k]) for k in KINDS},
            {k: Cell.of(held.source[name][k]) for k in KINDS} if held.source else None,
            {k: Cell.of(held.family[name][k]) for k in KINDS} if held.family else None,
            {k: held.coverage[name][k].overall for k in ("memory", "speed")} if held.coverage else None)
    return out


def _kinds(cases: list[Case]) -> dict[str, str]:
    """Case id -> memory | throughput."""
    return {c.id: "memory" if c.is_memory else "throughput" for c in cases}


@dataclass(frozen=True, slots=True)
class Cell:
    """One kind's figures in an accuracy table: count, publications (or GPU families) held out, median and p90 of
    |error|, signed median (held out only)."""

    count: int
    sources: int | None
    median_abs_error: float | None
    p90_abs_error: float | None
    signed_median_error: float | None = None

    @classmethod
    def of(cls, held: KindHoldout, groups: bool = False) -> Cell:
        c = held.cell
        return cls(c.count, held.groups if groups else None, c.median_abs_error, c.p90_abs_error,
                   c.signed_median_error)

    def to_dict(self) -> CellJSON:
        return {"count": self.count, "sources": self.sources, "median_abs_error": self.median_abs_error,
                "p90_abs_error": self.p90_abs_error, "signed_median_error": self.signed_median_error}


def _in_sample_cell(results: list[CaseResult]) -> Cell:
    s = summarize([r for r in results if r.error is not None])
    r4 = s.to_dict()
    return Cell(s.count, None, r4["median_abs_error"], r4["p90_abs_error"])


@dataclass(frozen=True, slots=True)
class AccuracyRow:
    """A row of docs/accuracy.md's table: which cases, how many, by which method, memory and throughput."""

    cases: str
    count: int
    method: str
    memory: Cell
    throughput: Cell
    view: str = ""
    files: tuple[str, ...] = ()

    def to_dict(self) -> AccuracyRowJSON:
        out: AccuracyRowJSON = {"cases": self.cases, "count": self.count, "method": self.method,
                               "memory": self.memory.to_dict(), "throughput": self.throughput.to_dict()}
        if self.cases == "shared":
            out["files"] = list(self.files)
        if self.view:
            out["view"] = self.view
        return out


def accuracy_tables(annotated: list[Case], views: dict[str, list[Case]], in_sample: dict[str, list[CaseResult]],
                    held: CrossValidation, memory_params: Any, perf_params: Any,
                    shared_labels: list[str]) -> list[AccuracyRow]:
    """The accuracy table of docs/accuracy.md for the user view (``view: user``; its leave-one-source-out row is
    README's headline) then the annotated view (:func:`accuracy_rows`). The shared cases' own leave-one-source-out
    (validation/cases/ alone) is fitted once on them as annotated and scored in each view."""
    from trainsizer.evidence.holdout import leave_one_out_views
    from trainsizer.evidence.shipped_cases import shared_files

    shared_ids = {c.id for path in shared_files() for c in load_cases(path)}
    shared = {name: [c for c in v if c.id in shared_ids] for name, v in views.items() if name in ("user", "annotated")}
    shared_held = (leave_one_out_views(shared["annotated"], shared, "source", memory_params, perf_params)
                   if held.source else {})
    rows = []
    for name in ("user", "annotated"):
        rows += [replace(r, view=name) for r in accuracy_rows(
            views[name], shared[name], in_sample[name], held.source.get(name), shared_held.get(name),
            shared_labels, held.family.get(name))]
    return rows


def accuracy_rows(cases: list[Case], shared_cases: list[Case], results: list[CaseResult],
                  holdout: HeldOut | None, shared_holdout: HeldOut | None,
                  shared_labels: list[str], family: HeldOut | None = None) -> list[AccuracyRow]:
    """One view's accuracy table: leave-one-source-out over every shipped case and over the shared cases
    (validation/cases/) alone (both only when ``holdout``, the first pass, was run), leave-one-family-out over every
    shipped case (when ``family`` was run), then every case in-sample (the shipped parameters were fitted on them all:
    the figure that flatters the model)."""
    rows: list[AccuracyRow] = []
    if holdout is not None and shared_holdout is not None:
        for name, chosen, held in (("all", cases, holdout), ("shared", shared_cases, shared_holdout)):
            rows.append(AccuracyRow(name, len(chosen), "leave-one-source-out", Cell.of(held["memory"], True),
                                    Cell.of(held["throughput"], True), files=tuple(shared_labels)))
    if family is not None:
        rows.append(AccuracyRow("all", len(cases), "leave-one-family-out", Cell.of(family["memory"], True),
                                Cell.of(family["throughput"], True)))
    kind = _kinds(cases)
    fit_results = [r for r in results if r.id in kind and r.error is not None]
    rows.append(AccuracyRow("all", len(cases), "in-sample",
                            *(_in_sample_cell([r for r in fit_results if kind[r.id] == k]) for k in KINDS)))
    return rows
