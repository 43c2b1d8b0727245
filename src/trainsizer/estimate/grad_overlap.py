"""Whether a step's data-parallel collectives hide behind its compute (floats, or arrays of them for the planner's
screen): the gradient reduction behind backward, the sharded optimizer's weight gather behind the next forward."""

from __future__ import annotations

from typing import Any


def gather_overlaps(distributed_optimizer: Any) -> Any:
    """1 where the sharded optimizer's weight gather hides behind the next forward, else 0 (a bool or an array of
    them). Megatron's distributed optimizer gathers bucket by bucket as the next forward reaches each bucket
    (``--overlap-param-gather``). DeepSpeed ZeRO-1/2 all-gathers the updated weights at the end of ``step()``, "ready
    for next round forward" (deepspeedai/DeepSpeed ``deepspeed/runtime/zero/stage_1_and_2.py`` @ 7dee2e0,
    ``all_gather_dp_groups``), and InternLM's hybrid ZeRO waits for its parameter broadcasts (InternLM/InternLM
    ``internlm/solver/optimizer/hybrid_zero_optim.py`` @ c18bec9: ``broadcast_params(overlap=False)``, "TODO:
    support broadcast overlap"): the step waits for the whole gather."""
    return 1.0 * distributed_optimizer


def reduce_overlaps(overlap_grad_reduce: Any) -> Any:
    """1 where the data-parallel gradient reduction runs beside backward, else 0 (``parallel.overlap_grad_reduce``).
    PyTorch DDP all-reduces each gradient bucket as backward fills it, on its own stream (Li et al. 2020, "PyTorch
    Distributed", VLDB, arXiv:2006.15704, section 3.2.3); Megatron with ``--overlap-grad-reduce``; DeepSpeed ZeRO-1/2
    only with ``overlap_comm: true``, whose default is false for stages 1 and 2 (microsoft/DeepSpeed
    ``deepspeed/runtime/zero/constants.py`` @ v0.5.0, ``ZERO_OPTIMIZATION_OVERLAP_COMM_DEFAULT = False``): the buckets
    are then reduced on the compute stream (``stage2.py`` @ v0.5.0, ``average_tensor``: the reduction stream only
    with ``overlap_comm``, else ``torch.cuda.current_stream()``), and DeepSpeed's engine without ZeRO all-reduces the
    gradients after backward (``engine.py`` @ v0.5.0, ``allreduce_gradients``): the step waits for all of it."""
    return 1.0 * overlap_grad_reduce
