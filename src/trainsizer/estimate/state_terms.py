"""Where a stage's model states live, as term functions of one layout (numbers: the estimate,
estimate/model_states.py, which adds each term's message) or of many (numpy arrays: the planner's screen,
plan/fast.py): which ZeRO stage shards which state over how many ranks, what offloading moves to the host, and the
communication buffers of DDP and ZeRO. One rule, read by both, so the screen cannot drift from the estimate
(tests/test_state_terms.py). ``offload`` is the index in ``step_layout.OFFLOADS``."""

from __future__ import annotations

from typing import Any

from trainsizer.arrays import maximum, minimum, negate, where
from trainsizer.estimate.step_layout import OFFLOADS

OFFLOAD_PARAMS = OFFLOADS.index("optimizer+params")


def state_shards(zero: Any, distributed_optimizer: Any, group: Any) -> tuple[Any, Any, Any]:
    """(optimizer-state and fp32-master shards, gradient shards, weight shards) over the ZeRO ``group``: stage 1 (or
    Megatron's distributed optimizer) partitions the optimizer states, stage 2 the gradients too, stage 3 the
    parameters too (Rajbhandari et al. 2020, arXiv:1910.02054, section 5: P_os, P_os+g, P_os+g+p)."""
    return (where((zero >= 1) | distributed_optimizer, group, 1), where(zero >= 2, group, 1),
            where((zero == 3) & (group > 1), group, 1))


def expert_data_shards(shards: Any, tp: Any, ep: Any, expert_tp: Any) -> Any:
    """Ranks one routed expert's ZeRO-sharded states span where the dense states span ``shards``: its
    expert-data-parallel group, shards x tp / (ep x etp), at least 1 (Megatron-Core expert data parallelism; MoE
    parallel folding, Liu et al. 2025, arXiv:2504.14960, section 3.1)."""
    return maximum(1, (shards * tp) // (ep * expert_tp))


def expert_state_shards(shards: Any, tp: Any, ep: Any, expert_tp: Any) -> Any:
    """Ranks a routed expert's ZeRO-sharded states span where the dense states span ``shards``: its
    expert-data-parallel group (:func:`expert_data_shards`), one where the dense states are not sharded."""
    return where(shards > 1, expert_data_shards(shards, tp, ep, expert_tp), 1)


def split_shards(dense: Any, experts: Any, shards: Any, expert_shards: Any) -> Any:
    """A rank's ``dense`` bytes sharded over ``shards`` ranks and its routed experts' ``experts`` bytes over
    ``expert_shards`` (:func:`expert_data_shards`): ZeRO under expert parallelism (DeepSpeed-MoE, Rajbhandari et al.
    2022, arXiv:2201.05596; Megatron-Core's distributed optimizer over the expert-data-parallel group). Shares of one
    (``1 - s``, ``s``) give the factor on a total whose experts' share is ``s``."""
    return dense / shards + experts / expert_shards


def weights_on_gpu(weights: Any, offload: Any, master_only: Any) -> Any:
    """The (sharded) weights a GPU holds: none when they are offloaded (ZeRO-Infinity parameter offload, Rajbhandari
    et al. 2021, arXiv:2104.07857; FSDP ``CPUOffload(offload_params=True)``) or when each rank keeps only its fp32
    master shard (``model_states.master_only_shards``: PyTorch FSDP ``MixedPrecisionPolicy``)."""
    return where((offload == OFFLOAD_PARAMS) | master_only, 0.0, weights)


def trainable_states_on_gpu(states: Any, offload: Any) -> Any:
    """The (sharded) fp32 masters, optimizer states, gradients or optimizer-step temporaries a GPU holds: none when
    the optimizer is offloaded (ZeRO-Offload, Ren et al. 2021, arXiv:2101.06840: gradients stream to the host, the
    masters and states stay there and the step runs on the CPU)."""
    return where(offload > 0, 0.0, states)


def host_bytes(weights: Any, trainable_states: Any, offload: Any) -> Any:
    """Bytes per GPU offloaded to host memory: the (sharded) trainable states (masters, optimizer states, gradients)
    under any offload, the (sharded) weights too under parameter offload (the two functions above, host side)."""
    return where(offload > 0, trainable_states, 0.0) + where(offload == OFFLOAD_PARAMS, weights, 0.0)


def contiguous_gradient_buffer(tp: Any, pp: Any) -> Any:
    """Whether the gradients live in one contiguous buffer whose all-reduce buckets are views of it (no copy):
    Megatron-LM's DistributedDataParallel, which a run with tensor or pipeline parallelism uses
    (megatron/core/distributed/param_and_grad_buffer.py)."""
    return (tp > 1) | (pp > 1)


def copies_into_buckets(dp: Any, zero: Any, distributed_optimizer: Any, offload: Any, megatron_style: Any) -> Any:
    """Whether data parallelism copies each gradient into its all-reduce buckets: torch DDP does
    (``gradient_as_bucket_view=False`` by default, PyTorch DistributedDataParallel docs); Megatron's contiguous
    gradient buffer (tensor or pipeline parallelism) makes the buckets views, sharded optimizers reduce through
    their own bucket (:func:`uses_reduce_bucket`)."""
    return ((dp > 1) & (zero == 0) & negate(distributed_optimizer) & (offload == 0)
            & negate(megatron_style))


def uses_reduce_bucket(dp: Any, zero: Any, megatron_style: Any) -> Any:
    """Whether ZeRO stage 1/2 reduces the gradients through a bucket of its own (DeepSpeed ``reduce_bucket_size``)."""
    return (dp > 1) & ((zero == 1) | (zero == 2)) & negate(megatron_style)


def reduce_bucket_bytes(bucket_elements: Any, gradients: Any, bytes_per_element: Any) -> Any:
    """The reduce bucket: ``bucket_elements`` gradients (memory_model.yaml ``zero_reduce_bucket_elements``, DeepSpeed
    config docs' ``reduce_bucket_size``), never more than the stage's ``gradients`` bytes."""
    return minimum(bucket_elements * bytes_per_element, gradients)


def gathers_units(zero: Any, group: Any, offload: Any, optimizer_in_backward: Any) -> Any:
    """Whether each wrapped unit's weights are all-gathered before use (ZeRO-3 / FSDP full shard over more than one
    rank, or parameters offloaded), and its gradients held unsharded before their reduce-scatter; the
    optimizer-in-backward rule frees them as it steps (Zhao et al. 2023, PyTorch FSDP, arXiv:2304.11277, section 3)."""
    return ((((zero == 3) & (group > 1)) | (offload == OFFLOAD_PARAMS))
            & negate(optimizer_in_backward))


def gathered_unit_bytes(units: Any, unit_weights: Any, unit_gradients: Any) -> Any:
    """The gathered units (memory_model.yaml ``zero3_gathered_units``: the current and the prefetched one, FSDP's
    forward and backward prefetch) and one unit's unsharded gradients."""
    return units * unit_weights + unit_gradients
