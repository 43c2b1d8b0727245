"""Fit the step-time model's free parameters to measured throughput cases; write them as data.

Usage: python tools/fit_performance.py [CASES.yaml ...] [--write]   (default: validation/cases/throughput.yaml)

Least squares in log space over the cases not listed under ``fit.exclude`` in
src/trainsizer/estimate/performance_model.yaml, coordinate descent over bounded grids (FREE).
"""

from __future__ import annotations

import sys
from pathlib import Path

from fitting import run

from trainsizer.estimate.step import default_performance_model
from trainsizer.workflows.calibrate import PERFORMANCE_FREE
from trainsizer.workflows.shipped_cases import FITTED

DATA = Path(__file__).resolve().parents[1] / "src/trainsizer/estimate/performance_model.yaml"
# the cases the shipped parameters are fitted on, in this repository (validation/cases/README.md)
DEFAULT_CASES = Path(__file__).resolve().parents[1] / "validation" / FITTED["throughput"]
FREE = PERFORMANCE_FREE  # the same grids as `trainsizer calibrate`


def main(argv: list[str]) -> None:
    run(argv, DATA, DEFAULT_CASES, default_performance_model(), FREE,
        memory_cases=False)


if __name__ == "__main__":
    main(sys.argv[1:])
