"""Framework profiles (trainsizer.frameworks): a named framework's cited defaults fill the internals keys a scenario
leaves out, a stated key wins, and the estimate says which framework it ran with and whether it was assumed."""

import pytest

from trainsizer.errors import InputError
from trainsizer.evidence.cases import Case, Measured
from trainsizer.evidence.user_view import user_case
from trainsizer.frameworks import INTERNALS, families, load_profile, resolve
from trainsizer.scenario import scenario_from_dict
from trainsizer.workflows.estimate_job import estimate_scenario

JOB = {"model": {"preset": "llama-3.1-8b"}, "training": {"method": "full", "micro_batch_size": 1, "seq_len": 2048},
       "parallel": {"gpus": 8, "zero": 2}, "hardware": {"gpu": "a100-sxm4-80gb"}}


def _row(est, key):
    return next(r.to_dict() for r in est.framework.settings if r.key == key)


def test_two_frameworks_differ_where_their_sources_differ():
    lf = estimate_scenario(scenario_from_dict(JOB), framework="llama-factory")
    tt = estimate_scenario(scenario_from_dict(JOB), framework="torchtune")
    # torchtune's chunked cross-entropy (its recipe config) keeps no whole-sequence fp32 logits: less memory
    assert tt.memory.allocated_gib < lf.memory.allocated_gib
    assert "CEWithChunkedOutputLoss" in next(s.quote for s in load_profile("torchtune").settings
                                             if s.key == "training.loss")
    assert "8B_lora.yaml" in _row(tt, "training.loss")["source"]
    # LLaMA-Factory's DeepSpeed configs set overlap_comm false: the step waits for the gradient reduction
    assert _row(lf, "parallel.overlap_grad_reduce") == {
        "key": "parallel.overlap_grad_reduce", "value": False, "from": "profile",
        "source": next(s.source for s in load_profile("llama-factory").settings
                       if s.key == "parallel.overlap_grad_reduce")}
    assert "ds_z2_config.json" in _row(lf, "parallel.overlap_grad_reduce")["source"]
    assert lf.performance.step_time_s > tt.performance.step_time_s


def test_a_stated_key_wins_over_the_profile():
    job = {**JOB, "parallel": {**JOB["parallel"], "overlap_grad_reduce": True}}
    resolved, use = resolve(scenario_from_dict(job), "llama-factory")
    assert resolved.parallel.overlap_grad_reduce is True
    assert next(r for r in use.settings if r.key == "parallel.overlap_grad_reduce").origin == "stated"


def test_no_framework_named_is_assumed_and_said():
    est = estimate_scenario(scenario_from_dict(JOB))
    assert est.framework.assumed is True and est.framework.framework == "llama-factory"
    assert est.to_dict()["framework"]["assumed"] is True


def test_an_unknown_framework_is_refused_naming_the_field():
    with pytest.raises(InputError) as exc:
        resolve(scenario_from_dict(JOB), "nosuch@1.0")
    assert exc.value.field == "training.framework"
    with pytest.raises(InputError):
        resolve(scenario_from_dict(JOB), "torchtune+deepspeed")


def test_every_profile_loads_and_cites_each_setting():
    for family in families():
        profile = load_profile(family)
        assert profile.source and profile.as_of
        for s in profile.settings:
            assert s.key in INTERNALS and s.source and s.quote


def test_the_user_view_drops_internals_and_takes_the_profile():
    case = Case(id="x", source="s", measured=Measured(memory_gib=1.0),
                scenario={**JOB, "training": {**JOB["training"], "framework": "torchtune", "loss": "compute-dtype"}})
    user = user_case(case)
    assert user.scenario["training"]["loss"] == "chunked"
    assert user.framework is not None and user.framework.framework == "torchtune"


def test_a_setting_can_hold_for_the_models_activation():
    # transformers writes gelu_new as element-wise PyTorch ops: unfused under a Hugging Face profile, unless compiled;
    # a SiLU model keeps nn.functional's one kernel, and llm.c's GPT-2 runs its GELU as one CUDA kernel
    gpt2 = {**JOB, "model": {"preset": "gpt2-124m"}, "parallel": {"gpus": 8, "zero": 0}}
    assert resolve(scenario_from_dict(gpt2), "hf-trainer")[0].training.activation_kernel == "unfused"
    compiled = {**gpt2, "training": {**gpt2["training"], "compile": True}}
    assert resolve(scenario_from_dict(compiled), "hf-trainer")[0].training.activation_kernel == "fused"
    assert resolve(scenario_from_dict(JOB), "hf-trainer")[0].training.activation_kernel == "fused"
    assert resolve(scenario_from_dict(gpt2), "llmc")[0].training.activation_kernel == "fused"
    row = _row(estimate_scenario(scenario_from_dict(gpt2), framework="hf-trainer"), "training.activation_kernel")
    assert row["from"] == "profile" and "activations.py" in row["source"]


def test_megatron_cores_cross_entropy_keeps_one_fp32_copy_of_the_logits():
    # megatron/core/tensor_parallel/cross_entropy.py: the fp32 copy is shifted, exponentiated and normalised in place
    # beside the bf16 logits (6 bytes a logit), where a Hugging Face loss keeps three fp32 tensors (12)
    job = {**JOB, "parallel": {"gpus": 8, "distributed_optimizer": True}}
    megatron = estimate_scenario(scenario_from_dict(job), framework="megatron-lm")
    assert megatron.scenario.training.loss == "vocab-parallel"
    stated = estimate_scenario(scenario_from_dict({**job, "training": {**job["training"], "loss": "standard"}}),
                               framework="megatron-lm")
    logits = 1 * 2048 * 128256  # tokens x vocabulary of one micro-batch (tp 1)
    saved = (stated.memory.to_dict()["detail_gib"]["logits_and_loss"]
             - megatron.memory.to_dict()["detail_gib"]["logits_and_loss"]) * 2**30
    assert saved == pytest.approx(logits * (12 - 6), rel=1e-3)
