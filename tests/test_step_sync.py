"""Step-time mechanisms of the data-parallel synchronisation (issue 23): when a sharded optimizer's weight gather
waits, in the estimate (estimate/step_terms.py) and in the planner's screen (plan/fast.py) alike."""

import numpy as np
import pytest

from trainsizer.api import estimate
from trainsizer.estimate.comm import fabric
from trainsizer.estimate.step import default_performance_model, step_context
from trainsizer.estimate.step_terms import compute_s, gather_overlaps, raw_step
from trainsizer.hardware.catalog import default_catalog
from trainsizer.models.catalog import resolve_model
from trainsizer.plan.fast import CKPT, Layouts, job_basis, screen_step_time
from trainsizer.scenario import scenario_from_dict

GPUS = 256


def job(zero: int, distributed_optimizer: bool, gpus: int = GPUS) -> dict:
    return {"model": {"preset": "llama-2-7b"},
            "training": {"method": "full", "precision": "bf16-mixed", "micro_batch_size": 2, "seq_len": 2048,
                         "global_batch_size": 2 * gpus, "activation_checkpointing": "none"},
            "parallel": {"gpus": gpus, "zero": zero, "distributed_optimizer": distributed_optimizer},
            "hardware": {"gpu": "a100-sxm4-80gb", "gpus_per_node": 8, "inter_node": "roce-100", "nics_per_node": 4}}


def sync_s(zero: int, distributed_optimizer: bool, gpus: int = GPUS) -> float:
    perf = estimate(scenario_from_dict(job(zero, distributed_optimizer, gpus)), with_limits=False).performance
    return perf.breakdown_s["dp_grad_sync"]


def test_only_megatrons_distributed_optimizer_hides_the_weight_gather_behind_the_next_forward():
    """DeepSpeed ZeRO-1/2 and InternLM's hybrid ZeRO wait for the gather of the updated weights at the end of the
    step; Megatron's distributed optimizer (--overlap-param-gather) runs it under the next forward. The difference
    is the gather itself: (n-1)/n of the 16-bit weights over the node's NICs."""
    assert gather_overlaps(True) == 1.0 and gather_overlaps(False) == 0.0
    assert list(gather_overlaps(np.array([True, False]))) == [1.0, 0.0]
    waits, hidden = sync_s(1, False), sync_s(0, True)
    assert hidden == pytest.approx(sync_s(1, True))  # zero 1 with Megatron's optimizer: hidden as well
    sc = scenario_from_dict(job(1, False))
    cat = default_catalog()
    params = default_performance_model()
    ctx = step_context(sc, resolve_model(sc.model), cat.accelerator("a100-sxm4-80gb"), cat, params)[0]
    raw = raw_step(ctx)
    weights = ctx.trainable_local * 2  # the 16-bit weights
    gather = (GPUS - 1) / GPUS * weights / (ctx.fabric.inter_busbw_gbps * 1e9)
    assert raw.dp_gather_s == pytest.approx(gather, rel=0.02)
    # hidden: all but what outlasts a third of a micro-batch's compute (the next forward); waiting: all of it
    assert waits - hidden == pytest.approx(min(gather, float(compute_s(raw, params)) / 3), rel=0.02)
    assert waits - hidden > 0.05
    assert sync_s(1, False, 8) < waits  # inside one node the gather runs over NVLink


def test_the_planners_screen_waits_for_the_gather_as_the_estimate_does():
    sc = scenario_from_dict(job(1, False))
    arch = resolve_model(sc.model)
    cat = default_catalog()
    gpu = cat.accelerator("a100-sxm4-80gb")
    params = default_performance_model()
    fab = fabric(cat, gpu, None, "roce-100", 4, 8, params, GPUS)
    two = lambda a, b, dtype=int: np.array([a, b], dtype=dtype)  # noqa: E731
    lay = Layouts(gpus=two(GPUS, GPUS), tp=two(1, 1), pp=two(1, 1), cp=two(1, 1), vpp=two(1, 1), zero=two(1, 0),
                  dist_opt=two(False, True, bool), sp=two(False, False, bool), offload=two(0, 0), mbs=two(2, 2),
                  ckpt=two(CKPT.index("none"), CKPT.index("none")), gpus_per_node=two(8, 8))
    screened = screen_step_time(job_basis(sc, arch), lay, sc, gpu, fab, params)
    estimated = [estimate(scenario_from_dict(job(z, d)), with_limits=False).performance.step_time_s
                 for z, d in ((1, False), (0, True))]
    assert screened[0] > screened[1]
    assert screened[0] - screened[1] == pytest.approx(estimated[0] - estimated[1], rel=0.1)


def test_fp8_linears_run_at_the_measured_fp8_share_of_their_peak():
    """H100's FP8 matmuls reach 70.9 % of 1979 TFLOPS where BF16 reaches 80.3 % of 989 (maximum achievable matmul
    FLOPS): FP8 linears run at 0.883 of the BF16 GEMM efficiency, in the estimate and in the planner's screen (both
    through gemm_ceiling); a family without an FP8 measurement keeps its BF16 ceiling."""
    from trainsizer.estimate.step_terms import gemm_ceiling

    p = default_performance_model()
    assert gemm_ceiling(p, "hopper", "fp8") == pytest.approx(0.883 * gemm_ceiling(p, "hopper", "bf16"))
    assert gemm_ceiling(p, "blackwell", "fp8") == gemm_ceiling(p, "blackwell", "bf16")
    assert gemm_ceiling(p, "hopper", "fp32") == p.compute.max_efficiency_fp32

    def compute(precision: str) -> float:
        sc = scenario_from_dict({"model": {"preset": "llama-3.1-8b"},
                                 "training": {"method": "full", "precision": precision, "micro_batch_size": 1,
                                              "seq_len": 4096},
                                 "parallel": {"gpus": 1}, "hardware": {"gpu": "h100-sxm5-80gb"}})
        return estimate(sc, with_limits=False).performance.breakdown_s["compute"]

    # the linears are most of the compute: FP8 halves their time at the peak, then loses 1 - 0.883 of it again
    ratio = compute("fp8-mixed") / compute("bf16-mixed")
    assert 0.5 < ratio < 0.75
    none = default_performance_model()
    from dataclasses import replace

    from trainsizer.estimate.typed_data import Table
    unmeasured = replace(none, compute=replace(none.compute, fp8_matmul_relative=Table({})))
    assert gemm_ceiling(unmeasured, "hopper", "fp8") == gemm_ceiling(none, "hopper", "bf16")


def fsdp_fp8(fp8_all_gather: bool, precision: str = "fp8-mixed") -> dict:
    return {"model": {"preset": "llama-3.1-70b"},
            "training": {"method": "full", "precision": precision, "micro_batch_size": 1, "seq_len": 8192,
                         "global_batch_size": 32, "activation_checkpointing": "full",
                         **({"fp8_all_gather": True} if fp8_all_gather else {})},
            "parallel": {"gpus": 32, "zero": 3},
            "hardware": {"gpu": "h100-sxm5-80gb", "gpus_per_node": 8, "inter_node": "ib-ndr-400", "nics_per_node": 8}}


def test_fsdp_gathers_fp8_weights_at_one_byte_each_and_reduces_the_gradients_as_before():
    """torchao's float8 all-gather casts each weight shard to float8 before FSDP2 gathers it: the linears' two
    gathers per micro-batch (forward, backward) move half the bytes of bf16; the fp32 gradient reduce-scatter is
    unchanged. Exactly that share of the ZeRO-3 term goes, nothing else in the step moves."""
    from trainsizer.estimate.comm import gathered_linear_bytes
    from trainsizer.estimate.step_terms import zero3_mb

    assert gathered_linear_bytes(True, 2.0) == 1.0 and gathered_linear_bytes(False, 2.0) == 2.0
    cat = default_catalog()
    gpu = cat.accelerator("h100-sxm5-80gb")
    ctxs = [step_context(sc, resolve_model(sc.model), gpu, cat)[0]
            for sc in (scenario_from_dict(fsdp_fp8(False)), scenario_from_dict(fsdp_fp8(True)))]
    bf16, fp8 = (zero3_mb(c) for c in ctxs)
    linear = sum(layer.base_linear_params for layer in ctxs[0].state.layers) / ctxs[0].model_shards
    group = 32
    # two gathers of one byte fewer per linear weight, over the inter-node ring
    saved = 2 * (group - 1) / group * linear / (ctxs[0].fabric.inter_busbw_gbps * 1e9)
    assert bf16 - fp8 == pytest.approx(saved, rel=0.05)
    assert 0.2 < (bf16 - fp8) / bf16 < 0.5  # the fp32 reduce-scatter stays: less than half goes
    steps = [estimate(scenario_from_dict(fsdp_fp8(f)), with_limits=False).performance for f in (False, True)]
    assert steps[1].breakdown_s["zero3_gather"] < steps[0].breakdown_s["zero3_gather"]
    assert steps[1].breakdown_s["compute"] == pytest.approx(steps[0].breakdown_s["compute"])


def test_fp8_all_gather_needs_fp8_linears():
    from trainsizer.errors import InputError

    with pytest.raises(InputError, match="fp8_all_gather"):
        scenario_from_dict(fsdp_fp8(True, precision="bf16-mixed"))


def test_the_planners_screen_gathers_fp8_weights_as_the_estimate_does():
    cat = default_catalog()
    gpu = cat.accelerator("h100-sxm5-80gb")
    params = default_performance_model()
    fab = fabric(cat, gpu, None, "ib-ndr-400", 8, 8, params, 32)
    one = lambda v, dtype=int: np.array([v], dtype=dtype)  # noqa: E731
    lay = Layouts(gpus=one(32), tp=one(1), pp=one(1), cp=one(1), vpp=one(1), zero=one(3), dist_opt=one(False, bool),
                  sp=one(False, bool), offload=one(0), mbs=one(1), ckpt=one(CKPT.index("full")), gpus_per_node=one(8))
    screened, estimated = [], []
    for flag in (False, True):
        sc = scenario_from_dict(fsdp_fp8(flag))
        screened.append(screen_step_time(job_basis(sc, resolve_model(sc.model)), lay, sc, gpu, fab, params)[0])
        estimated.append(estimate(sc, with_limits=False).performance.step_time_s)
    assert screened[1] < screened[0]
    assert screened[0] - screened[1] == pytest.approx(estimated[0] - estimated[1], rel=0.1)
