"""``trainsizer scale`` and the web's scaling chart: tokens/s vs GPU count per link option."""

from __future__ import annotations

from pathlib import Path

from trainsizer.errors import InputError
from trainsizer.estimate.estimator import check_precision
from trainsizer.hardware.catalog import load_catalog
from trainsizer.models.catalog import resolve_model
from trainsizer.plan.scale import ScaleCurve, scale
from trainsizer.scenario import Scenario
from trainsizer.workflows.defaults import DEFAULT_MAX_OOM_RISK

MAX_SCALE_GPUS = 4096


def scale_job(job: Scenario, gpu: str, max_gpus: int, gpus_per_node: int | None = None,
              catalogs: list[Path] | tuple[Path, ...] = ()) -> list[ScaleCurve]:
    cat = load_catalog(list(catalogs))
    check_precision(job, cat.accelerator(gpu, "--gpu"))
    if not 1 <= max_gpus <= MAX_SCALE_GPUS:
        raise InputError("--max-gpus", f"{max_gpus} is out of range; accepted: 1 to {MAX_SCALE_GPUS}")
    # a point a plan could answer with: within its default chance of running out of memory
    return scale(job, resolve_model(job.model), gpu, max_gpus, cat, gpus_per_node, DEFAULT_MAX_OOM_RISK)
