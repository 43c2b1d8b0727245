"""ZeRO states sharded over a smaller group than the data-parallel one (``parallel.zero_shard_gpus``: InternLM's
hybrid zero ``zero1=8``, MiCS, FSDP HYBRID_SHARD): each copy of the states spans that many ranks, so a rank keeps
dp/group times the states, steps dp/group times the parameters, gathers its weights inside the group and all-reduces
its gradient share across the copies. The estimate and the planner's screen price it alike."""

import numpy as np
import pytest
from screen_layouts import data_parallel_layouts  # tests/ is on sys.path

from trainsizer.api import estimate
from trainsizer.errors import InputError
from trainsizer.estimate.comm import Fabric, all_reduce_s, replica_all_reduce_s
from trainsizer.estimate.comm import fabric as make_fabric
from trainsizer.estimate.step import default_performance_model
from trainsizer.hardware.catalog import default_catalog
from trainsizer.models.catalog import resolve_model
from trainsizer.plan.fast import job_basis, screen_memory, screen_step_time, zero_group
from trainsizer.scenario import scenario_from_dict


def _scenario(shard=None, zero=1, gpus=64, tp=1, gbs=None, sync="reduce-scatter", seq=2048):
    parallel = {"gpus": gpus, "zero": zero, "tp": tp, "zero_grad_sync": sync}
    if shard is not None:
        parallel["zero_shard_gpus"] = shard
    training = {"method": "full", "precision": "bf16-mixed", "micro_batch_size": 2, "seq_len": seq,
                "activation_checkpointing": "full"}
    if gbs:
        training["global_batch_size"] = gbs
    return scenario_from_dict({"model": {"preset": "llama-3.1-8b"}, "training": training, "parallel": parallel,
                               "hardware": {"gpu": "a100-sxm4-80gb", "inter_node": "ib-hdr-200"}})


def _detail(mem, name):
    return next((c.bytes for c in mem.components if c.name == name), 0.0)


def _run(sc):
    return estimate(sc, with_limits=False)


def test_states_are_divided_by_the_shard_group_not_by_dp():
    whole, node = _run(_scenario()).memory, _run(_scenario(8)).memory
    for name in ("master_weights", "optimizer_states"):
        assert _detail(whole, name) > 0
        assert _detail(node, name) == pytest.approx(8 * _detail(whole, name), rel=1e-6), name
    assert _detail(node, "weights") == pytest.approx(_detail(whole, "weights"))


def test_zero3_weights_are_sharded_inside_the_group():
    whole, node = _run(_scenario(zero=3)).memory, _run(_scenario(8, zero=3)).memory
    assert _detail(node, "weights") == pytest.approx(8 * _detail(whole, "weights"), rel=1e-6)


def test_a_group_of_all_data_parallel_ranks_is_the_default():
    assert _run(_scenario(64)).performance.step_time_s == pytest.approx(_run(_scenario()).performance.step_time_s)
    assert _run(_scenario(64)).memory.device_bytes == pytest.approx(_run(_scenario()).memory.device_bytes)


def test_the_copies_all_reduce_a_group_share_of_the_gradients():
    cat, params = default_catalog(), default_performance_model()
    gpu = cat.accelerator("a100-sxm4-80gb")
    fab: Fabric = make_fabric(cat, gpu, None, "ib-hdr-200", None, 8, params, 64)
    node, whole = _scenario(8).parallel, _scenario().parallel
    assert replica_all_reduce_s(1e9, whole, fab, 1) == 0.0
    # 8 copies of 8 ranks: 1/8 of the bytes all-reduced over 8 ranks one node apart
    assert replica_all_reduce_s(1e9, node, fab, 1) == pytest.approx(all_reduce_s(1e9 / 8, 8, fab, stride=8,
                                                                                 nic_share=False))


def test_an_all_reducing_sharded_optimizer_syncs_longer_than_a_scattering_one():
    scatter, reduce = _scenario(seq=256), _scenario(sync="all-reduce", seq=256)  # short: the sync shows
    assert scatter.parallel.scatters_gradients and not reduce.parallel.scatters_gradients
    assert not _scenario(8).parallel.scatters_gradients  # copies on smaller groups all-reduce over dp either way
    assert _run(scatter).performance.breakdown_s["dp_grad_sync"] < _run(reduce).performance.breakdown_s["dp_grad_sync"]
    # the states and the optimizer step are the same
    assert _run(scatter).memory.device_bytes == pytest.approx(_run(reduce).memory.device_bytes)


def test_the_optimizer_steps_the_groups_share_and_gathers_inside_the_node():
    whole, node = _run(_scenario()).performance, _run(_scenario(8)).performance
    assert node.breakdown_s["optimizer"] == pytest.approx(8 * whole.breakdown_s["optimizer"], rel=1e-6)
    assert node.breakdown_s["optimizer"] > 0


@pytest.mark.parametrize("overrides,hint", [({"zero_shard_gpus": 48}, "must divide"),
                                            ({"zero_shard_gpus": 8, "zero": 0}, "zero 1, 2 or 3"),
                                            ({"zero_shard_gpus": 0}, "greater than 0")])
def test_bad_shard_groups_name_the_field(overrides, hint):
    training = {"method": "full", "precision": "bf16-mixed", "micro_batch_size": 1, "seq_len": 2048}
    sc = {"model": {"preset": "llama-3.1-8b"}, "training": training,
          "parallel": {"gpus": 64, "zero": 1, **overrides}, "hardware": {"gpu": "a100-sxm4-80gb"}}
    with pytest.raises(InputError) as exc:
        estimate(sc, with_limits=False)
    assert exc.value.field == "parallel.zero_shard_gpus" and hint in str(exc.value)


def test_a_planner_layout_the_group_does_not_divide_shards_over_all_ranks():
    sc = _scenario(8)
    assert np.array_equal(zero_group(np.array([64.0, 4.0, 12.0]), sc), np.array([8.0, 4.0, 12.0]))
    probe = sc.model_copy(update={"parallel": sc.parallel.model_copy(update={"gpus": 4})})
    assert probe.parallel.zero_group == 4

LAYOUTS = ((1, 1, 64), (2, 1, 64), (3, 1, 64), (1, 2, 64), (3, 1, 16))


def test_the_planners_screen_prices_shard_groups_as_the_estimate_does():
    cat, params = default_catalog(), default_performance_model()
    gpu = cat.accelerator("a100-sxm4-80gb")
    fab = make_fabric(cat, gpu, None, "ib-hdr-200", None, 8, params, 64)
    lay = data_parallel_layouts(*zip(*LAYOUTS, strict=True))
    screened = {}
    for shard in (None, 8, "all-reduce"):
        sc = _scenario(shard, gbs=1024) if shard != "all-reduce" else _scenario(gbs=1024, sync="all-reduce")
        arch = resolve_model(sc.model)
        basis = job_basis(sc, arch)
        steps = screen_step_time(basis, lay, sc, gpu, fab, params)
        mem, _host = screen_memory(basis, lay, sc, gpu)
        screened[shard] = steps, mem
        for i, (zero, tp, gpus) in enumerate(LAYOUTS):
            ref = _run(sc.model_copy(update={"parallel": sc.parallel.model_copy(update={"zero": zero, "tp": tp,
                                                                                          "gpus": gpus})}))
            assert mem[i] == pytest.approx(ref.memory.device_bytes, rel=0.005), (shard, zero, tp, gpus)
            assert steps[i] == pytest.approx(ref.performance.step_time_s, rel=0.1), (shard, zero, tp, gpus)
    # the screen moves with the group as the estimate does: more states per rank, and the dp terms change
    for i, (zero, tp, gpus) in enumerate(LAYOUTS):
        whole = _run(_scenario(None, zero=zero, tp=tp, gpus=gpus, gbs=1024))
        node = _run(_scenario(8, zero=zero, tp=tp, gpus=gpus, gbs=1024))
        est = node.memory.device_bytes - whole.memory.device_bytes
        scr = screened[8][1][i] - screened[None][1][i]
        assert est > 0 and scr == pytest.approx(est, rel=0.01), (zero, tp, gpus)


def test_the_screen_prices_an_all_reducing_sharded_optimizer_as_the_estimate_does():
    cat, params = default_catalog(), default_performance_model()
    gpu = cat.accelerator("a100-sxm4-80gb")
    fab = make_fabric(cat, gpu, None, "ib-hdr-200", None, 8, params, 64)
    lay = data_parallel_layouts((1,), (1,), (64,))
    steps = {}
    for sync in ("reduce-scatter", "all-reduce"):
        sc = _scenario(sync=sync, seq=256)
        screened = screen_step_time(job_basis(sc, resolve_model(sc.model)), lay, sc, gpu, fab, params)[0]
        steps[sync] = screened, _run(sc).performance.step_time_s
        assert screened == pytest.approx(steps[sync][1], rel=0.1), sync
    (scr_rs, est_rs), (scr_ar, est_ar) = steps["reduce-scatter"], steps["all-reduce"]
    assert est_ar > est_rs and scr_ar - scr_rs == pytest.approx(est_ar - est_rs, rel=0.3)


def test_context_parallel_ranks_shard_the_optimizer_and_reduce_the_gradients_in_the_step_too():
    # Megatron reduces gradients over the data-parallel group with context parallelism and its distributed optimizer
    # shards the states over it (the memory model holds them so: tests/test_memory.py); the step prices the same
    # group: 8 GPUs at tp 2 as cp 4 x dp 1 step a quarter of the states each, as cp 1 x dp 4 do
    def terms(cp):
        sc = scenario_from_dict({
            "model": {"preset": "llama-3.1-8b"},
            "training": {"method": "full", "precision": "bf16-mixed", "micro_batch_size": 1, "seq_len": 8192,
                         "global_batch_size": 8, "activation_checkpointing": "full"},
            "parallel": {"gpus": 8, "tp": 2, "cp": cp, "distributed_optimizer": True, "overlap_grad_reduce": False},
            "hardware": {"gpu": "h100-sxm5-80gb", "gpus_per_node": 8}})
        return _run(sc).performance.breakdown_s
    long, wide = terms(4), terms(1)
    assert long["optimizer"] == pytest.approx(wide["optimizer"], rel=0.01)
    assert long["dp_grad_sync"] > 0  # one data-parallel rank, four context-parallel ones: the gradients still reduce
