"""Memory estimator: components follow the published accounting (ZeRO paper, Korthikanti et al.)."""

import pytest
from conftest import base_scenario

from trainsizer.api import estimate
from trainsizer.models.catalog import preset_architecture
from trainsizer.models.param_counts import count_params
from trainsizer.report.message_text import text as _text

GIB = 2**30


def detail(result):
    return {c.name: c.bytes for c in result.memory.components}


def test_mixed_precision_adamw_model_states_are_18_bytes_per_param():
    r = estimate(base_scenario(training__micro_batch_size=1, training__seq_len=16), with_limits=False)
    n = count_params(preset_architecture("llama-3.1-8b")).total
    d = detail(r)
    states = d["weights"] + d["master_weights"] + d["optimizer_states"] + d["gradients"]
    assert states / n == pytest.approx(18, rel=0.01)


def test_bf16_true_adamw_is_8_bytes_per_param():
    r = estimate(base_scenario(training__precision="bf16-true", training__seq_len=16), with_limits=False)
    n = count_params(preset_architecture("llama-3.1-8b")).total
    d = detail(r)
    assert (d["weights"] + d["optimizer_states"] + d["gradients"]) / n == pytest.approx(8, rel=0.01)


def test_zero_stages_shard_what_the_paper_says():
    def states(zero):
        # zero_grad zeros: the gradients held all step, so the component is the whole sharded gradient
        d = detail(estimate(base_scenario(parallel__gpus=8, parallel__zero=zero, training__seq_len=16,
                                          training__zero_grad="zeros"), with_limits=False))
        return d["weights"], d["gradients"], d["optimizer_states"] + d.get("master_weights", 0)

    w0, g0, o0 = states(0)
    w1, g1, o1 = states(1)
    w2, g2, o2 = states(2)
    w3, g3, o3 = states(3)
    assert w1 == w0 and g1 == g0 and o1 == pytest.approx(o0 / 8)
    assert g2 == pytest.approx(g0 / 8) and w2 == w0
    assert w3 == pytest.approx(w0 / 8)


def test_eight_b_full_finetune_needs_more_than_one_80gb_card_without_sharding():
    r = estimate(base_scenario(), with_limits=False)
    assert not r.memory.fits
    assert r.memory.allocated_gib > 130


def test_eight_b_lora_fits_one_24gb_card():
    r = estimate(base_scenario(training__method="lora", training__precision="bf16-true",
                               hardware__gpu="rtx-4090-24gb", training__activation_checkpointing="full"))
    assert r.memory.fits and r.limits.max_micro_batch_size >= 1


def test_qlora_base_weights_are_about_half_a_byte_per_param():
    r = estimate(base_scenario(training__method="qlora", training__quantization="nf4", training__seq_len=16),
                 with_limits=False)
    n = count_params(preset_architecture("llama-3.1-8b"))
    # linears at ~0.56 B/param, embeddings and head stay 16-bit
    linear = n.layers
    expected = linear * 0.5625 + (n.embedding + n.lm_head) * 2
    assert detail(r)["weights"] == pytest.approx(expected, rel=0.02)


def test_eager_attention_adds_the_s_squared_scores():
    flash = estimate(base_scenario(training__seq_len=4096), with_limits=False)
    eager = estimate(base_scenario(training__seq_len=4096, training__attention="eager"), with_limits=False)
    extra = detail(eager)["activations"] - detail(flash)["activations"]
    arch = preset_architecture("llama-3.1-8b")
    # per layer: heads * s * s * (4 B fp32 softmax + 2 B cast), minus flash's output/lse (small)
    scores = arch.num_layers * arch.num_heads * 4096 * 4096 * 6
    assert extra == pytest.approx(scores, rel=0.15)


def test_full_checkpointing_keeps_one_hidden_state_per_layer():
    r = estimate(base_scenario(training__activation_checkpointing="full", training__micro_batch_size=4),
                 with_limits=False)
    arch = preset_architecture("llama-3.1-8b")
    # bf16-mixed computes with bf16 weights (beside fp32 masters): the residual stream is bf16 (Megatron, FSDP
    # MixedPrecision, DeepSpeed bf16); fp16-mixed is autocast over fp32 weights: an fp32 residual stream
    assert detail(r)["activations"] == pytest.approx(arch.num_layers * 4 * 2048 * arch.hidden_size * 2, rel=0.01)
    amp = estimate(base_scenario(training__activation_checkpointing="full", training__micro_batch_size=4,
                                 training__precision="fp16-mixed"), with_limits=False)
    assert detail(amp)["activations"] == pytest.approx(arch.num_layers * 4 * 2048 * arch.hidden_size * 4, rel=0.01)


def test_tensor_parallel_splits_weights_and_sequence_parallel_splits_the_rest():
    one = estimate(base_scenario(parallel__gpus=1, training__seq_len=4096), with_limits=False)
    tp = estimate(base_scenario(parallel__gpus=4, parallel__tp=4, training__seq_len=4096), with_limits=False)
    sp = estimate(base_scenario(parallel__gpus=4, parallel__tp=4, parallel__sequence_parallel=True,
                                training__seq_len=4096), with_limits=False)
    assert detail(tp)["weights"] == pytest.approx(detail(one)["weights"] / 4, rel=0.01)
    assert detail(one)["activations"] / 4 < detail(tp)["activations"] < detail(one)["activations"]
    assert detail(sp)["activations"] == pytest.approx(detail(one)["activations"] / 4, rel=0.01)


def test_pipeline_first_stage_holds_pp_microbatches_and_interleaving_adds_more():
    def acts(vpp):
        r = estimate(base_scenario(parallel__gpus=4, parallel__pp=4, parallel__virtual_pp=vpp,
                                   training__global_batch_size=32, training__seq_len=4096), with_limits=False)
        return detail(r).get("activations", 0), r
    plain, r = acts(1)
    one = estimate(base_scenario(training__seq_len=4096), with_limits=False)
    # first stage: L/pp layers x pp micro-batches = the activations of all L layers for one micro-batch
    assert plain == pytest.approx(detail(one)["activations"], rel=0.05)
    inter, _ = acts(2)
    assert inter == pytest.approx(plain * (1 + 3 / 8), rel=0.01)


def test_paged_optimizer_is_outside_allocated_but_on_the_device():
    base = dict(training__optimizer="adamw-8bit", training__precision="bf16-true", training__seq_len=16,
                hardware__gpu="h200-sxm-141gb")
    normal = estimate(base_scenario(**base), with_limits=False).memory
    paged = estimate(base_scenario(**{**base, "training__optimizer": "paged-adamw-8bit"}), with_limits=False).memory
    assert paged.allocated_gib < normal.allocated_gib - 10
    assert paged.device_gib == pytest.approx(normal.device_gib, rel=0.03)


def test_offload_moves_optimizer_and_params_off_the_gpu():
    on = estimate(base_scenario(parallel__gpus=8, parallel__zero=3, training__seq_len=16), with_limits=False)
    off = estimate(base_scenario(parallel__gpus=8, parallel__zero=3, parallel__offload="optimizer+params",
                                 training__seq_len=16), with_limits=False)
    assert detail(off)["weights"] == 0 and detail(off)["optimizer_states"] == 0
    assert off.memory.allocated_gib < on.memory.allocated_gib / 3


def test_chunked_loss_removes_the_fp32_logit_buffers():
    from trainsizer.estimate.activations import stage_activations
    from trainsizer.estimate.memory import default_memory_model
    from trainsizer.estimate.training_state import training_state
    from trainsizer.scenario import scenario_from_dict

    arch, params = preset_architecture("llama-3.1-8b"), default_memory_model()
    logits = {}
    for loss in ("standard", "chunked"):
        sc = scenario_from_dict(base_scenario(training__seq_len=4096, training__loss=loss))
        logits[loss] = stage_activations(sc, arch, params, training_state(sc, arch, params), 0).logits
    # standard: the fp32 copy, the shifted copy and the log-softmax output (12 bytes); chunked: the bf16 logits alone
    assert logits["standard"] - logits["chunked"] == 4096 * 128256 * (12 - 2)
    # gradients kept all step (zero_grad zeros): the peak is at the loss, not at the end of backward where freed
    # gradients would set it whatever the loss
    std = estimate(base_scenario(training__seq_len=4096, training__zero_grad="zeros"), with_limits=False).memory
    chunked = estimate(base_scenario(training__seq_len=4096, training__loss="chunked", training__zero_grad="zeros"),
                       with_limits=False).memory
    assert chunked.allocated_bytes < std.allocated_bytes


def test_moe_counts_all_experts_in_weights_but_k_in_activations():
    r = estimate({**base_scenario(training__method="lora", training__precision="bf16-true",
                                  hardware__gpu="h200-sxm-141gb", training__seq_len=1024),
                  "model": {"preset": "mixtral-8x7b"}}, with_limits=False)
    assert detail(r)["weights"] == pytest.approx(46.7e9 * 2, rel=0.01)


def test_largest_fitting_micro_batch_really_is_the_largest():
    r = estimate(base_scenario(training__method="lora", training__precision="bf16-true",
                               hardware__gpu="a100-sxm4-80gb"))
    mbs = r.limits.max_micro_batch_size
    assert estimate(base_scenario(training__method="lora", training__precision="bf16-true",
                                  hardware__gpu="a100-sxm4-80gb", training__micro_batch_size=mbs),
                    with_limits=False).memory.fits
    assert not estimate(base_scenario(training__method="lora", training__precision="bf16-true",
                                      hardware__gpu="a100-sxm4-80gb", training__micro_batch_size=mbs + 1),
                        with_limits=False).memory.fits


def test_seed_rule_of_thumb_undercounts_mixed_precision_adamw():
    r = estimate(base_scenario(parallel__gpus=8, parallel__zero=3), with_limits=False)
    assert r.rule_of_thumb.per_gpu_gib < r.memory.device_gib
    assert any("16-18 B/param" in en(reason) for reason in r.rule_of_thumb.reasons)


def test_expert_parallelism_splits_only_the_experts():
    def weights(ep):
        r = estimate({**base_scenario(parallel__gpus=8, parallel__ep=ep, training__seq_len=256,
                                      training__precision="bf16-true", hardware__gpu="h200-sxm-141gb"),
                      "model": {"preset": "mixtral-8x7b"}}, with_limits=False)
        return detail(r)["weights"]
    arch = preset_architecture("mixtral-8x7b")
    experts = arch.num_layers * 8 * 3 * 4096 * 14336 * 2
    assert weights(1) - weights(8) == pytest.approx(experts * 7 / 8, rel=0.001)


def test_freeze_keeps_activations_only_for_the_trainable_top_layers():
    full = estimate(base_scenario(training__precision="bf16-true"), with_limits=False)
    frozen = estimate(base_scenario(training__precision="bf16-true", training__method="freeze",
                                    training__freeze_trainable_layers=2), with_limits=False)
    assert detail(frozen)["activations"] < detail(full)["activations"] / 8


def test_zero_shards_experts_over_the_expert_data_parallel_group_only():
    def opt(ep):
        r = estimate({**base_scenario(parallel__gpus=8, parallel__ep=ep, parallel__zero=1, training__seq_len=256,
                                      hardware__gpu="h200-sxm-141gb"), "model": {"preset": "mixtral-8x7b"}},
                     with_limits=False)
        return detail(r)["optimizer_states"]
    # with ep=8 every rank keeps one expert's states whole (expert-DP group of 1): the states of
    # the experts do not shrink, only the dense part's does
    assert opt(8) == pytest.approx(opt(1), rel=0.05)


def test_context_parallel_ranks_join_the_zero_sharding_group():
    def states(cp):
        r = estimate(base_scenario(parallel__gpus=8 * cp, parallel__tp=8, parallel__cp=cp,
                                   parallel__distributed_optimizer=True, training__seq_len=8192,
                                   training__activation_checkpointing="full"), with_limits=False)
        d = detail(r)
        return d["optimizer_states"] + d["master_weights"]
    assert states(8) == pytest.approx(states(1) / 8, rel=0.01)


def test_every_pipeline_stage_is_checked_and_tied_heads_are_copied_to_the_last():
    r = estimate(base_scenario(parallel__gpus=2, parallel__pp=2, training__activation_checkpointing="full",
                               training__global_batch_size=8), with_limits=False)
    tied = estimate({**base_scenario(parallel__gpus=2, parallel__pp=2, training__global_batch_size=8,
                                     training__activation_checkpointing="full"),
                     "model": {"preset": "llama-3.2-1b"}}, with_limits=False)
    assert "stage" in r.memory.peak_phase
    # llama-3.2-1b ties embeddings: the last stage holds the output projection too (18 B/param)
    assert detail(tied)["weights"] + detail(tied)["optimizer_states"] > 262e6 * 14


def test_expert_parallel_needs_a_divisor_of_the_experts():
    from trainsizer.errors import InputError

    for preset, ep in (("llama-3.1-8b", 2), ("mixtral-8x7b", 3)):
        with pytest.raises(InputError) as exc:
            estimate({**base_scenario(parallel__gpus=6, parallel__ep=ep), "model": {"preset": preset}},
                     with_limits=False)
        assert exc.value.field == "parallel.ep"


def en(message):
    """An engine message in English."""
    return _text(message, "en")


def test_optimizer_in_backward_holds_one_tensor_parallel_ranks_share_of_the_largest_layer():
    """Stepping each layer in backward holds its gradients alone: on a tensor-parallel rank the attention over tp,
    the routed experts over etp, the router and norms whole (Megatron-Core's Router holds the full weight on every
    rank; layer norms are not tensor-parallel), as the gathered ZeRO-3 unit counts them."""
    def gradients(tp, etp):
        r = estimate({**base_scenario(parallel__gpus=tp, parallel__tp=tp, parallel__etp=etp, training__seq_len=256,
                                      training__precision="bf16-true", training__optimizer_in_backward=True),
                      "model": {"preset": "qwen3-30b-a3b"}}, with_limits=False)
        return detail(r)["gradients"]
    arch = preset_architecture("qwen3-30b-a3b")
    experts = arch.moe.num_experts * 3 * arch.hidden_size * arch.moe.expert_intermediate_size
    whole = arch.moe.num_experts * arch.hidden_size + arch.norms_per_layer * arch.hidden_size + 2 * arch.head_dim
    layer = count_params(arch).per_layer[0]
    assert gradients(1, 1) == pytest.approx(layer * 2)  # bf16 gradients of the largest layer
    assert 2 * gradients(2, 2) - gradients(1, 1) == pytest.approx(whole * 2)
    assert gradients(2, 1) - gradients(2, 2) == pytest.approx(experts / 2 * 2)


def test_a_qlora_zero3_unit_gathers_quantized_linears_and_16_bit_norms():
    """Each gathered ZeRO-3 unit of a QLoRA run holds its layer as stored: the linear layers quantized, the norms
    16-bit (bitsandbytes replaces only the linear modules), as the weights component counts them."""
    from dataclasses import replace

    from trainsizer.estimate.memory import default_memory_model

    mp = default_memory_model()

    def buffers(units):
        params = replace(mp, communication=replace(mp.communication, zero3_gathered_units=units))
        r = estimate(base_scenario(parallel__gpus=2, parallel__zero=3, training__method="qlora",
                                   training__quantization="nf4", training__seq_len=16),
                     memory_params=params, with_limits=False)
        return detail(r)["buffers"]
    arch = preset_architecture("llama-3.1-8b")
    norms = arch.norms_per_layer * arch.hidden_size
    linears = count_params(arch).per_layer[0] - norms
    nf4 = mp.quantization.formats["nf4"]
    assert buffers(3) - buffers(2) == pytest.approx(linears * (nf4.code_bytes + nf4.constant_bytes) + norms * 2)
