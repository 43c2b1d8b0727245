"""Replaying measured cases: predicted vs measured, per-case error, median and p90."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainsizer.errors import N_, InputError
from trainsizer.evidence.cases import (
    METRICS_MEMORY,
    METRICS_SPEED,
    CaseResult,
    Summary,
    load_cases,
    speed_metric,
    summarize,
)
from trainsizer.scenario import scenario_from_dict

if TYPE_CHECKING:
    from trainsizer.estimate.model_params import MemoryModel, PerformanceModel

__all__ = ["CaseResult", "Summary", "load_cases", "run_case", "summarize", "validate_cases", "validate_files"]


def run_case(case: dict[str, Any], exclusions: Mapping[str, str], memory_params: MemoryModel | None = None,
             perf_params: PerformanceModel | None = None) -> CaseResult:
    from trainsizer.estimate.estimator import estimate
    from trainsizer.estimate.step import default_performance_model

    cid = str(case.get("id", "?"))
    measured = case["measured"]
    try:
        scenario = scenario_from_dict(case["scenario"], source=cid)
    except InputError as exc:
        raise InputError(f"case {cid}", str(exc)) from None
    if "memory_gib" in measured:
        metric = str(measured.get("memory_metric", "allocated"))
        if metric not in METRICS_MEMORY:
            raise InputError(f"{cid}.measured.memory_metric", f"{metric!r}; accepted: {', '.join(METRICS_MEMORY)}")
        try:
            result = estimate(scenario, memory_params=memory_params, with_limits=False, with_performance=False,
                              source=cid)
        except InputError as exc:
            raise InputError(f"case {cid}", str(exc)) from None
        return CaseResult(cid, metric, result.memory.metric_gib(metric), float(measured["memory_gib"]),
                          exclusions.get(cid))
    speed = [k for k in METRICS_SPEED if k in measured]
    if not speed:
        raise InputError(f"{cid}.measured", "needs memory_gib or one of " + ", ".join(METRICS_SPEED))
    pp = perf_params or default_performance_model()
    compare, _why = speed_metric(cid, speed[0], pp)
    try:
        result = estimate(scenario, memory_params=memory_params, with_limits=False, performance_params=pp, source=cid)
    except InputError as exc:
        raise InputError(f"case {cid}", str(exc)) from None
    predicted = float(getattr(result.performance, compare))
    label = speed[0] if compare == speed[0] else f"{speed[0]} (as {compare})"
    return CaseResult(cid, label, predicted, float(measured[speed[0]]), exclusions.get(cid))


def validate_cases(cases: list[dict[str, Any]], memory_params: MemoryModel | None = None,
                   perf_params: PerformanceModel | None = None) -> list[CaseResult]:
    from trainsizer.estimate.memory import default_memory_model
    from trainsizer.estimate.step import default_performance_model

    mparams = memory_params or default_memory_model()
    pparams = perf_params or default_performance_model()
    exclusions = {**mparams.fit.exclude, **pparams.fit.exclude}
    return [run_case(c, exclusions, mparams, pparams) for c in cases]


HOLDOUTS = ("none", "source", "family", "both")
IN_SAMPLE_NOTE = N_("in-sample: the shipped parameters were fitted on every shipped case of validation/, so these "
                     "errors flatter the model; --holdout source (or family) gives the cross-validated figure")


def validate_files(paths: list[Path] | None = None, calibration: Path | None = None,
                   holdout: str | None = None, view: str = "annotated") -> tuple[list[CaseResult], dict[str, Any]]:
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
    annotated: list[dict[str, Any]] = []
    for path in files:
        annotated += load_cases(path)
    views = case_views(annotated) if shipped or view == "user" else {"annotated": annotated}
    if not shipped:
        views = {view: views[view]}
    cases = views[view]
    results = validate_cases(cases, memory_params, perf_params)
    predicted = [r for r in results if r.error is not None]
    fitted = [r for r in predicted if not r.excluded_from_fit]
    summary: dict[str, Any] = {
        "all": summarize(predicted).to_dict(), "fitted": summarize(fitted).to_dict(),
        "excluded": summarize([r for r in predicted if r.excluded_from_fit]).to_dict(),
        "skipped": len(results) - len(predicted), "in_sample": True, "in_sample_note": IN_SAMPLE_NOTE, "view": view}
    held = _held_out(annotated, views, holdout, memory_params, perf_params)
    summary.update({k: v[view] for k, v in held.items()})
    if shipped:
        from trainsizer.evidence.shipped_cases import label

        summary["files"] = [label(f) for f in files]
        in_sample = {name: results if name == view else validate_cases(v, memory_params, perf_params)
                     for name, v in views.items()}
        summary["views"] = view_summaries(views, in_sample, held)
        summary["accuracy"] = accuracy_tables(annotated, views, in_sample, held, memory_params, perf_params,
                                              [label(f) for f in shared_files()])
    return results, summary


def _held_out(annotated: list[dict[str, Any]], views: dict[str, list[dict[str, Any]]], holdout: str,
              memory_params: Any, perf_params: Any) -> dict[str, dict[str, Any]]:
    """Per summary key (holdout, range_coverage, holdout_family), per view: the cross-validated figures, every
    view's held-out cases predicted by the same folds, fitted on the cases as annotated."""
    from trainsizer.evidence.holdout import leave_one_out_views

    out: dict[str, dict[str, Any]] = {}
    if holdout in ("source", "both"):
        out["holdout"] = leave_one_out_views(annotated, views, "source", memory_params, perf_params)
        out["range_coverage"] = range_coverage_views(annotated, views, out["holdout"], memory_params, perf_params)
    if holdout in ("family", "both"):
        out["holdout_family"] = leave_one_out_views(annotated, views, "family", memory_params, perf_params)
    return out


def range_coverage_views(annotated: list[dict[str, Any]], views: dict[str, list[dict[str, Any]]],
                         holdout: dict[str, dict[str, Any]], memory_params: Any = None,
                         perf_params: Any = None) -> dict[str, dict[str, Any]]:
    """Per view: how often the held-out cases fall inside their 80 % range, the ranges fitted on that view's errors
    without their publication, the errors of parameters that never saw it either (``ranges_fit.coverage``, nested),
    with the median half-width. The framework-not-stated view (``user_view.UNSTATED``) is checked against its own
    ranges widened to at least the user view's, as an estimate naming no framework gets them."""
    from trainsizer.evidence.ranges_fit import LEVEL, coverage, nested_residuals_views, residuals
    from trainsizer.evidence.user_view import UNSTATED

    inner = nested_residuals_views(annotated, views, memory_params, perf_params)
    out = {}
    for name, cases in views.items():
        floor = inner["user"] if name == UNSTATED and "user" in inner else None
        out[name] = {"level": LEVEL, **coverage(residuals(cases, holdout[name]), inner[name], floor=floor)}
    return out


def view_summaries(views: dict[str, list[dict[str, Any]]], in_sample: dict[str, list[CaseResult]],
                   held: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Per view: in-sample and held-out (by source, by family) median and p90 per kind, and the ranges' nested
    coverage per kind, without the per-case rows (``summary["holdout"]`` has the asked view's)."""
    out: dict[str, Any] = {}
    for name, cases in views.items():
        kind = _kinds(cases)
        row: dict[str, Any] = {"in_sample": {k: _cell(summarize([r for r in in_sample[name] if r.error is not None
                                                                 and kind.get(r.id) == k]).to_dict())
                                             for k in ("memory", "throughput")}}
        for key in ("holdout", "holdout_family"):
            if key in held:
                row[key] = {k: _cell(held[key][name][k]) for k in ("memory", "throughput")}
        if "range_coverage" in held:
            cov = held["range_coverage"][name]
            row["range_coverage"] = {k: {"coverage": cov[k]["coverage"], "count": cov[k]["count"],
                                         "median_half_width": cov[k]["median_half_width"]} for k in ("memory", "speed")}
        out[name] = row
    return out


def _kinds(cases: list[dict[str, Any]]) -> dict[str, str]:
    """Case id -> memory | throughput."""
    return {str(c.get("id", "?")): "memory" if "memory_gib" in c["measured"] else "throughput" for c in cases}


def _cell(summary: dict[str, Any], sources: int | None = None) -> dict[str, Any]:
    return {"count": summary["count"], "sources": sources, "median_abs_error": summary["median_abs_error"],
            "p90_abs_error": summary["p90_abs_error"], "signed_median_error": summary.get("signed_median_error")}


def accuracy_tables(annotated: list[dict[str, Any]], views: dict[str, list[dict[str, Any]]],
                    in_sample: dict[str, list[CaseResult]], held: dict[str, dict[str, Any]], memory_params: Any,
                    perf_params: Any, shared_labels: list[str]) -> list[dict[str, Any]]:
    """The accuracy table of docs/accuracy.md for the user view (``view: user``; its leave-one-source-out row is
    README's headline) then the annotated view (:func:`accuracy_rows`). The shared cases' own leave-one-source-out
    (validation/cases/ alone) is fitted once on them as annotated and scored in each view."""
    from trainsizer.evidence.holdout import leave_one_out_views
    from trainsizer.evidence.shipped_cases import shared_files

    shared_ids = {str(c.get("id")) for path in shared_files() for c in load_cases(path)}
    shared = {name: [c for c in v if str(c.get("id")) in shared_ids] for name, v in views.items()
              if name in ("user", "annotated")}
    shared_held = (leave_one_out_views(shared["annotated"], shared, "source", memory_params, perf_params)
                   if "holdout" in held else {})
    rows = []
    for name in ("user", "annotated"):
        rows += [{**r, "view": name} for r in accuracy_rows(
            views[name], shared[name], in_sample[name], held.get("holdout", {}).get(name), shared_held.get(name),
            shared_labels, held.get("holdout_family", {}).get(name))]
    return rows


def accuracy_rows(cases: list[dict[str, Any]], shared_cases: list[dict[str, Any]], results: list[CaseResult],
                  holdout: dict[str, Any] | None, shared_holdout: dict[str, Any] | None,
                  shared_labels: list[str], family: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """One view's accuracy table: leave-one-source-out over every shipped case and over the shared cases
    (validation/cases/) alone (both only when ``holdout``, the first pass, was run), leave-one-family-out over every
    shipped case (when ``family`` was run), then every case in-sample (the shipped parameters were fitted on them all:
    the figure that flatters the model)."""
    rows: list[dict[str, Any]] = []
    if holdout is not None and shared_holdout is not None:
        for name, chosen, held in (("all", cases, holdout), ("shared", shared_cases, shared_holdout)):
            rows.append({"cases": name, "count": len(chosen), "method": "leave-one-source-out",
                         **{k: _cell(held[k], held[k]["sources"]) for k in ("memory", "throughput")}})
    if family is not None:
        rows.append({"cases": "all", "count": len(cases), "method": "leave-one-family-out",
                     **{k: _cell(family[k], family[k]["families"]) for k in ("memory", "throughput")}})
    kind = _kinds(cases)
    fit_results = [r for r in results if r.id in kind and r.error is not None]
    rows.append({"cases": "all", "count": len(cases), "method": "in-sample",
                 **{k: _cell(summarize([r for r in fit_results if kind[r.id] == k]).to_dict())
                    for k in ("memory", "throughput")}})
    for row in rows:
        if row["cases"] == "shared":
            row["files"] = shared_labels
    return rows
