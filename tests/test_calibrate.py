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


def test_moe_runs_fit_only_the_moe_parameters():
    """fit_split: the MoE runs (fit.exclude) set the MoE layer's host issue time after its synchronisation and nothing
    else; the other parameters come from the dense runs alone, as if the MoE runs were absent."""
    from conftest import REPO

    from trainsizer.estimate.memory import default_memory_model
    from trainsizer.estimate.step import default_performance_model
    from trainsizer.estimate.typed_data import value_at, with_value
    from trainsizer.evidence.calibrate import MOE_ONLY, fit_split
    from trainsizer.evidence.case_terms import build_case_terms

    published = REPO / "validation" / "published"
    cases = load_cases(published / "moe.yaml") + load_cases(published / "dle_bert.yaml")
    terms, failed = build_case_terms(cases, "performance", default_memory_model(), default_performance_model())
    assert not failed
    free = [f for f in PERFORMANCE_FREE if f[:2] in MOE_ONLY or f[:2] == ("compute", "half_tokens")]
    start = with_value(default_performance_model(), "compute", "half_tokens", 256.0)
    start = with_value(start, "overhead", "moe_sync_issue_s", 0.0)
    both = fit_split(terms, range(len(terms)), start, free, rounds=2)[0]
    dense = [i for i, m in enumerate(terms.models) if m == "dense"]
    alone = fit_split(terms, dense, start, free, rounds=2)[0]
    assert value_at(both, "compute", "half_tokens") == value_at(alone, "compute", "half_tokens")
    assert value_at(alone, "overhead", "moe_sync_issue_s") == 0.0  # no MoE run: left where it started
    assert value_at(both, "overhead", "moe_sync_issue_s") > 0.0
