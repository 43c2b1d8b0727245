"""The ZeRO group of a layout: how many ranks one copy of the sharded states spans, over how many data-parallel
ranks, and whether the gradients are reduce-scattered; for one layout (numbers: ``scenario.ParallelSpec``'s
properties) or many (numpy arrays: the planner's screen, plan/layouts.py and plan/fast.py), one rule for both."""

from __future__ import annotations

from typing import Any

from trainsizer.arrays import maximum, where


def zero_group(dp_cp: Any, shard: int | None) -> Any:
    """Ranks one copy of the ZeRO-sharded states is spread over: ``shard`` (``parallel.zero_shard_gpus``: PyTorch FSDP
    ``HYBRID_SHARD``, DeepSpeed MiCS, InternLM ``zero1``) where it divides the dp x cp group ``dp_cp`` (a planner
    layout may not), else the whole group (ZeRO, Rajbhandari et al. 2020, arXiv:1910.02054, section 5)."""
    if not shard:
        return dp_cp
    return where(dp_cp % shard == 0, shard, dp_cp)


def zero_dp_shards(group: Any, dp: Any, cp: Any) -> Any:
    """Data-parallel ranks one copy of the sharded optimizer states spans: dp, or the part of a smaller ``group`` (of
    dp x cp) over the data-parallel ranks."""
    return where(group == dp * cp, dp, maximum(1, group // cp))


def scatters_gradients(zero: Any, distributed_optimizer: Any, dp_shards: Any, dp: Any, zero_grad_sync: str) -> Any:
    """Whether a sharded optimizer (zero 1/2, Megatron's distributed optimizer) reduce-scatters the gradients over dp;
    else every rank all-reduces them (``zero_grad_sync: all-reduce``, or a sharding group smaller than dp)."""
    return (((zero == 1) | (zero == 2) | distributed_optimizer) & (dp_shards == dp)
            & (zero_grad_sync == "reduce-scatter"))
