"""Fit the step-time model's free parameters to measured throughput cases; write them as data.

Usage: python tools/fit_performance.py [CASES.yaml ...] [--write]

Least squares in log space over the cases not listed under ``fit.exclude`` in
src/trainsizer/estimate/performance_model.yaml, coordinate descent over bounded grids (FREE).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from fitting import run

from trainsizer.estimate.step import default_performance_model
from trainsizer.validate import validate_cases

DATA = Path(__file__).resolve().parents[1] / "src/trainsizer/estimate/performance_model.yaml"
DEFAULT_CASES = Path(__file__).resolve().parents[2] / "shared/validation/throughput.yaml"
EFF = np.round(np.arange(0.30, 0.96, 0.01), 3)
FREE = [
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


def main(argv: list[str]) -> None:
    run(argv, DATA, DEFAULT_CASES, default_performance_model(), FREE,
        lambda cases, params: validate_cases(cases, perf_params=params), memory_cases=False)


if __name__ == "__main__":
    main(sys.argv[1:])
