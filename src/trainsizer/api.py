"""The Python API: every number the CLI prints, as plain data.

>>> from trainsizer.api import estimate
>>> result = estimate({"model": {"preset": "llama-3.1-8b"}, "training": {"method": "lora",
...     "micro_batch_size": 1, "seq_len": 2048}, "parallel": {"gpus": 1},
...     "hardware": {"gpu": "rtx-4090-24gb"}})
>>> result.memory.fits
True

``plan`` runs the same pipeline as ``trainsizer plan``, the report and the web planner.
"""

from __future__ import annotations

from trainsizer.estimate.estimator import Estimate, check_layout, estimate, resolve_gpu
from trainsizer.workflows.plan_job import PlanRequest, load_job, plan_job

__all__ = ["Estimate", "PlanRequest", "check_layout", "estimate", "load_job", "plan_job", "resolve_gpu"]
