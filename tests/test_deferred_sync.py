"""FSDP no_sync: gradients accumulated unsharded until the step's last micro-batch (estimate/deferred_sync.py)."""

from __future__ import annotations

import pytest
from screen_layouts import one_layout

from trainsizer.errors import InputError
from trainsizer.estimate.estimator import estimate, resolve_model
from trainsizer.estimate.memory import default_memory_model
from trainsizer.estimate.training_state import training_state
from trainsizer.hardware.catalog import default_catalog
from trainsizer.scenario import scenario_from_dict


def _fsdp_lora(sync: str = "no-sync", gbs: int = 256, zero: int = 3, gpus: int = 2, method: str = "lora") -> dict:
    """litgpt's LoRA fine-tune of Llama-2-7B on two A100s: FSDP full shard, full per-block checkpointing."""
    lora = {"lora": {"rank": 8, "targets": ["q_proj", "v_proj"]}} if method == "lora" else {}
    return {"model": {"preset": "llama-2-7b"},
            "training": {"method": method, "precision": "bf16-true", "micro_batch_size": 1, "seq_len": 1304,
                         "global_batch_size": gbs, "activation_checkpointing": "full", **lora},
            "parallel": {"gpus": gpus, "zero": zero, "accumulation_sync": sync},
            "hardware": {"gpu": "a100-sxm4-40gb", "gpus_per_node": gpus}}


def _memory(d: dict):
    return estimate(scenario_from_dict(d), with_limits=False, with_performance=False).memory


def _grads(mem) -> float:
    return next(c.bytes for c in mem.components if c.name == "gradients")


def test_no_sync_keeps_every_layers_gradients_unsharded_across_the_micro_batches():
    """Under no_sync each rank holds a gradient for every element of each Block that trains an adapter (the frozen
    base weights included: one flat parameter per unit), in bf16, unsharded: about the layers' weights, where
    reducing each micro-batch leaves only the adapters' gradient shards."""
    sc = scenario_from_dict(_fsdp_lora())
    st = training_state(sc, resolve_model(sc.model), default_memory_model())
    layer_bytes = 2.0 * sum(layer.base_linear_params + layer.norm_params for layer in st.layers)
    deferred, reduced = _memory(_fsdp_lora()), _memory(_fsdp_lora("reduce"))
    assert _grads(deferred) == pytest.approx(layer_bytes, rel=0.01)
    assert _grads(reduced) < 0.01 * layer_bytes
    assert deferred.allocated_bytes - reduced.allocated_bytes == pytest.approx(_grads(deferred) - _grads(reduced),
                                                                               rel=0.02)
    assert deferred.phase == "forward+loss"  # alive from the previous micro-batch: through the whole step


@pytest.mark.parametrize("change", [{"gbs": 2}, {"zero": 1}, {"gpus": 1, "gbs": 128}])
def test_no_sync_changes_nothing_without_accumulation_or_sharded_gradients(change):
    """One micro-batch a step has nothing to accumulate; zero 0/1 keeps whole gradients anyway; one GPU has no shard."""
    assert _memory(_fsdp_lora(**change)).allocated_bytes == pytest.approx(
        _memory(_fsdp_lora("reduce", **change)).allocated_bytes)


def test_a_full_fine_tune_under_no_sync_holds_all_its_gradients_unsharded():
    """Full fine-tuning: every parameter, embeddings and head included, has its unsharded gradient (bf16-true: 2 B)."""
    sc = scenario_from_dict(_fsdp_lora(method="full"))
    st = training_state(sc, resolve_model(sc.model), default_memory_model())
    every = sum(layer.base_linear_params + layer.norm_params for layer in st.layers) + st.embedding_params \
        + st.lm_head_params + st.final_params
    assert _grads(_memory(_fsdp_lora(method="full"))) == pytest.approx(2.0 * every, rel=0.01)


def test_the_planners_screen_prices_no_sync_gradients_as_the_estimate_does():
    from trainsizer.plan.fast import job_basis, screen_memory

    gpu = default_catalog().accelerator("a100-sxm4-40gb")
    for sync in ("no-sync", "reduce"):
        sc = scenario_from_dict(_fsdp_lora(sync))
        screened, _host = screen_memory(job_basis(sc, resolve_model(sc.model)),
                                        one_layout(gpus=2, zero=3, ckpt="full", gpus_per_node=2), sc, gpu)
        assert screened[0] == pytest.approx(_memory(_fsdp_lora(sync)).device_bytes, rel=0.005), sync


def test_an_unknown_accumulation_sync_is_named_with_the_accepted_values():
    with pytest.raises(InputError) as err:
        scenario_from_dict(_fsdp_lora("sometimes"))
    assert "parallel.accumulation_sync" in str(err.value) and "reduce, no-sync" in str(err.value)


def test_no_sync_counts_a_frozen_norms_gradient_at_the_weights_storage_bytes():
    """A frozen element's gradient under no_sync takes its weight's storage dtype: 4 B in fp32 training, for the
    layers' norms (never quantized) as for the frozen linears."""
    from trainsizer.estimate.deferred_sync import unsharded_gradient_bytes

    fp32 = _fsdp_lora()
    fp32["training"]["precision"] = "fp32"
    sc = scenario_from_dict(fp32)
    st = training_state(sc, resolve_model(sc.model), default_memory_model())
    norms = sum(layer.norm_params for layer in st.layers if not layer.trainable_base and layer.lora_params)
    linears = sum(layer.base_linear_params for layer in st.layers if not layer.trainable_base and layer.lora_params)
    adapters = sum(layer.lora_params for layer in st.layers)
    assert norms > 0
    got = unsharded_gradient_bytes(st, st.layers, first=True, last=False)
    assert got == pytest.approx(4.0 * (linears + norms + adapters))
