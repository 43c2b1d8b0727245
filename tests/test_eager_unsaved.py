"""Eager attention's probs @ V output is not kept for backward (bmm's gradients need its inputs only: PyTorch
tools/autograd/derivatives.yaml), so peak memory leaves it out; it is still written and read once by the contiguous
copy that feeds the output projection, so the speed model's element-wise traffic keeps it, in the estimate and in the
planner's screen alike (tests/test_eager_saved_tensors.py counts what PyTorch keeps)."""

import dataclasses

import pytest
from screen_layouts import one_layout  # tests/ is on sys.path

from trainsizer.estimate.activations import layer_activations, stage_activations
from trainsizer.estimate.comm import fabric
from trainsizer.estimate.memory import default_memory_model
from trainsizer.estimate.step import default_performance_model, step_context
from trainsizer.estimate.step_terms import raw_step
from trainsizer.estimate.training_state import training_state
from trainsizer.hardware.catalog import default_catalog
from trainsizer.models.catalog import resolve_model
from trainsizer.plan.fast import job_basis, screen_step_time
from trainsizer.scenario import scenario_from_dict

GPU = "v100-sxm2-16gb"


def job(attention: str) -> dict:
    return {"model": {"architecture": {"model_type": "bert", "hidden_size": 1024, "num_hidden_layers": 24,
                                       "num_attention_heads": 16, "num_key_value_heads": 16,
                                       "intermediate_size": 4096, "vocab_size": 30522, "hidden_act": "gelu"}},
            "training": {"method": "full", "precision": "fp32", "optimizer": "adamw", "micro_batch_size": 4,
                         "seq_len": 512, "global_batch_size": 4, "activation_checkpointing": "none",
                         "attention": attention},
            "parallel": {"gpus": 1}, "hardware": {"gpu": GPU, "gpus_per_node": 1}}


def _layer(attention: str):
    sc = scenario_from_dict(job(attention))
    arch = resolve_model(sc.model)
    p = default_memory_model()
    st = training_state(sc, arch, p)
    return sc, arch, p, st, layer_activations(sc, arch, p, st.layers[0])


def test_eager_attention_output_is_traffic_not_saved_bytes():
    *_, fused = _layer("sdpa")
    sc, arch, p, st, eager = _layer("eager")
    out = arch.attn_out_dim * 4.0  # fp32
    factor = p.activations.implementation_factor
    assert eager.unsaved == out and fused.unsaved == 0.0
    # the fused kernel keeps its output and log-sum-exp, eager attention neither (its scores apart)
    assert fused.sharded - eager.sharded == pytest.approx((out + arch.num_heads * 4.0) * factor)
    acts = stage_activations(sc, arch, p, st, 0)
    assert acts.unsaved_traffic == pytest.approx(out * 4 * 512 * arch.num_layers)


def test_the_estimate_and_the_screen_price_the_unsaved_output_as_traffic():
    cat = default_catalog()
    gpu = cat.accelerator(GPU)
    params = default_performance_model()
    sc = scenario_from_dict(job("eager"))
    arch = resolve_model(sc.model)
    ctx = step_context(sc, arch, gpu, cat, params, default_memory_model())[0]
    acts = stage_activations(sc, arch, default_memory_model(), training_state(sc, arch, default_memory_model()), 0)
    kept = raw_step(ctx).saved_traffic_s * ctx.hbm_bytes_per_s  # bytes the element-wise term reads
    assert kept == pytest.approx(acts.saved - acts.scaled_saved * (1 - 1 / default_memory_model().activations
                                                                   .implementation_factor) + acts.unsaved_traffic)
    fab = fabric(cat, gpu, None, None, None, 1, params, 1)
    basis = job_basis(sc, arch)
    assert basis.unsaved_per_token == arch.attn_out_dim * 4.0
    lay = one_layout(mbs=4)

    def screened(b):
        return float(screen_step_time(b, lay, sc, gpu, fab, params)[0])
    assert screened(basis) > screened(dataclasses.replace(basis, unsaved_per_token=0.0))
