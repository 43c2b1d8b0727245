"""Vectorised screening of many layouts at once (numpy), for the planner's search: the estimate's own model over
arrays of candidates.

Step time: the layouts as ``estimate.step_layout.StepLayout`` arrays through ``estimate.step_terms.raw_step`` and
``combine_step``. Memory: the estimate's per-layer and per-end bytes, probed once per job at a few base layouts
(``job_basis``), split per layout over tensor/pipeline/context parallelism and put through the estimate's own terms:
ZeRO sharding, offload and communication buffers (``estimate.state_terms``), the saved activations per checkpointing
mode (``activations.layer_saved``, ``pipeline_in_flight``), the phases and the allocator (``memory.phase_peak``,
``reserved_bytes``, ...), once per node shape, then finished on each GPU (``ScreenedMemory.on``). This module writes
no formula of its own: it builds the arrays, calls the terms and selects per layout. Every option the planner
reports is re-evaluated by the estimators; ``tests/test_screen_agreement.py`` holds screen and estimate equal on every
re-checked candidate, ``tests/test_state_terms.py`` that both move with each shared rule.
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from trainsizer import scenario_sharding as sharding
from trainsizer.estimate.activations import (
    backward_working,
    checkpoint_input_per_token,
    compiled_activation_factor,
    embedding_saved_per_token,
    final_norm_input_per_token,
    grad_reaches,
    kept_quantized_inputs,
    last_layer_alive,
    layer_activations,
    layer_bytes,
    layer_saved,
    lm_head_cast_bytes,
    pipeline_in_flight,
    replicated_divisor,
    stage_activations,
    stage_saved_bytes,
)
from trainsizer.estimate.comm import Fabric
from trainsizer.estimate.deferred_sync import held_gradients, skipped_sync, unsharded_gradient_bytes
from trainsizer.estimate.flops import StepFlops, step_flops
from trainsizer.estimate.memory import (
    PHASES,
    capped_reserved,
    checkpoint_load,
    default_memory_model,
    device_overhead_bytes,
    gradients_freed,
    loads_state_dict,
    phase_allocation,
    phase_peak,
    reserved_bytes,
    varied_bytes,
    with_checkpoint_load,
)
from trainsizer.estimate.memory_types import GIB
from trainsizer.estimate.model_params import MemoryModel, PerformanceModel
from trainsizer.estimate.model_states import keeps_master_only, model_states
from trainsizer.estimate.state_terms import (
    contiguous_gradient_buffer,
    copies_into_buckets,
    gathered_unit_bytes,
    gathers_units,
    host_bytes,
    reduce_bucket_bytes,
    state_shards,
    trainable_states_on_gpu,
    uses_reduce_bucket,
    weights_on_gpu,
)
from trainsizer.estimate.step import default_performance_model
from trainsizer.estimate.step_layout import StepLayout, moe_recomputed_share, recomputed_share
from trainsizer.estimate.step_terms import StepContext, combine_step, raw_step
from trainsizer.estimate.training_state import LayerState, TrainingState, gradient_bytes, training_state
from trainsizer.hardware.catalog import Accelerator
from trainsizer.models.architecture import Architecture
from trainsizer.plan.layouts import CKPT, Layouts, accumulation_steps, zero_group
from trainsizer.plan.screen_parts import PartsPerLayout, screen_peaks
from trainsizer.plan.stage_bytes import ExpertBasis, StageBytes, expert_basis
from trainsizer.scenario import Scenario

FLOPS_READ = ("model_per_token", "linear_per_token", "expert_per_token", "attention_per_token", "head_per_token")


@dataclass(frozen=True)
class JobBasis:
    """Per-layer and per-end quantities of one job, independent of the layout."""

    layers: int
    # model states of one layer (tp-divisible part, replicated part), bytes, by category
    layer_div: dict[str, float]
    layer_rep: dict[str, float]
    first_extra: dict[str, float]  # embedding side (tp-divisible)
    last_extra: dict[str, float]  # output head side (tp-divisible)
    dequant_buffer: float
    # activations per token per layer, by checkpointing mode: (replicated, sharded, scores)
    act: dict[str, tuple[float, float, float]]
    ckpt_input_per_token: float
    logits_per_token_div: float  # divided by tp
    logits_per_token_rep: float
    embed_act_per_token: float
    # the step's FLOPs per token (estimate.flops.step_flops) and recomputed shares (matmuls, element-wise work:
    # estimate.step_layout.recomputed_share; a MoE layer's dispatch and combine: moe_recomputed_share), by
    # checkpointing mode
    flops: dict[str, StepFlops]
    recomputed: dict[str, tuple[float, float, float]]
    arch: Architecture
    state: TrainingState  # of the job on one GPU: the trainable and per-layer parameters every layout shares
    compiled_activation_factor: float = 1.0  # what torch.compile's partitioner keeps of ``act`` (1 in eager mode)
    # quantized-linear inputs per token per layer that checkpointing cannot drop: (replicated, sharded)
    # (estimate.activations.kept_quantized_inputs)
    kept_inputs_per_token: tuple[float, float] = (0.0, 0.0)
    lm_head_cast: float = 0.0  # bytes on the last stage, divided by tp (estimate.activations.lm_head_cast_bytes)
    implementation_factor: float = 1.0  # the memory fit's factor in ``act`` (the speed screen takes it out)
    unsaved_per_token: float = 0.0  # tp-sharded bytes written but not kept, per layer (activations.LayerActivations)
    experts: ExpertBasis | None = None  # the routed experts' part of the model-state bytes (plan/stage_bytes.py)


def _probe(scenario: Scenario, **parallel: Any) -> Scenario:
    """A copy of the scenario with another layout, its layers split evenly (the screen's), without re-validation
    (probes only)."""
    even = {} if scenario.parallel.pipeline_split == "even" else {"pipeline_split": "even"}
    return scenario.model_copy(update={"parallel": scenario.parallel.model_copy(update={**even, **parallel})})


def _contents(layer: LayerState) -> tuple[Any, ...]:
    """A layer's fields but its index."""
    return tuple(getattr(layer, f.name) for f in fields(layer) if f.name != "index")


def _stage_row(st: TrainingState, stage: int, stages: int) -> dict[str, float]:
    """The model-state bytes of one stage on one GPU, by category (job_basis)."""
    ms = model_states(st, stage)
    row = {c.name: c.bytes for c in ms.static}
    row["gradients"] = ms.gradients.bytes
    row["optimizer_states"] = row.get("optimizer_states", 0.0) + ms.managed_bytes
    row["lora_adapters"] = row.get("lora_adapters", 0.0)
    row["step_temporaries"] = ms.step_temporaries
    row["unsharded_gradients"] = unsharded_gradient_bytes(st, st.stage_layers(stage), stage == 0, stage == stages - 1)
    return row


# long: one per-layer quantity per line, each the array twin of a term in estimate/, read side by side
def job_basis(scenario: Scenario, arch: Architecture, mp: MemoryModel | None = None) -> JobBasis:
    mp = mp or default_memory_model()
    L = arch.num_layers
    cats = ("weights", "master_weights", "optimizer_states", "gradients")

    def states(tp: int, ep: int = 1) -> list[dict[str, float]]:
        sc = _probe(scenario, tp=tp, pp=L, cp=1, zero=0, distributed_optimizer=False, offload="none",
                    gpus=tp * L, virtual_pp=1, ep=ep)
        st = training_state(sc, arch, mp)
        out, alike = [], {}
        for stage in range(L):
            # a stage's model states read its layers' contents and whether it is first or last, never a layer's
            # index (estimate/model_states.py): the middle stages of a dense model share one row
            key = (stage == 0, stage == L - 1, tuple(_contents(layer) for layer in st.stage_layers(stage)))
            if key not in alike:
                alike[key] = _stage_row(st, stage, L)
            out.append(alike[key])
        return out

    s1, s2 = states(1), states(2)
    mids = range(1, L - 1) if L > 2 else range(L)

    def avg(rows: list[dict[str, float]], key: str) -> float:
        return float(np.mean([rows[i].get(key, 0.0) for i in mids]))

    layer_div, layer_rep, first_extra, last_extra = {}, {}, {}, {}
    for key in (*cats, "lora_adapters", "unsharded_gradients", "step_temporaries"):
        a1, a2 = avg(s1, key), avg(s2, key)
        div = max(0.0, 2 * (a1 - a2))
        layer_div[key], layer_rep[key] = div, max(0.0, a1 - div)
        first_extra[key] = s1[0].get(key, 0.0) - a1 if arch.moe else max(0.0, s1[0].get(key, 0.0) - a1)
        last_extra[key] = s1[-1].get(key, 0.0) - a1 if arch.moe else max(0.0, s1[-1].get(key, 0.0) - a1)
    experts = expert_basis(s1, states(1, 2), s2, states(2, 2), tuple(layer_div), mids) if arch.moe else None
    base = _probe(scenario, tp=1, pp=1, cp=1, zero=0, distributed_optimizer=False, offload="none", gpus=1,
                  virtual_pp=1, ep=1)
    st = training_state(base, arch, mp)
    dequant = {c.name: c.bytes for c in model_states(st, 0).static}.get("buffers", 0.0)

    act: dict[str, tuple[float, float, float]] = {}
    flops: dict[str, StepFlops] = {}
    recomputed: dict[str, tuple[float, float, float]] = {}
    unsaved = 0.0
    for mode in CKPT:
        sc = base.model_copy(update={"training": base.training.model_copy(
            update={"activation_checkpointing": mode})})
        st_mode = training_state(sc, arch, mp)
        reach = [layer for layer in st_mode.layers if grad_reaches(st_mode, layer)]
        rows = [layer_activations(sc, arch, mp, layer) for layer in reach]
        frac = len(reach) / L
        if mode == "none":
            unsaved = float(np.mean([r.unsaved for r in rows])) * frac if rows else 0.0
        act[mode] = (float(np.mean([r.replicated for r in rows])) * frac if rows else 0.0,
                     float(np.mean([r.sharded for r in rows])) * frac if rows else 0.0,
                     float(np.mean([r.scores for r in rows])) * frac if rows else 0.0)
        flops[mode] = step_flops(sc, arch)
        recomputed[mode] = (recomputed_share(mode, sc, arch), recomputed_share(mode, sc, arch, elementwise=True),
                            moe_recomputed_share(mode, sc, arch))
    kept_rows = [kept_quantized_inputs(base, arch, layer) for layer in st.layers]
    kept = (float(np.mean([r[0] for r in kept_rows])), float(np.mean([r[1] for r in kept_rows]))) if kept_rows \
        else (0.0, 0.0)
    tokens = base.training.micro_batch_size * base.training.seq_len
    sa = stage_activations(base, arch, mp, st, 0)
    logit_total = sa.logits / tokens
    logit_rep = final_norm_input_per_token(arch) if arch.lm_head else 0.0
    precision = base.training.precision
    return JobBasis(L, layer_div, layer_rep, first_extra, last_extra, dequant, act,
                    checkpoint_input_per_token(arch, precision), logit_total - logit_rep, logit_rep,
                    embedding_saved_per_token(arch, precision), flops, recomputed, arch, st,
                    compiled_activation_factor(base.training.compile, mp), kept,
                    lm_head_cast_bytes(base, arch), mp.activations.implementation_factor, unsaved, experts)


def screen_memory(b: JobBasis, lay: Layouts, scenario: Scenario, gpu: Accelerator,
                  mp: MemoryModel | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(device bytes per GPU of the most loaded stage, host bytes per GPU offloaded), per candidate."""
    return memory_screen(b, lay, scenario, mp).on(gpu)


@dataclass(frozen=True)
class ScreenedMemory:
    """The memory screen of every layout before the GPU is chosen (the GPU sets only the memory outside the allocator
    and the device's cap on its cache): for the two stages that can peak (the first and the last; the whole model
    without pipelining) the allocated bytes and the allocator's uncapped reserve (``memory.reserved_bytes``), and the
    (allocated, transient) bytes while a full state dict loads (None when none loads); the host bytes offloaded."""

    stages: tuple[tuple[np.ndarray, np.ndarray], ...]
    loads: tuple[tuple[np.ndarray, np.ndarray], ...] | None
    multi_gpu: np.ndarray
    host: np.ndarray
    params: MemoryModel

    def on(self, gpu: Accelerator) -> tuple[np.ndarray, np.ndarray]:
        """(device bytes per GPU of the most loaded stage, host bytes per GPU offloaded) on ``gpu``."""
        mp = self.params
        overhead = np.where(self.multi_gpu, device_overhead_bytes(gpu, 2, mp), device_overhead_bytes(gpu, 1, mp))
        usable = gpu.memory_gib * GIB - overhead  # the allocator's cache stays within the device
        peaks = []
        for i, (allocated, free_running) in enumerate(self.stages):
            reserved = capped_reserved(free_running, allocated, usable)
            if self.loads is not None:
                reserved = with_checkpoint_load(allocated, reserved, *self.loads[i], mp, usable)[1]
            peaks.append(reserved)
        return np.maximum(*peaks) + overhead, self.host


# long: one numpy expression per memory component, in the order of estimate/memory.py, over every layout at once
def memory_screen(b: JobBasis, lay: Layouts, scenario: Scenario, mp: MemoryModel | None = None) -> ScreenedMemory:
    """The memory screen of every candidate, to be finished on each GPU (:meth:`ScreenedMemory.on`)."""
    mp = mp or default_memory_model()
    tp, pp, cp, dp = lay.tp.astype(float), lay.pp.astype(float), lay.cp.astype(float), lay.dp.astype(float)
    group = zero_group(dp * cp, scenario, lay.zero_shard)  # dp x cp, zero_shard_gpus, or the layout's (hybrid)
    # a stage's layers; where the embedding and the loss count as layers, a whole share of the layers and those two,
    # which the first and last stages hold less one and the middle ones hold (estimate/pipeline_split.py): the most
    # any stage keeps, with the first stage's in-flight micro-batches
    layers_stage = np.where(lay.split, (b.layers + 2) / pp, b.layers / pp)
    zero = lay.zero
    opt_shard, grad_shard, w_shard = state_shards(zero, lay.dist_opt, group)
    offl = lay.offload
    # model_states.master_only_shards: FSDP mixed precision keeps only the fp32 master shard of a full fine-tune
    tr0, par0 = scenario.training, scenario.parallel
    master_only = keeps_master_only(par0.sharded_weights, tr0.method, tr0.precision, zero, group, offl != 0)

    gas = accumulation_steps(lay, scenario)
    # deferred_sync.skips_sync: FSDP no_sync keeps each unit's gradients unsharded until the step's last micro-batch
    no_sync = skipped_sync(scenario.parallel.accumulation_sync, zero, group, offl != 0, gas)

    # a stage's bytes per category, the routed experts' over expert parallelism (plan/stage_bytes.py)
    par0_etp = scenario.parallel.etp
    stage = StageBytes(b, layers_stage, tp, lay.ep.astype(float), float(par0_etp) if par0_etp else tp)
    sharded, per_rank = stage.sharded, stage.per_rank

    def stage_states(end: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        weights = weights_on_gpu(sharded(("weights",), end, w_shard), offl, master_only) + per_rank(("lora_adapters",),
                                                                                                     end)
        opt = trainable_states_on_gpu(sharded(("master_weights", "optimizer_states"), end, opt_shard), offl)
        grads = trainable_states_on_gpu(sharded(("gradients",), end, grad_shard), offl)
        grads = held_gradients(grads, per_rank(("unsharded_gradients",), end), no_sync)
        return weights + opt, grads, trainable_states_on_gpu(per_rank(("step_temporaries",), end, opt_shard), offl)

    def offloaded(end: str) -> np.ndarray:
        return host_bytes(sharded(("weights",), end, w_shard), sharded(("master_weights", "optimizer_states"), end,
                                                                        opt_shard) + sharded(("gradients",), end,
                                                                                             grad_shard), offl)

    full_load = loads_state_dict(scenario.parallel.checkpoint_loading, zero, dp * cp)

    def stage_load(end: str) -> tuple[np.ndarray, np.ndarray]:
        """(allocated, transient) bytes while a full state dict loads (memory.checkpoint_load_bytes)."""
        kept = (weights_on_gpu(sharded(("weights",), end, w_shard), offl, master_only)
                + per_rank(("lora_adapters",), end)
                + trainable_states_on_gpu(sharded(("master_weights",), end, opt_shard), offl))
        return checkpoint_load(full_load, per_rank(("weights",), end), kept)

    host = np.maximum(offloaded("first"), offloaded("last"))
    first_states, last_states = stage_states("first"), stage_states("last")
    megatron = contiguous_gradient_buffer(lay.tp, lay.pp)
    # the unsharded gradients a data-parallel bucket copies (model_states._stage_buffers: the stage's trainable
    # elements): every layer's, the embedding's and the head's; read only without tensor or pipeline parallelism
    full_grads = per_rank(("gradients",), "whole")
    comm = mp.communication
    ddp_copy = np.where(copies_into_buckets(dp, zero, lay.dist_opt, offl, megatron), full_grads, 0.0)
    bucket = np.where(uses_reduce_bucket(dp, zero, megatron),
                      reduce_bucket_bytes(comm.zero_reduce_bucket_elements, full_grads, gradient_bytes(scenario)), 0.0)
    # one layer is one unit; the experts of the other expert-parallel ranks are not on this one
    gathered = np.where(gathers_units(zero, group, offl, scenario.training.optimizer_in_backward),
                        gathered_unit_bytes(comm.zero3_gathered_units,
                                            b.layer_div["weights"] / tp + b.layer_rep["weights"]
                                            - stage.off_rank("weights"),
                                            b.layer_div["gradients"] / tp + b.layer_rep["gradients"]
                                            - stage.off_rank("gradients")), 0.0)
    buffers = ddp_copy + bucket + gathered + b.dequant_buffer / tp

    tokens = lay.mbs * scenario.training.seq_len / cp
    sp_div = replicated_divisor(tp, lay.sp)
    rep = np.array([b.act[m][0] for m in CKPT])[lay.ckpt]
    sh = np.array([b.act[m][1] for m in CKPT])[lay.ckpt]
    sc_ = np.array([b.act[m][2] for m in CKPT])[lay.ckpt]
    full_layer = layer_bytes(rep, sh + sc_, tp, sp_div, tokens)
    kept_layer = layer_bytes(*b.kept_inputs_per_token, tp, sp_div, tokens)
    scaled_layer, exact_layer = layer_saved(lay.ckpt == CKPT.index("full"), lay.ckpt == CKPT.index("selective"),
                                            full_layer, sc_ / tp * tokens, b.ckpt_input_per_token * tokens / sp_div,
                                            kept_layer)
    saved_layer = scaled_layer + exact_layer
    in_flight_first, interleave = pipeline_in_flight(lay.pp, 0, gas, lay.vpp)
    saved_first = stage_saved_bytes(saved_layer * layers_stage, in_flight_first, interleave,
                                    b.embed_act_per_token * tokens)
    in_flight_last, interleave_last = pipeline_in_flight(lay.pp, lay.pp - 1, gas, lay.vpp)
    saved_last = stage_saved_bytes(saved_layer * layers_stage, in_flight_last, interleave_last, 0.0) \
        + b.lm_head_cast / tp
    logits = tokens * (b.logits_per_token_div / tp + b.logits_per_token_rep)
    working = backward_working(full_layer, lay.ckpt == CKPT.index("full"), mp)

    # memory.gradients_transient: freed by zero_grad between steps, none before backward (one micro-batch a step)
    tr1 = scenario.training
    transient = gradients_freed(tr1.zero_grad, tr1.optimizer_in_backward, offl != 0, lay.tp, lay.pp, lay.dist_opt, gas)
    compile_ = float(scenario.training.compile)
    one = lay.pp == 1  # without pipeline parallelism the one stage holds both ends: the embedding and the output head

    def peak(states, saved, lg, load):
        static, grads, temporaries = states
        last = last_layer_alive(full_layer, lay.ckpt == CKPT.index("full"))
        phase, extra, alive = phase_peak(grads, saved, lg, working, temporaries, transient, last)
        allocated, dynamic, fused = phase_allocation(static + buffers, alive, extra,
                                                     phase == PHASES.index("optimizer step"), compile_, saved)
        return allocated, reserved_bytes(allocated, dynamic, mp, None, varied_bytes(scenario, lg), fused,
                                         grads - alive), load

    whole = peak(stage_states("whole"), saved_first + b.lm_head_cast / tp, logits, stage_load("whole"))
    ends = (peak(first_states, saved_first, 0.0, stage_load("first")),
            peak(last_states, saved_last, logits, stage_load("last")))
    stages = tuple(tuple(np.where(one, w, e) for w, e in zip(whole[:2], end[:2], strict=True)) for end in ends)
    loads = tuple(tuple(np.where(one, w, e) for w, e in zip(whole[2], end[2], strict=True)) for end in ends)
    return ScreenedMemory(stages, loads if full_load.any() else None, lay.gpus > 1, host, mp)


def step_layout(lay: Layouts, scenario: Scenario, b: JobBasis) -> StepLayout:
    """The layouts as the step's terms read them (``estimate.step_layout.StepLayout`` of each one's scenario)."""
    dp, cp = lay.dp, lay.cp
    group = zero_group(dp * cp, scenario, lay.zero_shard)  # ParallelSpec.zero_group
    shards = sharding.zero_dp_shards(group, dp, cp)
    scatters = sharding.scatters_gradients(lay.zero, lay.dist_opt, shards, dp, scenario.parallel.zero_grad_sync)
    recomputed = np.array([b.recomputed[m] for m in CKPT])[lay.ckpt]
    return StepLayout(lay.tp, lay.pp, cp, dp, lay.ep, lay.vpp, lay.zero, lay.dist_opt, lay.sp, lay.offload, lay.mbs,
                      accumulation_steps(lay, scenario), lay.gpus_per_node, group, scatters,
                      recomputed[:, 0], recomputed[:, 1], recomputed[:, 2], lay.split)


def screen_step_time(b: JobBasis, lay: Layouts, scenario: Scenario, gpu: Accelerator | PartsPerLayout, fab: Fabric,
                     pp_params: PerformanceModel | None = None, mp: MemoryModel | None = None) -> np.ndarray:
    """The step time (s) of every candidate on ``gpu`` (or each on its own part of several alike,
    ``plan.screen_parts``) over the links of ``fab``: the estimate's own terms (``estimate.step_terms.raw_step``,
    ``combine_step``) over the layouts' arrays; the layouts of each expert-parallel degree with the training state of
    that degree (a rank's layers hold E / ep experts)."""
    p = pp_params or default_performance_model()
    if b.experts is None or not (lay.ep > 1).any():
        return _step_time(b, b.state, lay, scenario, gpu, fab, p, mp)
    return _step_time(b, _per_layout_state(b, lay.ep), lay, scenario, gpu, fab, p, mp)


@dataclass(frozen=True)
class _LayerTotals:
    """The layers' parameter totals, per layout (arrays)."""

    base_linear_params: np.ndarray
    norm_params: np.ndarray
    expert_linear_params: np.ndarray


@dataclass(frozen=True)
class _PerLayoutState:
    """What the step terms read of a training state (``StepContext.trainable_local``, ``base_linear_local`` and
    ``zero3_mb``: the trainable parameters, the layers' linear and norm parameters summed), per layout: the state of
    each layout's expert-parallel degree, whose layers hold E / ep experts (``estimate.training_state``)."""

    trainable_params: np.ndarray
    layers: tuple[_LayerTotals]
    expert_trainable_params: np.ndarray


def _per_layout_state(b: JobBasis, ep: np.ndarray) -> _PerLayoutState:
    degrees = sorted(set(ep.tolist()))
    states = [b.state if e == 1 else training_state(_probe(b.state.scenario, ep=e), b.arch, b.state.params)
              for e in degrees]
    at = np.searchsorted(np.array(degrees), ep)

    def per_layout(values: list[int]) -> np.ndarray:
        return np.array(values)[at]

    totals = _LayerTotals(per_layout([sum(layer.base_linear_params for layer in st.layers) for st in states]),
                          per_layout([sum(layer.norm_params for layer in st.layers) for st in states]),
                          per_layout([sum(layer.expert_linear_params for layer in st.layers) for st in states]))
    return _PerLayoutState(per_layout([st.trainable_params for st in states]), (totals,),
                           per_layout([st.expert_trainable_params for st in states]))


def _step_time(b: JobBasis, state: TrainingState | _PerLayoutState, lay: Layouts, scenario: Scenario,
               gpu: Accelerator | PartsPerLayout, fab: Fabric, p: PerformanceModel,
               mp: MemoryModel | None) -> np.ndarray:
    layout = step_layout(lay, scenario, b)
    picked = [b.flops[m] for m in CKPT]
    flops = replace(picked[0], **{f: np.array([getattr(fl, f) for fl in picked])[lay.ckpt] for f in FLOPS_READ})
    part = screen_peaks(gpu, scenario.training, p)
    ctx = StepContext(scenario, b.arch, part.gpu, p, mp or default_memory_model(), fab, flops, state, part.peak,
                      part.dtype, part.attention_peak, part.attention_dtype, layout, part.part)
    # the eager saved bytes as counted (the basis holds them as the job runs: scaled by the memory fit's
    # implementation_factor and, under torch.compile, by compiled_factor; the speed model reads neither)
    eager = 1.0 / (b.compiled_activation_factor * b.implementation_factor)
    rep, sh = b.act["none"][0] * eager, (b.act["none"][1] + b.act["none"][2]) * eager + b.unsaved_per_token
    counted = layer_bytes(rep, sh, lay.tp, replicated_divisor(lay.tp, lay.sp), ctx.local_tokens) * b.layers
    return sum(combine_step(raw_step(ctx, counted), p).values())
