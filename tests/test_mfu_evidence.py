"""The MFU ceilings come from the measured speed cases (evidence/mfu_evidence.py): the shipped block from every
shipped speed case (tools/mfu_ceilings.py), and each cross-validation fold's from its own training cases, so that no
held-out case bounds its own prediction (issue 23: the held-out figure is honest)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import REPO

from trainsizer.estimate.memory import default_memory_model
from trainsizer.estimate.step import default_performance_model
from trainsizer.estimate.step_terms import mfu_ceiling
from trainsizer.estimate.typed_data import with_value
from trainsizer.evidence.case_terms import build_case_terms
from trainsizer.evidence.cases import load_cases
from trainsizer.evidence.mfu_evidence import (
    DENSE_BF16_CAP,
    UNMEASURED_MFU,
    case_runs,
    ceilings,
    fold_ceilings,
    measured_mfu,
)

PUBLISHED = REPO / "validation" / "published"
DLE = "NVIDIA/DeepLearningExamples PyTorch/LanguageModeling/BERT/README.md"


@pytest.fixture(scope="module")
def volta():
    """The V100 speed cases of two publications: DeepLearningExamples' BERT and DeepSpeedExamples' autotuning."""
    cases = load_cases(PUBLISHED / "dle_bert.yaml") + load_cases(PUBLISHED / "deepspeed_autotuning_v100.yaml")
    terms, failed = build_case_terms(cases, "performance", default_memory_model(), default_performance_model())
    assert not failed
    return terms


def test_a_cases_measured_mfu_does_not_depend_on_the_fitted_parameters(volta):
    """Measured / predicted cancels the prediction: every speed figure is inversely proportional to the step."""
    pp = default_performance_model()
    slower = with_value(with_value(pp, "compute.max_efficiency", "volta", 0.35), "overhead", "per_step_s", 0.1)
    assert measured_mfu(volta, slower) == pytest.approx(measured_mfu(volta, pp), rel=1e-9)
    assert np.all((measured_mfu(volta, pp) > 0.01) & (measured_mfu(volta, pp) < 1.0))


def test_a_folds_ceiling_comes_from_its_training_cases_only(volta):
    pp = default_performance_model()
    everything = list(range(len(volta)))
    dle = [i for i in everything if volta.sources[i].startswith(DLE)]
    others = [i for i in everything if i not in dle]
    assert dle and others
    full = fold_ceilings(pp, volta, everything).mfu_ceiling.table["volta"]["fp16-mixed"]
    held = fold_ceilings(pp, volta, others).mfu_ceiling.table["volta"]["fp16-mixed"]
    assert full.cases[0].startswith("dle-bert")  # DeepLearningExamples' fused BERT is the fastest V100 fp16 run
    assert not held.cases[0].startswith("dle-bert")  # held out, it bounds nothing
    assert held.mfu < full.mfu
    best_other = max(r[2] for r in case_runs(volta, others, pp) if r[1] == "fp16-mixed")
    assert held.mfu == pytest.approx(round(best_other + pp.mfu_ceiling.margin, 3))
    # the fold prices with its own ceilings: a step bounded by the other publication's best run only
    fold = fold_ceilings(pp, volta, others)
    assert mfu_ceiling("volta", "fp16-mixed", fold) == held.mfu
    assert mfu_ceiling("hopper", "bf16-mixed", fold) == fold.mfu_ceiling.fallback.mfu  # no hopper case: fallback


def test_ceilings_pool_thin_rows_cap_dense_bf16_and_fall_back_without_evidence():
    runs = [("ampere", "bf16-mixed", m, f"a{i}") for i, m in enumerate((0.40, 0.45, 0.65))] + \
        [("ampere", "bf16-true", 0.30, "b0"), ("hopper", "fp8-mixed", 0.42, "h0")]
    out = ceilings(runs, 0.03)
    table = out["table"]
    assert table["ampere"]["bf16-mixed"]["mfu"] == DENSE_BF16_CAP  # 0.65 + margin, capped for dense bf16
    # one run of bf16-true: bounded by the architecture's runs at the same tensor-core rate
    assert table["ampere"]["bf16-true"]["cases"] == ["a2"] and table["ampere"]["bf16-true"]["runs"] == 4
    assert table["hopper"]["fp8-mixed"]["status"] == "assumed"  # one run does not bound a precision
    assert out["fallback"]["mfu"] == UNMEASURED_MFU
    assert ceilings([], 0.03)["fallback"]["mfu"] == UNMEASURED_MFU and ceilings([], 0.03)["table"] == {}


def test_a_compiled_row_below_the_eager_one_does_not_bound_compiled_jobs():
    """Slow compiled runs (small FP8 models on Hopper) say nothing against compiling: their row is dropped and a
    compiled job takes the eager row; compiled runs above the eager best keep theirs."""
    eager = [("hopper", "fp8-mixed", m, f"e{i}") for i, m in enumerate((0.30, 0.40, 0.44))]
    slow = [("hopper", "fp8-mixed+compile", m, f"c{i}") for i, m in enumerate((0.20, 0.25, 0.28))]
    fast = [("hopper", "fp8-mixed+compile", m, f"f{i}") for i, m in enumerate((0.45, 0.46, 0.50))]
    assert "fp8-mixed+compile" not in ceilings(eager + slow, 0.03)["table"]["hopper"]
    assert ceilings(eager + fast, 0.03)["table"]["hopper"]["fp8-mixed+compile"]["mfu"] == pytest.approx(0.53)


def test_mixture_of_experts_runs_bound_no_ceiling():
    """A MoE run's model MFU is no ceiling for dense jobs: the Blackwell runs of moe.yaml would otherwise cap every
    dense FP8 job on that family at their MoE MFU."""
    cases = load_cases(PUBLISHED / "moe.yaml")
    terms, failed = build_case_terms(cases, "performance", default_memory_model(), default_performance_model())
    assert not failed and set(terms.models) == {"moe"}
    assert case_runs(terms, range(len(terms)), default_performance_model()) == []
