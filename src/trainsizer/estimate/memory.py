"""Peak memory of the most loaded GPU for one training step.

Components and their sources:
- model states (weights, fp32 master weights, gradients, optimizer states) and their sharding
  by ZeRO stage 1/2/3 and FSDP: Rajbhandari et al. 2020, "ZeRO" (arXiv:1910.02054), section 5;
  mixed precision keeps fp32 masters and fp32 moments (Micikevicius et al. 2018, arXiv:1710.03740);
- activations per layer, tensor and sequence parallelism, selective/full recomputation and
  pipeline in-flight micro-batches (1F1B holds ``pp`` micro-batches on the first stage, the
  interleaved schedule ``1 + (pp-1)/(pp*v)`` times more): Korthikanti et al. 2022
  (arXiv:2205.05198), sections 4 and 5;
- LoRA adapters (Hu et al. 2021, arXiv:2106.09685) and QLoRA 4-bit bases with their constants
  (Dettmers et al. 2023, arXiv:2305.14314);
- logits and loss buffers, communication buckets, ZeRO-3 prefetch, allocator caching and the
  CUDA context: see ``memory_model.yaml`` for each figure and its source.

The peak is taken over the phases of a step (end of forward with the loss, backward, optimizer
step), so that terms which never coexist are not added up.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from trainsizer.arrays import is_array, positive_part, where
from trainsizer.estimate.memory_types import GIB, Component
from trainsizer.estimate.model_params import MemoryModel, memory_model
from trainsizer.estimate.model_states import model_states
from trainsizer.estimate.training_state import TrainingState, training_state
from trainsizer.hardware.catalog import Accelerator
from trainsizer.messages import Message, clauses, msg
from trainsizer.models.architecture import Architecture
from trainsizer.scenario import Scenario

if TYPE_CHECKING:
    from trainsizer.estimate.estimate_json import MemoryJSON


def default_memory_model() -> MemoryModel:
    """The shipped memory model parameters (``memory_model.yaml``), typed and loaded once."""
    return memory_model()


@dataclass
class MemoryEstimate:
    """The per-GPU memory of a scenario: components, allocated, reserved and device bytes against the capacity, and its
    peak."""

    components: list[Component]
    allocated_bytes: float
    reserved_bytes: float
    device_bytes: float
    capacity_bytes: float
    peak_phase: str  # "backward", or "backward (pipeline stage 0)"
    notes: list[Message] = field(default_factory=list)
    phase: str = ""  # the peak's phase alone, and the pipeline stage it is on (None without pipelining)
    stage: int | None = None

    @property
    def allocated_gib(self) -> float:
        return self.allocated_bytes / GIB

    @property
    def reserved_gib(self) -> float:
        return self.reserved_bytes / GIB

    @property
    def device_gib(self) -> float:
        return self.device_bytes / GIB

    @property
    def capacity_gib(self) -> float:
        return self.capacity_bytes / GIB

    @property
    def fits(self) -> bool:
        return self.device_bytes <= self.capacity_bytes

    def metric_gib(self, metric: str) -> float:
        return {"allocated": self.allocated_gib, "reserved": self.reserved_gib, "device": self.device_gib}[metric]

    def groups_gib(self) -> dict[str, float]:
        out = dict.fromkeys(("weights", "gradients", "optimizer", "activations", "other"), 0.0)
        for c in self.components:
            out[c.group] += c.gib
        return out

    def to_dict(self) -> MemoryJSON:
        return {
            "allocated_gib": round(self.allocated_gib, 3),
            "reserved_gib": round(self.reserved_gib, 3),
            "device_gib": round(self.device_gib, 3),
            "capacity_gib": round(self.capacity_gib, 3),
            "fits": self.fits,
            "components_gib": {k: round(v, 3) for k, v in self.groups_gib().items()},
            "detail_gib": {c.name: round(c.gib, 4) for c in self.components},
            "explain": {c.name: c.why for c in self.components},
            "peak_phase": self.peak_phase,
            "notes": self.notes,
        }


def estimate_memory(scenario: Scenario, arch: Architecture, gpu: Accelerator,
                    params: MemoryModel | None = None, state: TrainingState | None = None) -> MemoryEstimate:
    """Peak allocated / reserved / device memory of the most loaded GPU.

    ``state`` may be passed when only micro-batch or sequence length differ from the scenario it
    was built for (model states do not depend on them): the fit-limit searches reuse it."""
    p = params or default_memory_model()
    state = state or training_state(scenario, arch, p)
    stages = range(scenario.parallel.pp)  # every stage: layer mixes (dense/MoE) and in-flight counts differ
    best: MemoryEstimate | None = None
    for stage in stages:
        est = _estimate_stage(scenario, arch, gpu, p, state, stage)
        if best is None or est.device_bytes > best.device_bytes:
            best = est
    assert best is not None
    return best


def peak_phase(gradients: float, saved: float, logits: float, working: float, step_temporaries: float,
               transient_gradients: bool = False, last_layer: float = 0.0) -> tuple[str, tuple[float, ...], float]:
    """The phase whose memory peaks, the transient bytes it adds to the model states, and the gradient bytes alive
    in it.

    Gradients are counted as alive during the whole forward/backward: they persist across micro-batches with
    accumulation, in persistent gradient buffers, and with zero_grad(set_to_none=False); freeing them per step
    (optimizer_in_backward) is explicit. With ``transient_gradients`` (:func:`gradients_transient`) none exist in
    forward, and in backward each layer's gradients appear as its saved activations are freed, so the backward holds
    the larger of the two at its start or its end, where the last layer's own activations (``last_layer``; 0 when
    it is recomputed: the working set holds them) are still alive."""
    index, _extra, alive = phase_peak(gradients, saved, logits, working, step_temporaries, transient_gradients,
                                      last_layer)
    return PHASES[index], ((saved, logits), (saved, working), (step_temporaries,))[index], alive


PHASES = ("forward+loss", "backward", "optimizer step")


def phase_peak(gradients: Any, saved: Any, logits: Any, working: Any, step_temporaries: Any, transient: Any = False,
               last_layer: Any = 0.0) -> tuple[Any, Any, Any]:
    """:func:`peak_phase` as numbers: (the peak phase's index in PHASES, the transient bytes it adds, the gradient
    bytes alive in it), for one layout or, elementwise, arrays of many (plan/fast.py); the first of equal phases."""
    alive = (where(transient, 0.0, gradients), backward_gradients(gradients, saved, last_layer, transient), gradients)
    extra = (saved + logits, saved + working, step_temporaries)
    total = [a + e for a, e in zip(alive, extra, strict=True)]
    index = where(total[0] >= total[1], where(total[0] >= total[2], 0, 2), where(total[1] >= total[2], 1, 2))
    if not is_array(index):
        return index, extra[index], alive[index]
    return index, *(where(index == 0, x[0], where(index == 1, x[1], x[2])) for x in (extra, alive))


def gradients_transient(scenario: Scenario) -> bool:
    """Whether no gradient exists before the step's backward: one micro-batch per step (no accumulation keeps
    them) and the gradients freed after each optimizer step. ``zero_grad``'s default ``set_to_none=True`` since
    PyTorch 2.0 "sets the grads to None instead of setting to zero ... lower memory footprint" (pytorch/pytorch
    torch/optim/optimizer.py ``Optimizer.zero_grad`` @ v2.0.0; torchtitan ``optimizers.zero_grad()``, torchtune
    ``zero_grad(set_to_none=True)``); FSDP2's sharded gradients are such ``.grad``; DeepSpeed ZeRO-1/2 free theirs in
    ``step`` ("release all the gradient ... get rid of the fp32 gradients. Not needed anymore":
    microsoft/DeepSpeed deepspeed/runtime/zero/stage_1_and_2.py ``step``). Not with ``training.zero_grad: zeros``
    (PyTorch 1.x's default), Megatron's contiguous gradient buffer (``tp`` or ``pp`` > 1, ``distributed_optimizer``),
    offloaded states (on the host) or optimizer_in_backward (its own rule). Not modelled: DeepSpeed ZeRO-3 keeps its
    rank's gradient partition in a flat buffer allocated once (stage3.py ``grad_partitions_flat_buffer``), 1/dp of
    the gradients, which this counts as freed too."""
    tr, par = scenario.training, scenario.parallel
    return bool(gradients_freed(tr.zero_grad, tr.optimizer_in_backward, par.offload != "none", par.tp, par.pp,
                                par.distributed_optimizer, scenario.grad_accumulation_steps))


def gradients_freed(zero_grad: str, optimizer_in_backward: bool, offloaded: Any, tp: Any, pp: Any,
                    distributed_optimizer: Any, accumulation: Any) -> Any:
    """:func:`gradients_transient` over the layout's quantities: numbers, or arrays of many layouts (plan/fast.py)."""
    if zero_grad != "none" or optimizer_in_backward:
        return False
    kept = offloaded | (tp > 1) | (pp > 1) | distributed_optimizer | (accumulation > 1)
    return ~kept if is_array(kept) else not kept


def backward_gradients(gradients: Any, saved: Any, last_layer: Any, transient: Any) -> Any:
    """The gradient bytes alive at the backward's peak (:func:`peak_phase`): all of them, or where they are freed
    between steps (``transient``) those beyond the activations they replace, the last layer's (``last_layer``, at most
    all that is saved: a frozen or checkpointed stage saves less than one full layer) still alive. Numbers, or arrays
    of many layouts (plan/fast.py)."""
    freed = positive_part(gradients - positive_part(saved - last_layer))
    if is_array(transient):
        return transient * freed + ~transient * gradients
    return freed if transient else gradients


def reserved_bytes(allocated: Any, dynamic: Any, p: MemoryModel, usable: Any = None, varied: Any = 0.0,
                   fused: Any = 0.0, freed: Any = 0.0) -> Any:
    """The caching allocator's overhead grows with the churn of transient blocks (activations, logits,
    working sets), much less with model states allocated once and kept; with samples of varied lengths by
    ``reserved_fraction_variable`` of ``varied``, the bytes of the per-sequence logits blocks (blocks cached for
    earlier sizes: ``memory_model.yaml``; 0 when every batch has one length). Under memory pressure it does not grow
    past the device: when cudaMalloc fails, the allocator frees its cached unused blocks and retries (PyTorch
    ``torch.cuda.memory_stats``: ``num_alloc_retries``, "failed cudaMalloc calls that result in a cache flush and
    retry"), so while the allocated bytes fit, the reserved ones stay within ``usable`` (the device's memory less
    what lies outside the allocator). ``fused``: the part of ``dynamic`` saved by torch.compile'd regions
    (:func:`compiled_saved_bytes`), which leaves no cached blocks behind. ``freed``: gradients that zero_grad freed
    before the peak (:func:`gradients_transient`), transient blocks too: their cached segments serve the next step's
    activations only where the sizes fit, so they count as churn like ``dynamic``. Floats, or arrays of many layouts
    (plan/fast.py)."""
    a = p.allocator
    free_running = (allocated + a.reserved_fraction_dynamic * (dynamic - fused + freed)
                    + a.reserved_fraction_variable * varied
                    + a.reserved_fraction_static * (allocated - dynamic) + a.reserved_floor_gib * GIB)
    return free_running if usable is None else capped_reserved(free_running, allocated, usable)


def capped_reserved(free_running: Any, allocated: Any, usable: Any) -> Any:
    """The reserved bytes of :func:`reserved_bytes` within the device: the allocator's free-running cache, at most
    ``usable`` while the allocated bytes fit. Floats, or arrays of many layouts (plan/fast.py)."""
    if isinstance(free_running, float | int) and isinstance(usable, float | int):
        return min(free_running, max(allocated, usable))
    import numpy as np

    return np.minimum(free_running, np.maximum(allocated, usable))


def under_pressure(allocated: float, dynamic: float, p: MemoryModel, usable: float, varied: float = 0.0,
                   fused: float = 0.0, freed: float = 0.0) -> bool:
    """Whether the allocator's cache would outgrow the device (:func:`reserved_bytes` caps it there)."""
    return bool(reserved_bytes(allocated, dynamic, p, varied=varied, fused=fused, freed=freed) > max(allocated, usable))


def phase_allocation(static: Any, alive: Any, extra: Any, stepping: Any, compiled: Any,
                     saved: Any) -> tuple[Any, Any, Any]:
    """(allocated, dynamic, fused) bytes at a phase's peak (:func:`reserved_bytes`' inputs): the static states, the
    gradients alive and the phase's transient bytes (``extra``), which churn through the allocator, and the part of
    the saved activations torch.compile fuses (:func:`compiled_saved_bytes`); in the optimizer step (``stepping``)
    no activations exist and its temporaries count as static. Numbers or arrays (plan/fast.py)."""
    return (static + alive + extra, where(stepping, 0.0, extra),
            where(stepping, 0.0, compiled_saved_bytes(compiled, saved)))


def compiled_saved_bytes(compiled: Any, saved: Any) -> Any:
    """The saved activations that leave no fragmentation in the caching allocator under torch.compile (0 in eager
    mode): Inductor fuses each chain of element-wise ops into one kernel, so the short-lived intermediates of odd
    sizes (fp32 norm casts, activation outputs, RoPE temporaries) that eager mode allocates between the saved
    tensors, and whose freed blocks split the cached segments, are never allocated (Ansel et al. 2024, "PyTorch 2",
    ASPLOS, section 4, TorchInductor: pointwise and reduction ops fused into generated kernels; cached free blocks and
    fragmentation: PyTorch docs/source/notes/cuda.rst, "Memory management"). Only the saved bytes count: the loss
    and logits (outside the compiled blocks in torchtitan) still churn. ``compiled`` is a bool or 0/1 array."""
    return saved * compiled


def varied_bytes(scenario: Scenario, logits: Any) -> Any:
    """The transient bytes whose blocks change size with each batch's length when the samples vary
    (``training.sequence_lengths: variable``; 0 otherwise): the logits and loss buffers, one block per sequence of
    ``tokens x vocabulary``. Blocks over 10 MiB get a segment of their own size, smaller ones share 20 MiB segments
    that any size reuses (PyTorch c10/cuda/CUDACachingAllocator.cpp, get_allocation_size: kMinLargeAlloc 10 MiB,
    kLargeBuffer 20 MiB), so per-layer activations of a few MiB per sequence leave little behind; the logits of a
    long sequence are the blocks the allocator cannot reuse for a longer one (:func:`reserved_bytes`)."""
    return logits if scenario.training.sequence_lengths == "variable" else 0.0


LOADED_STATES = ("weights", "lora_adapters", "master_weights")  # what exists while the checkpoint loads


def checkpoint_load_bytes(scenario: Scenario, unsharded_weights: float, kept: float) -> tuple[float, float]:
    """(allocated bytes while the checkpoint loads, the transient part of them): with ``parallel.checkpoint_loading:
    full`` and ZeRO-3 / FSDP sharded weights, every rank holds the whole state dict of its stage (its weights
    unsharded) beside what the model already holds (``kept``: its weight shard, adapters and master shard; the
    optimizer states come at the first step, the gradients in backward), as a state dict loaded onto the GPU
    (``torch.load(map_location="cuda")``) before it is copied into the shards does. Not Lightning Fabric's FSDPStrategy:
    it loads the state dict lazily on the CPU "to avoid storing a copy of the full checkpoint per rank" and FSDP's
    FULL_STATE_DICT load hooks unshard one unit at a time (Lightning-AI/pytorch-lightning
    src/lightning/fabric/strategies/fsdp.py ``_load_raw_module_state_from_path`` @ 71aed751). (0, 0) otherwise."""
    par = scenario.parallel
    return checkpoint_load(loads_state_dict(par.checkpoint_loading, par.zero, par.dp * par.cp), unsharded_weights,
                           kept)


def loads_state_dict(checkpoint_loading: str, zero: Any, ranks: Any) -> Any:
    """Whether every rank loads its stage's whole state dict (:func:`checkpoint_load_bytes`): ``full`` loading of
    ZeRO-3 / FSDP weights sharded over ``ranks`` (dp x cp) > 1. Numbers, or arrays of many layouts (plan/fast.py)."""
    return (checkpoint_loading == "full") & (zero == 3) & (ranks > 1)


def checkpoint_load(loads: Any, unsharded_weights: Any, kept: Any) -> tuple[Any, Any]:
    """(allocated, transient) bytes while the checkpoint loads where ``loads`` (:func:`loads_state_dict`), else 0."""
    return where(loads, kept + unsharded_weights, 0.0), where(loads, unsharded_weights, 0.0)


def with_checkpoint_load(allocated: Any, reserved: Any, load: Any, load_dynamic: Any, p: MemoryModel,
                         usable: Any = None) -> tuple[Any, Any]:
    """(allocated, reserved) over the whole run: the step's, or the checkpoint load's where it is higher (the
    allocator keeps the load's segments cached, so the reserved peak is the larger of the two). Floats or arrays."""
    load_reserved = reserved_bytes(load, load_dynamic, p, usable)
    if isinstance(allocated, float | int) and isinstance(load, float | int):
        return max(allocated, load), max(reserved, load_reserved) if load else reserved
    import numpy as np  # arrays of many layouts (plan/fast.py); a single estimate never loads numpy

    return np.maximum(allocated, load), np.where(load > 0, np.maximum(reserved, load_reserved), reserved)


def device_overhead_bytes(gpu: Accelerator, gpus: int, p: MemoryModel) -> float:
    """CUDA context (by architecture) and, with more than one GPU, NCCL's buffers: outside the allocator."""
    dev = p.device
    context = dev.context_gib_by_architecture.get(gpu.architecture or "", dev.context_gib_default)
    return context * GIB + (dev.nccl_gib * GIB if gpus > 1 else 0.0)


def _estimate_stage(scenario: Scenario, arch: Architecture, gpu: Accelerator, p: MemoryModel,
                    st: TrainingState, stage: int) -> MemoryEstimate:
    from trainsizer.estimate.activations import last_layer_alive, stage_activations

    par = scenario.parallel
    states = model_states(st, stage)
    acts = stage_activations(scenario, arch, p, st, stage)
    comps: list[Component] = list(states.static)
    grads = states.gradients

    static = sum(c.bytes for c in comps)
    phase, peak_extra, grads_alive = peak_phase(grads.bytes, acts.saved, acts.logits, acts.backward_working,
                                                states.step_temporaries, gradients_transient(scenario),
                                                last_layer_alive(acts.largest_layer, acts.full_checkpointing))
    if grads_alive < grads.bytes:  # freed by zero_grad(set_to_none=True): none before this step's backward
        grads = Component(grads.name, grads_alive, grads.group, clauses([grads.why, msg("mem.grads_transient")]))
    comps.append(grads)
    if phase != "optimizer step":
        comps.append(Component("activations", acts.saved, "activations", acts.why))
    if phase == "forward+loss":
        comps.append(Component("logits_and_loss", acts.logits, "activations", acts.logits_why))
    elif phase == "backward":
        comps.append(Component("backward_working_set", acts.backward_working, "activations",
                               msg("mem.backward_working_set")))
    else:
        comps.append(Component("optimizer_step_temporaries", states.step_temporaries, "optimizer",
                               msg("mem.optimizer_temporaries")))
    allocated, dynamic, fused = phase_allocation(static, grads.bytes, sum(peak_extra), phase == "optimizer step",
                                                 scenario.training.compile, acts.saved)
    outside = device_overhead_bytes(gpu, par.gpus, p) + states.managed_bytes
    usable = gpu.memory_gib * GIB - outside
    varied = varied_bytes(scenario, acts.logits)
    freed = states.gradients.bytes - grads.bytes  # freed by zero_grad before this phase (gradients_transient)
    reserved = reserved_bytes(allocated, dynamic, p, usable, varied, fused, freed)
    pressure = under_pressure(allocated, dynamic, p, usable, varied, fused, freed)
    load, load_dynamic = checkpoint_load_bytes(scenario, states.unsharded_weights,
                                               sum(c.bytes for c in comps if c.name in LOADED_STATES))
    if load > allocated:  # the peak is set while the checkpoint loads, not by a training step
        phase = "checkpoint load"
        comps = [c for c in comps if c.name in LOADED_STATES]
        comps.append(Component("full_state_dict", load_dynamic, "weights", msg("mem.full_state_dict")))
        pressure = under_pressure(load, load_dynamic, p, usable)
    allocated, reserved = with_checkpoint_load(allocated, reserved, load, load_dynamic, p, usable)
    device = reserved + outside
    notes = list(st.notes)
    if states.managed_bytes:
        notes.append(msg("mem.paged_note", gib=states.managed_bytes / GIB))
    if pressure:
        notes.append(msg("mem.allocator_pressure"))
    return MemoryEstimate(comps, allocated, reserved, device, gpu.memory_gib * GIB,
                          f"{phase} (pipeline stage {stage})" if par.pp > 1 else phase, notes, phase,
                          stage if par.pp > 1 else None)
