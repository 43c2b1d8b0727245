"""Fitting the estimators' free parameters to measured cases, and calibration profiles.

The same fit that produced the shipped parameters (least squares of log(predicted / measured) by
coordinate descent over bounded grids) runs on a team's own cases (probe output or published
numbers). A profile stores only the fitted values; ``--calibration PROFILE`` overlays them on the
shipped data for estimate, plan and validate. To show the gain honestly, every ``holdout``-th case
is left out of the fit and the error on those cases is reported before and after.
"""

from __future__ import annotations

import copy
import datetime
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from trainsizer.datafiles import refuse_overwrite
from trainsizer.errors import InputError

Free = Sequence[tuple[str, str, np.ndarray]]  # (dotted section, key, grid)
EFF = np.round(np.arange(0.30, 0.96, 0.01), 3)
MEMORY_FREE: Free = [
    ("activations", "implementation_factor", np.round(np.arange(0.90, 1.41, 0.01), 3)),
    ("activations", "backward_working_fraction", np.round(np.arange(0.0, 2.01, 0.05), 3)),
    ("allocator", "reserved_fraction_dynamic", np.round(np.arange(0.0, 0.301, 0.01), 3)),
    ("allocator", "reserved_fraction_static", np.round(np.arange(0.0, 0.101, 0.005), 3)),
    ("optimizer", "foreach_temp_states", np.round(np.arange(0.0, 1.01, 0.1), 3)),
]
PERFORMANCE_FREE: Free = [
    ("compute.max_efficiency", "volta", EFF),
    ("compute.max_efficiency", "ampere", EFF),
    ("compute.max_efficiency", "ada", EFF),
    ("compute.max_efficiency", "hopper", EFF),
    ("compute", "max_efficiency_fp32", EFF),
    ("compute", "half_tokens", np.array([0, 32, 64, 128, 256, 384, 512, 768, 1024])),
    ("compute", "half_width", np.array([0, 32, 64, 128, 256, 384, 512, 768, 1024])),
    ("memory_bound", "elementwise_bytes_per_saved_byte", np.round(np.arange(0.0, 12.01, 0.5), 2)),
    ("communication.overlap", "tp", np.round(np.arange(0.0, 0.91, 0.1), 2)),
    ("communication.overlap", "dp", np.round(np.arange(0.0, 1.01, 0.1), 2)),
    ("communication.overlap", "zero3", np.round(np.arange(0.0, 1.01, 0.1), 2)),
    ("overhead", "per_layer_s", np.array([0, 5e-5, 1e-4, 2e-4, 4e-4, 8e-4, 1.6e-3])),
    ("overhead", "per_step_s", np.array([0, 0.005, 0.01, 0.02, 0.05, 0.1])),
]


def section(params: dict[str, Any], dotted: str) -> dict[str, Any]:
    node = params
    for part in dotted.split("."):
        node = node[part]
    return node


def coordinate_descent(loss: Callable[[dict[str, Any]], float], params: dict[str, Any], free: Free,
                       rounds: int = 3) -> tuple[dict[str, Any], float]:
    """Minimise ``loss`` one parameter at a time over its grid, repeating until nothing improves."""
    best_params, best = copy.deepcopy(params), loss(params)
    for _ in range(rounds):
        improved = False
        for dotted, key, grid in free:
            for value in grid:
                trial = copy.deepcopy(best_params)
                section(trial, dotted)[key] = float(value)
                score = loss(trial)
                if score < best - 1e-12:
                    best, best_params, improved = score, trial, True
        if not improved:
            break
    return best_params, best


def log_errors(results: list[Any], include_excluded: bool = False) -> np.ndarray:
    return np.array([np.log(r.predicted / r.measured) for r in results
                     if (include_excluded or not r.excluded_from_fit) and r.predicted and r.predicted > 0])


def _overrides(params: dict[str, Any], free: Free) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for dotted, key, _ in free:
        node = out
        for part in dotted.split("."):
            node = node.setdefault(part, {})
        node[key] = float(section(params, dotted)[key])
    return out


@dataclass
class CalibrationResult:
    profile: dict[str, Any]
    summary: dict[str, Any] = field(default_factory=dict)


def calibrate(cases: list[dict[str, Any]], holdout: int = 3) -> CalibrationResult:
    """Fit memory parameters to the memory cases and step-time parameters to the speed cases."""
    from trainsizer.estimate.memory import default_memory_model
    from trainsizer.estimate.step import default_performance_model
    from trainsizer.workflows.validate import summarize, validate_cases

    if holdout < 2:
        raise InputError("--holdout", f"{holdout}; accepted: 2 or more (every n-th case is held out)")
    held = [c for i, c in enumerate(cases) if i % holdout == holdout - 1]
    fit = [c for i, c in enumerate(cases) if i % holdout != holdout - 1]
    profile: dict[str, Any] = {"schema_version": 1, "created": datetime.date.today().isoformat(),
                               "fitted_on": [str(c.get("id")) for c in fit],
                               "held_out": [str(c.get("id")) for c in held]}
    summary: dict[str, Any] = {}
    mp, pp = default_memory_model(), default_performance_model()
    for kind, free, is_memory in (("memory", MEMORY_FREE, True), ("performance", PERFORMANCE_FREE, False)):
        fit_k = [c for c in fit if ("memory_gib" in c["measured"]) == is_memory]
        held_k = [c for c in held if ("memory_gib" in c["measured"]) == is_memory]
        if not fit_k:
            continue

        def run(params: dict[str, Any], subset: list[dict[str, Any]], memory: bool = is_memory) -> list[Any]:
            return validate_cases(subset, memory_params=params if memory else mp,
                                  perf_params=None if memory else params)

        base = mp if is_memory else pp

        def loss(params: dict[str, Any], subset: list[dict[str, Any]] = fit_k) -> float:
            errors = log_errors(run(params, subset))
            return float(np.mean(errors ** 2)) if len(errors) else 0.0

        fitted, _ = coordinate_descent(loss, base, free, rounds=2)
        profile[kind] = _overrides(fitted, free)
        before = [r for r in run(base, held_k) if not r.excluded_from_fit]
        after = [r for r in run(fitted, held_k) if not r.excluded_from_fit]
        summary[kind] = {"fitted_cases": len(fit_k), "held_out_cases": len(held_k),
                         "held_out_median_before": summarize(before).median_abs_error,
                         "held_out_median_after": summarize(after).median_abs_error}
    if "memory" not in profile and "performance" not in profile:
        raise InputError("cases", "no case with a measured memory or speed figure to fit")
    profile["summary"] = summary
    return CalibrationResult(profile, summary)


def write_profile(result: CalibrationResult, path: Path, overwrite: bool = False) -> None:
    refuse_overwrite(path, "--out", overwrite)
    path.write_text(yaml.safe_dump(result.profile, sort_keys=False, allow_unicode=True), encoding="utf-8")
