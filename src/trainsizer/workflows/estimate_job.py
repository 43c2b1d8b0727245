"""``trainsizer estimate`` and the web's estimate: a scenario (file, flags or form) to an Estimate."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trainsizer.estimate.calibration import calibrated_params
from trainsizer.estimate.estimator import Estimate, estimate
from trainsizer.frameworks import check_gpu_vendor, resolve
from trainsizer.hardware.catalog import load_catalog
from trainsizer.scenario import Scenario, relative_to_file, scenario_from_dict
from trainsizer.workflows.jobs import scenario_data


def estimate_scenario(scenario: Scenario, catalogs: list[Path] | tuple[Path, ...] = (),
                      calibration: Path | None = None, source: str = "scenario",
                      framework: str | None = None) -> Estimate:
    """The estimate of a user's scenario (checked against the catalogs; a problem names ``source``, its file), run
    with its framework's profile (``framework``, else its ``training.framework``, else the one assumed for its
    method: ``trainsizer.frameworks.resolve``); the estimate's ``framework`` says what each key came from."""
    scenario, use = resolve(scenario, framework)
    check_gpu_vendor(scenario, use)
    memory_params, perf_params = calibrated_params(calibration)
    result = estimate(scenario, catalog=load_catalog(list(catalogs)), memory_params=memory_params,
                      performance_params=perf_params, source=source)
    result.framework = use
    return result


def estimate_job(path: Path | None, flags: dict[str, Any], catalogs: list[Path] | tuple[Path, ...] = (),
                 calibration: Path | None = None, framework: str | None = None) -> tuple[Estimate, str]:
    """The estimate of a scenario file (or the built-in example) with dotted flags over it, and its origin."""
    data, origin = scenario_data(path, flags)
    parsed = scenario_from_dict(data, source=origin)
    if path is not None:
        parsed = relative_to_file(parsed, path)
    return estimate_scenario(parsed, catalogs, calibration, source=origin, framework=framework), origin
