"""The terms of one training step, each a function of one :class:`StepContext`.

A micro-batch on one GPU costs compute (the executed FLOPs of its linear GEMMs, routed-expert GEMMs and attention core,
each over the dense peak of its dtype times its efficiency), memory-bound element-wise work and QLoRA dequantisation
(bytes / HBM bandwidth), and the exposed part of its tensor-, context- and expert-parallel collectives. A pipeline runs
``m`` micro-batches per step plus a bubble of ``(p-1)/v`` micro-batch times (Narayanan et al. 2021, arXiv:2104.04473,
section 2.2: bubble fraction (p-1)/(v*m)). Data-parallel gradient reduction overlaps with the last backward; ZeRO-3
parameter gathers with each micro-batch (Zhao et al. 2023, FSDP, arXiv:2304.11277). The optimizer step is memory bound.
No step is priced faster than its model FLOPs at the MFU the validation data supports for its GPU architecture and
precision (``mfu_ceiling``). Fractions and efficiencies are data (``performance_model.yaml``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from trainsizer.arrays import all_at_most_one, any_nonzero, is_array, positive_part, safe_div, where
from trainsizer.estimate import comm, moe, tp_schedule
from trainsizer.estimate.activation_ops import activation_ops_mb
from trainsizer.estimate.comm import Fabric, all_gather_s, gathered_linear_bytes, p2p_s
from trainsizer.estimate.dequantization import dequant_traffic
from trainsizer.estimate.dp_sync import data_parallel_gather_s, data_parallel_sync_s
from trainsizer.estimate.flops import StepFlops, pipeline_stage_linear
from trainsizer.estimate.gemm_rows import gemm_ceiling, reference_share, with_overhead
from trainsizer.estimate.grad_overlap import gather_overlaps, reduce_overlaps
from trainsizer.estimate.model_params import MemoryModel, Overlap, PerformanceModel
from trainsizer.estimate.part_figures import PartFigures
from trainsizer.estimate.pipeline_split import BusiestStage, busiest_stage
from trainsizer.estimate.raw_terms import RawStep
from trainsizer.estimate.state_terms import expert_data_shards, expert_state_shards, split_shards, state_shards
from trainsizer.estimate.step_layout import StepLayout
from trainsizer.estimate.training_state import ACTIVATION_BYTES, TrainingState, weight_grad_bytes
from trainsizer.hardware.catalog import Accelerator
from trainsizer.models.architecture import Architecture
from trainsizer.scenario import Scenario


def optimizer_bytes_per_param(optimizer: str, precision: str, p: PerformanceModel) -> float:
    key = "fp32" if precision == "fp32" else ("bf16-true" if precision == "bf16-true" else "mixed")
    return p.memory_bound.optimizer_bytes_per_param[optimizer][key]


@dataclass
class StepContext:
    """What every term of one step reads: the scenario, model, GPU, fitted parameters and links."""

    scenario: Scenario
    arch: Architecture
    gpu: Accelerator
    params: PerformanceModel
    memory_params: MemoryModel
    fabric: Fabric
    flops: StepFlops
    state: TrainingState
    peak_tflops: float
    dtype: str
    attention_peak_tflops: float = 0.0  # the attention core's dtype peak (bf16 under fp8-mixed linears)
    attention_dtype: str = ""
    # the layout's quantities, numbers (StepLayout.of the scenario) or arrays of many layouts (the planner's screen)
    layout: StepLayout = None  # type: ignore[assignment]
    # the part's figures (PartFigures.of the GPU at the GEMMs' dtype), or arrays of the parts of many layouts
    part: PartFigures = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if self.layout is None:
            self.layout = StepLayout.of(self.scenario, self.arch)
        if self.part is None:
            self.part = PartFigures.of(self.gpu, self.dtype, self.params)
        fl = self.flops  # a layer's GEMM and attention FLOPs against the LM head's, to find the busiest stage
        layer = (fl.linear_per_token - fl.head_per_token + fl.expert_per_token + fl.attention_per_token) \
            / self.arch.num_layers
        self.stage: BusiestStage = busiest_stage(self.arch.num_layers, self.layout.pp, self.layout.virtual_pp,
                                                 self.scenario.parallel.pipeline_split, layer, fl.head_per_token,
                                                 self.layout.split)

    @property
    def tokens_mb(self) -> Any:
        """Tokens of one micro-batch of one data-parallel replica."""
        return self.layout.micro_batch_size * self.scenario.training.seq_len

    @property
    def local_tokens(self) -> Any:
        return self.tokens_mb / self.layout.cp

    @property
    def act_bytes(self) -> float:
        return ACTIVATION_BYTES[self.scenario.training.precision]

    @property
    def hbm_bytes_per_s(self) -> Any:
        return self.part.hbm_bytes_per_s

    @property
    def layers_per_stage(self) -> Any:  # on the stage that sets the pace (estimate/pipeline_split.py)
        return self.stage.layers

    @property
    def overlap(self) -> Overlap:
        return self.params.communication.overlap

    @property
    def model_shards(self) -> Any:
        return self.layout.tp * self.layout.pp

    @property
    def weight_and_grad_bytes(self) -> tuple[float, float]:
        return weight_grad_bytes(self.scenario)  # fp32 adapter gradients; grad_reduce_dtype for trained weights

    @property
    def trainable_local(self) -> Any:
        return self.state.trainable_params / self.model_shards

    @property
    def base_linear_local(self) -> Any:
        return sum(layer.base_linear_params for layer in self.state.layers) / self.model_shards

    @property
    def expert_linear_local(self) -> Any:  # the routed experts' part of base_linear_local
        return sum(layer.expert_linear_params for layer in self.state.layers) / self.model_shards

    @property
    def expert_trainable_local(self) -> Any:  # the routed experts' part of trainable_local
        return self.state.expert_trainable_params / self.model_shards

    @property
    def expert_tp(self) -> Any:
        """The routed experts' tensor parallelism: ``parallel.etp``, else each layout's tp."""
        return self.scenario.parallel.etp or self.layout.tp

    def expert_data_group(self, shards: Any) -> Any:
        """The routed experts' data-parallel group among ``shards`` ranks (state_terms.expert_data_shards)."""
        return expert_data_shards(shards, self.layout.tp, self.layout.ep, self.expert_tp)


def saved_traffic_s(ctx: StepContext, counted: Any = None) -> Any:
    """Memory-bound element-wise work per byte of it per saved activation byte: proportional to the
    activations a layer keeps without checkpointing in eager mode, as counted (without the memory fit's
    implementation_factor; times ``elementwise_bytes_per_saved_byte``; compile's fusion: :func:`elementwise_s`).
    ``counted``: those bytes of the whole model on one GPU of each layout, where the caller has them (the planner's
    screen, from its per-layer basis); else counted on the scenario."""
    if counted is None:
        from trainsizer.estimate.activations import eager_traffic_bytes

        counted = eager_traffic_bytes(ctx.scenario, ctx.arch, ctx.memory_params)
    passes = 1.0 + 0.5 * ctx.layout.recomputed_elementwise
    return counted / ctx.layout.pp * ctx.stage.share * passes / ctx.hbm_bytes_per_s


def dequantization_mb(ctx: StepContext) -> Any:
    """QLoRA: each quantized base weight is dequantised on the passes that need it (estimate/dequantization.py)."""
    tr = ctx.scenario.training
    if tr.method != "qlora":
        return 0.0
    per_pass, passes = dequant_traffic(ctx.params, tr.quantization, ctx.layout.recomputed)
    kept = ctx.expert_linear_local if ctx.arch.moe and ctx.arch.moe.expert_parameters else 0.0  # 16-bit experts
    return (ctx.base_linear_local - kept) * per_pass * passes / ctx.hbm_bytes_per_s


def context_parallel_mb(ctx: StepContext) -> Any:
    """Ring attention: K/V chunks passed around the ring, forward once and backward twice
    (Liu et al. 2023, arXiv:2310.01889)."""
    lay = ctx.layout
    if all_at_most_one(lay.cp):
        return 0.0
    chunk = ctx.local_tokens * 2 * ctx.arch.kv_dim / lay.tp * ctx.act_bytes
    return ctx.layers_per_stage * 3 * (lay.cp - 1) * p2p_s(chunk, ctx.fabric, lay.tp * lay.cp > lay.gpus_per_node)


def expert_parallel_mb(ctx: StepContext, load: Any) -> Any:
    """MoE: dispatch and combine all-to-all, forward and backward, per MoE layer (estimate/moe.py); one
    expert-parallel degree per layout. The busiest rank receives ``load`` (``moe.load_factor``, which ``raw_step``
    reads once for the expert GEMMs too) times the mean copies in the dispatch and sends them back in the combine,
    and an all-to-all ends when its largest exchange does (DeepEP's "bottleneck bandwidth" is the rate of the rank
    that moves the most), so the imbalance stretches both."""
    lay, par, arch = ctx.layout, ctx.scenario.parallel, ctx.arch
    if not arch.moe or all_at_most_one(lay.ep):
        return 0.0
    stride = par.expert_tp if par.etp else lay.tp * lay.cp  # folded expert groups are etp-strided (estimate/moe.py)
    tokens = moe.dispatched_tokens(ctx.local_tokens, lay.tp)
    comm_params = ctx.params.communication
    kernels = {"deepep": comm_params.deepep, "hybridep": comm_params.hybridep}.get(par.moe_dispatcher)
    one = moe.dispatch_combine_s(tokens * arch.hidden_size * ctx.act_bytes, arch.moe.experts_per_token,
                                 lay.ep, stride, ctx.fabric, comm_params.busbw_fraction["scale-up"], kernels,
                                 arch.moe.num_experts, par.moe_token_ranks, ctx.part.architecture)
    return arch.moe_layers / lay.pp * ctx.stage.share * moe.all_to_all_passes(lay.recomputed_moe) * one * load


def pipeline_p2p_mb(ctx: StepContext) -> Any:
    """Activations forward and gradients backward at each stage boundary (Narayanan et al. 2021)."""
    lay = ctx.layout
    if all_at_most_one(lay.pp):
        return 0.0
    boundary = ctx.local_tokens * ctx.arch.hidden_size * ctx.act_bytes / where(lay.sequence_parallel, lay.tp, 1)
    return where(lay.pp > 1, 2 * lay.virtual_pp * p2p_s(boundary, ctx.fabric,
                                                        lay.tp * lay.cp * lay.dp >= lay.gpus_per_node))


def stored_base_bytes(ctx: StepContext) -> float:
    """Bytes per base linear parameter as the framework stores it: 16-bit weights, or under QLoRA the 4-bit codes
    and their quantisation constants (bitsandbytes ``quant_storage``; fsdp_qlora gathers and offloads them packed),
    the same bytes the memory model keeps."""
    if ctx.scenario.training.method == "qlora":
        quant = ctx.memory_params.quantization.formats[ctx.scenario.training.quantization or ""]
        return quant.code_bytes + quant.constant_bytes
    return ctx.weight_and_grad_bytes[0]


def zero3_mb(ctx: StepContext) -> Any:
    """ZeRO-3 / FSDP, per micro-batch: all-gather each layer's weights in forward and again in backward, and
    reduce-scatter its gradients (in fp32 where the framework reduces in fp32: FSDP ``reduce_dtype``, the bf16-mixed
    default), over the group the state is sharded on (dp x cp, as the memory model shards it; torchtitan shards
    FSDP over dp_shard x cp) (Zhao et al. 2023, FSDP, arXiv:2304.11277, section 3.2)."""
    lay = ctx.layout
    group = lay.zero_group  # dp x cp, or the smaller group of parallel.zero_shard_gpus (HYBRID_SHARD)
    if all_at_most_one(where(lay.zero == 3, group, 1)):
        return 0.0
    w_b, grad_b = ctx.weight_and_grad_bytes
    linear_b = gathered_linear_bytes(ctx.scenario.training.fp8_all_gather, stored_base_bytes(ctx))
    weights_bytes = sum(layer.base_linear_params * linear_b + layer.norm_params * w_b
                        for layer in ctx.state.layers) / ctx.model_shards
    # routed experts are sharded over their expert-data-parallel group only (dp x cp x tp / (ep x etp) ranks,
    # estimate/state_terms.expert_data_shards): Megatron-FSDP shards them over the expert-data-parallel group, and
    # NeMo Automodel leaves them out of FSDP where that group is one rank (nemo_automodel/components/moe/
    # parallelizer.py apply_fsdp @ 8d9bfb90e: ignored_params = the experts' parameters unless ep_shard is enabled),
    # so where it is one rank nothing of them is gathered or reduce-scattered. Their group is priced at the dense
    # group's stride: its own (etp x ep apart, one rank a node under EP 8) would expose more traffic than
    # Megatron-FSDP's measured Qwen3-235B step leaves room for, as overlap.zero3 (fitted on dense runs) hides none
    expert_group = ctx.expert_data_group(group)
    expert_linear = ctx.expert_linear_local
    expert_bytes = expert_linear * linear_b
    expert_grads = ctx.expert_trainable_local * grad_b
    grads = ctx.trainable_local * grad_b

    def gathers(dense_w: Any, dense_g: Any, shards: Any) -> Any:  # weights twice, gradients once, over ``shards``
        return 2 * all_gather_s(dense_w, shards, ctx.fabric, stride=lay.tp) \
            + all_gather_s(dense_g, shards, ctx.fabric, stride=lay.tp)
    together = gathers(weights_bytes, grads, group)  # one collective each where the experts share the dense group
    if any_nonzero(expert_linear) or any_nonzero(ctx.state.expert_trainable_params):  # a dense model's split adds 0
        split = gathers(weights_bytes - expert_bytes, grads - expert_grads, group) \
            + gathers(expert_bytes, expert_grads, expert_group)
        together = where(expert_group == group, together, split)
    return where((lay.zero == 3) & (group > 1), together + comm.replica_all_reduce_s(grads, lay, ctx.fabric, lay.tp))


def optimizer_and_offload_s(ctx: StepContext) -> tuple[Any, Any]:
    """The optimizer step, memory bound and sharded by ZeRO / the distributed optimizer; or, offloaded,
    the PCIe traffic and the CPU Adam (ZeRO-Offload, Ren et al. 2021, arXiv:2101.06840). A rank steps its shard of
    the dense parameters over the dp x cp ranks (``zero_group``, as the memory model holds them) and of its routed
    experts, these sharded over their expert-data-parallel group only (state_terms.expert_state_shards)."""
    tr, lay = ctx.scenario.training, ctx.layout
    shards = state_shards(lay.zero, lay.distributed_optimizer, lay.zero_group)[0]
    experts = ctx.expert_trainable_local
    stepped = split_shards(ctx.trainable_local - experts, experts, shards,
                           expert_state_shards(shards, lay.tp, lay.ep, ctx.expert_tp))
    optimizer_s = stepped * optimizer_bytes_per_param(tr.optimizer, tr.precision, ctx.params) / ctx.hbm_bytes_per_s
    if all_at_most_one(lay.offload + 1):  # nothing offloaded (offload is 0)
        return optimizer_s, 0.0
    w_b, grad_b = ctx.weight_and_grad_bytes
    pcie = ctx.part.pcie_bytes_per_s
    offload_s = stepped * (grad_b + w_b) / pcie + stepped / ctx.params.overhead.cpu_adam_params_per_s
    # optimizer+params: each micro-batch brings the GPU's shard of the base weights over PCIe for forward and backward,
    # as stored (FSDP CPUOffload(offload_params=True) copies the flat shards; Zhao et al. 2023, arXiv:2304.11277, 3.4)
    params_s = lay.accumulation * 2 * ctx.base_linear_local / lay.dp * stored_base_bytes(ctx) / pcie
    if not is_array(lay.offload):
        return 0.0, offload_s + params_s if lay.offload == 2 else offload_s
    return where(lay.offload == 0, optimizer_s), where(lay.offload > 0, offload_s + where(lay.offload == 2, params_s))


def raw_step(ctx: StepContext, counted_traffic: Any = None) -> RawStep:
    """The step's terms of one layout (numbers), or of many (arrays: the planner's screen, which passes the
    element-wise traffic it counts from its per-layer basis as ``counted_traffic``, :func:`saved_traffic_s`)."""
    lay, fl, arch, tr, stage = ctx.layout, ctx.flops, ctx.arch, ctx.scenario.training, ctx.stage
    split = ctx.tokens_mb / (lay.tp * lay.cp * lay.pp)

    def at_peak(flops_per_token: Any, peak: Any) -> Any:  # nothing where the part states no peak
        return flops_per_token * split / (peak * 1e12) if any_nonzero(peak) else 0.0

    part = ctx.part
    sustained = part.peak_share  # power limit and measured matmul share (estimate/peak.py)
    attention_peak = where(ctx.attention_peak_tflops != 0, ctx.attention_peak_tflops, ctx.peak_tflops)

    optimizer_s, offload_s = optimizer_and_offload_s(ctx)
    expert_peak, expert_dtype = moe.expert_peak(ctx.peak_tflops, ctx.dtype, part.sixteen_bit_peak_tflops)
    expert_tokens, expert_width, load = 0.0, 0.0, 1.0
    if arch.moe:  # grouped GEMM at the per-expert shapes, on the busiest expert-parallel rank (estimate/moe.py)
        par = ctx.scenario.parallel
        load = moe.load_factor(par.moe_load_imbalance, par.moe_capacity_factor)
        etp = par.etp if par.etp else lay.tp
        expert_tokens = moe.rows_per_expert(moe.dispatched_tokens(ctx.local_tokens, lay.tp),
                                            arch.moe.experts_per_token, lay.ep, arch.moe.num_experts, load, etp)
        expert_width = arch.moe.expert_intermediate_size / etp
    return RawStep(lay.accumulation, part.architecture, ctx.dtype,
                   ctx.attention_dtype or ctx.dtype, ctx.local_tokens, arch.hidden_size / lay.tp,
                   at_peak(pipeline_stage_linear(fl.linear_per_token, fl.head_per_token, lay.pp, stage.share,
                                                 stage.holds_head), ctx.peak_tflops * sustained),
                   at_peak(fl.expert_per_token, expert_peak * sustained) * load * stage.share, expert_tokens,
                   expert_width, at_peak(fl.attention_per_token, attention_peak * sustained) * stage.share,
                   tr.attention, saved_traffic_s(ctx, counted_traffic), dequantization_mb(ctx),
                   *tp_schedule.tensor_parallel_mb(ctx), context_parallel_mb(ctx), expert_parallel_mb(ctx, load),
                   pipeline_p2p_mb(ctx), zero3_mb(ctx), data_parallel_sync_s(ctx), data_parallel_gather_s(ctx),
                   optimizer_s, offload_s, ctx.layers_per_stage, lay.pp, lay.virtual_pp,
                   at_peak(fl.model_per_token, ctx.peak_tflops * sustained) * lay.accumulation, tr.precision,
                   float(tr.compile), gather_overlaps(lay.distributed_optimizer),
                   part.row_scale, activation_ops_mb(ctx, ctx.layout.recomputed_elementwise),
                   reduce_overlaps(ctx.scenario.parallel.overlap_grad_reduce),
                   part.overhead_scale, arch.hidden_size, part.ridge,
                   expert_dtype,
                   moe.host_syncs(arch.moe_layers / lay.pp * stage.share, lay.recomputed_moe) if arch.moe else 0.0,
                   float(ctx.scenario.parallel.moe_a2a_overlap))


def per_case(raw: RawStep, lookup: Callable[..., float], *names: str) -> Any:
    """``lookup`` of the text fields ``names`` (architecture, dtypes, kernel, precision) of one case, or of each
    case when ``raw`` holds many (:mod:`trainsizer.evidence.refit`: text fields stay lists there)."""
    values = [getattr(raw, n) for n in names]
    if isinstance(raw.architecture, str):
        return lookup(*values)
    import numpy as np

    return np.array([lookup(*row) for row in zip(*values, strict=True)])


def _ceiling(raw: RawStep, dtype_field: str, p: PerformanceModel) -> Any:
    """:func:`gemm_ceiling` of one case, or of each case in arrays, on the case's part (:func:`with_overhead`)."""
    ceiling = per_case(raw, lambda a, d: gemm_ceiling(p, a, d), "architecture", dtype_field)
    reference = per_case(raw, lambda a, d: reference_share(p, a, d) or 0.0, "architecture", dtype_field)
    return with_overhead(ceiling, reference, raw.overhead_scale)


def saturation(rows: Any, width: Any, p: PerformanceModel, scale: Any = 1.0) -> Any:
    """GEMM efficiency falls for few rows and narrow matrices: saturating in each, half-way at ``half_tokens`` /
    ``half_width`` times ``scale`` (fp32 GEMMs: :func:`trainsizer.estimate.gemm_rows.row_scale`)."""
    return row_saturation(rows, p, scale) * width_saturation(width, p, scale)


def row_saturation(rows: Any, p: PerformanceModel, scale: Any = 1.0) -> Any:
    """The rows' part of :func:`saturation`: few tokens leave the GPU's multiprocessors short of tiles."""
    return safe_div(rows, rows + p.compute.half_tokens * scale)


def width_saturation(width: Any, p: PerformanceModel, scale: Any = 1.0) -> Any:
    """The width's part of :func:`saturation`: narrow matrices leave each tile's inner loop short."""
    return safe_div(width, width + p.compute.half_width * scale)


def attention_relative(p: PerformanceModel, architecture: str, dtype: str, kernel: str) -> float:
    """The fraction of the GEMM efficiency a fused attention kernel reaches on ``architecture``: the ``flash``
    table, with ``attention_relative_efficiency_sdpa`` over it for PyTorch's SDPA (on Hopper its flash backend is
    FlashAttention-2, without the Hopper kernels of FlashAttention-3 or cuDNN); eager attention: 1 (its products
    are batched GEMMs). fp32 runs on the CUDA cores (``max_efficiency_fp32``), as the GEMMs do."""
    c = p.compute
    if kernel == "eager":
        return 1.0
    if dtype == "fp32":
        return c.max_efficiency_fp32
    table: Mapping[str, float] = c.attention_relative_efficiency
    if kernel == "sdpa":
        table = {**table, **c.attention_relative_efficiency_sdpa}
    return table.get(architecture, table["default"])


def raw_efficiency(raw: RawStep, p: PerformanceModel) -> Any:
    """Fraction of the dense peak a GEMM-bound micro-batch reaches: a per-architecture ceiling lowered for few tokens
    and narrow matrices (:func:`saturation`); one case or arrays of many (:mod:`trainsizer.evidence.refit`)."""
    return _ceiling(raw, "dtype", p) * saturation(raw.local_tokens, raw.width, p, raw.row_scale * raw.overhead_scale)


def compute_s(raw: RawStep, p: PerformanceModel) -> Any:
    """Seconds of one micro-batch's GEMMs and attention: each part over its own peak and efficiency."""
    linear_eff = raw_efficiency(raw, p)
    # the routed experts' grouped GEMM at its per-expert shape against the part's ridge point (estimate/moe.py)
    c, scale = p.compute, raw.row_scale * raw.overhead_scale
    expert_eff = _ceiling(raw, "expert_dtype", p) * moe.grouped_gemm_saturation(
        moe.expert_gemm_intensity(raw.expert_tokens, raw.expert_hidden, raw.expert_width), raw.ridge,
        c.expert_traffic)
    # fused attention kernels reach a fraction of what GEMMs reach (``attention_relative_efficiency``, by kernel);
    # eager attention runs its score and value products as batched GEMMs. What a fused kernel loses against the GEMMs
    # (the softmax on the CUDA cores: FlashAttention-3, arXiv:2407.08608, section 3) is overhead that shrinks with
    # the part's ridge point as the GEMMs' own does (:func:`with_overhead`). A fused kernel's tiles are a head's query
    # block against the head dimension, whatever the model's width: tensor parallelism gives a rank fewer heads, not
    # narrower ones, so only the rows' saturation applies (FlashAttention-2, arXiv:2307.08691, section 3.2: one
    # thread block per head and query block); eager attention's batched GEMMs keep the GEMMs' saturation
    relative = with_overhead(per_case(raw, lambda a, d, k: attention_relative(p, a, d, k), "architecture",
                                      "attention_dtype", "attention_kernel"), 1.0, raw.overhead_scale)
    fused = per_case(raw, lambda k: float(k != "eager"), "attention_kernel")
    shape = row_saturation(raw.local_tokens, p, scale) * where(fused, 1.0, width_saturation(raw.width, p, scale))
    attention_eff = _ceiling(raw, "attention_dtype", p) * shape * relative
    return (safe_div(raw.linear_s, linear_eff) + safe_div(raw.expert_s, expert_eff)
            + safe_div(raw.attention_s, attention_eff))


def launch_exposed_s(layers: Any, busy_s: Any, p: PerformanceModel) -> Any:
    """Seconds one micro-batch waits for its kernels to be issued: launches are asynchronous, so the host's time to
    issue them (``per_layer_s`` per layer) shows only where it exceeds the GPU's own work ``busy_s`` (PyTorch, CUDA
    semantics, asynchronous execution; He 2022, "Making deep learning go brrrr": overhead-bound regimes). Floats or
    arrays (:mod:`trainsizer.plan.fast` prices every layout with it)."""
    return positive_part(p.overhead.per_layer_s * layers - busy_s)


def combine_step(raw: RawStep, p: PerformanceModel) -> dict[str, Any]:
    """Seconds of one optimizer step by term (exposed communication only), under parameters ``p``; for one
    case (floats) or many (arrays)."""
    overlap = p.communication.overlap
    m = raw.micro_batches  # micro-batches per step per pipeline
    compute = compute_s(raw, p)
    exposed = {
        "elementwise": elementwise_s(raw.saved_traffic_s, raw.compiled, p) + raw.activation_ops_mb,
        "dequantization": raw.dequantization_mb,
        "tp_comm": tp_schedule.exposed_tp_s(raw.tp_mb, raw.tp_hideable_mb, raw.tp_window_s, raw_efficiency(raw, p)),
        "cp_comm": raw.cp_mb * (1 - overlap.cp),
        "moe_all_to_all": moe.exposed_all_to_all_s(raw.moe_mb, compute, raw.moe_overlapped) * (1 - overlap.moe),
        "pp_p2p": raw.pp_mb * (1 - overlap.pp_p2p),
        "zero3_gather": positive_part(raw.zero3_mb - overlap.zero3 * compute),
    }
    busy = compute + sum(exposed.values())
    launch_mb = launch_exposed_s(raw.layers_per_stage, busy, p) \
        + moe.sync_exposed_s(raw.moe_syncs, p.overhead.moe_sync_issue_s, safe_div(busy, raw.layers_per_stage))
    t_mb = busy + launch_mb
    bubble = t_mb * (raw.pp - 1) / raw.virtual_pp  # 0 without pipeline parallelism
    terms = {
        "compute": m * compute,
        "elementwise": m * exposed["elementwise"],
        "dequantization": m * exposed["dequantization"],
        "tp_comm": m * exposed["tp_comm"],
        "cp_comm": m * exposed["cp_comm"],
        "moe_all_to_all": m * exposed["moe_all_to_all"],
        "pp_p2p": m * exposed["pp_p2p"],
        "pp_bubble": bubble,
        "zero3_gather": m * exposed["zero3_gather"],
        # gradient buckets reduce while the last micro-batch runs backward; under pipeline parallelism the stages
        # that finish first reduce during the pipeline's drain (the bubble); the weight gather of a sharded optimizer
        # hides behind the next forward only where the framework overlaps it (gather_overlaps)
        "dp_grad_sync": positive_part(raw.dp_sync_s - raw.reduce_overlapped * overlap.dp * (compute * 2 / 3 + bubble))
        + positive_part(raw.dp_gather_s - raw.gather_overlapped * overlap.dp * compute / 3),
        "optimizer": raw.optimizer_s,
        "offload": raw.offload_s,
        "launch_overhead": m * launch_mb + p.overhead.per_step_s,
        "data_loading": 0.0 * m,
    }
    terms["mfu_ceiling"] = positive_part(mfu_floor_s(raw, p) - sum(terms.values()))
    return terms


def elementwise_s(saved_traffic: Any, compiled: Any, p: PerformanceModel) -> Any:
    """Seconds of one micro-batch's memory-bound element-wise work: ``elementwise_bytes_per_saved_byte`` of HBM
    traffic per eager saved byte; under torch.compile, Inductor fuses chains of element-wise ops into one kernel
    that reads and writes each tensor once (Ansel et al. 2024, "PyTorch 2", ASPLOS, section 5), so only
    ``compiled_elementwise_fraction`` of it remains. ``compiled`` is 0 or 1 (or an array of them)."""
    mb = p.memory_bound
    keep = 1.0 - compiled * (1.0 - mb.compiled_elementwise_fraction)
    return saved_traffic * mb.elementwise_bytes_per_saved_byte * keep


COMPILED_KEY = "+compile"  # suffix of a precision's ceiling row measured under torch.compile


def mfu_ceiling(architecture: str, precision: str, p: PerformanceModel, compiled: bool | float = False) -> float:
    """The highest MFU the validation data supports for a GPU architecture and precision, plus a margin
    (``mfu_ceiling`` in performance_model.yaml, written by tools/mfu_ceilings.py); the overall maximum where the
    data has no case of that architecture and precision. Eager runs are bounded by eager evidence only; a run
    under torch.compile by the compiled runs' row (``bf16-true+compile``) where there is one, else the eager
    row."""
    c = p.mfu_ceiling
    if not c:
        return float("inf")
    rows = c.table.get(architecture, {})
    row = (rows.get(precision + COMPILED_KEY) if compiled else None) or rows.get(precision)
    return float(row.mfu) if row else float(c.fallback.mfu)


def mfu_floor_s(raw: RawStep, p: PerformanceModel) -> Any:
    """Evidence-bound step time: no step is priced faster than its model FLOPs at the MFU ceiling of its GPU
    architecture and precision over the part's sustained peak (``model_step_at_peak_s``, estimate/peak.py), its loss
    against the best matmul scaled to the part's ridge point as the GEMMs' is (:func:`with_overhead`): a plan may not
    claim an efficiency no measured run reached."""
    ceilings = per_case(raw, lambda a, q, c: mfu_ceiling(a, q, p, c), "architecture", "precision", "compiled")
    reference = per_case(raw, lambda a, d: reference_share(p, a, d) or 0.0, "architecture", "dtype")
    return safe_div(raw.model_step_at_peak_s, with_overhead(ceilings, reference, raw.overhead_scale))


def step_breakdown(ctx: StepContext) -> dict[str, float]:
    """Seconds of one optimizer step by term (exposed communication only)."""
    return {k: float(v) for k, v in combine_step(raw_step(ctx), ctx.params).items()}
