"""Leave-one-source-out cross-validation: the accuracy a user can expect on runs the model has not seen.

For each publication (:func:`~trainsizer.workflows.case_terms.source_key`), the free parameters are
fitted again (the same coordinate descent and grids as ``trainsizer calibrate``) on every other
publication's cases, and that publication's cases are predicted with them. Every case is predicted
once and counted: cases the data flags as implausible stay out of the fits but not out of the error.
"""

from __future__ import annotations

from typing import Any

from trainsizer.estimate.model_params import MemoryModel, PerformanceModel
from trainsizer.workflows.calibrate import MEMORY_FREE, PERFORMANCE_FREE, coordinate_descent, neutral_start
from trainsizer.workflows.case_terms import CaseTerms, build_case_terms, log_error_loss
from trainsizer.workflows.cases import CaseResult, summarize

KINDS = {"memory": MEMORY_FREE, "throughput": PERFORMANCE_FREE}


def _fold(terms: CaseTerms, source: str, base: Any, free: Any, rounds: int) -> tuple[list[int], Any]:
    test = [i for i, s in enumerate(terms.sources) if s == source]
    train = terms.fit_rows([i for i, s in enumerate(terms.sources) if s != source])
    params = coordinate_descent(log_error_loss(terms, train), base, free, rounds)[0] if train else base
    return test, terms.predict(params, test)


def leave_one_source_out(cases: list[dict[str, Any]], memory_params: MemoryModel | None = None,
                         perf_params: PerformanceModel | None = None, rounds: int = 2) -> dict[str, Any]:
    """``{"memory": summary, "throughput": summary}``: count, median and p90 absolute error of the held-out
    predictions, ``excluded`` (cases that could not be predicted at all: 0 unless a case cannot be
    expressed), and the error per source."""
    from trainsizer.estimate.memory import default_memory_model
    from trainsizer.estimate.step import default_performance_model

    mp = memory_params or default_memory_model()
    pp = perf_params or default_performance_model()
    out: dict[str, Any] = {}
    for kind, free in KINDS.items():
        terms, failed = build_case_terms(cases, "memory" if kind == "memory" else "performance", mp, pp)
        base = neutral_start(mp if kind == "memory" else pp)  # a mechanism no training case shows has no effect
        results: list[CaseResult] = []
        by_source: dict[str, Any] = {}
        for source in dict.fromkeys(terms.sources):
            test, predicted = _fold(terms, source, base, free, rounds)
            fold = [CaseResult(terms.ids[i], kind, float(p), float(terms.measured[i]), terms.excluded_from_fit[i])
                    for i, p in zip(test, predicted, strict=True)]
            results += fold
            s = summarize(fold)
            by_source[source] = {"count": s.count, "median_abs_error": s.median_abs_error}
        summary = summarize(results).to_dict()
        out[kind] = {"count": summary["count"], "median_abs_error": summary["median_abs_error"],
                     "p90_abs_error": summary["p90_abs_error"], "within_15pct": summary["within_15pct"],
                     "excluded": len(failed), "excluded_cases": [{"id": i, "reason": r} for i, r in failed],
                     "sources": len(by_source), "by_source": by_source,
                     "cases": [r.to_dict() for r in results]}
    return out
