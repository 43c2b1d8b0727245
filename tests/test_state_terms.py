"""One rule for where the model states live: the ZeRO sharding of weights, gradients and optimizer states, what
offloading moves to the host, the DDP / ZeRO communication buffers and the saved-activation choice per checkpointing
mode, a stage's saved bytes over the micro-batches in flight and a phase's allocation are term functions
(estimate/state_terms.py, activations.layer_saved / stage_saved_bytes, memory.phase_allocation) that the estimate calls
with numbers and the planner's screen (plan/fast.py) with arrays of layouts.

Two checks: each term gives the same answer for one layout as numbers and inside an array of layouts; and when a
rule is changed (patched into the estimate and the screen alike), the screen and the estimate still agree on every
layout while their answers move, which fails if either side kept a copy of the rule of its own."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from test_plan import job

import trainsizer.estimate.activations as activations
import trainsizer.estimate.memory as memory
import trainsizer.estimate.model_states as model_states
import trainsizer.estimate.state_terms as terms
import trainsizer.plan.fast as fast
import trainsizer.scenario_sharding as sharding
from trainsizer.api import estimate
from trainsizer.estimate.estimator import clear_caches
from trainsizer.hardware.catalog import default_catalog
from trainsizer.plan.search import Constraints, _scenario_for, enumerate_layouts

LAYER_SAVED = activations.layer_saved  # the shipped rules, which the changed ones call
STAGE_SAVED = activations.stage_saved_bytes
PHASE_ALLOCATION = memory.phase_allocation
GRID = list(itertools.product((1, 2, 4), (0, 1, 2, 3), (False, True), (0, 1, 2), (False, True), (False, True)))
DP, ZERO, DIST, OFFLOAD, MEGATRON, IN_BACKWARD = (np.array(column) for column in zip(*GRID, strict=True))


def _each_equal(array_result, scalar_call) -> None:
    for i, row in enumerate(GRID):
        assert array_result[i] == scalar_call(*row), row


def test_each_term_is_the_same_for_one_layout_and_for_an_array_of_them() -> None:
    group = DP * 1.0
    sharded = terms.state_shards(ZERO, DIST, group)
    _each_equal(np.stack(sharded, axis=1).tolist(), lambda dp, zero, dist, *_: list(terms.state_shards(zero, dist, dp)))
    _each_equal(terms.weights_on_gpu(10.0, OFFLOAD, DIST), lambda dp, z, dist, off, *_: terms.weights_on_gpu(
        10.0, off, dist))
    _each_equal(terms.trainable_states_on_gpu(10.0, OFFLOAD), lambda dp, z, d, off, *_: terms.trainable_states_on_gpu(
        10.0, off))
    _each_equal(terms.host_bytes(3.0, 5.0, OFFLOAD), lambda dp, z, d, off, *_: terms.host_bytes(3.0, 5.0, off))
    _each_equal(terms.copies_into_buckets(DP, ZERO, DIST, OFFLOAD, MEGATRON),
                lambda dp, z, d, off, meg, _: terms.copies_into_buckets(dp, z, d, off, meg))
    _each_equal(terms.uses_reduce_bucket(DP, ZERO, MEGATRON),
                lambda dp, z, d, off, meg, _: terms.uses_reduce_bucket(dp, z, meg))
    _each_equal(terms.gathers_units(ZERO, DP, OFFLOAD, IN_BACKWARD),
                lambda dp, z, d, off, meg, ib: terms.gathers_units(z, dp, off, ib))
    full = np.arange(len(GRID)) + 100.0
    saved = activations.layer_saved(ZERO == 3, ZERO == 2, full, 7.0, 11.0, 2.0)
    for i, (_, zero, *_rest) in enumerate(GRID):
        assert (saved[0][i], saved[1][i]) == activations.layer_saved(zero == 3, zero == 2, full[i], 7.0, 11.0, 2.0)


def _doubled_optimizer_shards(zero, distributed_optimizer, group):
    """Optimizer states over twice the ranks wherever they are sharded (never at zero 0: the screen's per-layer
    bytes are probed there)."""
    opt, grads, weights = terms.state_shards(zero, distributed_optimizer, group)
    return terms.where((zero >= 1) | distributed_optimizer, opt * 2, opt), grads, weights


# a changed rule for each term, the same as the shipped one at the layout the screen probes its per-layer bytes at
# (plan.fast.job_basis: zero 0, nothing offloaded, one data-parallel rank)
CHANGED = {
    "state_shards": _doubled_optimizer_shards,
    "weights_on_gpu": lambda weights, offload, master_only: terms.where(
        offload == 1, 0.0, terms.weights_on_gpu(weights, offload, master_only)),
    "trainable_states_on_gpu": lambda states, offload: terms.where(offload > 1, 0.0, states),
    "copies_into_buckets": lambda dp, zero, dist, offload, meg: terms.copies_into_buckets(dp, zero, dist, offload,
                                                                                        meg) & (dp != 2),
    "reduce_bucket_bytes": lambda elements, gradients, b: terms.reduce_bucket_bytes(elements / 1000, gradients, b),
    "gathered_unit_bytes": lambda units, w, g: terms.gathered_unit_bytes(units + 3, w, g),
    "layer_saved": lambda recomputed, selective, full, scores, layer_input, kept: LAYER_SAVED(
        recomputed, selective, full, scores * 0.5, layer_input * 3, kept),
    "stage_saved_bytes": lambda layers, in_flight, interleave, embedding: STAGE_SAVED(
        layers * 1.5, in_flight, interleave, embedding),
    "phase_allocation": lambda static, alive, extra, stepping, compiled, saved: PHASE_ALLOCATION(
        static, alive, extra * 2, stepping, compiled, saved),
}


def _screen_and_estimate(sc, arch, acc, lay, picked):
    device, _host = fast.screen_memory(fast.job_basis(sc, arch), lay, sc, acc)
    exact = [estimate(_scenario_for(sc, acc, lay, int(i), "ib-ndr-400", 64), with_limits=False,
                      with_performance=False).memory.device_bytes for i in picked]
    return device[picked], np.array(exact)


@pytest.mark.parametrize(("preset", "method", "precision"), [("llama-3.1-8b", "full", "bf16-mixed"),
                                                             ("qwen2.5-7b", "lora", "bf16-true")])
@pytest.mark.parametrize("name", sorted(CHANGED))
def test_a_changed_rule_moves_the_screen_and_the_estimate_together(preset, method, precision, name,
                                                                    monkeypatch) -> None:
    sc, arch = job(preset, method, precision, gbs=64)
    acc = default_catalog().accelerator("h100-sxm5-80gb")
    lay = enumerate_layouts(sc, arch, acc, Constraints(("h100-sxm5-80gb",), max_gpus=8), 8, 64)
    single = (lay.tp == 1) & (lay.pp == 1) & (lay.cp == 1)  # where every buffer rule applies
    picked = np.flatnonzero(single)[:: max(1, int(single.sum()) // 40)]
    clear_caches()
    screen, exact = _screen_and_estimate(sc, arch, acc, lay, picked)
    assert screen == pytest.approx(exact, rel=1e-5)
    for module in (model_states, activations, memory, fast):
        if hasattr(module, name):
            monkeypatch.setattr(module, name, CHANGED[name])
    assert hasattr(fast, name), f"the screen does not apply {name}"
    assert any(hasattr(m, name) for m in (model_states, activations, memory)), f"the estimate does not apply {name}"
    try:
        clear_caches()
        changed_screen, changed_exact = _screen_and_estimate(sc, arch, acc, lay, picked)
    finally:
        monkeypatch.undo()
        clear_caches()
    assert changed_screen == pytest.approx(changed_exact, rel=1e-5), name
    if not np.allclose(changed_exact, exact, rtol=1e-9):
        return
    assert name in NOT_REACHED.get((preset, method), ()), f"{name} changed nothing: the test does not reach it"


NOT_REACHED = {  # rules these layouts never exercise: recorded so that a rule that stops being reached is noticed
    ("llama-3.1-8b", "full"): (),
    ("qwen2.5-7b", "lora"): (),
}


def test_the_zero_group_rules_are_the_same_for_one_layout_and_for_an_array_of_them() -> None:
    rows = list(itertools.product((1, 2, 4, 8), (1, 2), (0, 1, 2, 3), (False, True)))
    dp, cp, zero, dist = (np.array([r[i] for r in rows], dtype=float if i < 2 else None) for i in range(4))
    for shard in (None, 2, 4):
        group = sharding.zero_group(dp * cp, shard)
        shards = sharding.zero_dp_shards(group, dp, cp)
        for sync in ("reduce-scatter", "all-reduce"):
            scatters = sharding.scatters_gradients(zero, dist, shards, dp, sync)
            for i, (d, c, z, o) in enumerate(rows):
                one = sharding.zero_group(d * c, shard)
                assert group[i] == one
                assert shards[i] == sharding.zero_dp_shards(one, d, c)
                assert scatters[i] == sharding.scatters_gradients(z, o, sharding.zero_dp_shards(one, d, c), d, sync)


def test_a_stage_shards_its_dense_bytes_over_the_zero_group_and_its_experts_over_their_data_parallel_ranks() -> None:
    """The screen's stage bytes (plan/stage_bytes.StageBytes) of a mixture-of-experts layer: the rank holds
    ``1 / ep`` of the experts, counted once, sharded over the expert-data-parallel ranks (``group x tp / (ep x
    etp)``), the rest over the ZeRO group."""
    from types import SimpleNamespace

    from trainsizer.plan.stage_bytes import ExpertBasis, StageBytes

    none = {"w": 0.0}
    experts = ExpertBasis(layer_div={"w": 800.0}, layer_rep=none, first_extra=none, last_extra=none)
    basis = SimpleNamespace(layer_div={"w": 1000.0}, layer_rep={"w": 10.0}, first_extra=none, last_extra=none,
                            experts=experts)  # per layer: 200 dense + 10 replicated + 800 of experts (ep 1)
    stage = StageBytes(basis, np.array([2.0]), np.array([1.0]), np.array([4.0]), np.array([1.0]))
    dense, on_rank = 2 * 210.0, 2 * 800.0 / 4
    assert stage.per_rank(("w",), "whole")[0] == pytest.approx(dense + on_rank)
    assert stage.sharded(("w",), "whole", np.array([8.0]))[0] == pytest.approx(dense / 8 + on_rank / 2)  # 8 / 4
    assert stage.sharded(("w",), "whole", np.array([1.0]))[0] == pytest.approx(dense + on_rank)
