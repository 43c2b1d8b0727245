"""Under pipeline parallelism the LM head runs on the last stage besides its share of the layers (Megatron-LM's even
split), and every stage waits for the slowest: estimate/flops.pipeline_stage_linear, in the estimate and in the
planner's screen alike."""

import numpy as np
import pytest
from screen_layouts import estimate_and_screen, one_layout  # tests/ is on sys.path

from trainsizer.estimate.flops import pipeline_stage_linear, step_flops
from trainsizer.models.catalog import resolve_model
from trainsizer.scenario import scenario_from_dict

GPU = "a100-sxm4-80gb"


def _job(pp: int) -> dict:
    return {"model": {"preset": "llama-3.1-8b"},
            "training": {"method": "full", "precision": "bf16-mixed", "micro_batch_size": 1, "seq_len": 8192,
                         "global_batch_size": 64, "attention": "flash", "activation_checkpointing": "full"},
            "parallel": {"gpus": 8, "pp": pp}, "hardware": {"gpu": GPU, "gpus_per_node": 8}}


def test_the_slowest_stage_carries_the_whole_head():
    assert pipeline_stage_linear(10.0, 2.0, 1) == 10.0  # no pipeline: the head is one GPU's like the layers
    assert pipeline_stage_linear(10.0, 2.0, 4) / 4 == pytest.approx((10.0 - 2.0) / 4 + 2.0)  # layers / 4 + head
    got = pipeline_stage_linear(np.array([10.0, 10.0]), np.array([2.0, 0.0]), np.array([8, 8]))
    assert np.array_equal(got, [24.0, 10.0])  # arrays of layouts; an encoder with no head stays even


def test_the_head_is_counted_once_in_the_linear_flops():
    sc = scenario_from_dict(_job(1))
    arch = resolve_model(sc.model)
    fl = step_flops(sc, arch)
    # forward + backward (input and weight gradients) of one vocab x hidden GEMM per token
    assert fl.head_per_token == pytest.approx(3 * 2.0 * arch.vocab_size * arch.hidden_size)
    assert 0 < fl.head_per_token < fl.linear_per_token


def _run(pp: int):
    return estimate_and_screen(_job(pp), GPU, one_layout(gpus=8, mbs=1, ckpt="full", gpus_per_node=8, pp=pp))


@pytest.mark.parametrize("pp", [2, 8])
def test_a_pipeline_stage_runs_its_layers_and_the_head_in_the_estimate_and_the_screen(pp):
    sc, arch, perf, raw, screen = _run(pp)
    fl = step_flops(sc, arch)
    tokens = sc.training.micro_batch_size * sc.training.seq_len
    even = fl.linear_per_token * tokens / pp  # the linear FLOPs of one stage if the head were spread too
    last = (fl.linear_per_token - fl.head_per_token) * tokens / pp + fl.head_per_token * tokens
    assert last > even
    # raw_step prices one micro-batch of the last stage: the even share scaled by last / even
    _, _, _, raw_even, _ = _run(1)  # the same job on one stage: the whole model's linear GEMMs on each GPU
    assert raw.linear_s == pytest.approx(raw_even.linear_s * last / (fl.linear_per_token * tokens), rel=1e-9)
    assert screen == pytest.approx(perf.step_time_s, rel=0.03)  # the screen prices the same stage
