"""Fit the memory estimator's free parameters to measured cases and write them to the data file.

Usage: python tools/fit_memory.py [CASES.yaml ...] [--write]

Least squares in log space: minimises the mean of log(predicted / measured)^2 over the cases
not listed under ``fit.exclude`` in src/trainsizer/estimate/memory_model.yaml, by coordinate
descent over a bounded grid per parameter in FREE. With --write the fitted values replace the
old ones in the YAML file (comments kept).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from fitting import run

from trainsizer.estimate.memory import default_memory_model
from trainsizer.validate import validate_cases

DATA = Path(__file__).resolve().parents[1] / "src/trainsizer/estimate/memory_model.yaml"
DEFAULT_CASES = Path(__file__).resolve().parents[2] / "shared/validation/memory.yaml"
FREE = [
    ("activations", "implementation_factor", np.round(np.arange(0.90, 1.41, 0.01), 3)),
    ("activations", "backward_working_fraction", np.round(np.arange(0.0, 2.01, 0.05), 3)),
    ("allocator", "reserved_fraction_dynamic", np.round(np.arange(0.0, 0.301, 0.01), 3)),
    ("allocator", "reserved_fraction_static", np.round(np.arange(0.0, 0.101, 0.005), 3)),
    ("optimizer", "foreach_temp_states", np.round(np.arange(0.0, 1.01, 0.1), 3)),
]


def main(argv: list[str]) -> None:
    run(argv, DATA, DEFAULT_CASES, default_memory_model(), FREE, lambda cases, params: validate_cases(cases, params),
        memory_cases=True)


if __name__ == "__main__":
    main(sys.argv[1:])
