"""Mixture-of-experts terms (estimate/moe.py): routed rows with imbalance and capacity, hierarchical dispatch,
folded expert groups, and the scenario keys that state them."""

from dataclasses import replace

import numpy as np
import pytest

from trainsizer.errors import InputError
from trainsizer.estimate.comm import Fabric
from trainsizer.estimate.estimator import estimate
from trainsizer.estimate.moe import (
    dispatch_combine_s,
    grouped_gemm_saturation,
    load_factor,
    remote_copies,
    rows_per_expert,
)
from trainsizer.estimate.step import default_performance_model
from trainsizer.scenario import scenario_from_dict

FAB = Fabric(None, None, 400.0, 8 * 40.0, 1e-6, 5e-6, 8)


def moe_job(parallel=None, preset="qwen3-30b-a3b", gpus=16, training=None):
    return scenario_from_dict({
        "model": {"preset": preset},
        "training": {"method": "full", "micro_batch_size": 1, "seq_len": 4096, "global_batch_size": 64,
                     **(training or {})},
        "parallel": {"gpus": gpus, "distributed_optimizer": True, **(parallel or {})},
        "hardware": {"gpu": "h100-sxm5-80gb", "gpus_per_node": 8, "inter_node": "ib-ndr-400", "nics_per_node": 8}})


def test_rows_per_expert_follow_routing_and_the_busiest_rank():
    # 4096 tokens x 8 copies over 128 experts, 8 ranks' worth on each local expert
    assert rows_per_expert(4096, 8, 8, 128) == pytest.approx(2048)
    assert rows_per_expert(4096, 8, 8, 128, load_factor(1.3)) == pytest.approx(2048 * 1.3)
    assert load_factor(1.5, 1.25) == 1.25 and load_factor(1.1, 1.25) == 1.1 and load_factor(1.2) == 1.2


def test_hierarchical_dispatch_sends_one_copy_per_other_node():
    # 2 nodes, 8 experts a token: a plain all-to-all sends 4 copies off the node, DeepEP about one
    assert remote_copies(8, 16, 8, 0.0) == pytest.approx(4.0)
    assert remote_copies(8, 16, 8, 1.0) == pytest.approx(1 - 0.5**8)
    # one node: nothing leaves it either way, and the two dispatchers cost the same
    assert remote_copies(8, 8, 8, 1.0) == pytest.approx(0.0, abs=1e-12)
    assert dispatch_combine_s(1.7e7, 8, 8, 1, FAB, 1.0) == pytest.approx(dispatch_combine_s(1.7e7, 8, 8, 1, FAB))
    assert dispatch_combine_s(1.7e7, 8, 16, 1, FAB, 1.0) < 0.5 * dispatch_combine_s(1.7e7, 8, 16, 1, FAB)


def test_dispatch_takes_arrays_as_floats():
    ep = np.array([8.0, 16.0, 32.0])
    many = dispatch_combine_s(8192.0, 8, ep, np.array([1.0, 1.0, 2.0]), FAB, np.array([0.0, 1.0, 1.0]))
    one = [dispatch_combine_s(8192.0, 8, e, s, FAB, h) for e, s, h in ((8, 1, 0.0), (16, 1, 1.0), (32, 2, 1.0))]
    assert many == pytest.approx(one)


def test_folded_expert_groups_stay_in_the_node():
    # tp 2: with etp = tp an ep-8 group is 2-strided and spans two nodes; folded (etp 1) it is one node's 8 GPUs
    plain = estimate(moe_job({"tp": 2, "ep": 8}), with_limits=False).performance.breakdown_s["moe_all_to_all"]
    folded = estimate(moe_job({"tp": 2, "ep": 8, "etp": 1}), with_limits=False).performance
    assert folded.breakdown_s["moe_all_to_all"] < 0.5 * plain
    with pytest.raises(InputError, match="ep"):
        moe_job({"tp": 2, "ep": 16})  # 16 x etp 2 does not divide tp 2 x dp 8
    moe_job({"tp": 2, "ep": 16, "etp": 1})  # folded: 16 divides tp 2 x dp 8


def test_imbalance_and_capacity_slow_only_the_expert_gemms():
    base = estimate(moe_job({"ep": 8}), with_limits=False).performance
    skewed = estimate(moe_job({"ep": 8, "moe_load_imbalance": 1.5}), with_limits=False).performance
    capped = estimate(moe_job({"ep": 8, "moe_load_imbalance": 1.5, "moe_capacity_factor": 1.0}),
                      with_limits=False).performance
    assert skewed.breakdown_s["compute"] > base.breakdown_s["compute"]
    assert capped.breakdown_s["compute"] == pytest.approx(base.breakdown_s["compute"])
    assert skewed.breakdown_s["moe_all_to_all"] == pytest.approx(base.breakdown_s["moe_all_to_all"])


def test_folded_experts_keep_whole_experts_and_shard_states_over_more_ranks():
    split = estimate(moe_job({"tp": 2, "ep": 4}), with_performance=False, with_limits=False).memory
    folded = estimate(moe_job({"tp": 2, "ep": 4, "etp": 1}), with_performance=False, with_limits=False).memory
    weights = [m.to_dict()["detail_gib"]["weights"] for m in (split, folded)]
    optimizer = [m.to_dict()["detail_gib"]["optimizer_states"] for m in (split, folded)]
    assert weights[1] > 1.7 * weights[0]  # whole experts, not halves: the routed experts are most of the weights
    # the distributed optimizer shards them over tp*dp / (ep*etp) = 4 expert-data ranks instead of dp / ep = 2
    assert optimizer[1] == pytest.approx(optimizer[0], rel=0.02)


def test_grouped_gemm_efficiency_falls_with_fewer_rows_and_narrower_experts():
    rows = np.array([256.0, 1024.0, 4096.0, 16384.0])
    eff = grouped_gemm_saturation(rows, 768.0, 3072.0, 256.0)
    assert np.all(np.diff(eff) > 0) and np.all(eff < 1)  # monotonic in rows per expert, below the ceiling
    # Qwen3-30B-A3B's 768-wide experts run below Qwen3-235B-A22B's 1536-wide ones at the same rows
    narrow, wide = (grouped_gemm_saturation(2048.0, w, 3072.0, 256.0) for w in (768.0, 1536.0))
    assert narrow < wide
    assert grouped_gemm_saturation(0.0, 768.0, 0.0, 0.0) == 0.0  # no rows, no work: no division by zero
    assert list(eff) == pytest.approx([grouped_gemm_saturation(float(r), 768.0, 3072.0, 256.0) for r in rows])


def test_expert_half_points_price_only_the_routed_experts():
    p = default_performance_model()
    later = replace(p, compute=replace(p.compute, expert_half_tokens=p.compute.expert_half_tokens * 4 + 1024))
    moe = [estimate(moe_job({"ep": 8}), with_limits=False, performance_params=q).performance for q in (p, later)]
    assert moe[1].breakdown_s["compute"] > moe[0].breakdown_s["compute"]
    dense = scenario_from_dict({"model": {"preset": "llama-3.1-8b"}, "training": {"method": "full", "seq_len": 4096,
                                "micro_batch_size": 1, "global_batch_size": 8}, "parallel": {"gpus": 8},
                                "hardware": {"gpu": "h100-sxm5-80gb"}})
    a, b = (estimate(dense, with_limits=False, performance_params=q).performance for q in (p, later))
    assert a.step_time_s == pytest.approx(b.step_time_s)
