"""The planner's candidate layouts as parallel arrays (one entry per candidate), and the per-layout quantities the
screen reads from a scenario's global batch and ZeRO group."""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from trainsizer import scenario_sharding as sharding
from trainsizer.scenario import Scenario

CKPT = ("none", "selective", "full")


def accumulation_steps(lay: Layouts, scenario: Scenario) -> np.ndarray:
    """Micro-batches per step of each layout: the global batch over micro-batch x data parallelism, at least 1 (one
    when the scenario states no global batch), as ``Scenario.grad_accumulation_steps`` gives one layout."""
    if not scenario.training.global_batch_size:
        return np.ones(len(lay))
    return np.maximum(scenario.global_batch_size // np.maximum(1, lay.mbs * lay.dp), 1)


def zero_group(group: np.ndarray, scenario: Scenario) -> np.ndarray:
    """Ranks of dp x cp (``group``) one copy of the ZeRO-sharded states spans, per layout: as
    :attr:`trainsizer.scenario.ParallelSpec.zero_group`, ``parallel.zero_shard_gpus`` where it divides ``group``."""
    return sharding.zero_group(group, scenario.parallel.zero_shard_gpus)


@dataclass
class Layouts:
    """Candidate layouts as parallel arrays (one entry per candidate)."""

    gpus: np.ndarray
    tp: np.ndarray
    pp: np.ndarray
    cp: np.ndarray
    vpp: np.ndarray
    zero: np.ndarray
    dist_opt: np.ndarray  # bool
    sp: np.ndarray  # bool
    offload: np.ndarray  # 0 none, 1 optimizer, 2 optimizer+params
    mbs: np.ndarray
    ckpt: np.ndarray  # index into CKPT
    gpus_per_node: np.ndarray

    def __len__(self) -> int:
        return len(self.gpus)

    def take(self, idx: np.ndarray) -> Layouts:
        """The layouts at ``idx``, in their order."""
        return Layouts(*(getattr(self, f.name)[idx] for f in fields(Layouts)))

    @property
    def dp(self) -> np.ndarray:
        return self.gpus // (self.tp * self.pp * self.cp)
