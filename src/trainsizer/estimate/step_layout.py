"""The layout quantities a step's terms read (parallel degrees, micro-batches, recomputation, offload), for one
scenario (numbers) or for the planner's many layouts at once (numpy arrays, built by plan/fast.py), so that the
same term functions (estimate/step_terms.py) price one estimate and every screened layout."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainsizer.estimate.flops import recomputed_layer
from trainsizer.models.architecture import Architecture
from trainsizer.scenario import Scenario

OFFLOADS = ("none", "optimizer", "optimizer+params")  # ``offload`` below is the index in this tuple


@dataclass(frozen=True, slots=True)
class StepLayout:
    """One layout (numbers) or many (arrays of one entry per layout; a field the layouts share may stay a number)."""

    tp: Any
    pp: Any
    cp: Any
    dp: Any
    ep: Any
    virtual_pp: Any
    zero: Any
    distributed_optimizer: Any
    sequence_parallel: Any
    offload: Any  # index in OFFLOADS
    micro_batch_size: Any
    accumulation: Any  # micro-batches per step (Scenario.grad_accumulation_steps)
    gpus_per_node: Any
    zero_group: Any  # ParallelSpec.zero_group
    scatters_gradients: Any  # ParallelSpec.scatters_gradients
    recomputed: Any  # recomputed_share of the matmuls
    recomputed_elementwise: Any  # recomputed_share of the element-wise work
    recomputed_moe: Any  # moe_recomputed_share: of a MoE layer's dispatch and combine
    # the planner's layouts whose embedding and loss count as layers (bool array, estimate/pipeline_split.py); one
    # scenario's split is its parallel.pipeline_split
    split: Any = False

    @classmethod
    def of(cls, scenario: Scenario, arch: Architecture) -> StepLayout:
        par = scenario.parallel
        policy = scenario.training.activation_checkpointing
        return cls(par.tp, par.pp, par.cp, par.dp, par.ep, par.virtual_pp, par.zero, par.distributed_optimizer,
                   par.sequence_parallel, OFFLOADS.index(par.offload), scenario.training.micro_batch_size,
                   scenario.grad_accumulation_steps, scenario.gpus_per_node, par.zero_group, par.scatters_gradients,
                   recomputed_share(policy, scenario, arch),
                   recomputed_share(policy, scenario, arch, elementwise=True),
                   moe_recomputed_share(policy, scenario, arch))


def recomputed_share(policy: str, scenario: Scenario, arch: Architecture, elementwise: bool = False) -> float:
    """Share of a forward pass that backward runs again under checkpointing ``policy``: all of it under full
    checkpointing, the recomputed layers' share under every-n-layers, under torchtitan's per-op policy every second
    matmul and (``elementwise``) all element-wise work."""
    if policy == "full":
        return 1.0
    if policy == "every-n-layers":
        layers = arch.num_layers
        return sum(recomputed_layer(scenario, i) for i in range(layers)) / layers
    if policy == "selective-op":
        return 1.0 if elementwise else 0.5
    return 0.0


def moe_recomputed_share(policy: str, scenario: Scenario, arch: Architecture) -> float:
    """Share of a MoE layer's forward, its token dispatch and combine included, that backward runs again: all of it
    where Megatron-Core's selective recomputation names the layer (``recompute_modules: [moe]``), else as
    :func:`recomputed_share` (torchtitan's per-op policy saves the all-to-alls' outputs: its ``_save_list``)."""
    if policy == "selective" and "moe" in (scenario.training.recompute_modules or ()):
        return 1.0
    return recomputed_share(policy, scenario, arch)
