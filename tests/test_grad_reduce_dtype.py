"""Gradients kept and summed over data parallelism in the 16-bit compute dtype (``parallel.grad_reduce_dtype:
compute``; InternLM's NaiveAMPModel casts the model to bf16 and its hybrid zero all-reduces the bf16 gradients,
InternLM/InternLM internlm/solver/optimizer/hybrid_zero_optim.py @ c18bec9) instead of fp32 (the default: DDP
under autocast, Megatron's accumulate_allreduce_grads_in_fp32): half the gradient bytes on the wire and in memory,
priced alike by the estimate and the planner's screen."""

import pytest
from screen_layouts import data_parallel_layouts  # tests/ is on sys.path

from trainsizer.api import estimate
from trainsizer.estimate.comm import all_gather_s, all_reduce_s
from trainsizer.estimate.comm import fabric as make_fabric
from trainsizer.estimate.dp_sync import data_parallel_sync_s
from trainsizer.estimate.step import default_performance_model, step_context
from trainsizer.estimate.step_terms import zero3_mb
from trainsizer.estimate.training_state import gradient_bytes
from trainsizer.hardware.catalog import default_catalog
from trainsizer.models.catalog import resolve_model
from trainsizer.plan.fast import job_basis, screen_memory, screen_step_time
from trainsizer.scenario import scenario_from_dict


def _scenario(dtype="fp32", zero=1, gpus=64, tp=1, precision="bf16-mixed", method="full", sync="reduce-scatter",
              seq=256):
    training = {"method": method, "precision": precision, "micro_batch_size": 2, "seq_len": seq,
                "activation_checkpointing": "full", "global_batch_size": 1024}
    parallel = {"gpus": gpus, "zero": zero, "tp": tp, "grad_reduce_dtype": dtype, "zero_grad_sync": sync}
    return scenario_from_dict({"model": {"preset": "llama-3.1-8b"}, "training": training, "parallel": parallel,
                               "hardware": {"gpu": "a100-sxm4-80gb", "inter_node": "ib-hdr-200"}})


def _run(sc):
    return estimate(sc, with_limits=False)


def _component(mem, name):
    return next((c.bytes for c in mem.components if c.name == name), 0.0)


@pytest.mark.parametrize("precision,fp32,compute", [("bf16-mixed", 4, 2), ("fp16-mixed", 4, 2), ("fp8-mixed", 4, 2),
                                                    ("bf16-true", 2, 2), ("fp32", 4, 4)])
def test_compute_dtype_gradients_are_two_bytes_under_mixed_precision_only(precision, fp32, compute):
    assert gradient_bytes(_scenario(precision=precision)) == fp32
    assert gradient_bytes(_scenario("compute", precision=precision)) == compute


def test_fp32_is_the_default():
    training = {"method": "full", "precision": "bf16-mixed", "micro_batch_size": 1, "seq_len": 2048}
    sc = scenario_from_dict({"model": {"preset": "llama-3.1-8b"}, "training": training,
                             "parallel": {"gpus": 8}, "hardware": {"gpu": "a100-sxm4-80gb"}})
    assert sc.parallel.grad_reduce_dtype == "fp32" and gradient_bytes(sc) == 4


def _ctx(sc):
    cat = default_catalog()
    return step_context(sc, resolve_model(sc.model), cat.accelerator("a100-sxm4-80gb"), cat)[0]


@pytest.mark.parametrize("zero,sync", [(0, "reduce-scatter"), (1, "reduce-scatter"), (1, "all-reduce"),
                                       (3, "reduce-scatter")])
def test_the_gradient_sync_moves_half_the_bytes(zero, sync):
    fp32, half = _ctx(_scenario(zero=zero, sync=sync)), _ctx(_scenario("compute", zero=zero, sync=sync))
    assert half.weight_and_grad_bytes == (2.0, 2.0) and fp32.weight_and_grad_bytes == (2.0, 4.0)
    term = zero3_mb if zero == 3 else data_parallel_sync_s
    # the same collectives on half the gradient bytes (zero 3: beside the unchanged weight gathers)
    elems, group, fab = fp32.trainable_local, 64, fp32.fabric
    if zero == 3:
        moved = all_gather_s(elems * 4, group, fab, stride=1) - all_gather_s(elems * 2, group, fab, stride=1)
        assert term(fp32) - term(half) == pytest.approx(moved, rel=1e-6)
        return
    price = all_gather_s if (zero == 1 and sync == "reduce-scatter") else all_reduce_s
    assert term(fp32) == pytest.approx(price(elems * 4, group, fab, stride=1, nic_share=False), rel=1e-9)
    assert term(half) == pytest.approx(price(elems * 2, group, fab, stride=1, nic_share=False), rel=1e-9)
    assert 0 < term(half) < term(fp32)
    assert _run(_scenario("compute", zero=zero, sync=sync)).performance.breakdown_s["dp_grad_sync"] \
        < _run(_scenario(zero=zero, sync=sync)).performance.breakdown_s["dp_grad_sync"]


def test_memory_keeps_two_byte_gradients():
    fp32, half = _run(_scenario(zero=0)).memory, _run(_scenario("compute", zero=0)).memory
    assert _component(half, "gradients") == pytest.approx(_component(fp32, "gradients") / 2, rel=1e-6)
    assert _component(half, "gradients") > 0
    assert half.device_bytes < fp32.device_bytes
    for name in ("weights", "master_weights", "optimizer_states"):
        assert _component(half, name) == pytest.approx(_component(fp32, name))


def test_lora_adapters_keep_fp32_gradients_under_autocast():
    fp32, half = _run(_scenario(zero=0, method="lora")), _run(_scenario("compute", zero=0, method="lora"))
    assert half.memory.device_bytes == pytest.approx(fp32.memory.device_bytes)
    assert half.performance.step_time_s == pytest.approx(fp32.performance.step_time_s)

LAYOUTS = ((0, 2, 64), (1, 1, 64), (2, 1, 64), (3, 1, 64), (1, 2, 64), (3, 1, 16))
SCREEN_SEQ = 128  # short micro-batches: every layout's gradient traffic stays exposed, whatever the fitted efficiency


def test_the_planners_screen_prices_compute_dtype_gradients_as_the_estimate_does():
    cat, params = default_catalog(), default_performance_model()
    gpu = cat.accelerator("a100-sxm4-80gb")
    fab = make_fabric(cat, gpu, None, "ib-hdr-200", None, 8, params, 64)
    lay = data_parallel_layouts(*zip(*LAYOUTS, strict=True))
    screened, estimated = {}, {}
    for dtype in ("fp32", "compute"):
        sc = _scenario(dtype, seq=SCREEN_SEQ)
        basis = job_basis(sc, resolve_model(sc.model))
        steps = screen_step_time(basis, lay, sc, gpu, fab, params)
        mem, _host = screen_memory(basis, lay, sc, gpu)
        screened[dtype], estimated[dtype] = (steps, mem), []
        for i, (zero, tp, gpus) in enumerate(LAYOUTS):
            ref = _run(_scenario(dtype, zero=zero, tp=tp, gpus=gpus, seq=SCREEN_SEQ))
            estimated[dtype].append((ref.performance.step_time_s, ref.memory.device_bytes))
            assert mem[i] == pytest.approx(ref.memory.device_bytes, rel=0.005), (dtype, zero, tp, gpus)
            assert steps[i] == pytest.approx(ref.performance.step_time_s, rel=0.1), (dtype, zero, tp, gpus)
    # the screen moves with the dtype as the estimate does
    for i, layout in enumerate(LAYOUTS):
        est_mem = estimated["fp32"][i][1] - estimated["compute"][i][1]
        scr_mem = screened["fp32"][1][i] - screened["compute"][1][i]
        assert est_mem > 0 and scr_mem == pytest.approx(est_mem, rel=0.01), layout
        est_t = estimated["fp32"][i][0] - estimated["compute"][i][0]
        scr_t = screened["fp32"][0][i] - screened["compute"][0][i]
        # 0 where the reduction hides behind backward in both dtypes (the screen must then show no change either)
        assert est_t >= 0 and scr_t == pytest.approx(est_t, rel=0.3, abs=1e-4), layout
    assert sum(f[0] > c[0] for f, c in zip(estimated["fp32"], estimated["compute"], strict=True)) >= len(LAYOUTS) - 1
