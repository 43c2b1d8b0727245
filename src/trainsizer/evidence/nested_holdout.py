"""Nested leave-one-source-out: the held-out errors a range for publication P may be built from, with P out of
every fit behind them.

``holdout.leave_one_source_out`` predicts each publication Q with parameters fitted on every other publication;
those parameters saw P when Q is not P. A range for P's cases fitted on those errors has then seen P through the
fits (a leak: P's cases pulled the parameters that made the other errors small). Here, for each outer publication
P, every other publication Q is predicted by parameters fitted without P *and* Q, so nothing behind P's range
comes from P (Varma & Simon, "Bias in error estimation when using cross-validation for model selection",
BMC Bioinformatics 2006: the tuning step inside the outer fold).

Fits are memoised by what they depend on: the fitted rows they train on and the GPU families their training shows
(``calibrate.family_prior``). A publication with no fitted case (``validation/published/``) changes no fit, so most
pairs reuse the plain leave-one-source-out fits."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from trainsizer.estimate.model_params import MemoryModel, PerformanceModel
from trainsizer.estimate.typed_data import value_at
from trainsizer.evidence.calibrate import (
    REFINE_ROUNDS,
    family_prior,
    fit_split,
    fold_start,
    settle_priors,
)
from trainsizer.evidence.case_terms import CaseTerms, build_case_terms
from trainsizer.evidence.cases import Case, CaseResult
from trainsizer.evidence.fold_pool import fold_map
from trainsizer.evidence.holdout import KINDS
from trainsizer.evidence.mfu_evidence import fold_ceilings

NEAR = 4  # an inner fit searches each grid within this many steps of its warm start


def _near(free: Any, params: Any) -> list[tuple[str, str, list[float]]]:
    """Each free parameter's grid cut to the NEAR steps either side of its value in ``params``."""
    out = []
    for dotted, key, grid in free:
        values = [float(v) for v in grid]
        here = float(value_at(params, dotted, key))
        i = min(range(len(values)), key=lambda j: abs(values[j] - here))
        out.append((dotted, key, values[max(i - NEAR, 0):i + NEAR + 1]))
    return out


Fitted = Callable[[str, str | None], Any]


def _fitter(terms: CaseTerms, base: Any, free: Any, rounds: int) -> Fitted:
    memo: dict[tuple[str, tuple[int, ...], frozenset[str]], Any] = {}
    perf = isinstance(base, PerformanceModel)

    def fitted(outer: str, inner: str | None = None) -> Any:
        """The parameters fitted on the cases of neither publication. With
        ``inner``: a search near the fit without ``outer`` (which never saw it), each grid cut to NEAR steps (the
        inner one's pull is small; a full search per pair would cost minutes)."""
        train = [i for i, s in enumerate(terms.sources) if s not in (outer, inner)]
        rows = tuple(terms.fit_rows(train))
        seen = frozenset(terms.families[i] for i in rows) if perf else frozenset()  # fitted cases' families
        key = (outer if inner is not None else "", rows, seen)
        if key not in memo:
            grid, start = free, base
            if inner is not None:
                start = fitted(outer)
                grid = _near(free, start)
            if perf:  # a family no training case shows from physics; MFU ceilings from the training cases alone
                start = fold_ceilings(family_prior(settle_priors(start, free, seen), set(seen)), terms, list(rows))
            params = fit_split(terms, train, start, grid, rounds)[0] if rows else start
            params = settle_priors(params, free, seen) if perf else params
            memo[key] = params
        return memo[key]
    return fitted


Predictions = dict[str, list[CaseResult]]  # per kind (memory | throughput), as holdout.predictions gives them


def nested_source_out(cases: list[Case], memory_params: MemoryModel | None = None,
                      perf_params: PerformanceModel | None = None, rounds: int = REFINE_ROUNDS,
                      scored: list[Case] | None = None) -> dict[str, Predictions]:
    """Per outer publication P, per kind: every case *not* of P, each predicted by parameters fitted without P and
    without its own publication. ``ranges_fit.residuals`` reads it like a leave-one-source-out answer
    (``holdout.predictions``). The fits are on ``cases``; the predictions of ``scored`` (the same cases in another
    view; default ``cases``)."""
    return nested_source_out_views(cases, {"": scored if scored is not None else cases}, memory_params,
                                   perf_params, rounds)[""]


def nested_source_out_views(cases: list[Case], views: dict[str, list[Case]],
                            memory_params: MemoryModel | None = None, perf_params: PerformanceModel | None = None,
                            rounds: int = REFINE_ROUNDS) -> dict[str, dict[str, Predictions]]:
    """:func:`nested_source_out` per view, every pair's fit made once on ``cases``."""
    from trainsizer.estimate.memory import default_memory_model
    from trainsizer.estimate.step import default_performance_model

    mp = memory_params or default_memory_model()
    pp = perf_params or default_performance_model()
    out: dict[str, dict[str, Predictions]] = {name: {} for name in views}
    for kind, free in KINDS.items():
        what = "memory" if kind == "memory" else "performance"
        terms, _failed = build_case_terms(cases, what, mp, pp)
        fitted = _fitter(terms, fold_start(mp if kind == "memory" else pp), free, rounds)
        sources = list(dict.fromkeys(terms.sources))
        scored = {name: build_case_terms(view, what, mp, pp)[0] for name, view in views.items()}

        def outer_fold(outer: str, kind: str = kind, fitted: Fitted = fitted,
                       scored: dict[str, CaseTerms] = scored, sources: list[str] = sources) -> dict[str, list]:
            """Per view, every case not of ``outer`` predicted without ``outer`` and without its own source."""
            rows: dict[str, list[CaseResult]] = {name: [] for name in scored}
            for inner in sources:
                for name, view in scored.items():
                    test = [i for i, s in enumerate(view.sources) if s == inner]
                    if inner == outer or not test:
                        continue
                    predicted = view.predict(fitted(outer, inner), test)
                    rows[name] += [CaseResult(view.ids[i], kind, float(p), float(view.measured[i]))
                                   for i, p in zip(test, predicted, strict=True)]
            return rows

        for outer, rows in zip(sources, fold_map(outer_fold, sources), strict=True):  # each outer in a worker
            for name in views:
                out[name].setdefault(outer, {})[kind] = rows[name]
    return out
