"""The once-a-step data-parallel terms of a training step: the gradient reduction, the sharded optimizer's weight
gather, and the routed experts' part of both over their own expert-data-parallel group (Rajbhandari et al. 2020,
ZeRO, arXiv:1910.02054, section 5; MoE parallel folding, Liu et al. 2025, arXiv:2504.14960, section 3.1). Each takes
one ``step_terms.StepContext`` (not imported: step_terms imports this module): one layout (numbers) or many
(arrays)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from trainsizer.arrays import all_at_most_one, any_nonzero, is_array, where
from trainsizer.estimate.comm import all_gather_s, all_reduce_s


def data_parallel_sync_s(ctx: Any) -> Any:
    """Gradient all-reduce once per step (ZeRO-3 reduce-scatters per micro-batch instead) over the data-parallel
    ranks and the context-parallel ones, which hold the same weights and computed their gradients on other tokens
    (Megatron-Core reduces the dense buffers over ``intra_dp_cp_group``, megatron/core/distributed/
    distributed_data_parallel.py @ d98e8a64). A sharded optimizer (ZeRO-1/2, Megatron's distributed optimizer)
    reduce-scatters them instead (Rajbhandari et al. 2020, section 5.3) and gathers the weights
    (:func:`data_parallel_gather_s`). The routed experts' gradients reduce over their own expert-data-parallel group
    (:func:`expert_sync_s`)."""
    lay = ctx.layout
    replicas = lay.dp * lay.cp
    if all_at_most_one(where(lay.zero == 3, 1, replicas)):
        return 0.0
    grad_b = ctx.weight_and_grad_bytes[1]
    experts = ctx.expert_trainable_local
    # once per step, at the node's full NIC bandwidth: the Megatron runs (in-network reduction on their
    # InfiniBand fabric, bucketed overlap) show it hidden where the strided groups' NIC share would expose it
    # zero_grad_sync all-reduce, or zero_shard_gpus < dp: all-reduce over dp, each rank keeps its share (InternLM
    # internlm/solver/optimizer/hybrid_zero_optim.py @ 01e7fd6: reduce_tensor, dst_rank None, ParallelMode.DATA)
    def sync(scatter: bool) -> Any:
        collective = all_gather_s if scatter else all_reduce_s
        return dense_group_s(ctx, (ctx.trainable_local - experts) * grad_b, replicas, collective) \
            + expert_sync_s(ctx, experts * grad_b, replicas, replicas, collective)
    if not is_array(replicas):
        return sync(lay.scatters_gradients)
    return where((replicas > 1) & (lay.zero != 3), where(lay.scatters_gradients, sync(True), sync(False)))


def data_parallel_gather_s(ctx: Any) -> Any:
    """A sharded optimizer all-gathers the updated 16-bit weights after its step, over the group its states are
    sharded on (``zero_group``: dp x cp, as the memory model holds them); Megatron overlaps the gather with the next
    step's first forward (``--overlap-param-gather``, :func:`gather_overlaps`)."""
    lay = ctx.layout
    sharded = (lay.zero_group > 1) & (lay.zero != 3) & ((lay.zero == 1) | (lay.zero == 2) | lay.distributed_optimizer)
    if not any_nonzero(sharded):
        return 0.0
    experts = ctx.expert_trainable_local
    w_b = ctx.weight_and_grad_bytes[0]
    return where(sharded, dense_group_s(ctx, (ctx.trainable_local - experts) * w_b, lay.zero_group, all_gather_s)
                 + expert_sync_s(ctx, experts * w_b, lay.zero_group, lay.zero_group, all_gather_s))


def dense_group_s(ctx: Any, bytes_: Any, group: Any, collective: Callable[..., Any]) -> Any:
    """``collective`` of ``bytes_`` over a data-parallel ``group`` of the dense weights (dp x cp ranks, ``tp`` apart:
    Megatron-Core's rank order puts tp innermost, then cp, then dp), at the node's full NIC bandwidth (see
    :func:`data_parallel_sync_s`)."""
    lay = ctx.layout
    return collective(bytes_, group, ctx.fabric, stride=lay.tp, nic_share=False)


def expert_sync_s(ctx: Any, bytes_: Any, shards: Any, dense: Any, collective: Callable[..., Any]) -> Any:
    """The routed experts' part of the once-a-step gradient sync or weight gather: ``bytes_`` over their
    expert-data-parallel group (``StepContext.expert_data_group`` of ``shards``), ``tp x ep`` ranks apart (MoE
    parallel folding, Liu et al. 2025, arXiv:2504.14960, section 3.1). With expert parallelism inside a node each GPU
    of it syncs in another such group at once, one rank a node: nothing is reduced over NVLink first, so a GPU's
    whole expert gradient crosses its own share of the node's NICs, where a dense group with several ranks a node
    spreads its inter-node bytes over all of them. Without expert parallelism they sync with the dense group
    (``dense``)."""
    lay = ctx.layout
    group = ctx.expert_data_group(shards)
    own = collective(bytes_, group, ctx.fabric, stride=lay.tp * lay.ep, nic_share=True)
    shared = dense_group_s(ctx, bytes_, dense, collective)
    return where(lay.ep > 1, where(group > 1, own, 0.0), shared)
