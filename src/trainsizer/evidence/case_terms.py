"""Measured cases prepared for fitting: each case's terms built once (:mod:`trainsizer.evidence.refit`),
so a fit re-prices every case under a trial parameter set in about a millisecond."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from trainsizer.errors import InputError
from trainsizer.estimate.model_params import MemoryModel, PerformanceModel
from trainsizer.estimate.regimes import is_moe
from trainsizer.evidence.cases import Case, fit_exclusions, speed_metric
from trainsizer.evidence.refit import (
    MemoryTerms,
    SpeedTerms,
    memory_prediction,
    memory_terms,
    speed_case,
    speed_predictions,
    stack_speed,
)
from trainsizer.scenario import scenario_from_dict

Free = Sequence[tuple[str, str, np.ndarray]]  # (dotted section, key, grid)


def source_key(case: Case) -> str:
    """The publication a case comes from: its ``source`` up to the first comment (table names, commits and
    notes in parentheses, quotes or after a comma), so the rows of one document form one group."""
    return re.split(r"[(',]", case.source or case.id or "?")[0].strip() or "?"


def gpu_family(scenario: Any) -> str:
    """The GPU family of a case: its accelerator's ``architecture`` in the catalog (hopper, ampere, ada, davinci =
    Ascend, ...); an inline spec without one is ``other``."""
    from trainsizer.estimate.estimator import resolve_gpu

    return resolve_gpu(scenario).architecture or "other"


def case_gpu_part(scenario: Any) -> str:
    """The GPU part of a case: its catalog id without form factor, memory size or power cap
    (:func:`trainsizer.estimate.regimes.gpu_part`: h20-96gb -> ``h20``); an inline spec is ``inline``."""
    from trainsizer.estimate.regimes import gpu_part

    gpu = scenario.hardware.gpu
    return gpu_part(gpu) if isinstance(gpu, str) else "inline"


def china_market_parts(parts: Iterable[str]) -> list[str]:
    """Those of ``parts`` (:func:`case_gpu_part`) that are China-market parts
    (:func:`trainsizer.hardware.market.china_market_ids`), in their order: the per-part rows of the accuracy report."""
    from trainsizer.estimate.regimes import gpu_part
    from trainsizer.hardware.catalog import default_catalog
    from trainsizer.hardware.market import china_market_ids

    market = {gpu_part(i) for i in china_market_ids(default_catalog())}
    return [p for p in parts if p in market]


@dataclass
class CaseTerms:
    """One kind of case (memory or speed), ready to be priced under any parameters of that kind."""

    kind: str  # memory | performance
    ids: list[str]
    sources: list[str]
    measured: np.ndarray
    excluded_from_fit: list[str | None]  # the data's reason to leave a case out of fits (it stays in errors)
    memory: list[MemoryTerms] | None = None
    speed: SpeedTerms | None = None
    families: list[str] = field(default_factory=list)  # each case's GPU family (:func:`gpu_family`)
    methods: list[str] = field(default_factory=list)  # each case's training method (full, lora, qlora, freeze)
    models: list[str] = field(default_factory=list)  # each case's model kind: moe (routed experts) or dense
    parts: list[str] = field(default_factory=list)  # each case's GPU part (:func:`case_gpu_part`: h20, a800, ...)

    def __len__(self) -> int:
        return len(self.ids)

    def predict(self, params: Any, idx: Sequence[int] | None = None) -> np.ndarray:
        """Each case's prediction under ``params`` (a MemoryModel for memory cases, else a PerformanceModel)."""
        rows = range(len(self.ids)) if idx is None else idx
        if not len(rows):
            return np.zeros(0)
        if self.memory is not None:
            return np.array([memory_prediction(self.memory[i], params) for i in rows], dtype=float)
        assert self.speed is not None
        return speed_predictions(self.speed, params)[list(rows)]

    def fit_rows(self, idx: Sequence[int]) -> list[int]:
        return [i for i in idx if not self.excluded_from_fit[i]]


def build_case_terms(cases: list[Case], kind: str, memory_params: MemoryModel,
                     perf_params: PerformanceModel) -> tuple[CaseTerms, list[tuple[str, str]]]:
    """The cases of ``kind`` as terms, and (id, reason) for each one that could not be built."""
    exclusions = fit_exclusions(memory_params, perf_params)
    ids, sources, measured, memory, speed, metrics, failed = [], [], [], [], [], [], []
    families: list[str] = []
    methods: list[str] = []
    models: list[str] = []
    parts: list[str] = []
    for case in cases:
        if case.is_memory != (kind == "memory"):
            continue
        cid = case.id
        try:
            scenario = scenario_from_dict(case.scenario, source=cid)
            if case.measured.memory_gib is not None:
                memory.append(memory_terms(scenario, case.measured.memory_kind, memory_params))
                value = case.measured.memory_gib
            else:
                name, value = case.measured.speed_figure() or ("", 0.0)
                metrics.append(speed_metric(cid, name, perf_params)[0])
                speed.append(speed_case(scenario, memory_params, perf_params))
        except InputError as exc:
            failed.append((cid, str(exc) or "no measured figure"))
            continue
        ids.append(cid)
        sources.append(source_key(case))
        measured.append(float(value))
        families.append(gpu_family(scenario))
        methods.append(str(scenario.training.method))
        models.append("moe" if is_moe(scenario.model) else "dense")
        parts.append(case_gpu_part(scenario))
    return CaseTerms(kind, ids, sources, np.array(measured, dtype=float),
                      [exclusions.reason(i, kind != "memory" and m == "moe") for i, m in zip(ids, models, strict=True)],
                      memory if kind == "memory" else None,
                      stack_speed(speed, metrics) if speed else None, families, methods, models, parts), failed


def log_error_loss(terms: CaseTerms, rows: Sequence[int], power: int = 2) -> Callable[[Any], float]:
    """Mean squared log error of the predictions on ``rows``: the fit's objective (a miss of x2 either
    way weighs the same). ``power`` 1: mean absolute log error (least absolute deviations, which a few runs far off
    for reasons their records leave out cannot pull as far: P. J. Huber, "Robust Statistics", 1981, section 3.2)."""
    measured = terms.measured[list(rows)]

    def loss(params: Any) -> float:
        predicted = terms.predict(params, rows)
        ok = predicted > 0
        if not ok.any():
            return float("inf")
        errors = np.log(predicted[ok] / measured[ok])
        # a non-positive prediction never wins
        return float(np.mean(np.abs(errors) ** power)) + (0.0 if ok.all() else 1e3)
    return loss
