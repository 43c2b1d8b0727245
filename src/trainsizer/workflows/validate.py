"""Replaying measured cases: predicted vs measured, per-case error, median and p90."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from trainsizer.datafiles import user_yaml
from trainsizer.errors import InputError
from trainsizer.scenario import scenario_from_dict

METRICS_MEMORY = ("allocated", "reserved", "device")
METRICS_SPEED = ("tokens_per_s", "tokens_per_s_per_gpu", "step_time_s", "tflops_per_gpu", "mfu")


@dataclass(frozen=True)
class CaseResult:
    id: str
    metric: str
    predicted: float | None
    measured: float
    excluded_from_fit: str | None = None
    skipped: str | None = None  # why no prediction was made

    @property
    def error(self) -> float | None:
        if self.predicted is None:
            return None
        return (self.predicted - self.measured) / self.measured

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "metric": self.metric, "predicted": self.predicted, "measured": self.measured,
                "error": None if self.error is None else round(self.error, 4),
                "excluded_from_fit": self.excluded_from_fit, "skipped": self.skipped}


@dataclass(frozen=True)
class Summary:
    count: int
    median_abs_error: float | None
    p90_abs_error: float | None
    max_abs_error: float | None
    within_15pct: int

    def to_dict(self) -> dict[str, Any]:
        def r(x: float | None) -> float | None:
            return None if x is None else round(x, 4)

        return {"count": self.count, "median_abs_error": r(self.median_abs_error),
                "p90_abs_error": r(self.p90_abs_error), "max_abs_error": r(self.max_abs_error),
                "within_15pct": self.within_15pct}


def summarize(results: list[CaseResult]) -> Summary:
    errs = np.array([abs(r.error) for r in results if r.error is not None])
    if not len(errs):
        return Summary(0, None, None, None, 0)
    return Summary(len(errs), float(np.median(errs)), float(np.percentile(errs, 90)), float(errs.max()),
                   int((errs <= 0.15).sum()))


def load_cases(path: str | Path) -> list[dict[str, Any]]:
    data = user_yaml(path, field="cases")
    if not isinstance(data, list):
        raise InputError("cases", f"{path}: a case file is a YAML list of cases")
    for i, case in enumerate(data):
        if not isinstance(case, dict) or "scenario" not in case or "measured" not in case:
            raise InputError(f"cases[{i}]", "each case needs id, scenario and measured")
    return data


def speed_metric(cid: str, metric: str, perf_params: dict[str, Any]) -> tuple[str, str | None]:
    """The predicted quantity a published speed figure is compared with. Some sources define it
    differently (e.g. TFLOPS that count recomputation): the data names them, with the reason."""
    for rule in perf_params.get("fit", {}).get("metric_definitions") or []:
        if cid.startswith(rule["id_prefix"]) and metric == rule["metric"]:
            return rule["compare_with"], rule["reason"]
    return metric, None


def run_case(case: dict[str, Any], exclusions: dict[str, str], memory_params: dict[str, Any] | None = None,
             perf_params: dict[str, Any] | None = None) -> CaseResult:
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
            result = estimate(scenario, memory_params=memory_params, with_limits=False, with_performance=False)
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
        result = estimate(scenario, memory_params=memory_params, with_limits=False, performance_params=pp)
    except InputError as exc:
        raise InputError(f"case {cid}", str(exc)) from None
    predicted = float(getattr(result.performance, compare))
    label = speed[0] if compare == speed[0] else f"{speed[0]} (as {compare})"
    return CaseResult(cid, label, predicted, float(measured[speed[0]]), exclusions.get(cid))


def validate_cases(cases: list[dict[str, Any]], memory_params: dict[str, Any] | None = None,
                   perf_params: dict[str, Any] | None = None) -> list[CaseResult]:
    from trainsizer.estimate.memory import default_memory_model
    from trainsizer.estimate.step import default_performance_model

    mparams = memory_params or default_memory_model()
    pparams = perf_params or default_performance_model()
    exclusions = {str(k): str(v) for k, v in (mparams.get("fit", {}).get("exclude") or {}).items()}
    exclusions.update({str(k): str(v) for k, v in (pparams.get("fit", {}).get("exclude") or {}).items()})
    return [run_case(c, exclusions, mparams, pparams) for c in cases]


HOLDOUTS = ("none", "source")
IN_SAMPLE_NOTE = ("in-sample: the shipped parameters were fitted on the shared cases, so these errors flatter "
                  "the model; --holdout source gives the cross-validated figure")


def validate_files(paths: list[Path], calibration: Path | None = None,
                   holdout: str = "none") -> tuple[list[CaseResult], dict[str, Any]]:
    """Every case of the files predicted (with a calibration profile's parameters, if given) and the
    summary: all cases, those the shipped fit used, those it left out, how many had no prediction, and
    with ``holdout="source"`` the leave-one-source-out errors (:mod:`trainsizer.workflows.holdout`)."""
    from trainsizer.workflows.estimate_job import calibrated_params

    if holdout not in HOLDOUTS:
        raise InputError("--holdout", f"{holdout!r}; accepted: {', '.join(HOLDOUTS)}")
    memory_params, perf_params = calibrated_params(calibration)
    results: list[CaseResult] = []
    cases: list[dict[str, Any]] = []
    for path in paths:
        cases += load_cases(path)
    results = validate_cases(cases, memory_params, perf_params)
    predicted = [r for r in results if r.error is not None]
    fitted = [r for r in predicted if not r.excluded_from_fit]
    summary: dict[str, Any] = {
        "all": summarize(predicted).to_dict(), "fitted": summarize(fitted).to_dict(),
        "excluded": summarize([r for r in predicted if r.excluded_from_fit]).to_dict(),
        "skipped": len(results) - len(predicted), "in_sample": True, "in_sample_note": IN_SAMPLE_NOTE}
    if holdout == "source":
        from trainsizer.workflows.holdout import leave_one_source_out

        summary["holdout"] = leave_one_source_out(cases, memory_params, perf_params)
    return results, summary
