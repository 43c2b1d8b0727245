"""Fit the step-time model's free parameters to measured throughput cases; write them as data.

Usage: python tools/fit_performance.py [CASES.yaml ...] [--write]
(default: the two-stage shipped fit, tools/fitting.py)

Least squares in log space over the cases not listed under ``fit.exclude`` in
src/trainsizer/estimate/performance_model.yaml (the mixture-of-experts runs, ``fit.exclude_moe``, fit only the MoE
parameter: evidence/calibrate.fit_split), coordinate descent over bounded grids (FREE).
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml
from fitting import run, write_values

from trainsizer.estimate.model_params import PerformanceModel, load_model
from trainsizer.estimate.step import default_performance_model
from trainsizer.evidence.calibrate import PERFORMANCE_FREE, PRIOR_ONLY, settle_priors
from trainsizer.evidence.shipped_cases import SHARED, shipped_files

DATA = Path(__file__).resolve().parents[1] / "src/trainsizer/estimate/performance_model.yaml"
# the shared cases, where the shipped fit starts, then every shipped case (tools/fitting.py, validation/cases/README.md)
CORE_CASES = [Path(__file__).resolve().parents[1] / "validation" / SHARED["throughput"]]
EVERY_CASE = shipped_files()
FREE = PERFORMANCE_FREE  # the same grids as `trainsizer calibrate`


def write_priors(path: Path) -> None:
    """The efficiency of each prior-only family (evidence/calibrate.PRIOR_ONLY: the families no grid frees) at its
    prior over the fitted families, into ``path`` (read afresh: the cached shipped model predates the values just
    written); the fit settles it the same way (calibrate.settle_priors), so one pass writes what each
    cross-validation fold uses. tests/test_fit_audit.py checks it."""
    params = load_model(PerformanceModel, yaml.safe_load(path.read_text(encoding="utf-8")), str(path), path.name)
    write_values(path, settle_priors(params, FREE), [("compute.max_efficiency", f, None) for f in PRIOR_ONLY])


def main(argv: list[str]) -> None:
    run(argv, DATA, CORE_CASES, EVERY_CASE, default_performance_model(), FREE,
        memory_cases=False)
    if "--write" in argv and not [a for a in argv if not a.startswith("--")]:
        write_priors(DATA)


if __name__ == "__main__":
    main(sys.argv[1:])
