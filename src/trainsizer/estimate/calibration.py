"""Calibration profiles (written by ``trainsizer calibrate``): fitted values laid over the shipped
parameters of the memory and step-time models."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from trainsizer.datafiles import user_yaml
from trainsizer.errors import InputError
from trainsizer.estimate.memory import default_memory_model
from trainsizer.estimate.step import default_performance_model

# The sections of memory_model.yaml / performance_model.yaml whose values a profile may replace: those the
# fitter (trainsizer.workflows.calibrate) has free parameters in.
FITTABLE_SECTIONS = {
    "memory": {"activations", "allocator", "optimizer"},
    "performance": {"compute", "memory_bound", "communication", "overhead"},
}


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def load_calibration(path: str | Path | None) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(memory params, performance params) with the profile's values over the shipped ones."""
    if path is None:
        return None, None
    data = user_yaml(path, field="--calibration")
    if not isinstance(data, dict) or not ({"memory", "performance"} & set(data)):
        raise InputError("--calibration", f"{path} is not a calibration profile (no memory or performance block)")
    allowed = FITTABLE_SECTIONS
    for kind in ("memory", "performance"):
        for key in (data.get(kind) or {}):
            if key not in allowed[kind]:
                raise InputError(f"--calibration.{kind}.{key}", f"not a fitted section; accepted: "
                                 f"{', '.join(sorted(allowed[kind]))}")
    memory = _merge(default_memory_model(), data["memory"]) if data.get("memory") else None
    perf = _merge(default_performance_model(), data["performance"]) if data.get("performance") else None
    return memory, perf
