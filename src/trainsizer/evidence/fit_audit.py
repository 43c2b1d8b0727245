"""Which publications each fitted parameter rests on (issue 23: generalisation first).

A parameter is *constrained* by a case when moving it across the grid the fitter searches (to either end of it, or to
80 % of its value) moves that case's prediction by more than half a percent: a value fitted near zero is still
constrained by the cases its grid moves. A parameter fitted on the cases of a single publication
does not carry over to runs from elsewhere, so every grid of the fitter must be constrained by at least two
publications of the cases it is fitted on (every shipped case, tools/fitting.py), or be listed in
:data:`SINGLE_PUBLICATION` with the reason it stays
free and what making it ``assumed`` was measured to cost held out (leave-one-source-out, ``trainsizer validate``).
Parameters no case or one publication constrains, with no such reason, are ``assumed`` in the model files.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from trainsizer.estimate.typed_data import value_at, with_value
from trainsizer.evidence.calibrate import MEMORY_FREE, MOE_ONLY, PERFORMANCE_FREE, Free, fitted_rows
from trainsizer.evidence.case_terms import build_case_terms
from trainsizer.evidence.cases import Case

SENSITIVITY = 0.005  # |log change| of a prediction that counts as constraining

# (kind, dotted section, key): why it stays fitted on one publication of the shipped cases. Empty since 2026-12-03:
# with the shipped fit on every shipped case, the V100 and fp32 speed of DeepLearningExamples' BERT and
# DeepSpeedExamples' autotuning table, Answer.AI's RTX 4090 runs and torchtitan's compiled runs give the four
# parameters listed here before (max_efficiency volta, ada and fp32, compiled_factor) a second publication each.
SINGLE_PUBLICATION: dict[tuple[str, str, str], str] = {}


def _trials(value: float, grid: np.ndarray) -> list[float]:
    """The values a parameter is moved to: 80 % of its own (the middle of its grid when it is 0) and both ends of its
    grid, the range the fitter searches."""
    nudged = float(value) * 0.8 if value else float(grid[len(grid) // 2] or grid[-1])
    return [v for v in dict.fromkeys((nudged, float(np.min(grid)), float(np.max(grid)))) if v != float(value)]


def publications_by_parameter(cases: list[Case], kind: str, free: Free, memory_params: Any,
                              perf_params: Any) -> dict[tuple[str, str], Counter[str]]:
    """For each (dotted, key) of ``free``: how many cases of each publication constrain it, among the cases the fit
    fits it on (calibrate.fitted_rows: fit.exclude cases left out, the MoE runs alone for the
    MoE-only parameters). ``kind``: memory | performance."""
    terms, _ = build_case_terms(cases, kind, memory_params, perf_params)
    base = memory_params if kind == "memory" else perf_params
    out: dict[tuple[str, str], Counter[str]] = {}
    for dotted, key, grid in free:
        rows = fitted_rows(terms, range(len(terms)), (dotted, key) in MOE_ONLY)
        before = terms.predict(base, rows)
        moved = np.zeros(len(rows), dtype=bool)
        for value in _trials(value_at(base, dotted, key), grid):
            trial = with_value(base, dotted, key, value)
            moved |= np.abs(np.log(terms.predict(trial, rows) / before)) > SENSITIVITY
        out[(dotted, key)] = Counter(terms.sources[r] for r, m in zip(rows, moved, strict=True) if m)
    return out


@dataclass(frozen=True, slots=True)
class ParameterAudit:
    """A fitted parameter, the publications whose cases constrain it (count of each) and the documented reason it
    may rest on one (:data:`SINGLE_PUBLICATION`)."""

    kind: str  # memory | performance
    parameter: str  # dotted section and key
    publications: dict[str, int]
    reason: str | None

    @property
    def ok(self) -> bool:
        """Two or more publications, or one with a documented reason."""
        return len(self.publications) >= 2 or (len(self.publications) == 1 and self.reason is not None)


def audit(cases: list[Case], memory_params: Any, perf_params: Any) -> list[ParameterAudit]:
    """One row per fitted parameter (:class:`ParameterAudit`)."""
    rows: list[ParameterAudit] = []
    for kind, free in (("memory", MEMORY_FREE), ("performance", PERFORMANCE_FREE)):
        for (dotted, key), pubs in publications_by_parameter(cases, kind, free, memory_params, perf_params).items():
            reason = SINGLE_PUBLICATION.get((kind, dotted, key))
            rows.append(ParameterAudit(kind, f"{dotted}.{key}", dict(pubs), reason))
    return rows
