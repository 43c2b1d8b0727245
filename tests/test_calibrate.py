"""`trainsizer calibrate`: fitted parameters improve held-out cases; profiles feed estimate/validate."""

from dataclasses import replace

import pytest
import yaml
from conftest import VALIDATION

from trainsizer.errors import InputError
from trainsizer.estimate.calibration import FITTABLE_SECTIONS, load_calibration
from trainsizer.evidence.calibrate import MEMORY_FREE, PERFORMANCE_FREE, calibrate, write_profile
from trainsizer.evidence.validate import load_cases, summarize, validate_cases


def test_a_team_whose_runs_use_more_memory_gets_a_profile_that_predicts_its_held_out_runs(tmp_path):
    cases = [c for c in load_cases(VALIDATION / "memory.yaml") if c.id.startswith(("litgpt-llama", "hf-bert"))]
    # this team's framework keeps 12 % more activations: scale what it measures
    team = [replace(c, id="team-" + c.id, measured=c.measured.model_copy(
        update={"memory_gib": c.measured.memory_gib * 1.12})) for c in cases]
    result = calibrate(team, holdout=3)
    s = result.gains["memory"]
    assert s.held_out_median_after < s.held_out_median_before
    path = tmp_path / "cal.yaml"
    write_profile(result, path)
    memory, perf = load_calibration(path)
    held = [c for c in team if c.id in result.profile["held_out"]]
    before = summarize(validate_cases(held)).median_abs_error
    after = summarize(validate_cases(held, memory, perf)).median_abs_error
    assert after < before


def test_profiles_are_checked(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"memory": {"weights": {"x": 1}}}))
    with pytest.raises(InputError) as exc:
        load_calibration(bad)
    assert "memory.weights" in exc.value.field
    other = tmp_path / "other.yaml"
    other.write_text("a: 1\n")
    with pytest.raises(InputError):
        load_calibration(other)


def test_a_profile_may_replace_exactly_the_sections_the_fitter_frees():
    assert {d.split(".")[0] for d, _, _ in MEMORY_FREE} == FITTABLE_SECTIONS["memory"]
    assert {d.split(".")[0] for d, _, _ in PERFORMANCE_FREE} == FITTABLE_SECTIONS["performance"]


def test_the_fitters_grids_lie_inside_the_ranges_a_profile_is_checked_against():
    from trainsizer.estimate.calibration import _range

    for kind, free in (("memory", MEMORY_FREE), ("performance", PERFORMANCE_FREE)):
        for dotted, key, grid in free:
            low, high = _range(f"{kind}.{dotted}.{key}")
            assert low <= grid.min() and grid.max() <= high, (kind, dotted, key)
