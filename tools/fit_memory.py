"""Fit the memory estimator's free parameters to measured cases and write them to the data file.

Usage: python tools/fit_memory.py [CASES.yaml ...] [--write]   (default: the two-stage shipped fit, tools/fitting.py)

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
from trainsizer.evidence.calibrate import MEMORY_FREE
from trainsizer.evidence.shipped_cases import SHARED, shipped_files

DATA = Path(__file__).resolve().parents[1] / "src/trainsizer/estimate/memory_model.yaml"
# the shared cases, where the shipped fit starts, then every shipped case (tools/fitting.py, validation/cases/README.md)
CORE_CASES = [Path(__file__).resolve().parents[1] / "validation" / SHARED["memory"]]
EVERY_CASE = shipped_files()
FREE = MEMORY_FREE  # the same grids as `trainsizer calibrate`


def main(argv: list[str]) -> None:
    run(argv, DATA, CORE_CASES, EVERY_CASE, default_memory_model(), FREE, memory_cases=True)


if __name__ == "__main__":
    main(sys.argv[1:])
