"""Under pipeline parallelism the LM head runs on the last stage besides its share of the layers (Megatron-LM's even
split), and every stage waits for the slowest: estimate/flops.pipeline_stage_linear, in the estimate and in the
planner's screen alike. A split that counts the embedding and the loss as layers (``parallel.pipeline_split``,
Megatron-Core's account_for_*_in_pipeline_split) builds one layer fewer on the first and last virtual stages, and the
estimate prices the stage that then costs the most (estimate/pipeline_split.py)."""

import numpy as np
import pytest
from screen_layouts import estimate_and_screen, one_layout  # tests/ is on sys.path

from trainsizer.errors import InputError
from trainsizer.estimate.estimator import estimate
from trainsizer.estimate.flops import pipeline_stage_linear, step_flops
from trainsizer.estimate.memory import default_memory_model
from trainsizer.estimate.pipeline_split import busiest_stage, stage_layer_indices, virtual_stage_layers
from trainsizer.estimate.training_state import training_state
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


def test_megatron_builds_one_layer_fewer_on_the_first_and_last_virtual_stage():
    # get_num_layers_to_build: (94 + 2) / (8 x 4) = 3 slots a virtual stage, the embedding and the loss one each
    chunks = virtual_stage_layers(94, 8, 4, "embedding-and-loss")
    assert chunks == [2] + [3] * 30 + [2] and sum(chunks) == 94
    assert virtual_stage_layers(95, 8, 1, "embedding") == [11] + [12] * 7
    with pytest.raises(ValueError):
        virtual_stage_layers(94, 8, 4, "loss")  # 95 does not divide by 32
    stages = [stage_layer_indices(94, 8, 4, "embedding-and-loss", s) for s in range(8)]
    assert sorted(i for s in stages for i in s) == list(range(94))  # every layer on exactly one rank
    assert [len(s) for s in stages] == [11] + [12] * 6 + [11]
    assert stages[1][:3] == [2, 3, 4] and stages[0][2:5] == [2 + 3 * 7, 3 + 3 * 7, 4 + 3 * 7]  # chunk c on rank c % pp
    # an even split keeps the contiguous shares it always had, the remainder falling where the integer split puts it
    assert [stage_layer_indices(10, 4, 1, "even", s) for s in range(4)] == [[0, 1], [2, 3, 4], [5, 6], [7, 8, 9]]


def test_the_busiest_stage_is_the_last_while_the_head_outweighs_the_layer_it_gave_up():
    heavy = busiest_stage(94, 8, 1, "embedding-and-loss", layer_flops=1.0, head_flops=2.7)
    assert (heavy.layers, heavy.holds_head) == (11.0, True) and heavy.share == pytest.approx(11 * 8 / 94)
    light = busiest_stage(94, 8, 1, "embedding-and-loss", layer_flops=1.0, head_flops=0.5)  # 11.5 < 12 in the middle
    assert (light.layers, light.holds_head) == (12.0, False)
    even = busiest_stage(94, 8, 1, "even", 1.0, 2.7)
    assert (even.layers, even.share, even.holds_head) == (94 / 8, 1.0, True)


def _split_job(split: str) -> dict:  # Qwen2.5-7B: 28 layers, (28 + 2) / 6 = 5 slots a stage
    return {"model": {"preset": "qwen2.5-7b"},
            "training": {"method": "full", "precision": "bf16-mixed", "micro_batch_size": 1, "seq_len": 4096,
                         "global_batch_size": 48, "attention": "flash", "activation_checkpointing": "full"},
            "parallel": {"gpus": 6, "pp": 6, "pipeline_split": split},
            "hardware": {"gpu": GPU, "gpus_per_node": 8}}


def test_the_estimate_prices_the_last_stage_with_one_layer_fewer_and_keeps_fewer_layers_on_the_first():
    from trainsizer.estimate.step import step_context
    from trainsizer.estimate.step_terms import raw_step
    from trainsizer.hardware.catalog import default_catalog

    cat = default_catalog()
    raws, states = {}, {}
    for split in ("even", "embedding-and-loss"):
        sc = scenario_from_dict(_split_job(split))
        arch = resolve_model(sc.model)
        raws[split] = raw_step(step_context(sc, arch, cat.accelerator(GPU), cat)[0])
        states[split] = training_state(sc, arch, default_memory_model())
    fl = step_flops(sc, arch)
    layer = (fl.linear_per_token - fl.head_per_token) / 28
    # the last stage (4 layers + the head) is the busiest, against 28 / 6 layers + the head under the even split
    assert raws["embedding-and-loss"].linear_s / raws["even"].linear_s == pytest.approx(
        (4 * layer + fl.head_per_token) / (28 / 6 * layer + fl.head_per_token), rel=1e-9)
    assert raws["embedding-and-loss"].layers_per_stage == 4
    assert [len(states["embedding-and-loss"].stage_layers(s)) for s in range(6)] == [4, 5, 5, 5, 5, 4]
    assert [len(states["even"].stage_layers(s)) for s in range(6)] == [4, 5, 5, 4, 5, 5]
    est = {split: estimate(scenario_from_dict(_split_job(split))) for split in raws}
    assert est["embedding-and-loss"].performance.step_time_s < est["even"].performance.step_time_s


def test_a_split_whose_layers_do_not_divide_over_the_stages_names_the_field():
    job = _split_job("loss")  # 29 layers over 6 stages
    with pytest.raises(InputError) as err:
        estimate(scenario_from_dict(job))
    assert err.value.field == "parallel.pipeline_split" and "29" in str(err.value)


def test_an_even_split_of_layers_the_stages_do_not_divide_says_so_and_names_the_split_megatron_needs():
    job = _split_job("even")
    job["parallel"].update({"gpus": 4, "pp": 4})  # 28 layers over 4 stages divide: no note
    codes = [n.code for n in estimate(scenario_from_dict(job)).performance.notes]
    assert "step.pipeline_uneven" not in codes
    job["parallel"].update({"gpus": 6, "pp": 6})  # 28 over 6 do not
    notes = {n.code: n for n in estimate(scenario_from_dict(job)).performance.notes}
    assert notes["step.pipeline_uneven"].args["per"] == pytest.approx(28 / 6)
    job["parallel"]["pipeline_split"] = "embedding-and-loss"  # stated: priced as built, nothing to say
    codes = [n.code for n in estimate(scenario_from_dict(job)).performance.notes]
    assert "step.pipeline_uneven" not in codes


@pytest.mark.parametrize("pp", [3, 6])
def test_the_screen_prices_a_split_layout_as_the_estimate_does(pp):
    job = _split_job("embedding-and-loss")
    job["parallel"].update({"gpus": pp, "pp": pp})  # 30 = 28 + 2 over 3 or 6 stages
    sc, arch, perf, raw, screen = estimate_and_screen(job, GPU, one_layout(gpus=pp, mbs=1, ckpt="full",
                                                                             gpus_per_node=8, pp=pp, split=True))
    assert screen == pytest.approx(perf.step_time_s, rel=0.03)
    even = dict(job, parallel={**job["parallel"], "pipeline_split": "even"})
    *_, screen_even = estimate_and_screen(even, GPU, one_layout(gpus=pp, mbs=1, ckpt="full", gpus_per_node=8, pp=pp))
    assert screen < screen_even  # the last stage gives up a layer and still holds the head
