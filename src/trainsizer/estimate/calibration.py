"""Calibration profiles (written by ``trainsizer calibrate``): fitted values laid over the shipped
parameters of the memory and step-time models.

A profile is checked before use: only the sections the fitter frees, only keys the shipped models have (a
misspelt one is named with the closest), and every value of the shipped value's type: numbers finite, never
true/false, and in their physical range (fractions and efficiencies 0 to 1, times and counts >= 0)."""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

from trainsizer.datafiles import user_yaml
from trainsizer.errors import InputError, in_file
from trainsizer.estimate.memory import default_memory_model
from trainsizer.estimate.step import default_performance_model
from trainsizer.validation import known_keys

# The sections of memory_model.yaml / performance_model.yaml whose values a profile may replace: those the
# fitter (trainsizer.workflows.calibrate) has free parameters in.
FITTABLE_SECTIONS = {
    "memory": {"activations", "allocator", "optimizer"},
    "performance": {"compute", "memory_bound", "communication", "overhead"},
}
# the keys a profile file has (calibrate writes the provenance beside the two blocks)
PROFILE_KEYS = ("schema_version", "created", "memory", "performance", "fitted_on", "held_out", "summary")
# physical ranges of the fitted parameters (dotted within their model; '*' any key): the fitter's grids lie inside
FITTED_RANGES: dict[str, tuple[float, float]] = {
    "memory.activations.implementation_factor": (0.5, 3.0),
    "memory.activations.backward_working_fraction": (0.0, 4.0),
    "memory.activations.compiled_factor": (0.1, 1.5),
    "memory.allocator.reserved_fraction_dynamic": (0.0, 1.0),
    "memory.allocator.reserved_fraction_static": (0.0, 1.0),
    "memory.optimizer.foreach_temp_states": (0.0, 4.0),
    "performance.compute.max_efficiency.*": (0.01, 1.0),
    "performance.compute.max_efficiency_fp32": (0.01, 1.0),
    "performance.compute.half_tokens": (0.0, 1e6),
    "performance.compute.half_width": (0.0, 1e6),
    "performance.memory_bound.elementwise_bytes_per_saved_byte": (0.0, 100.0),
    "performance.memory_bound.compiled_elementwise_fraction": (0.0, 1.5),
    "performance.communication.overlap.*": (0.0, 1.0),
    "performance.overhead.per_layer_s": (0.0, 1.0),
    "performance.overhead.per_step_s": (0.0, 60.0),
}
MAX_OTHER = 1e15  # any other number: finite, >= 0 and below this (fractions, efficiencies, overlaps at most 1)
FRACTION_WORDS = ("fraction", "efficiency", "overlap")


def _range(dotted: str) -> tuple[float, float]:
    parent = dotted.rsplit(".", 1)[0]
    if dotted in FITTED_RANGES or f"{parent}.*" in FITTED_RANGES:
        return FITTED_RANGES.get(dotted) or FITTED_RANGES[f"{parent}.*"]
    return (0.0, 1.0) if any(w in dotted for w in FRACTION_WORDS) else (0.0, MAX_OTHER)


def _check_value(value: Any, shipped: Any, dotted: str) -> None:
    """``value`` (from the profile) has the type of ``shipped`` (the model's own value) and a number is in range."""
    field = f"--calibration.{dotted}"
    if isinstance(shipped, dict):
        if not isinstance(value, dict):
            raise InputError(field, f"{value!r}; accepted: a mapping of {', '.join(map(str, shipped))}")
        known_keys(value, map(str, shipped), field)
        for key, sub in value.items():
            _check_value(sub, shipped[key], f"{dotted}.{key}")
    elif isinstance(shipped, bool | str):
        if type(value) is not type(shipped):
            raise InputError(field, f"{value!r}; accepted: {'true or false' if isinstance(shipped, bool) else 'text'}")
    elif isinstance(shipped, int | float):
        low, high = _range(dotted)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InputError(field, f"{value!r} is not a number; accepted: a number from {low:g} to {high:g}")
        if not math.isfinite(value) or not low <= value <= high:
            raise InputError(field, f"{value!r} is not accepted; accepted: a number from {low:g} to {high:g}")


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def check_profile(data: Any, path: str | Path) -> None:
    """A parsed profile is one: a memory and/or performance block of fitted sections whose keys and values match
    the shipped models'. One InputError names the field and the file."""
    if not isinstance(data, dict) or not ({"memory", "performance"} & set(data)):
        raise InputError("--calibration", f"{path} is not a calibration profile (no memory or performance block)")
    known_keys(data, PROFILE_KEYS, "--calibration")
    shipped = {"memory": default_memory_model(), "performance": default_performance_model()}
    for kind, allowed in FITTABLE_SECTIONS.items():
        block = data.get(kind)
        if block is None:
            continue
        if not isinstance(block, dict):
            raise InputError(f"--calibration.{kind}", f"{block!r}; accepted: a mapping of {', '.join(sorted(allowed))}")
        for key, value in block.items():
            if key not in allowed:
                raise InputError(f"--calibration.{kind}.{key}", f"not a fitted section; accepted: "
                                 f"{', '.join(sorted(allowed))}")
            _check_value(value, shipped[kind][key], f"{kind}.{key}")


def load_calibration(path: str | Path | None) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(memory params, performance params) with the profile's values over the shipped ones."""
    if path is None:
        return None, None
    data = user_yaml(path, field="--calibration")
    try:
        check_profile(data, path)
    except InputError as exc:
        raise in_file(exc, str(path)) from None
    memory = _merge(default_memory_model(), data["memory"]) if data.get("memory") else None
    perf = _merge(default_performance_model(), data["performance"]) if data.get("performance") else None
    return memory, perf
