"""Vectorised screening of many layouts at once (numpy), for the planner's search.

The per-layer physics comes from the reference estimators (``estimate.memory``,
``estimate.activations``, ``estimate.step``): this module probes them once per job at a few base
layouts to get per-layer and per-end bytes and FLOPs, then applies the same layout arithmetic
(tensor/pipeline/context sharding, ZeRO stages, 1F1B in-flight micro-batches, ring collectives,
bubble) to whole arrays of candidates. It only screens: every option the planner reports is
re-evaluated by the reference estimators, and ``tests/test_plan.py`` checks that screen and
reference agree.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from trainsizer.estimate.activation_ops import activation_ops_s, extra_bytes, unfused_width
from trainsizer.estimate.activations import (
    compiled_activation_factor,
    kept_quantized_inputs,
    layer_activations,
    lm_head_cast_bytes,
    stage_activations,
)
from trainsizer.estimate.deferred_sync import skipped_sync, unsharded_gradient_bytes
from trainsizer.estimate.flops import pipeline_stage_linear, step_flops
from trainsizer.estimate.gemm_rows import row_scale
from trainsizer.estimate.grad_overlap import reduce_overlaps
from trainsizer.estimate.memory import (
    backward_gradients,
    compiled_saved_bytes,
    default_memory_model,
    device_overhead_bytes,
    gradients_freed,
    reserved_bytes,
    varied_bytes,
    with_checkpoint_load,
)
from trainsizer.estimate.memory_types import GIB
from trainsizer.estimate.model_params import MemoryModel, PerformanceModel
from trainsizer.estimate.model_states import model_states
from trainsizer.estimate.peak import peak_share
from trainsizer.estimate.step import default_performance_model, peak_for
from trainsizer.estimate.training_state import (
    ACTIVATION_BYTES,
    PRECISION_BYTES,
    RESIDUAL_BYTES,
    gradient_bytes,
    training_state,
    weight_grad_bytes,
)
from trainsizer.hardware.catalog import Accelerator
from trainsizer.models.architecture import Architecture
from trainsizer.scenario import Scenario

CKPT = ("none", "selective", "full")


@dataclass(frozen=True)
class JobBasis:
    """Per-layer and per-end quantities of one job, independent of the layout."""

    layers: int
    # model states of one layer (tp-divisible part, replicated part), bytes, by category
    layer_div: dict[str, float]
    layer_rep: dict[str, float]
    first_extra: dict[str, float]  # embedding side (tp-divisible)
    last_extra: dict[str, float]  # output head side (tp-divisible)
    trainable_elems_layer: float
    dequant_buffer: float
    # activations per token per layer, by checkpointing mode: (replicated, sharded, scores)
    act: dict[str, tuple[float, float, float]]
    ckpt_input_per_token: float
    logits_per_token_div: float  # divided by tp
    logits_per_token_rep: float
    embed_act_per_token: float
    # FLOPs per token by checkpointing mode: model, and executed linear, routed-expert and attention GEMMs
    flops: dict[str, tuple[float, float, float, float]]
    hidden: int
    kv_dim: int
    act_bytes: float
    expert_rows_per_token: float = 0.0  # rows of one expert's GEMM per local token (k / E, ep = 1)
    expert_width: float = 0.0
    gathered_bytes_layer: float = 0.0  # what ZeRO-3 gathers of one layer (as estimate.step_terms.zero3_mb)
    weight_bytes_layer: float = 0.0  # base weights of one layer as stored (parameter offload traffic)
    compiled_activation_factor: float = 1.0  # what torch.compile's partitioner keeps of ``act`` (1 in eager mode)
    # quantized-linear inputs per token per layer that checkpointing cannot drop: (replicated, sharded)
    # (estimate.activations.kept_quantized_inputs)
    kept_inputs_per_token: tuple[float, float] = (0.0, 0.0)
    lm_head_cast: float = 0.0  # bytes on the last stage, divided by tp (estimate.activations.lm_head_cast_bytes)
    implementation_factor: float = 1.0  # the memory fit's factor in ``act`` (the speed screen takes it out)
    unfused_width: float = 0.0  # intermediate elements per token per layer of an unfused activation (activation_ops)
    unsaved_per_token: float = 0.0  # tp-sharded bytes written but not kept, per layer (activations.LayerActivations)


def _probe(scenario: Scenario, **parallel: Any) -> Scenario:
    """A copy of the scenario with another layout, without re-validation (probes only)."""
    return scenario.model_copy(update={"parallel": scenario.parallel.model_copy(update=parallel)})


# long: one per-layer quantity per line, each the array twin of a term in estimate/, read side by side
def job_basis(scenario: Scenario, arch: Architecture, mp: MemoryModel | None = None) -> JobBasis:
    from trainsizer.estimate.comm import gathered_linear_bytes

    mp = mp or default_memory_model()
    L = arch.num_layers
    cats = ("weights", "master_weights", "optimizer_states", "gradients")

    def states(tp: int) -> list[dict[str, float]]:
        sc = _probe(scenario, tp=tp, pp=L, cp=1, zero=0, distributed_optimizer=False, offload="none",
                    gpus=tp * L, virtual_pp=1)
        st = training_state(sc, arch, mp)
        out = []
        for stage in range(L):
            ms = model_states(st, stage)
            d = {c.name: c.bytes for c in ms.static}
            d["gradients"] = ms.gradients.bytes
            d["optimizer_states"] = d.get("optimizer_states", 0.0) + ms.managed_bytes
            d["lora_adapters"] = d.get("lora_adapters", 0.0)
            d["unsharded_gradients"] = unsharded_gradient_bytes(st, st.stage_layers(stage), stage == 0, stage == L - 1)
            out.append(d)
        return out

    s1, s2 = states(1), states(2)
    mids = range(1, L - 1) if L > 2 else range(L)

    def avg(rows: list[dict[str, float]], key: str) -> float:
        return float(np.mean([rows[i].get(key, 0.0) for i in mids]))

    layer_div, layer_rep, first_extra, last_extra = {}, {}, {}, {}
    for key in (*cats, "lora_adapters", "unsharded_gradients"):
        a1, a2 = avg(s1, key), avg(s2, key)
        div = max(0.0, 2 * (a1 - a2))
        layer_div[key], layer_rep[key] = div, max(0.0, a1 - div)
        first_extra[key] = max(0.0, s1[0].get(key, 0.0) - a1)
        last_extra[key] = max(0.0, s1[-1].get(key, 0.0) - a1)
    base = _probe(scenario, tp=1, pp=1, cp=1, zero=0, distributed_optimizer=False, offload="none", gpus=1,
                  virtual_pp=1)
    st = training_state(base, arch, mp)
    trainable_layer = st.trainable_params / L
    dequant = {c.name: c.bytes for c in model_states(st, 0).static}.get("buffers", 0.0)
    w_b = PRECISION_BYTES[base.training.precision][0]
    quant = mp.quantization.formats.get(base.training.quantization or "") if base.training.method == "qlora" else None
    linear_b = quant.code_bytes + quant.constant_bytes if quant else w_b
    gathered = sum(la.base_linear_params * gathered_linear_bytes(base.training.fp8_all_gather, linear_b)
                   + la.norm_params * w_b for la in st.layers) / L
    weight_bytes = sum(la.base_linear_params for la in st.layers) * linear_b / L  # as stored (step_terms)

    act: dict[str, tuple[float, float, float]] = {}
    flops: dict[str, tuple[float, float, float, float]] = {}
    unsaved = 0.0
    for mode in CKPT:
        sc = base.model_copy(update={"training": base.training.model_copy(
            update={"activation_checkpointing": mode})})
        st_mode = training_state(sc, arch, mp)
        reach = [layer for layer in st_mode.layers if
                 sc.training.method != "freeze" or layer.index >= L - sc.training.freeze_trainable_layers]
        rows = [layer_activations(sc, arch, mp, layer) for layer in reach]
        frac = len(reach) / L
        if mode == "none":
            unsaved = float(np.mean([r.unsaved for r in rows])) * frac if rows else 0.0
        act[mode] = (float(np.mean([r.replicated for r in rows])) * frac if rows else 0.0,
                     float(np.mean([r.sharded for r in rows])) * frac if rows else 0.0,
                     float(np.mean([r.scores for r in rows])) * frac if rows else 0.0)
        fl = step_flops(sc, arch)
        flops[mode] = (fl.model_per_token, fl.linear_per_token, fl.expert_per_token, fl.attention_per_token,
                       fl.head_per_token)
    kept_rows = [kept_quantized_inputs(base, arch, layer) for layer in st.layers]
    kept = (float(np.mean([r[0] for r in kept_rows])), float(np.mean([r[1] for r in kept_rows]))) if kept_rows \
        else (0.0, 0.0)
    tokens = base.training.micro_batch_size * base.training.seq_len
    sa = stage_activations(base, arch, mp, st, 0)
    e = ACTIVATION_BYTES[base.training.precision]
    logit_total = sa.logits / tokens
    logit_rep = arch.hidden_size * 4.0 if arch.lm_head else 0.0
    embed = 0.0
    if arch.dropout:
        embed += arch.hidden_size
    if arch.embedding_norm:
        embed += arch.hidden_size * RESIDUAL_BYTES[base.training.precision]
    return JobBasis(L, layer_div, layer_rep, first_extra, last_extra, trainable_layer, dequant, act,
                    arch.hidden_size * RESIDUAL_BYTES[base.training.precision], logit_total - logit_rep, logit_rep,
                    embed, flops, arch.hidden_size, arch.kv_dim, e,
                    arch.moe.experts_per_token / arch.moe.num_experts if arch.moe else 0.0,
                    float(arch.moe.expert_intermediate_size) if arch.moe else 0.0, gathered, weight_bytes,
                    compiled_activation_factor(base.training.compile, mp), kept, lm_head_cast_bytes(base, arch),
                    mp.activations.implementation_factor, unfused_width(base, arch), unsaved)


def accumulation_steps(lay: Layouts, scenario: Scenario) -> np.ndarray:
    """Micro-batches per step of each layout: the global batch over micro-batch x data parallelism, at least 1 (one
    when the scenario states no global batch), as ``Scenario.grad_accumulation_steps`` gives one layout."""
    if not scenario.training.global_batch_size:
        return np.ones(len(lay))
    return np.maximum(scenario.global_batch_size // np.maximum(1, lay.mbs * lay.dp), 1)


def zero_group(group: np.ndarray, scenario: Scenario) -> np.ndarray:
    """Ranks of dp x cp (``group``) one copy of the ZeRO-sharded states spans, per layout: as
    :attr:`trainsizer.scenario.ParallelSpec.zero_group`, ``parallel.zero_shard_gpus`` where it divides ``group``."""
    shard = scenario.parallel.zero_shard_gpus
    if not shard:
        return group
    return np.where(np.mod(group, shard) == 0, float(shard), group)


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


# long: one numpy expression per memory component, in the order of estimate/memory.py, over every layout at once
def screen_memory(b: JobBasis, lay: Layouts, scenario: Scenario, gpu: Accelerator,
                  mp: MemoryModel | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(device bytes per GPU of the most loaded stage, host bytes per GPU offloaded), per candidate."""
    mp = mp or default_memory_model()
    tp, pp, cp, dp = lay.tp.astype(float), lay.pp.astype(float), lay.cp.astype(float), lay.dp.astype(float)
    group = zero_group(dp * cp, scenario)  # dp x cp, or parallel.zero_shard_gpus (Scenario.parallel.zero_group)
    layers_stage = b.layers / pp
    zero = lay.zero
    opt_shard = np.where((zero >= 1) | lay.dist_opt, group, 1.0)
    grad_shard = np.where(zero >= 2, group, 1.0)
    w_shard = np.where(zero == 3, group, 1.0)
    offl = lay.offload
    # model_states.master_only_shards: FSDP mixed precision keeps only the fp32 master shard of a full fine-tune
    tr0 = scenario.training
    master_only = ((scenario.parallel.sharded_weights == "master-only") & (tr0.method == "full")
                   & (PRECISION_BYTES[tr0.precision][1] > 0) & (zero == 3) & (group > 1) & (offl == 0))

    gas = accumulation_steps(lay, scenario)
    # deferred_sync.skips_sync: FSDP no_sync keeps each unit's gradients unsharded until the step's last micro-batch
    no_sync = skipped_sync(scenario.parallel.accumulation_sync, zero, group, offl != 0, gas)

    def stage_states(extra: dict[str, float]) -> tuple[np.ndarray, np.ndarray]:
        def cat(key: str) -> np.ndarray:
            return layers_stage * (b.layer_div[key] / tp + b.layer_rep[key]) + extra[key] / tp
        weights = np.where((offl == 2) | master_only, 0.0, cat("weights") / w_shard) + cat("lora_adapters")
        opt = np.where(offl > 0, 0.0, (cat("master_weights") + cat("optimizer_states")) / opt_shard)
        grads = np.where(offl > 0, 0.0, cat("gradients") / grad_shard)
        grads = np.where(no_sync, np.maximum(grads, cat("unsharded_gradients")), grads)
        return weights + opt, grads

    def offloaded(extra: dict[str, float]) -> np.ndarray:
        def cat(key: str) -> np.ndarray:
            return layers_stage * (b.layer_div[key] / tp + b.layer_rep[key]) + extra[key] / tp
        host = np.where(offl > 0, (cat("master_weights") + cat("optimizer_states")) / opt_shard
                        + cat("gradients") / grad_shard, 0.0)
        return host + np.where(offl == 2, cat("weights") / w_shard, 0.0)

    full_load = (scenario.parallel.checkpoint_loading == "full") & (zero == 3) & (group > 1)

    def stage_load(extra: dict[str, float]) -> tuple[np.ndarray, np.ndarray]:
        """(allocated, transient) bytes while a full state dict loads (memory.checkpoint_load_bytes)."""
        def cat(key: str) -> np.ndarray:
            return layers_stage * (b.layer_div[key] / tp + b.layer_rep[key]) + extra[key] / tp
        kept = (np.where((offl == 2) | master_only, 0.0, cat("weights") / w_shard) + cat("lora_adapters")
                + np.where(offl > 0, 0.0, cat("master_weights") / opt_shard))
        return np.where(full_load, kept + cat("weights"), 0.0), np.where(full_load, cat("weights"), 0.0)

    host = np.maximum(offloaded(b.first_extra), offloaded(b.last_extra))
    first_static, first_grads = stage_states(b.first_extra)
    last_static, last_grads = stage_states(b.last_extra)
    megatron = (lay.tp > 1) | (lay.pp > 1)
    # the unsharded gradients a data-parallel bucket copies (model_states._stage_buffers: the stage's trainable
    # elements): every layer's, the embedding's and the head's; read only without tensor or pipeline parallelism
    full_grads = (layers_stage * (b.layer_div["gradients"] / tp + b.layer_rep["gradients"])
                  + (b.first_extra["gradients"] + b.last_extra["gradients"]) / tp)
    ddp_copy = np.where((dp > 1) & (zero == 0) & ~lay.dist_opt & (offl == 0) & ~megatron, full_grads, 0.0)
    # the reduce bucket holds gradients as kept: 4 bytes, or 2 under parallel.grad_reduce_dtype compute
    bucket_b = 4.0 * gradient_bytes(scenario) / PRECISION_BYTES[scenario.training.precision][2]
    bucket = np.where((dp > 1) & ((zero == 1) | (zero == 2)) & ~megatron,
                      np.minimum(mp.communication.zero_reduce_bucket_elements * bucket_b, full_grads), 0.0)
    z3 = np.where(((zero == 3) & (group > 1)) | (offl == 2),
                  mp.communication.zero3_gathered_units * (b.layer_div["weights"] / tp + b.layer_rep["weights"])
                  + b.layer_div["gradients"] / tp + b.layer_rep["gradients"], 0.0)  # + one layer's unsharded gradients
    buffers = ddp_copy + bucket + z3 + b.dequant_buffer / tp

    tokens = lay.mbs * scenario.training.seq_len / cp
    sp_div = np.where(lay.sp, tp, 1.0)
    rep = np.array([b.act[m][0] for m in CKPT])[lay.ckpt]
    sh = np.array([b.act[m][1] for m in CKPT])[lay.ckpt]
    sc_ = np.array([b.act[m][2] for m in CKPT])[lay.ckpt]
    full_layer = (rep / sp_div + (sh + sc_) / tp) * tokens
    kept_layer = (b.kept_inputs_per_token[0] / sp_div + b.kept_inputs_per_token[1] / tp) * tokens
    saved_layer = np.select([lay.ckpt == 0, lay.ckpt == 1], [full_layer, full_layer - sc_ / tp * tokens],
                            b.ckpt_input_per_token * tokens / sp_div + kept_layer)
    in_flight_first = np.where(lay.pp > 1, np.minimum(lay.pp, gas), 1)
    interleave = np.where((lay.pp > 1) & (lay.vpp > 1), 1 + (pp - 1) / (pp * lay.vpp), 1.0)
    saved_first = saved_layer * layers_stage * in_flight_first * interleave + b.embed_act_per_token * tokens
    saved_last = saved_layer * layers_stage + b.lm_head_cast / tp
    logits = tokens * (b.logits_per_token_div / tp + b.logits_per_token_rep)
    frac = mp.activations.backward_working_fraction
    working = np.where(lay.ckpt == 2, full_layer * (1 + frac), full_layer * frac)

    overhead = np.where(lay.gpus > 1, device_overhead_bytes(gpu, 2, mp), device_overhead_bytes(gpu, 1, mp))
    usable = gpu.memory_gib * GIB - overhead  # the allocator's cache stays within the device (memory.reserved_bytes)

    # memory.gradients_transient: freed by zero_grad between steps, none before backward (one micro-batch a step)
    tr1 = scenario.training
    transient = gradients_freed(tr1.zero_grad, tr1.optimizer_in_backward, offl != 0, lay.tp, lay.pp, lay.dist_opt, gas)

    def peak(static, grads, saved, lg, load):
        # memory.peak_phase: forward+loss, or backward (where transient gradients replace freed activations)
        fwd = saved + lg + np.where(transient, 0.0, grads)
        last = np.where(lay.ckpt == 2, 0.0, full_layer)  # the last layer's activations, unless recomputed
        bwd_grads = backward_gradients(grads, saved, last, transient)
        bwd = saved + working + bwd_grads
        forward = fwd >= bwd
        dynamic = np.where(forward, saved + lg, saved + working)
        freed = np.where(transient, grads - np.where(forward, 0.0, bwd_grads), 0.0)  # freed by zero_grad
        allocated = static + buffers + np.maximum(fwd, bwd)
        reserved = reserved_bytes(allocated, dynamic, mp, usable, varied_bytes(scenario, lg),
                                  compiled_saved_bytes(float(scenario.training.compile), saved), freed)
        return with_checkpoint_load(allocated, reserved, *load, mp, usable)[1]

    first = peak(first_static, first_grads, saved_first, 0.0, stage_load(b.first_extra))
    last = peak(last_static, last_grads, saved_last, logits, stage_load(b.last_extra))
    # without pipeline parallelism the one stage holds both ends: the embedding and the output head
    whole_extra = {k: b.first_extra[k] + b.last_extra[k] for k in b.first_extra}
    whole_static, whole_grads = stage_states(whole_extra)
    whole = peak(whole_static, whole_grads, saved_first + b.lm_head_cast / tp, logits, stage_load(whole_extra))
    reserved = np.where(lay.pp == 1, whole, np.maximum(first, last))
    return reserved + overhead, host


def _nic_share(inter_busbw: float, group: np.ndarray, stride: np.ndarray, per_node: np.ndarray) -> np.ndarray:
    """The node's NIC bandwidth a group strided across nodes gets (``Fabric.inter_share``)."""
    members = np.maximum(1, np.minimum(group, per_node // np.maximum(1, stride)))
    return inter_busbw * members / per_node


# long: one numpy expression per step-time term, in the order of estimate/step_terms.py, over every layout at once
def screen_step_time(b: JobBasis, lay: Layouts, scenario: Scenario, gpu: Accelerator, intra_busbw: float,
                     inter_busbw: float, pp_params: PerformanceModel | None = None,
                     shared_host_gbps: float | None = None) -> np.ndarray:
    """Approximate step time (s) for every candidate: compute, TP/DP/ZeRO-3 communication, bubble, offload, and
    the MFU ceiling of the GPU's architecture and precision."""
    from trainsizer.estimate.step_terms import (
        attention_relative,
        elementwise_s,
        gather_overlaps,
        gemm_ceiling,
        launch_exposed_s,
        mfu_ceiling,
        pcie_bytes_per_s,
        saturation,
    )

    p = pp_params or default_performance_model()
    tr = scenario.training
    peak, dtype, _ = peak_for(gpu, tr.precision)
    attention_peak, attention_dtype = peak, dtype
    if dtype == "fp8" and tr.fp8_scope == "linear":
        attention_peak, attention_dtype, _ = peak_for(gpu, "bf16-mixed")
    tp, pp, cp, dp = lay.tp.astype(float), lay.pp.astype(float), lay.cp.astype(float), lay.dp.astype(float)
    architecture = gpu.architecture or ""
    # the efficiencies of estimate/step_terms.py (compute_s), over every layout at once
    tokens_local = (lay.mbs * tr.seq_len / cp).astype(float)
    scale = row_scale(gpu, dtype)  # fp32 GEMMs saturate at fewer rows and a narrower width (estimate/gemm_rows.py)
    width = b.hidden / tp
    linear_eff = gemm_ceiling(p, architecture, dtype) * saturation(tokens_local, width, p, scale)
    expert_eff = gemm_ceiling(p, architecture, dtype) * saturation(tokens_local * b.expert_rows_per_token,
                                                                   b.expert_width / tp, p, scale)
    relative = attention_relative(p, architecture, attention_dtype, tr.attention)
    attention_eff = gemm_ceiling(p, architecture, attention_dtype) * saturation(tokens_local, width, p,
                                                                                scale) * relative
    fl = np.array([b.flops[m] for m in CKPT])[lay.ckpt]  # (candidates, 5)
    gas = accumulation_steps(lay, scenario)
    split = lay.mbs * tr.seq_len / (tp * cp * pp)
    sustained = peak_share(gpu, p)  # power limit and measured matmul share, as raw_step (estimate/peak.py)
    compute_mb = split / sustained * (pipeline_stage_linear(fl[:, 1], fl[:, 4], pp) / (peak * 1e12) / linear_eff
                                      + np.where(fl[:, 2] > 0, fl[:, 2] / (peak * 1e12) / np.maximum(expert_eff, 1e-30),
                                                 0.0)
                                      + fl[:, 3] / (attention_peak * 1e12) / attention_eff)
    hbm = (gpu.memory_bandwidth_gbps or 1000.0) * 1e9 * p.memory_bound.hbm_efficiency
    # the eager saved bytes as counted (the basis holds them as the job runs: scaled by the memory fit's
    # implementation_factor and, under torch.compile, by compiled_factor; the speed model reads neither)
    eager = 1.0 / (b.compiled_activation_factor * b.implementation_factor)
    rep, sh = b.act["none"][0] * eager, (b.act["none"][1] + b.act["none"][2]) * eager + b.unsaved_per_token
    passes = np.where(lay.ckpt == 2, 1.5, 1.0)
    elementwise_mb = elementwise_s((rep + sh / tp) * tokens_local * b.layers / pp * passes / hbm,
                                   float(tr.compile), p)
    if b.unfused_width:  # an activation run as separate ops: its traffic beyond a fused kernel's (activation_ops.py)
        elementwise_mb = elementwise_mb + activation_ops_s(b.layers / pp * tokens_local * b.unfused_width / tp,
                                                           *extra_bytes(p, tr.precision, tr.autocast),
                                                           np.where(lay.ckpt == 2, 1.0, 0.0), hbm)
    lat = p.communication.nccl_step_latency_us * 1e-6
    tp_bytes = tokens_local * b.hidden * b.act_bytes
    colls = np.where(lay.ckpt == 2, 6, 4)

    def intra(group: np.ndarray) -> np.ndarray:
        if shared_host_gbps:
            return np.minimum(intra_busbw, shared_host_gbps / np.maximum(1.0, np.minimum(group, lay.gpus_per_node)))
        return np.full(len(lay), intra_busbw)

    def busbw(group: np.ndarray, stride: np.ndarray, nic_share: bool = True) -> np.ndarray:
        within = group * stride <= lay.gpus_per_node
        inter = _nic_share(inter_busbw, group, stride, lay.gpus_per_node) if nic_share else inter_busbw
        return np.where(within, intra(group), np.minimum(intra(group), inter))

    tp_s = np.where(lay.tp > 1, b.layers / pp * colls * (2 * (tp - 1) * lat + 2 * (tp - 1) / tp * tp_bytes /
                                                         (intra(tp) * 1e9)), 0.0)
    tp_s *= 1 - p.communication.overlap.tp
    launch = launch_exposed_s(b.layers / pp, compute_mb + elementwise_mb + tp_s, p)  # only while the GPU waits
    t_mb = compute_mb + elementwise_mb + tp_s + launch
    bubble = np.where(lay.pp > 1, t_mb * (pp - 1) / lay.vpp, 0.0)
    w_b, grad_b = weight_grad_bytes(scenario)  # as StepContext.weight_and_grad_bytes
    trainable = b.trainable_elems_layer * b.layers / (tp * pp)
    overlap = p.communication.overlap
    # data parallel: all-reduce (DDP), or reduce-scatter + all-gather of the weights (sharded optimizer)
    dp_ring = np.where(dp > 1, (dp - 1) / np.maximum(dp, 1), 0.0)
    dp_bw = busbw(dp, lay.tp * lay.cp, nic_share=False) * 1e9
    sharded = (lay.zero == 1) | (lay.zero == 2) | lay.dist_opt
    # the sharded optimizer's group: dp, or parallel.zero_shard_gpus (ParallelSpec.zero_dp_shards): then the gradients
    # are all-reduced over dp (step_terms.data_parallel_sync_s), and ZeRO-3's copies all-reduce their shares
    # (comm.replica_all_reduce_s)
    zgroup = zero_group(dp * cp, scenario)
    zshard = np.where(zgroup == dp * cp, dp, np.maximum(1.0, zgroup // cp))
    copies = dp * cp / zgroup

    def replica_s(stride: np.ndarray) -> np.ndarray:
        return np.where(copies > 1, 2 * (copies - 1) / np.maximum(copies, 1) * trainable * grad_b / zgroup
                        / (busbw(copies, stride * zgroup, nic_share=False) * 1e9), 0.0)

    z_ring = np.where(zshard > 1, (zshard - 1) / np.maximum(zshard, 1), 0.0)
    z_bw = busbw(zshard, lay.tp * lay.cp, nic_share=False) * 1e9
    scatter = sharded & (zshard == dp) & (scenario.parallel.zero_grad_sync == "reduce-scatter")
    reduce_s = np.where(scatter, dp_ring * trainable * grad_b / dp_bw,
                        2.0 * dp_ring * trainable * grad_b / dp_bw)
    gather_s = np.where(sharded, z_ring * trainable * w_b / z_bw, 0.0)
    reduce_hidden = reduce_overlaps(scenario.parallel.overlap_grad_reduce) * overlap.dp  # estimate/grad_overlap.py
    dp_exposed = np.where(lay.zero == 3, 0.0, np.maximum(0.0, reduce_s - reduce_hidden * (compute_mb * 2 / 3 + bubble))
                          + np.maximum(0.0, gather_s - gather_overlaps(lay.dist_opt) * overlap.dp * compute_mb / 3))
    # ZeRO-3: gather the weights forward and backward, reduce-scatter the gradients, per micro-batch, over dp x cp
    # (or parallel.zero_shard_gpus, then all-reduce across the copies: step_terms.replica_all_reduce_s)
    group = zgroup
    ring = np.where(group > 1, (group - 1) / np.maximum(group, 1), 0.0)
    gathered = b.layers * b.gathered_bytes_layer / (tp * pp)
    z3 = np.where(lay.zero == 3, ring * (2 * gathered + trainable * grad_b) / (busbw(group, lay.tp) * 1e9)
                  + replica_s(lay.tp), 0.0)
    # CPU offload: gradients and parameters over PCIe, and the CPU optimizer step
    pcie = pcie_bytes_per_s(gpu)
    shards = np.where((lay.zero >= 1) | lay.dist_opt, zshard, 1.0)
    trainable_local = trainable / shards
    offload_s = np.where(lay.offload > 0, trainable_local * 6.0 / pcie + trainable_local /
                         p.overhead.cpu_adam_params_per_s, 0.0)
    weight_bytes = b.layers * b.weight_bytes_layer / (tp * pp)
    offload_s += np.where(lay.offload == 2, gas * 2 * weight_bytes / np.maximum(dp, 1) / pcie, 0.0)
    z3_exposed = gas * np.maximum(0.0, z3 - overlap.zero3 * compute_mb)
    step = gas * t_mb + bubble + dp_exposed + z3_exposed + offload_s + p.overhead.per_step_s
    # evidence bound: model FLOPs at the MFU ceiling of this architecture and precision, over the part's sustained
    # peak as raw_step's model_step_at_peak_s
    floor = fl[:, 0] * split * gas / (peak * 1e12 * sustained * mfu_ceiling(gpu.architecture or "", tr.precision, p,
                                                                 tr.compile))
    return np.maximum(step, floor)
