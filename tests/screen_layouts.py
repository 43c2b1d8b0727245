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
