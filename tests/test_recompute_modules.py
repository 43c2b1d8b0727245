"""Megatron-Core's selective recomputation by module (``training.recompute_modules``, --recompute-modules): each named
module's activations are dropped and its forward runs again in backward, the default being the attention core alone
(estimate/activations.selective_dropped, estimate/flops.selective_recomputed, step_layout.moe_recomputed_share)."""

import pytest

from trainsizer.errors import InputError
from trainsizer.estimate.estimator import estimate
from trainsizer.scenario import scenario_from_dict


def job(preset="qwen3-30b-a3b", modules=None, checkpointing="selective", parallel=None):
    training = {"framework": "megatron-lm", "method": "full", "micro_batch_size": 1, "seq_len": 4096,
                "global_batch_size": 64, "activation_checkpointing": checkpointing}
    if modules is not None:
        training["recompute_modules"] = modules
    return scenario_from_dict({
        "model": {"preset": preset}, "training": training,
        "parallel": {"gpus": 8, "distributed_optimizer": True, **(parallel or {})},
        "hardware": {"gpu": "h100-sxm5-80gb", "gpus_per_node": 8}})


def figures(scenario):
    result = estimate(scenario, with_limits=False)
    perf = result.performance
    return (result.memory.to_dict()["components_gib"]["activations"], perf.hardware_tflops_per_gpu * perf.step_time_s,
            perf.breakdown_s["moe_all_to_all"])


def test_the_default_modules_are_the_attention_core():
    assert figures(job()) == figures(job(modules=["core_attn"]))


def test_recomputing_the_moe_layer_drops_its_activations_and_runs_its_experts_and_all_to_alls_again():
    base_act, base_flops, base_a2a = figures(job(modules=["core_attn"], parallel={"ep": 8}))
    act, flops, a2a = figures(job(modules=["core_attn", "moe"], parallel={"ep": 8}))
    assert act < 0.6 * base_act  # the routed experts' copies and intermediates are most of a Qwen3-MoE layer's
    assert flops > 1.05 * base_flops  # the routed experts' forward again
    assert a2a == pytest.approx(base_a2a * 6 / 4)  # dispatch and combine again: 6 passes instead of 4
    full_act, _, full_a2a = figures(job(checkpointing="full", parallel={"ep": 8}))
    assert full_act < act and full_a2a == pytest.approx(a2a)


def test_element_wise_modules_drop_activations_without_matmuls():
    base_act, base_flops, _ = figures(job(modules=["core_attn"]))
    act, flops, _ = figures(job(modules=["core_attn", "layernorm", "moe_act"]))
    assert act < base_act and flops == pytest.approx(base_flops)


def test_without_the_attention_core_its_forward_is_not_run_again():
    _, with_core, _ = figures(job(modules=["core_attn"]))
    _, without, _ = figures(job(modules=["layernorm"]))
    _, none, _ = figures(job(checkpointing="none"))
    assert without == pytest.approx(none) and with_core > without


def test_dense_mlp_shared_experts_and_mla_up_projections_each_drop_their_own_part():
    base_act, base_flops, _ = figures(job("deepseek-v2-lite", modules=["core_attn"]))
    for module in ("mlp", "shared_experts", "mla_up_proj"):
        act, flops, _ = figures(job("deepseek-v2-lite", modules=["core_attn", module]))
        assert act < base_act and flops > base_flops, module


def test_modules_are_read_under_selective_recomputation_only():
    assert figures(job(checkpointing="full", modules=["moe"])) == figures(job(checkpointing="full"))


def test_an_unknown_module_is_refused_with_the_accepted_ones():
    with pytest.raises(InputError, match="recompute_modules.*accepted: core_attn, layernorm"):
        job(modules=["attention"])
