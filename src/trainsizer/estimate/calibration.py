"""Calibration profiles (written by ``trainsizer calibrate``): fitted values laid over the shipped
parameters of the memory and step-time models.

A profile is checked before use against the same typed models the shipped files load into
(``estimate/model_params.py``): only the sections the fitter frees, only keys the models have (a misspelt one is
named with the closest), and every value of the model's type: numbers finite, never true/false, and in their
physical range (fractions and efficiencies 0 to 1, times and counts >= 0)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from trainsizer.datafiles import user_yaml
from trainsizer.errors import InputError, in_file, unknown_key
from trainsizer.estimate.model_params import (
    MemoryModel,
    PerformanceModel,
    Provenance,
    memory_model,
    performance_model,
)
from trainsizer.estimate.typed_data import Table, overlay
from trainsizer.input_checks import known_keys

# The sections of memory_model.yaml / performance_model.yaml whose values a profile may replace: those the
# fitter (trainsizer.evidence.calibrate) has free parameters in.
FITTABLE_SECTIONS = {
    "memory": {"activations", "allocator"},
    "performance": {"compute", "memory_bound", "overhead"},
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
    "memory.allocator.reserved_fraction_variable": (0.0, 3.0),
    "performance.compute.max_efficiency.*": (0.01, 1.0),
    "performance.compute.max_efficiency_fp32": (0.01, 1.0),
    "performance.compute.half_tokens": (0.0, 1e6),
    "performance.compute.half_width": (0.0, 1e6),
    "performance.compute.expert_traffic": (0.0, 100.0),
    "performance.memory_bound.elementwise_bytes_per_saved_byte": (0.0, 100.0),
    "performance.memory_bound.compiled_elementwise_fraction": (0.0, 1.5),
    "performance.overhead.per_layer_s": (0.0, 1.0),
    "performance.overhead.moe_sync_issue_s": (0.0, 1.0),
    "performance.overhead.per_step_s": (0.0, 60.0),
}
MAX_OTHER = 1e15  # any other number: finite, >= 0 and below this (fractions, efficiencies, overlaps at most 1)
FRACTION_WORDS = ("fraction", "efficiency", "overlap")


def _range(dotted: str) -> tuple[float, float]:
    parent = dotted.rsplit(".", 1)[0]
    if dotted in FITTED_RANGES or f"{parent}.*" in FITTED_RANGES:
        return FITTED_RANGES.get(dotted) or FITTED_RANGES[f"{parent}.*"]
    return (0.0, 1.0) if any(w in dotted for w in FRACTION_WORDS) else (0.0, MAX_OTHER)


def _check_number(kind: str) -> Callable[[str, Any], None]:
    """The range check of one fitted number (``dotted`` within its model), for :func:`typed_data.overlay`."""

    def check(dotted: str, value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return  # flags and text: their type is checked by the model's field
        low, high = _range(f"{kind}.{dotted}")
        if not math.isfinite(value) or not low <= value <= high:
            raise InputError(f"--calibration.{kind}.{dotted}",
                             f"{value!r} is not accepted; accepted: a number from {low:g} to {high:g}")
    return check


def _check_sections(data: dict[str, Any]) -> None:
    for kind, allowed in FITTABLE_SECTIONS.items():
        block = data.get(kind)
        if block is None:
            continue
        if not isinstance(block, dict):
            raise InputError(f"--calibration.{kind}", f"{block!r}; accepted: a mapping of {', '.join(sorted(allowed))}")
        sections = {f.name for f in dataclasses.fields(MemoryModel if kind == "memory" else PerformanceModel)}
        for key in block:
            if key in sections and key not in allowed:
                raise InputError(f"--calibration.{kind}.{key}", f"not a fitted section; accepted: "
                                 f"{', '.join(sorted(allowed))}")
            if key not in allowed:
                raise unknown_key(f"--calibration.{kind}.{key}", key, sorted(allowed))


def apply_profile(data: Any, path: str | Path) -> tuple[MemoryModel | None, PerformanceModel | None]:
    """A parsed profile laid over the shipped models through their types (:func:`typed_data.overlay`): a memory
    and/or performance block of fitted sections whose keys are the models' keys (a misspelt one is named with the
    closest) and whose values have the models' types, numbers finite, never true/false and in their physical range.
    The values it sets are ``fitted`` on the cases the profile lists. One InputError names the field."""
    if not isinstance(data, dict) or not ({"memory", "performance"} & set(data)):
        raise InputError("--calibration", f"{path} is not a calibration profile (no memory or performance block)")
    known_keys(data, PROFILE_KEYS, "--calibration")
    _check_sections(data)
    fit = Provenance("fitted", f"calibration profile {path}", tuple(map(str, data.get("fitted_on") or ())))
    out: list[Any] = []
    for kind, shipped in (("memory", memory_model()), ("performance", performance_model())):
        block = data.get(kind)
        if not block:
            out.append(None)
            continue
        model = overlay(shipped, block, f"--calibration.{kind}", check=_check_number(kind))
        changed = {dotted: fit for dotted in _leaves(block)}
        provenance = {k: changed.get(k, v) for k, v in shipped.provenance.items()}
        out.append(dataclasses.replace(model, provenance=Table({**provenance, **changed})))
    return out[0], out[1]


def _leaves(block: dict[str, Any], prefix: str = "") -> list[str]:
    """The dotted paths of a profile block's values."""
    out: list[str] = []
    for key, value in block.items():
        dotted = f"{prefix}{key}"
        out += _leaves(value, f"{dotted}.") if isinstance(value, dict) else [dotted]
    return out


def load_calibration(path: str | Path | None) -> tuple[MemoryModel | None, PerformanceModel | None]:
    """(memory params, performance params) with the profile's values over the shipped ones."""
    if path is None:
        return None, None
    data = user_yaml(path, field="--calibration")
    try:
        return apply_profile(data, path)
    except InputError as exc:
        raise in_file(exc, str(path)) from None


def calibrated_params(calibration: Path | None) -> tuple[MemoryModel | None, PerformanceModel | None]:
    """(memory, performance) parameters of a calibration profile, or the shipped ones (None)."""
    if calibration is None:  # numpy and the fitter load only when a profile is used
        return None, None
    return load_calibration(calibration)
