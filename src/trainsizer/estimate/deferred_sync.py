"""Gradients accumulated unsharded when a sharded run skips its gradient reduction between micro-batches.

PyTorch FSDP's ``no_sync()`` context: "gradients will be accumulated in module variables, which will later be
synchronized in the first forward-backward pass after exiting the context ... This likely results in higher memory
usage because FSDP will accumulate the full model gradients (instead of gradient shards) until the eventual sync"
(pytorch/pytorch torch/distributed/fsdp/fully_sharded_data_parallel.py ``FullyShardedDataParallel.no_sync``;
``_runtime_utils._post_backward_hook`` returns before the reduce-scatter when ``not state._sync_gradients`` and
leaves ``flat_param.grad`` unsharded). Lightning Fabric's ``fabric.no_backward_sync(model)`` calls it under its
FSDPStrategy (Lightning-AI/pytorch-lightning src/lightning/fabric/strategies/fsdp.py ``_FSDPBackwardSyncControl``
@ 71aed751), as litgpt's finetune scripts do on every accumulating micro-batch (Lightning-AI/litgpt
finetune/lora.py @ 8641822). Scenario: ``parallel.accumulation_sync: no-sync``.

The gradient is of each FSDP unit's flat parameter, so a unit that holds any trainable parameter gets a gradient for
all of its elements: with ``use_orig_params=True`` (Lightning's default) "the gradient memory usage will be higher than
expected (<total> numel instead of <non-frozen> numel before sharding via reduce-scatter)"
(torch/distributed/fsdp/_wrap_utils.py ``_validate_frozen_params``). Each transformer layer is its own unit (the
auto-wrap policy of Lightning's ``{Block}`` and of HF's transformer-layer wrap); the embeddings, final norm and output
head are the root unit, with a gradient only when one of them is trained. A gradient has its flat parameter's dtype:
the trained weights' gradient bytes, the frozen elements' storage bytes.
"""

from __future__ import annotations

from typing import Any

from trainsizer.arrays import maximum, where
from trainsizer.estimate.training_state import (
    LayerState,
    TrainingState,
    fp32_adapters,
    frozen_weight_bytes,
    gradient_bytes,
)
from trainsizer.scenario import Scenario


def skips_sync(scenario: Scenario) -> bool:
    """Whether the gradients of a step's micro-batches are kept unsharded until its last one (:func:`skipped_sync`)."""
    par = scenario.parallel
    return bool(skipped_sync(par.accumulation_sync, par.zero, par.zero_group, par.offload != "none",
                             scenario.grad_accumulation_steps))


def skipped_sync(accumulation_sync: str, zero: Any, group: Any, offloaded: Any, accumulation: Any) -> Any:
    """:func:`skips_sync` over the layout's quantities: numbers, or arrays of many layouts (plan/fast.py). Only
    sharded gradients (zero 2/3 over more than one rank) have a reduce-scatter to skip, only with accumulation; an
    offloaded run's gradients leave for the host after the sync (FSDP ``no_sync``: "the gradients will not be offloaded
    to CPU when inside the context manager"). Plain Python for numbers: the estimate does not import numpy
    (tests/test_front_door.py)."""
    if accumulation_sync != "no-sync":
        return False
    return (zero >= 2) & (group > 1) & (accumulation > 1) & ~offloaded if not isinstance(offloaded, bool) \
        else bool((zero >= 2) and (group > 1) and (accumulation > 1) and not offloaded)


def held_gradients(gradients: Any, unsharded: Any, skips: Any) -> Any:
    """The gradient bytes a GPU holds: its (sharded) ``gradients``, or, where the run skips its sync between
    micro-batches (:func:`skipped_sync`), at least the ``unsharded`` ones it accumulates; numbers or arrays."""
    return where(skips, maximum(gradients, unsharded), gradients)


def unsharded_gradient_bytes(st: TrainingState, layers: list[LayerState], first: bool, last: bool) -> float:
    """The bytes of the unsharded gradients a stage accumulates under ``no_sync``: every element of each unit that
    holds a trainable parameter (per tensor-parallel rank), at the gradient dtype where trained and the weights'
    storage dtype where frozen. Whether the run skips its sync is :func:`skips_sync`'s question."""
    tr, par = st.scenario.training, st.scenario.parallel
    grad_b = gradient_bytes(st.scenario)
    lora_grad_b = 4.0 if fp32_adapters(st.scenario) else grad_b
    plain_b = float(frozen_weight_bytes(tr.precision))  # a frozen weight no quantization touches (norms, embeddings)
    frozen_b = plain_b
    if tr.method == "qlora":
        fmt = st.params.quantization.formats.get(tr.quantization or "")
        frozen_b = (fmt.code_bytes + fmt.constant_bytes) if fmt else frozen_b
    total = 0.0
    for layer in layers:
        if layer.trainable_base:
            total += (layer.base_linear_params / par.tp + layer.norm_params) * grad_b
        elif layer.lora_params:
            total += layer.base_linear_params / par.tp * frozen_b + layer.norm_params * plain_b
        total += layer.lora_params / par.tp * lora_grad_b
    root = (st.embedding_params if first else 0) + ((st.lm_head_params + st.final_params) if last else 0)
    if tr.method == "full":
        total += root / par.tp * grad_b
    elif last and st.lm_head_lora_params:
        total += root / par.tp * plain_b + st.lm_head_lora_params / par.tp * lora_grad_b
    return total
