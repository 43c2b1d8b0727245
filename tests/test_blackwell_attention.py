"""On Blackwell (B200) a fused attention kernel reaches a smaller share of what the GEMMs reach than the tensor cores
alone suggest: the exponential units and shared-memory bandwidth did not grow with them (FlashAttention-4,
arXiv:2603.05451). ``compute.attention_relative_efficiency`` reads it for the family; Blackwell Ultra (B300), whose
exponential units doubled, keeps the default. Tensor parallelism gives a rank fewer heads, not narrower tiles."""

import pytest

from trainsizer.estimate.step import default_performance_model, estimate_performance
from trainsizer.estimate.step_terms import attention_relative
from trainsizer.estimate.typed_data import with_value
from trainsizer.hardware.catalog import default_catalog
from trainsizer.models.catalog import resolve_model
from trainsizer.scenario import scenario_from_dict


def _compute_s(gpu, seq_len, params):
    sc = scenario_from_dict({
        "model": {"preset": "llama-3.1-8b"},
        "training": {"method": "full", "precision": "bf16-mixed", "micro_batch_size": 1, "seq_len": seq_len,
                     "global_batch_size": 8, "activation_checkpointing": "none", "attention": "flash"},
        "parallel": {"gpus": 8}, "hardware": {"gpu": gpu, "gpus_per_node": 8}})
    cat = default_catalog()
    return estimate_performance(sc, resolve_model(sc.model), cat.accelerator(gpu), cat, params).breakdown_s["compute"]


def test_blackwell_fused_attention_runs_below_the_gemms_rate_and_blackwell_ultra_does_not():
    p = default_performance_model()
    assert attention_relative(p, "blackwell", "bf16", "flash") == pytest.approx(0.6)
    assert attention_relative(p, "blackwell-ultra", "bf16", "flash") == 1.0
    assert attention_relative(p, "blackwell", "bf16", "eager") == 1.0  # batched GEMMs


def test_the_b200_attention_share_grows_with_the_sequence():
    p = default_performance_model()
    at_gemm_rate = with_value(p, "compute.attention_relative_efficiency", "blackwell", 1.0)
    extra = {s: _compute_s("b200-sxm-180gb", s, p) / _compute_s("b200-sxm-180gb", s, at_gemm_rate) - 1
             for s in (2048, 32768)}
    assert 0 < extra[2048] < extra[32768]  # attention's share of the FLOPs grows with the context
    assert extra[32768] > 0.2


def test_tensor_parallelism_gives_a_rank_fewer_attention_heads_not_slower_ones():
    """A fused attention kernel's tiles are a head's query block against the head dimension: under TP 8 a rank runs
    an eighth of the heads at the rate TP 1 runs them all (the GEMMs' width saturation does not apply)."""
    from dataclasses import replace

    from trainsizer.estimate.step import step_context
    from trainsizer.estimate.step_terms import compute_s, raw_step

    p = default_performance_model()

    def seconds_per_attention_second(tp):  # compute time of the attention over its time at the dense peak
        sc = scenario_from_dict({
            "model": {"preset": "llama-3.1-70b"},
            "training": {"method": "full", "micro_batch_size": 1, "seq_len": 8192, "global_batch_size": 8},
            "parallel": {"gpus": 8, "tp": tp, "sequence_parallel": tp > 1}, "hardware": {"gpu": "h100-sxm5-80gb"}})
        cat = default_catalog()
        ctx, _ = step_context(sc, resolve_model(sc.model), cat.accelerator("h100-sxm5-80gb"), cat, p)
        raw = raw_step(ctx)
        return (compute_s(raw, p) - compute_s(replace(raw, attention_s=0.0), p)) / raw.attention_s

    assert seconds_per_attention_second(8) == pytest.approx(seconds_per_attention_second(1))
