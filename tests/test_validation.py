"""`trainsizer validate` on the measured cases the shipped parameters are fitted on (validation/cases/)."""

import pytest
from conftest import VALIDATION

from trainsizer.estimate.memory import default_memory_model
from trainsizer.workflows.validate import load_cases, summarize, validate_cases


@pytest.fixture(scope="module")
def results():
    return validate_cases(load_cases(VALIDATION / "memory.yaml"))


def test_every_memory_case_gets_a_prediction(results):
    assert results and all(r.predicted is not None and r.predicted > 0 for r in results)


def test_fitted_cases_median_within_5pct_and_each_within_15pct(results):
    fitted = [r for r in results if not r.excluded_from_fit]
    summary = summarize(fitted)
    assert summary.median_abs_error <= 0.05, summary
    worst = max(fitted, key=lambda r: abs(r.error))
    assert abs(worst.error) <= 0.15, (worst.id, worst.error)


def test_all_cases_median_within_5pct(results):
    assert summarize(results).median_abs_error <= 0.05


def test_exclusions_name_real_cases_and_give_a_reason(results):
    excluded = default_memory_model().fit.exclude
    ids = {r.id for r in results}
    assert set(excluded) <= ids
    assert all(len(reason) > 30 for reason in excluded.values())
    # exclusions are a minority: the fit rests on most of the published cases
    assert len(excluded) < len(ids) / 2


def test_each_source_is_predicted_well_not_just_the_pooled_median(results):
    """The median per publishing source (litgpt, torchtune, hf, peft) stays within 10 %, so no
    single source carries the pooled median."""
    by_source: dict[str, list] = {}
    for r in results:
        if not r.excluded_from_fit:
            by_source.setdefault(r.id.split("-")[0], []).append(abs(r.error))
    assert len(by_source) >= 3
    for source, errors in by_source.items():
        errors.sort()
        assert errors[len(errors) // 2] <= 0.10, source


@pytest.fixture(scope="module")
def speed_results():
    return validate_cases(load_cases(VALIDATION / "throughput.yaml"))


def test_throughput_median_within_10pct_and_usable_cases_within_25pct(speed_results):
    usable = [r for r in speed_results if not r.excluded_from_fit]
    assert len(usable) >= 30
    assert summarize(usable).median_abs_error <= 0.10
    worst = max(usable, key=lambda r: abs(r.error))
    assert abs(worst.error) <= 0.25, (worst.id, worst.error)


def test_published_tflops_that_count_recomputation_are_compared_like_for_like(speed_results):
    megatron2021 = [r for r in speed_results if r.id.startswith("megatron2021-")]
    assert megatron2021 and all("hardware_tflops_per_gpu_full_attention" in r.metric for r in megatron2021)
