"""Fitting the estimators' free parameters to measured cases, and calibration profiles.

The same fit that produced the shipped parameters (least squares of log(predicted / measured) by
coordinate descent over bounded grids) runs on a team's own cases (probe output or published
numbers). A profile stores only the fitted values; ``--calibration PROFILE`` overlays them on the
shipped data for estimate, plan and validate. To show the gain honestly, every ``holdout``-th case
is left out of the fit and the error on those cases is reported before and after.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import yaml

from trainsizer.datafiles import refuse_overwrite
from trainsizer.errors import InputError
from trainsizer.estimate.typed_data import value_at, with_value

if TYPE_CHECKING:
    from trainsizer.evidence.cases import Case

P = TypeVar("P")  # a MemoryModel or a PerformanceModel (estimate/model_params.py)

Free = Sequence[tuple[str, str, np.ndarray]]  # (dotted section, key, grid): a field declared fitted()
EFF = np.round(np.arange(0.30, 0.96, 0.01), 3)
# Every grid below is constrained by the cases of at least two publications, or its parameter is listed in
# evidence/fit_audit.SINGLE_PUBLICATION with why it stays free (issue 23: generalisation first). Parameters no
# shipped case constrains, or only one publication does, are assumed in the model files instead, with a source:
# optimizer.foreach_temp_states, communication.overlap.dp and .zero3 (2026-12-03). Tensor-parallel overlap is no
# fraction: estimate/tp_schedule.py derives it from Megatron's schedule.
MEMORY_FREE: Free = [
    ("activations", "implementation_factor", np.round(np.arange(0.90, 1.41, 0.01), 3)),
    ("activations", "backward_working_fraction", np.round(np.arange(0.0, 2.01, 0.05), 3)),
    ("activations", "compiled_factor", np.round(np.arange(0.30, 1.21, 0.02), 3)),
    ("allocator", "reserved_fraction_dynamic", np.round(np.arange(0.0, 0.301, 0.01), 3)),
    ("allocator", "reserved_fraction_static", np.round(np.arange(0.0, 0.101, 0.005), 3)),
]
PERFORMANCE_FREE: Free = [
    ("compute.max_efficiency", "volta", EFF),
    ("compute.max_efficiency", "ampere", EFF),
    ("compute.max_efficiency", "ada", EFF),
    ("compute.max_efficiency", "hopper", EFF),
    ("compute", "max_efficiency_fp32", EFF),
    ("compute", "half_tokens", np.array([0, 32, 64, 128, 256, 384, 512, 768, 1024])),
    ("compute", "half_width", np.array([0, 32, 64, 128, 256, 384, 512, 768, 1024])),
    ("memory_bound", "elementwise_bytes_per_saved_byte", np.round(np.arange(0.0, 12.01, 0.25), 2)),
    ("overhead", "per_layer_s", np.array([0, 5e-5, 1e-4, 2e-4, 4e-4, 8e-4, 1.6e-3, 2.4e-3, 3.2e-3, 4.8e-3, 6.4e-3])),
    ("overhead", "per_step_s", np.array([0, 0.005, 0.01, 0.02, 0.05, 0.1])),
    ("overhead", "moe_sync_issue_s", np.round(np.arange(0.0, 0.01601, 0.0005), 4)),
]

# Mechanism parameters whose no-effect value is known (a setting that changes nothing): a cross-validation fold
# starts from it, so a mechanism no training case shows stays without effect instead of keeping the value the
# shipped fit learned from the held-out cases.
NEUTRAL: dict[tuple[str, str], float] = {
    ("activations", "compiled_factor"): 1.0,
    ("memory_bound", "compiled_elementwise_fraction"): 1.0,
}


def neutral_start(params: P) -> P:
    """``params`` with the :data:`NEUTRAL` mechanism parameters it has at their no-effect values."""
    out = params
    for (dotted, key), value in NEUTRAL.items():
        try:
            value_at(out, dotted, key)
        except KeyError:
            continue
        out = with_value(out, dotted, key, value)
    return out


def family_prior(params: Any, seen: set[str]) -> Any:
    """``params`` (a PerformanceModel) with the GEMM ceiling of every architecture *not* in ``seen`` (the families
    the fit has cases of) taken from physics instead of from the shipped fit: its measured matmul efficiency
    (``compute.mamf_fraction``) times the median ratio of fitted ceiling to matmul efficiency over the
    seen families. A leave-one-family-out fold (or a new part) then does not keep a value fitted on the very
    family it predicts. Unchanged when no seen family has a measured matmul efficiency. A prior-only family
    (:data:`PRIOR_ONLY`) never counts among the seen ones: its ceiling is this prior, not a fit."""
    c = params.compute
    measured = c.mamf_fraction
    # over fitted ceilings only: a prior-only family's ceiling is this prior itself (settle_priors), not evidence
    ratios = [c.max_efficiency[a] / measured[a] for a in sorted(seen)
              if a in measured and a in c.max_efficiency and a not in PRIOR_ONLY]
    if not ratios:
        return params
    shared = float(np.median(ratios))
    out = params
    for arch, efficiency in measured.items():
        if arch not in seen and arch in c.max_efficiency:
            out = with_value(out, "compute.max_efficiency", arch, round(min(1.0, shared * efficiency), 4))
    return out


# Families whose GEMM ceiling no grid frees (no dense run of theirs, or runs from few publications) and whose
# measured matmul efficiency is published: every fit of the performance model (the shipped one,
# tools/fitting.fit_shipped; each cross-validation fold, holdout.py and nested_holdout.py) sets it to the family prior
# over the families that fit frees and its training cases show, on its start and again on its result, so a fold
# never reads a ceiling derived from a fit that saw its held-out publication, and the shipped model uses the ceiling
# its folds are scored with. Blackwell's speed runs all come from one publication (Megatron-Bridge): its MoE runs and
# its four dense B200 runs stay out of the dense fit (performance_model.yaml fit.exclude) and check the prior.
PRIOR_ONLY = ("davinci", "blackwell", "blackwell-ultra", "cdna3", "cdna4")


def settle_priors(params: Any, free: Free, seen: set[str] | frozenset[str] | None = None) -> Any:
    """``params`` (a PerformanceModel) with each :data:`PRIOR_ONLY` family's GEMM ceiling at its :func:`family_prior`
    over the families whose ceiling ``free`` fits (only those in ``seen``, the training cases' families, if given).
    Anything else, and a MemoryModel, unchanged."""
    efficiency = getattr(getattr(params, "compute", None), "max_efficiency", None)
    if efficiency is None:
        return params
    fitted = {key for dotted, key, _ in free if dotted == "compute.max_efficiency"}
    prior = family_prior(params, fitted if seen is None else fitted & set(seen)).compute.max_efficiency
    out = params
    for family in PRIOR_ONLY:
        if family in efficiency and family in prior:
            out = with_value(out, "compute.max_efficiency", family, prior[family])
    return out


# Rounds of coordinate descent from the shared cases' fit (``fit.start``) over the training cases: the shipped fit over
# every shipped case (tools/fitting.py) and each cross-validation fold (evidence/holdout.py) take the same number, so
# the accuracy ``trainsizer validate`` states is that of the procedure that made the shipped parameters. Few rounds
# from a fit on the shared cases act as the regulariser (validation/published/README.md, "Shipped fit": fitted to
# convergence on every case the held-out error is worse).
REFINE_ROUNDS = 2


def fit_start(params: P) -> P:
    """``params`` at their ``fit.start`` values: what the shared cases alone (validation/cases/) give, where the
    shipped fit over every case and each cross-validation fold start. Unchanged where the file has no such block."""
    out = params
    for name, value in params.fit.start.items():  # type: ignore[attr-defined]
        dotted, key = name.rsplit(".", 1)
        out = with_value(out, dotted, key, float(value))
    return out


def fold_start(params: P) -> P:
    """Where a cross-validation fold's fit starts: the shared cases' fit (:func:`fit_start`) with every mechanism
    parameter at its no-effect value (:func:`neutral_start`)."""
    return neutral_start(fit_start(params))


def coordinate_descent(loss: Callable[[P], float], params: P, free: Free, rounds: int = 3) -> tuple[P, float]:
    """Minimise ``loss`` one parameter at a time over its grid, repeating until nothing improves. Each trial is
    a copy with one value replaced (:func:`~trainsizer.estimate.typed_data.with_value`); ``params`` is unchanged."""
    best_params, best = params, loss(params)
    for _ in range(rounds):
        improved = False
        for dotted, key, grid in free:
            for value in grid:
                trial = with_value(best_params, dotted, key, float(value))
                score = loss(trial)
                if score < best - 1e-12:
                    best, best_params, improved = score, trial, True
        if not improved:
            break
    return best_params, best


# The mixture-of-experts parameters (estimate/moe.py): the host's issue time after an MoE layer's synchronisation,
# fitted on the mixture-of-experts runs alone, which stay out of every other parameter's fit (fit.exclude_moe says why);
# it acts on nothing else. (The grouped GEMM's operand traffic is assumed: performance_model.yaml expert_traffic.)
MOE_ONLY = frozenset({("overhead", "moe_sync_issue_s")})


def fit_split(terms: Any, candidates: Sequence[int], params: P, free: Free, rounds: int) -> tuple[P, float]:
    """``free`` fitted on the training cases ``candidates`` of ``terms``: the :data:`MOE_ONLY` parameters on its
    mixture-of-experts runs, every other one on the cases fits use (``terms.fit_rows``: the MoE runs are excluded
    there); the loss is the latter's. The MoE parameters minimise the mean absolute log error: of few runs, some are
    far off for reasons their records leave out (data-limited, docs/accuracy.md), and a squared loss lets those
    few set them. The shipped fit (tools/fitting.py), ``trainsizer calibrate`` and every
    cross-validation fold (evidence/holdout.py, nested_holdout.py) fit this way."""
    from trainsizer.evidence.case_terms import log_error_loss

    rows = fitted_rows(terms, candidates, moe_only=False)
    dense = [f for f in free if (f[0], f[1]) not in MOE_ONLY]
    fitted, best = coordinate_descent(log_error_loss(terms, rows), params, dense, rounds) if rows else (params, 0.0)
    moe_free = [f for f in free if (f[0], f[1]) in MOE_ONLY]
    moe = fitted_rows(terms, candidates, moe_only=True)
    if moe_free and moe:
        fitted = coordinate_descent(log_error_loss(terms, moe, power=1), fitted, moe_free, rounds)[0]
    return fitted, best


def fitted_rows(terms: Any, candidates: Sequence[int], moe_only: bool) -> list[int]:
    """The cases among ``candidates`` a parameter is fitted on (:func:`fit_split`): the MoE runs for an
    :data:`MOE_ONLY` parameter, the cases fits use (``terms.fit_rows``) for every other one."""
    if moe_only:
        return [i for i in candidates if terms.models and terms.models[i] == "moe"]
    return list(terms.fit_rows(candidates))


def _overrides(params: Any, free: Free) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for dotted, key, _ in free:
        node = out
        for part in dotted.split("."):
            node = node.setdefault(part, {})
        node[key] = float(value_at(params, dotted, key))
    return out


@dataclass(frozen=True, slots=True)
class FitGain:
    """One kind's calibration: the cases fitted and held out, and the held-out median |error| before and after."""

    fitted_cases: int
    held_out_cases: int
    held_out_median_before: float | None
    held_out_median_after: float | None

    def to_dict(self) -> dict[str, int | float | None]:
        return {"fitted_cases": self.fitted_cases, "held_out_cases": self.held_out_cases,
                "held_out_median_before": self.held_out_median_before,
                "held_out_median_after": self.held_out_median_after}


@dataclass
class CalibrationResult:
    profile: dict[str, Any]  # the profile file's document (write_profile writes it as it is)
    gains: dict[str, FitGain] = field(default_factory=dict)  # per kind: memory, performance

    @property
    def summary(self) -> dict[str, dict[str, int | float | None]]:
        """Per kind, the gain as ``trainsizer calibrate --json`` and the profile's ``summary`` write it."""
        return {kind: gain.to_dict() for kind, gain in self.gains.items()}


def _median_error(terms: Any, params: Any, rows: list[int]) -> float | None:
    from trainsizer.evidence.cases import CaseResult, summarize

    return summarize([CaseResult(terms.ids[i], terms.kind, float(p), float(terms.measured[i]))
                      for i, p in zip(rows, terms.predict(params, rows), strict=True)]).median_abs_error


def calibrate(cases: list[Case], holdout: int = 3) -> CalibrationResult:
    """Fit memory parameters to the memory cases and step-time parameters to the speed cases."""
    from trainsizer.estimate.memory import default_memory_model
    from trainsizer.estimate.step import default_performance_model
    from trainsizer.evidence.case_terms import build_case_terms

    if holdout < 2:
        raise InputError("--holdout", f"{holdout}; accepted: 2 or more (every n-th case is held out)")
    profile: dict[str, Any] = {"schema_version": 1, "created": datetime.date.today().isoformat()}
    gains: dict[str, FitGain] = {}
    mp, pp = default_memory_model(), default_performance_model()
    fitted_on: list[str] = []
    held_out: list[str] = []
    for kind, free, base in (("memory", MEMORY_FREE, mp), ("performance", PERFORMANCE_FREE, pp)):
        terms, _ = build_case_terms(cases, kind, mp, pp)
        held = [i for i in range(len(terms)) if i % holdout == holdout - 1]
        train = [i for i in range(len(terms)) if i % holdout != holdout - 1]
        fit = terms.fit_rows(train)
        if not fit:
            continue
        fitted, _ = fit_split(terms, train, base, free, rounds=2)
        profile[kind] = _overrides(fitted, free)
        fitted_on += [terms.ids[i] for i in fit]
        held_out += [terms.ids[i] for i in held]
        held_fit = terms.fit_rows(held)
        gains[kind] = FitGain(len(fit), len(held), _median_error(terms, base, held_fit),
                              _median_error(terms, fitted, held_fit))
    if "memory" not in profile and "performance" not in profile:
        raise InputError("cases", "no case with a measured memory or speed figure to fit")
    profile["fitted_on"], profile["held_out"] = fitted_on, held_out
    result = CalibrationResult(profile, gains)
    profile["summary"] = result.summary
    return result


def write_profile(result: CalibrationResult, path: Path, overwrite: bool = False) -> None:
    refuse_overwrite(path, "--out", overwrite)
    path.write_text(yaml.safe_dump(result.profile, sort_keys=False, allow_unicode=True), encoding="utf-8")
