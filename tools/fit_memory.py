"""Fit the memory estimator's free parameters to measured cases and write them to the data file.

Usage: python tools/fit_memory.py [CASES.yaml ...] [--write]

Least squares in log space: minimises the mean of log(predicted / measured)^2 over the cases
not listed under ``fit.exclude``
in src/trainsizer/estimate/memory_model.yaml, by coordinate descent over a grid for each
parameter in FREE (bounded to physically meaningful ranges). With --write, the fitted values
replace the old ones in the YAML file (comments kept).
"""

from __future__ import annotations

import copy
import re
import sys
from pathlib import Path

import numpy as np

from trainsizer.estimate.memory import default_memory_model
from trainsizer.validate import load_cases, validate_cases

DATA = Path(__file__).resolve().parents[1] / "src/trainsizer/estimate/memory_model.yaml"
DEFAULT_CASES = Path(__file__).resolve().parents[2] / "shared/validation/memory.yaml"
# (section, key, grid): physically bounded ranges
FREE = [
    ("activations", "implementation_factor", np.round(np.arange(0.90, 1.41, 0.01), 3)),
    ("activations", "backward_working_fraction", np.round(np.arange(0.0, 2.01, 0.05), 3)),
    ("allocator", "reserved_fraction_dynamic", np.round(np.arange(0.0, 0.301, 0.01), 3)),
    ("allocator", "reserved_fraction_static", np.round(np.arange(0.0, 0.101, 0.005), 3)),
    ("optimizer", "foreach_temp_states", np.round(np.arange(0.0, 1.01, 0.1), 3)),
]


def loss(params: dict, cases: list[dict]) -> float:
    results = [r for r in validate_cases(cases, params) if not r.excluded_from_fit and r.error is not None]
    return float(np.mean([np.log(r.predicted / r.measured) ** 2 for r in results]))


def fit(cases: list[dict]) -> dict:
    params = copy.deepcopy(default_memory_model())
    best = loss(params, cases)
    for _ in range(3):
        improved = False
        for section, key, grid in FREE:
            for value in grid:
                trial = copy.deepcopy(params)
                trial[section][key] = float(value)
                score = loss(trial, cases)
                if score < best - 1e-9:
                    best, params, improved = score, trial, True
        if not improved:
            break
    print(f"rms log error on fitted cases: {best ** 0.5:.4f}")
    return params


def write(params: dict) -> None:
    text = DATA.read_text(encoding="utf-8")
    for section, key, _ in FREE:
        value = params[section][key]
        pattern = re.compile(rf"(^{section}:\n(?:(?!^\S).*\n)*?\s+{key}: )([-0-9.e]+)", re.M)
        text, n = pattern.subn(lambda m, v=value: f"{m.group(1)}{v:g}", text)
        if n != 1:
            raise SystemExit(f"could not find {section}.{key} in {DATA}")
    DATA.write_text(text, encoding="utf-8")


def main(argv: list[str]) -> None:
    paths = [a for a in argv if not a.startswith("--")] or [str(DEFAULT_CASES)]
    cases = [c for p in paths for c in load_cases(p)]
    params = fit(cases)
    for section, key, _ in FREE:
        print(f"{section}.{key} = {params[section][key]:g}")
    if "--write" in argv:
        write(params)
        print(f"written to {DATA}")


if __name__ == "__main__":
    main(sys.argv[1:])
