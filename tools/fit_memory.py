"""Fit the memory estimator's free parameters to measured cases and write them to the data file.

Usage: python tools/fit_memory.py [CASES.yaml ...] [--write]   (default: validation/cases/memory.yaml)

Least squares in log space: minimises the mean of log(predicted / measured)^2 over the cases
not listed under ``fit.exclude`` in src/trainsizer/estimate/memory_model.yaml, by coordinate
descent over a bounded grid per parameter in FREE. With --write the fitted values replace the
old ones in the YAML file (comments kept).
"""

from __future__ import annotations

import sys
from pathlib import Path

from fitting import run

from trainsizer.estimate.memory import default_memory_model
from trainsizer.workflows.calibrate import MEMORY_FREE
from trainsizer.workflows.shipped_cases import FITTED

DATA = Path(__file__).resolve().parents[1] / "src/trainsizer/estimate/memory_model.yaml"
# the cases the shipped parameters are fitted on, in this repository (validation/cases/README.md)
DEFAULT_CASES = Path(__file__).resolve().parents[1] / "validation" / FITTED["memory"]
FREE = MEMORY_FREE  # the same grids as `trainsizer calibrate`


def main(argv: list[str]) -> None:
    run(argv, DATA, DEFAULT_CASES, default_memory_model(), FREE, memory_cases=True)


if __name__ == "__main__":
    main(sys.argv[1:])
