"""Fit the step-time model's free parameters to measured throughput cases; write them as data.

Usage: python tools/fit_performance.py [CASES.yaml ...] [--write]
(default: the two-stage shipped fit, tools/fitting.py)

Least squares in log space over the cases not listed under ``fit.exclude`` in
src/trainsizer/estimate/performance_model.yaml, coordinate descent over bounded grids (FREE).
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml
from fitting import run, write_values

from trainsizer.estimate.model_params import PerformanceModel, load_model
from trainsizer.estimate.step import default_performance_model
from trainsizer.workflows.calibrate import PERFORMANCE_FREE, family_prior
from trainsizer.workflows.shipped_cases import SHARED, shipped_files

DATA = Path(__file__).resolve().parents[1] / "src/trainsizer/estimate/performance_model.yaml"
# the shared cases, where the shipped fit starts, then every shipped case (tools/fitting.py, validation/cases/README.md)
CORE_CASES = [Path(__file__).resolve().parents[1] / "validation" / SHARED["throughput"]]
EVERY_CASE = shipped_files()
FREE = PERFORMANCE_FREE  # the same grids as `trainsizer calibrate`


# Da Vinci (Ascend): no grid frees its efficiency (its runs come from few publications), so it ships the family prior
# a fold gives a family with no case (workflows/calibrate.family_prior) over the fitted families, rewritten here
# whenever they move (tests/test_fit_audit.py checks it).
PRIOR_ONLY = ("davinci",)


def write_priors(path: Path) -> None:
    """The efficiency of each :data:`PRIOR_ONLY` family at its prior over the fitted families, into ``path`` (read
    afresh: the cached shipped model predates the values just written)."""
    params = load_model(PerformanceModel, yaml.safe_load(path.read_text(encoding="utf-8")), str(path), path.name)
    fitted = {key for dotted, key, _ in FREE if dotted == "compute.max_efficiency"}
    # family_prior moves every measured family outside ``fitted``; only the prior-only ones are written
    write_values(path, family_prior(params, fitted), [("compute.max_efficiency", f, None) for f in PRIOR_ONLY])


def main(argv: list[str]) -> None:
    run(argv, DATA, CORE_CASES, EVERY_CASE, default_performance_model(), FREE,
        memory_cases=False)
    if "--write" in argv and not [a for a in argv if not a.startswith("--")]:
        write_priors(DATA)


if __name__ == "__main__":
    main(sys.argv[1:])
