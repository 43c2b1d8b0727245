"""Mixture-of-experts terms (estimate/moe.py): routed rows with imbalance and capacity, tokens per rank under tensor
parallelism, hierarchical dispatch, folded expert groups, the grouped GEMM at its per-expert shape, the experts'
precision, the all-to-all overlap and the host synchronisation of dropless layers, and the scenario keys that state
them."""

from dataclasses import replace

import numpy as np
import pytest

from trainsizer.errors import InputError
from trainsizer.estimate.comm import Fabric
from trainsizer.estimate.estimator import estimate
from trainsizer.estimate.moe import (
    deepep_dispatch_s,
    destinations,
    dispatch_combine_s,
    dispatched_tokens,
    expert_gemm_intensity,
    expert_peak,
    exposed_all_to_all_s,
    grouped_gemm_saturation,
    host_syncs,
    load_factor,
    remote_copies,
    rows_per_expert,
    sync_exposed_s,
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


def test_a_token_reaches_fewer_ranks_and_nodes_than_it_has_experts():
    # 8 distinct experts of 128: each misses a 16-expert rank with the hypergeometric chance C(112, 8) / C(128, 8)
    miss = np.prod([(112 - i) / (128 - i) for i in range(8)])
    assert destinations(8, 128, 8) == pytest.approx(8 * (1 - miss))
    assert 5.0 < destinations(8, 128, 8) < 8.0
    assert destinations(8, 128, 2) == pytest.approx(2 * (1 - np.prod([(64 - i) / (128 - i) for i in range(8)])))
    assert destinations(1, 128, 8) == pytest.approx(1.0)  # one expert: one rank
    assert destinations(8, 8, 8) == pytest.approx(8.0)  # one expert a rank, all of them: every rank
    many = destinations(8, 128, np.array([2.0, 8.0, 32.0]))
    assert list(many) == pytest.approx([destinations(8, 128, g) for g in (2, 8, 32)])
    assert np.all(np.diff(many) > 0)
    # a plain all-to-all sends one copy per routed expert on another node
    assert remote_copies(8, 16, 8) == pytest.approx(4.0)
    assert remote_copies(8, 8, 8) == pytest.approx(0.0)


def test_deepep_prices_one_copy_per_rank_at_its_measured_rates():
    dp = default_performance_model().communication.deepep
    link = type("Link", (), {"per_direction_gbps": 200.0})()
    fab = replace(FAB, intra=link)
    # inside one node: the logical NVLink bytes (a copy per rank reached) at the measured share of the line rate
    one = deepep_dispatch_s(1e8, 5.0, 1.0, 8, 8, fab, dp)
    assert one == pytest.approx(1e8 * 5.0 / (200e9 * dp.nvlink_fraction) + fab.intra_latency_s)
    # fewer ranks reached (a router that keeps a token's experts together): proportionally less
    assert deepep_dispatch_s(1e8, 1.0, 1.0, 8, 8, fab, dp) < 0.3 * one
    # across 4 nodes: the NIC share at the rate measured for 4 nodes sets the pace
    four = deepep_dispatch_s(1e8, 7.4, 3.6, 32, 8, fab, dp)
    rdma = 1e8 * 3.6 / (fab.inter_busbw_gbps / 8 * 1e9 * dp.rdma_fraction[dp.rdma_nodes.index(4)])
    assert four == pytest.approx(rdma + fab.inter_latency_s)
    # more nodes than measured take the nearest measured rate
    assert deepep_dispatch_s(1e8, 8.0, 6.0, 128, 8, fab, dp) == pytest.approx(
        1e8 * 6.0 / (fab.inter_busbw_gbps / 8 * 1e9 * dp.rdma_fraction[-1]) + fab.inter_latency_s)


def test_deepep_on_a_fast_nvlink_moves_what_its_sms_move():
    dp = default_performance_model().communication.deepep
    fast = replace(FAB, intra=type("Link", (), {"per_direction_gbps": 900.0})())  # NVLink 5 (B200)
    # on H800's 200 GB/s the link sets the pace whatever the GPU; on 900 GB/s the 20 SMs' measured rate does
    slow = replace(FAB, intra=type("Link", (), {"per_direction_gbps": 200.0})())
    on_h800 = deepep_dispatch_s(1e8, 5.0, 1.0, 8, 8, slow, dp, "hopper")
    assert on_h800 == deepep_dispatch_s(1e8, 5.0, 1.0, 8, 8, slow, dp)
    bounded = deepep_dispatch_s(1e8, 5.0, 1.0, 8, 8, fast, dp, "blackwell")
    assert bounded == pytest.approx(1e8 * 5.0 / (dp.sms * dp.sm_gbps["blackwell"] * 1e9) + fast.intra_latency_s)
    assert bounded > 1.5 * deepep_dispatch_s(1e8, 5.0, 1.0, 8, 8, fast, dp)  # an unknown part: the link's share
    assert dp.nvlink_cap_gbps("davinci") == float("inf")


def test_hybridep_is_priced_at_its_own_measured_rates():
    comm = default_performance_model().communication
    hy, dp = comm.hybridep, comm.deepep
    two_nodes = deepep_dispatch_s(1e8, 6.4, 2.0, 16, 8, FAB, hy)
    rdma = 1e8 * 2.0 / (FAB.inter_busbw_gbps / 8 * 1e9 * hy.rdma_fraction[hy.rdma_nodes.index(2)])
    assert two_nodes == pytest.approx(rdma + FAB.inter_latency_s)
    assert two_nodes < deepep_dispatch_s(1e8, 6.4, 2.0, 16, 8, FAB, dp)  # faster than DeepEP across two nodes
    # a scenario names it, and the step prices it apart from DeepEP
    job = {"ep": 16, "etp": 1}
    a2a = {name: estimate(moe_job({**job, "moe_dispatcher": name}), with_limits=False).performance.breakdown_s[
        "moe_all_to_all"] for name in ("deepep", "hybridep")}
    assert 0 < a2a["hybridep"] < a2a["deepep"]
    with pytest.raises(InputError, match="moe_dispatcher"):
        moe_job({"ep": 8, "moe_dispatcher": "hybrid"})


def test_deepep_against_a_plain_all_to_all():
    dp = default_performance_model().communication.deepep
    plain_in, deepep_in = (dispatch_combine_s(1.7e7, 8, 8, 1, FAB, 0.8, d, 128) for d in (None, dp))
    assert deepep_in < plain_in  # one copy per rank reached, not per expert
    plain_out, deepep_out = (dispatch_combine_s(1.7e7, 8, 32, 1, FAB, 0.8, d, 128) for d in (None, dp))
    assert deepep_out < 0.7 * plain_out  # one copy per node over the network
    kept = dispatch_combine_s(1.7e7, 8, 8, 1, FAB, 0.8, dp, 128, token_ranks=1)
    assert kept < 0.3 * deepep_in
    job = {"ep": 8, "moe_dispatcher": "deepep"}
    spread, together = (estimate(moe_job({**job, **extra}, gpus=8), with_limits=False).performance.breakdown_s[
        "moe_all_to_all"] for extra in ({}, {"moe_token_ranks": 1}))
    assert together < 0.3 * spread
    with pytest.raises(InputError):
        moe_job({"ep": 8, "moe_token_ranks": 0})


def test_dispatch_takes_arrays_as_floats():
    dp = default_performance_model().communication.deepep
    ep = np.array([8.0, 16.0, 32.0])
    for d in (None, dp):
        many = dispatch_combine_s(8192.0, 8, ep, np.array([1.0, 1.0, 2.0]), FAB, 0.8, d, 128)
        one = [dispatch_combine_s(8192.0, 8, e, s, FAB, 0.8, d, 128) for e, s in ((8, 1), (16, 1), (32, 2))]
        assert many == pytest.approx(one)


def test_folded_expert_groups_stay_in_the_node():
    # tp 2: with etp = tp an ep-8 group is 2-strided and spans two nodes; folded (etp 1) it is one node's 8 GPUs
    plain = estimate(moe_job({"tp": 2, "ep": 8}), with_limits=False).performance.breakdown_s["moe_all_to_all"]
    folded = estimate(moe_job({"tp": 2, "ep": 8, "etp": 1}), with_limits=False).performance
    assert folded.breakdown_s["moe_all_to_all"] < 0.5 * plain
    with pytest.raises(InputError, match="ep"):
        moe_job({"tp": 2, "ep": 16})  # 16 x etp 2 does not divide tp 2 x dp 8
    moe_job({"tp": 2, "ep": 16, "etp": 1})  # folded: 16 divides tp 2 x dp 8


def test_imbalance_slows_the_busiest_ranks_gemms_and_all_to_all_and_capacity_caps_both():
    base = estimate(moe_job({"ep": 8}), with_limits=False).performance
    skewed = estimate(moe_job({"ep": 8, "moe_load_imbalance": 1.5}), with_limits=False).performance
    capped = estimate(moe_job({"ep": 8, "moe_load_imbalance": 1.5, "moe_capacity_factor": 1.0}),
                      with_limits=False).performance
    assert skewed.breakdown_s["compute"] > base.breakdown_s["compute"]
    assert capped.breakdown_s["compute"] == pytest.approx(base.breakdown_s["compute"])
    # the all-to-all ends when the rank that receives 1.5 times the mean copies has them (not overlapped here)
    assert base.breakdown_s["moe_all_to_all"] > 0
    assert skewed.breakdown_s["moe_all_to_all"] == pytest.approx(1.5 * base.breakdown_s["moe_all_to_all"])
    assert capped.breakdown_s["moe_all_to_all"] == pytest.approx(base.breakdown_s["moe_all_to_all"])


def test_folded_experts_keep_whole_experts_and_shard_states_over_more_ranks():
    split = estimate(moe_job({"tp": 2, "ep": 4}), with_performance=False, with_limits=False).memory
    folded = estimate(moe_job({"tp": 2, "ep": 4, "etp": 1}), with_performance=False, with_limits=False).memory
    weights = [m.to_dict()["detail_gib"]["weights"] for m in (split, folded)]
    optimizer = [m.to_dict()["detail_gib"]["optimizer_states"] for m in (split, folded)]
    assert weights[1] > 1.7 * weights[0]  # whole experts, not halves: the routed experts are most of the weights
    # the distributed optimizer shards them over tp*dp / (ep*etp) = 4 expert-data ranks instead of dp / ep = 2
    assert optimizer[1] == pytest.approx(optimizer[0], rel=0.02)


def test_context_parallel_ranks_fold_into_expert_parallelism_as_data_parallel_ones_do():
    """Megatron-Core carves the expert layers' grid out of the ranks of a pipeline stage, tp x cp x dp
    (parallel_state.initialize_model_parallel): EP 8 over CP 2 x DP 4 on one node is a layout it runs, and a rank's
    routed-expert states are sharded over tp x cp x dp / (ep x etp) ranks, in memory and in the optimizer's step:
    under EP 4, two ranks with CP 2 x DP 4 as with DP 8 (the dense states, a few per cent here, step over dp)."""
    long = {"seq_len": 32768, "global_batch_size": 16, "activation_checkpointing": "full"}
    assert moe_job({"cp": 2, "ep": 8}, gpus=8, training=long).parallel.ep == 8
    folded = estimate(moe_job({"cp": 2, "ep": 4}, gpus=8, training=long), with_limits=False)
    plain = estimate(moe_job({"ep": 4}, gpus=8, training=long), with_limits=False)
    states = [r.memory.to_dict()["detail_gib"]["optimizer_states"] for r in (folded, plain)]
    assert states[0] == pytest.approx(states[1], rel=0.02)
    assert folded.performance.breakdown_s["optimizer"] == pytest.approx(plain.performance.breakdown_s["optimizer"],
                                                                          rel=0.1)
    with pytest.raises(InputError, match=r"tp\*cp\*dp = 1\*8\*1"):
        moe_job({"cp": 8, "ep": 16}, gpus=8)


def test_the_optimizer_steps_each_routed_expert_over_its_expert_data_parallel_group_only():
    """The distributed optimizer shards a routed expert's states over its expert-data-parallel group (dp / ep ranks
    here), as the memory model holds them: a rank steps as many parameters under EP 8 (its eighth of the experts,
    unsharded) as under EP 1 (all experts, sharded eight ways), and the step time says so."""
    def step(ep):
        result = estimate(moe_job({"ep": ep}, gpus=8), with_limits=False)
        return result.performance.breakdown_s["optimizer"], result.memory.to_dict()["detail_gib"]["optimizer_states"]

    (spread, spread_states), (whole, whole_states) = step(8), step(1)
    assert spread_states == pytest.approx(whole_states, rel=0.02)
    assert spread == pytest.approx(whole, rel=0.02)
    assert spread > 0


def test_grouped_gemm_efficiency_rises_with_rows_per_expert_and_expert_width():
    rows = np.array([256.0, 1024.0, 4096.0, 16384.0])
    eff = grouped_gemm_saturation(expert_gemm_intensity(rows, 2048.0, 768.0), 295.0, 1.0)
    assert np.all(np.diff(eff) > 0) and np.all(eff < 1)  # monotonic in rows per expert, below the ceiling
    # Qwen3-30B-A3B's 768-wide experts run below Qwen3-235B-A22B's 1536-wide ones at the same rows
    narrow, wide = (grouped_gemm_saturation(expert_gemm_intensity(2048.0, 2048.0, w), 295.0, 1.0)
                    for w in (768.0, 1536.0))
    assert narrow < wide
    # the same shape is further below the ceiling on a part with more FLOPs per byte of bandwidth (B200 over H20)
    shape = expert_gemm_intensity(2048.0, 2048.0, 768.0)
    assert grouped_gemm_saturation(shape, 281.0, 1.0) < grouped_gemm_saturation(shape, 37.0, 1.0)
    assert grouped_gemm_saturation(expert_gemm_intensity(0.0, 2048.0, 768.0), 295.0, 1.0) == 0.0  # no rows, no work
    assert list(eff) == pytest.approx([grouped_gemm_saturation(expert_gemm_intensity(float(r), 2048.0, 768.0),
                                                               295.0, 1.0) for r in rows])


def test_expert_traffic_prices_only_the_routed_experts():
    p = default_performance_model()
    later = replace(p, compute=replace(p.compute, expert_traffic=p.compute.expert_traffic * 2 + 1))
    moe = [estimate(moe_job({"ep": 8}), with_limits=False, performance_params=q).performance for q in (p, later)]
    assert moe[1].breakdown_s["compute"] > moe[0].breakdown_s["compute"]
    dense = scenario_from_dict({"model": {"preset": "llama-3.1-8b"}, "training": {"method": "full", "seq_len": 4096,
                                "micro_batch_size": 1, "global_batch_size": 8}, "parallel": {"gpus": 8},
                                "hardware": {"gpu": "h100-sxm5-80gb"}})
    a, b = (estimate(dense, with_limits=False, performance_params=q).performance for q in (p, later))
    assert a.step_time_s == pytest.approx(b.step_time_s)


def test_each_tensor_parallel_rank_dispatches_its_sequence_shard():
    assert dispatched_tokens(4096.0, 4) == 1024.0
    # folded (etp 1) under tp 4: a quarter of the rows; etp = tp gathers the group's shards back
    assert rows_per_expert(dispatched_tokens(4096, 4), 8, 8, 128, gathered=1) == pytest.approx(512)
    assert rows_per_expert(dispatched_tokens(4096, 4), 8, 8, 128, gathered=4) == pytest.approx(2048)
    # per micro-batch (16 GPUs, 64 sequences a step: 4 micro-batches at tp 1, 8 at tp 2), the same ep-8 group in one
    # node carries half the bytes per rank when each rank routes half the sequence
    one, two = (estimate(moe_job({"tp": tp, "ep": 8, "etp": 1}), with_limits=False).performance.breakdown_s[
        "moe_all_to_all"] / (4 * tp) for tp in (1, 2))
    assert two < 0.6 * one


def test_all_to_all_time_grows_with_expert_parallelism_across_nodes():
    times = [estimate(moe_job({"ep": ep}, gpus=32), with_limits=False).performance.breakdown_s["moe_all_to_all"]
             for ep in (8, 16, 32)]
    assert times[0] < times[1] < times[2]  # one node over NVLink, then more of each token's copies over the NICs


def test_overlapped_all_to_all_shows_only_beyond_the_computation():
    assert exposed_all_to_all_s(3.0, 5.0, 0.0) == 3.0
    assert exposed_all_to_all_s(3.0, 5.0, 1.0) == 0.0
    assert exposed_all_to_all_s(8.0, 5.0, 1.0) == pytest.approx(3.0)
    many = exposed_all_to_all_s(np.array([3.0, 8.0]), np.array([5.0, 5.0]), np.array([1.0, 0.0]))
    assert list(many) == pytest.approx([0.0, 8.0])
    job = {"ep": 32, "moe_dispatcher": "deepep"}
    plain, hidden = (estimate(moe_job({**job, "moe_a2a_overlap": o}, gpus=32), with_limits=False).performance
                     for o in (False, True))
    assert 0.0 <= hidden.breakdown_s["moe_all_to_all"] < plain.breakdown_s["moe_all_to_all"]
    assert hidden.breakdown_s["compute"] == pytest.approx(plain.breakdown_s["compute"])
    with pytest.raises(InputError):
        moe_job({"ep": 8, "moe_a2a_overlap": "yes"})


def test_routed_experts_run_at_the_16_bit_rate_under_fp8():
    assert expert_peak(1979.0, "fp8", 989.0) == (989.0, "bf16")
    assert expert_peak(989.0, "bf16", 989.0) == (989.0, "bf16")
    bf16, fp8 = (estimate(moe_job({"ep": 8}, training={"precision": p}), with_limits=False).performance
                 for p in ("bf16-mixed", "fp8-mixed"))
    # FP8 speeds up the attention and shared linears, not the routed experts, which are most of the FLOPs here
    assert bf16.breakdown_s["compute"] > fp8.breakdown_s["compute"] > 0.6 * bf16.breakdown_s["compute"]


def test_dropless_layers_expose_host_time_once_per_forward():
    assert host_syncs(48, 0.0) == 48 and host_syncs(48, 1.0) == 96  # recomputation runs each forward again
    p = default_performance_model()
    quiet = replace(p, overhead=replace(p.overhead, moe_sync_issue_s=0.0))
    base, stored = (estimate(moe_job({"ep": 8}), with_limits=False, performance_params=q).performance
                    for q in (p, quiet))
    recomputed = estimate(moe_job({"ep": 8}, training={"activation_checkpointing": "full"}), with_limits=False,
                          performance_params=p).performance
    # 4 micro-batches a step (16 GPUs, 64 sequences), 48 MoE layers each: some of the host's issue time shows 192
    # times, never more than all of it
    synced = base.breakdown_s["launch_overhead"] - stored.breakdown_s["launch_overhead"]
    assert 0.0 < synced < 4 * 48 * p.overhead.moe_sync_issue_s
    assert recomputed.breakdown_s["launch_overhead"] > base.breakdown_s["launch_overhead"]


def test_host_issue_after_a_sync_shows_less_the_longer_the_gpu_works():
    h = 0.008
    assert sync_exposed_s(10, h, 0.0) == pytest.approx(10 * h)  # nothing to run: the GPU waits for every issue
    assert sync_exposed_s(1, h, 0.0005) == pytest.approx(h - 0.0005, rel=1e-6)  # host bound: h - g
    assert sync_exposed_s(1, h, 0.8) == pytest.approx(h * h / (2 * 0.8), rel=0.01)  # GPU bound: h^2 / 2g
    busy = np.array([0.0, 0.002, 0.008, 0.032])
    shown = sync_exposed_s(1, h, busy)
    assert np.all(np.diff(shown) < 0) and np.all(shown <= h)
    assert list(shown) == pytest.approx([sync_exposed_s(1, h, float(g)) for g in busy])


def test_fsdp_gathers_routed_experts_only_over_their_expert_data_parallel_group():
    from trainsizer.estimate.memory import default_memory_model
    from trainsizer.estimate.training_state import training_state
    from trainsizer.evidence.refit import speed_case
    from trainsizer.models.catalog import resolve_model

    def zero3(ep):
        return speed_case(moe_job({"zero": 3, "distributed_optimizer": False, "ep": ep}, gpus=8)).raw.zero3_mb

    # EP 8 over 8 data-parallel ranks: each rank owns its experts whole (expert-data-parallel group of one), so only
    # the dense weights are gathered; under EP 4 each expert is still sharded over two ranks
    sc = moe_job({"zero": 3, "distributed_optimizer": False, "ep": 4}, gpus=8)
    st = training_state(sc, resolve_model(sc.model), default_memory_model())
    experts = sum(layer.expert_linear_params for layer in st.layers)
    dense = sum(layer.base_linear_params for layer in st.layers) - experts
    assert experts > 2 * dense  # the routed experts are most of what a rank holds under EP 4
    assert zero3(8) < 0.4 * zero3(4)
    assert st.expert_trainable_params == experts


def test_full_recomputation_runs_the_dispatch_and_combine_again():
    from trainsizer.evidence.refit import speed_case

    def a2a(checkpointing):
        job = moe_job({"ep": 8}, gpus=8, training={"activation_checkpointing": checkpointing})
        return speed_case(job).raw.moe_mb

    # forward dispatch + combine again in the recomputed forward: six all-to-alls a layer instead of four
    assert a2a("full") == pytest.approx(1.5 * a2a("none"))


def _notes(scenario: dict) -> list[str]:
    perf = estimate(scenario_from_dict(scenario)).performance
    assert perf is not None
    return [n.code for n in perf.notes]


def test_a_moe_estimate_says_what_it_assumed_of_routing_and_dispatch_until_the_user_states_them():
    """step.moe_notes: balanced routing is named until an imbalance is stated; with ep > 1 the plain, unoverlapped
    all-to-all until the dispatcher or the overlap is stated; a dense model says neither."""
    base = {"model": {"preset": "qwen3-30b-a3b"},
            "training": {"method": "full", "precision": "bf16-mixed", "micro_batch_size": 1, "seq_len": 4096},
            "parallel": {"gpus": 8, "ep": 8}, "hardware": {"gpu": "h100-sxm5-80gb"}}
    assert {"step.moe_balanced", "step.moe_dispatch_default"} <= set(_notes(base))
    stated = {**base, "parallel": {**base["parallel"], "moe_load_imbalance": 1.2, "moe_dispatcher": "deepep"}}
    assert not {"step.moe_balanced", "step.moe_dispatch_default"} & set(_notes(stated))
    overlap_only = {**base, "parallel": {**base["parallel"], "moe_a2a_overlap": False}}
    assert "step.moe_dispatch_default" not in _notes(overlap_only)
    no_ep = {**base, "parallel": {"gpus": 8}}
    assert "step.moe_balanced" in _notes(no_ep) and "step.moe_dispatch_default" not in _notes(no_ep)
    dense = {**base, "model": {"preset": "qwen3-8b"}, "parallel": {"gpus": 8}}
    assert not {"step.moe_balanced", "step.moe_dispatch_default"} & set(_notes(dense))
