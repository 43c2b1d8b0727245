"""Planner screen layouts for the screen == estimate tests (tests/ is on sys.path, like web_stubs)."""

from __future__ import annotations

import numpy as np

from trainsizer.plan.fast import CKPT, Layouts


def data_parallel_layouts(zero, tp, gpus) -> Layouts:
    """One layout per (zero, tp, gpus): no pipeline or context parallelism, micro-batch 2, full checkpointing, 8 GPUs a
    node."""
    n = len(zero)

    def arr(*v, dtype=int):
        return np.array(v, dtype=dtype)

    return Layouts(gpus=arr(*gpus), tp=arr(*tp), pp=arr(*[1] * n), cp=arr(*[1] * n), vpp=arr(*[1] * n),
                   zero=arr(*zero), dist_opt=arr(*[False] * n, dtype=bool), sp=arr(*[False] * n, dtype=bool),
                   offload=arr(*[0] * n), mbs=arr(*[2] * n), ckpt=arr(*[CKPT.index("full")] * n),
                   gpus_per_node=arr(*[8] * n))


def one_layout(gpus: int = 1, zero: int = 0, mbs: int = 1, ckpt: str = "none", gpus_per_node: int = 1) -> Layouts:
    """A single data-parallel layout: no tensor, pipeline or context parallelism, no offload."""
    def arr(v, dtype=int):
        return np.array([v], dtype=dtype)

    return Layouts(gpus=arr(gpus), tp=arr(1), pp=arr(1), cp=arr(1), vpp=arr(1), zero=arr(zero),
                   dist_opt=arr(False, bool), sp=arr(False, bool), offload=arr(0), mbs=arr(mbs),
                   ckpt=arr(CKPT.index(ckpt)), gpus_per_node=arr(gpus_per_node))
