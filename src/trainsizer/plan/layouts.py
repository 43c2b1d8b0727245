"""The planner's candidate layouts as parallel arrays (one entry per candidate), and the per-layout quantities the
screen reads from a scenario's global batch and ZeRO group."""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from trainsizer import scenario_sharding as sharding
from trainsizer.frameworks import Parallelism, assumed, expert_parallel_families, runs_expert_parallel
from trainsizer.messages import Message, msg
from trainsizer.models.architecture import Architecture
from trainsizer.scenario import Scenario
from trainsizer.scenario_moe import expert_grid_fits

CKPT = ("none", "selective", "full")


def accumulation_steps(lay: Layouts, scenario: Scenario) -> np.ndarray:
    """Micro-batches per step of each layout: the global batch over micro-batch x data parallelism, at least 1 (one
    when the scenario states no global batch), as ``Scenario.grad_accumulation_steps`` gives one layout."""
    if not scenario.training.global_batch_size:
        return np.ones(len(lay))
    return np.maximum(scenario.global_batch_size // np.maximum(1, lay.mbs * lay.dp), 1)


def zero_group(group: np.ndarray, scenario: Scenario, layout_shard: np.ndarray | None = None) -> np.ndarray:
    """Ranks of dp x cp (``group``) one copy of the ZeRO-sharded states spans, per layout: as
    :attr:`trainsizer.scenario.ParallelSpec.zero_group`, ``parallel.zero_shard_gpus`` where it divides ``group``;
    ``layout_shard``: the planner's hybrid sharding group of each layout (0: the scenario's)."""
    shard = scenario.parallel.zero_shard_gpus
    if layout_shard is not None and (layout_shard > 0).any():
        each = np.where(layout_shard > 0, layout_shard, shard or 0)
        return np.where((each > 0) & (np.mod(group, np.maximum(each, 1)) == 0), each.astype(float), group)
    return sharding.zero_group(group, shard)


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
    ep: np.ndarray | None = None  # expert parallelism (1 where the model has no routed experts)
    zero_shard: np.ndarray | None = None  # ranks one copy of ZeRO-3 states spans (hybrid sharding); 0: all of dp x cp
    # bool: the embedding and the loss counted as one layer each (parallel.pipeline_split embedding-and-loss), where
    # the layers alone do not divide over the stages (estimate/pipeline_split.py)
    split: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.ep is None:
            self.ep = np.ones(len(self.gpus), dtype=int)
        if self.zero_shard is None:
            self.zero_shard = np.zeros(len(self.gpus), dtype=int)
        if self.split is None:
            self.split = np.zeros(len(self.gpus), dtype=bool)

    def __len__(self) -> int:
        return len(self.gpus)

    def take(self, idx: np.ndarray) -> Layouts:
        """The layouts at ``idx``, in their order."""
        return Layouts(*(getattr(self, f.name)[idx] for f in fields(Layouts)))

    @property
    def dp(self) -> np.ndarray:
        return self.gpus // (self.tp * self.pp * self.cp)


def concatenated(parts: list[Layouts]) -> Layouts:
    """The layouts of ``parts`` one after another (one part: itself)."""
    if len(parts) == 1:
        return parts[0]
    return Layouts(*(np.concatenate([getattr(part, f.name) for part in parts]) for f in fields(Layouts)))


OFFLOADS = ("none", "optimizer", "optimizer+params")  # the layouts' offload axis (0, 1, 2)


def framework_runs(runs: Parallelism | None, zero: np.ndarray, offload: np.ndarray, tp: np.ndarray,
                   pp: np.ndarray) -> np.ndarray:
    """Which layouts' sharding and offload the named framework runs (``runs``: its profile's ``parallelism``; None:
    all): its ZeRO stages, and ZeRO-1 over data parallelism alone where it shards with Megatron's distributed
    optimizer instead (:func:`sharding_as_run`)."""
    if runs is None:
        return np.ones(len(zero), dtype=bool)
    as_dist = (zero == 1) & (tp == 1) & (pp == 1) & runs.distributed_optimizer()
    ok = np.isin(zero, runs.zero_stages()) | as_dist
    return ok & np.isin(offload, [i for i, o in enumerate(OFFLOADS) if runs.offloads(o)])


def sharding_as_run(runs: Parallelism | None, zero: np.ndarray, tp: np.ndarray, pp: np.ndarray,
                    dp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(ZeRO stage, distributed optimizer) of each layout as its framework runs it: Megatron's distributed optimizer
    under tensor or pipeline parallelism with data parallelism; where the framework runs it but not ZeRO-1, the ZeRO-1
    layouts of data parallelism alone as the distributed optimizer (the same sharding: optimizer states and fp32 master
    weights over the data-parallel ranks, Megatron-LM --use-distributed-optimizer); none where it does not run it."""
    dist = (zero == 0) & ((tp > 1) | (pp > 1)) & (dp > 1)
    if runs is None:
        return zero, dist
    if not runs.distributed_optimizer():
        return zero, np.zeros(len(zero), dtype=bool)
    if 1 not in runs.zero_stages():
        as_dist = (zero == 1) & (tp == 1) & (pp == 1)
        return np.where(as_dist, 0, zero), dist | as_dist
    return zero, dist


# Expert parallelism Megatron-Core accepts: the expert layers' grid fits a pipeline stage's tp x cp x dp ranks
# (scenario_moe.expert_grid_fits, ParallelSpec's check too: context parallelism's ranks fold into expert parallelism as
# data parallelism's do), and each rank holds E / ep whole experts (ep divides the expert count). Sharded states shard
# the experts over the expert-data-parallel group (estimate/model_states.py), so every ZeRO stage is kept.
def with_searched_axes(lay: Layouts, arch: Architecture, scenario: Scenario) -> Layouts:
    """The layouts with the axes some jobs add: expert parallelism (models with routed experts) and hybrid sharding
    (ZeRO-3 over more than one node, unless the job states its own group). Expert parallelism only where the job's
    framework (named, else the one assumed for its method) runs it (its profile's ``expert_parallel``)."""
    if arch.moe and runs_expert_parallel(scenario.training.framework, scenario.training.method):
        lay = with_expert_parallelism(lay, arch.moe.num_experts, scenario.parallel.etp)
    return lay if scenario.parallel.zero_shard_gpus else with_hybrid_sharding(lay)


def expert_parallel_note(job: Scenario, arch: Architecture) -> Message | None:
    """What the plan says of an MoE job whose framework runs no expert parallelism with its method: which
    frameworks do, and how to name one."""
    method = job.training.method
    if not arch.moe or runs_expert_parallel(job.training.framework, method):
        return None
    return msg("plan.no_expert_parallel", framework=job.training.framework or assumed(method), method=method,
               frameworks=", ".join(expert_parallel_families(method)))


# Hybrid sharding: ZeRO-3 states sharded within each node and replicated across nodes, gradients all-reduced between
# the replicas (PyTorch FSDP ShardingStrategy.HYBRID_SHARD, "FULL_SHARD within a node, and replicate parameters
# across nodes", torch/distributed/fsdp/api.py; ZeRO++ hpZ, arXiv:2306.10209; MiCS, arXiv:2205.00119): the
# per-layer gathers stay on the node's links at the cost of a node's share of the states on each GPU.
def with_hybrid_sharding(lay: Layouts) -> Layouts:
    """Each ZeRO-3 layout that spans nodes once more, its states sharded over one node's GPUs."""
    group = lay.dp * lay.cp
    node = lay.gpus_per_node
    hybrid = np.nonzero((lay.zero == 3) & (lay.gpus > node) & (group > node) & (group % node == 0))[0]
    if not len(hybrid):
        return lay
    out = lay.take(np.concatenate([np.arange(len(lay)), hybrid]))
    out.zero_shard[len(lay):] = node[hybrid]
    return out


def with_expert_parallelism(lay: Layouts, num_experts: int, etp: int | None) -> Layouts:
    """Each layout once per legal expert-parallel degree (powers of two; 1 always)."""
    degrees = [e for e in (1, 2, 4, 8, 16, 32, 64, 128, 256) if num_experts % e == 0]
    base = np.repeat(np.arange(len(lay)), len(degrees))
    ep = np.tile(np.array(degrees), len(lay))
    out = lay.take(base)
    expert_tp = out.tp if etp is None else etp
    ok = ((ep == 1) & (etp is None)) | expert_grid_fits(out.tp, out.cp, out.dp, ep, expert_tp)
    keep = np.nonzero(ok)[0]
    out = out.take(keep)
    out.ep = ep[keep]
    return out
