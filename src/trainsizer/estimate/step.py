"""Step time of one optimizer step and what it is made of.

One micro-batch on one GPU costs compute (hardware FLOPs / (dense peak x efficiency)), memory-
bound element-wise work and QLoRA dequantisation (bytes / HBM bandwidth), and the exposed part of
its tensor-, context- and expert-parallel collectives. A pipeline runs ``m`` micro-batches per
step plus a bubble of ``(p-1)/v`` micro-batch times (Narayanan et al. 2021, arXiv:2104.04473,
section 2.2: bubble fraction (p-1)/(v*m)). Data-parallel gradient reduction overlaps with the
last backward; ZeRO-3 parameter gathers with each micro-batch (Zhao et al. 2023, FSDP). The
optimizer step is memory bound. All fractions and efficiencies are data
(``performance_model.yaml``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from trainsizer.estimate.comm import Fabric, fabric
from trainsizer.estimate.flops import StepFlops, step_flops
from trainsizer.estimate.gemm_rows import reference_share, with_overhead
from trainsizer.estimate.model_params import MemoryModel, PerformanceModel, performance_model
from trainsizer.estimate.peak import peak_share
from trainsizer.estimate.pipeline_split import uneven_split_note
from trainsizer.estimate.step_terms import (
    StepContext,
    combine_step,
    mfu_ceiling,
    raw_efficiency,
    raw_step,
    safe_div,
)
from trainsizer.estimate.training_state import TrainingState, training_state
from trainsizer.hardware.catalog import Accelerator, Catalog, default_catalog
from trainsizer.messages import Message, msg
from trainsizer.models.architecture import Architecture
from trainsizer.scenario import ParallelSpec, Scenario, TrainingSpec

if TYPE_CHECKING:
    from trainsizer.estimate.estimate_json import PerformanceJSON

PRECISION_DTYPE = {"fp32": "fp32", "fp16-mixed": "fp16", "bf16-mixed": "bf16", "bf16-true": "bf16",
                   "fp8-mixed": "fp8"}


def default_performance_model() -> PerformanceModel:
    """The shipped step-time model parameters (``performance_model.yaml``), typed and loaded once."""
    return performance_model()


@dataclass
class Performance:
    """One layout's speed: step time, tokens per second, FLOPs and MFU, the time to train and the step's terms."""

    step_time_s: float
    tokens_per_s: float
    tokens_per_s_per_gpu: float
    tflops_per_gpu: float  # model FLOPs, no recomputation, causal attention as its useful half
    hardware_tflops_per_gpu: float  # recomputation included, attention as the kernel executes it
    mfu: float
    hfu: float
    peak_tflops: float
    compute_efficiency: float
    breakdown_s: dict[str, float]
    time_to_train_s: float | None = None
    gpu_hours: float | None = None
    notes: list[Message] = field(default_factory=list)
    # the TFLOPS/GPU figures with attention counted in full (PaLM, Narayanan et al. 2021): the convention of
    # published figures before 2025, to compare with them
    tflops_per_gpu_full_attention: float = 0.0
    hardware_tflops_per_gpu_full_attention: float = 0.0

    @property
    def dominant(self) -> str:
        return max(self.breakdown_s, key=lambda k: self.breakdown_s[k])

    def share(self, key: str) -> float:
        return self.breakdown_s.get(key, 0.0) / self.step_time_s if self.step_time_s else 0.0

    def to_dict(self) -> PerformanceJSON:
        out: PerformanceJSON = {
            "step_time_s": round(self.step_time_s, 4),
            "tokens_per_s": round(self.tokens_per_s, 1),
            "tokens_per_s_per_gpu": round(self.tokens_per_s_per_gpu, 1),
            "tflops_per_gpu": round(self.tflops_per_gpu, 1),
            "hardware_tflops_per_gpu": round(self.hardware_tflops_per_gpu, 1),
            "tflops_per_gpu_full_attention": round(self.tflops_per_gpu_full_attention, 1),
            "mfu": round(self.mfu, 4),
            "hfu": round(self.hfu, 4),
            "peak_tflops": self.peak_tflops,
            "compute_efficiency": round(self.compute_efficiency, 4),
            "breakdown_s": {k: round(v, 5) for k, v in self.breakdown_s.items()},
            "dominant": self.dominant,
            "notes": self.notes,
        }
        if self.time_to_train_s is not None:
            out["time_to_train_s"] = round(self.time_to_train_s, 1)
            out["gpu_hours"] = round(self.gpu_hours or 0.0, 1)
        return out


def peak_for(gpu: Accelerator, precision: str) -> tuple[float, str, list[Message]]:
    """Dense peak TFLOPS used for the training precision, with a note when it falls back."""
    dtype = PRECISION_DTYPE[precision]
    notes: list[Message] = []
    peak = gpu.peak_tflops(dtype)
    if not peak and dtype == "fp8":
        notes.append(msg("step.no_fp8", gpu=gpu.id))
        dtype, peak = "bf16", gpu.peak_tflops("bf16")
    if not peak and dtype == "bf16":
        notes.append(msg("step.no_bf16", gpu=gpu.id))
        dtype, peak = "fp16", gpu.peak_tflops("fp16")
    if not peak:
        peak = gpu.peak_tflops("fp16") or gpu.peak_tflops("fp32") or 0.0
        notes.append(msg("step.no_peak", dtype=dtype, gpu=gpu.id))
    return float(peak or 0.0), dtype, notes


def speed_figures(step_s: Any, tokens_per_step: Any, gpus: Any, model_flops_per_token: Any,
                  hardware_flops_per_token: Any, peak_tflops: Any, model_full_attention_per_token: Any = None,
                  hardware_full_attention_per_token: Any = None) -> dict[str, Any]:
    """Tokens/s, TFLOPS per GPU (model FLOPs, and with recomputation) and MFU / HFU of a step (MFU as in
    PaLM, Chowdhery et al. 2022, appendix B, with causal attention counted as its useful half: see
    trainsizer.estimate.flops), plus the TFLOPS with attention counted in full; for one case (floats) or many
    (arrays)."""
    tps = safe_div(tokens_per_step, step_s)
    per_gpu = tps / gpus / 1e12
    tflops, hw_tflops = model_flops_per_token * per_gpu, hardware_flops_per_token * per_gpu
    model_full = model_flops_per_token if model_full_attention_per_token is None else model_full_attention_per_token
    hardware_full = hardware_flops_per_token if hardware_full_attention_per_token is None \
        else hardware_full_attention_per_token
    return {"step_time_s": step_s, "tokens_per_s": tps, "tokens_per_s_per_gpu": tps / gpus, "tflops_per_gpu": tflops,
            "hardware_tflops_per_gpu": hw_tflops, "mfu": safe_div(tflops, peak_tflops),
            "hfu": safe_div(hw_tflops, peak_tflops), "tflops_per_gpu_full_attention": model_full * per_gpu,
            "hardware_tflops_per_gpu_full_attention": hardware_full * per_gpu}


def peaks_for(gpu: Accelerator, training: TrainingSpec) -> tuple[tuple[float, str, list[Message]], tuple[float, str]]:
    """(:func:`peak_for` of the training precision, (peak, dtype) of the attention core): Transformer Engine and
    torchao Float8Linear cast the linear layers' GEMMs to FP8 (``training.fp8_scope: linear``); the attention core
    (FlashAttention / cuDNN SDPA) stays bf16 unless FP8 attention is asked for (TE fp8_dpa)."""
    peak, dtype, notes = peak_for(gpu, training.precision)
    if dtype == "fp8" and training.fp8_scope == "linear":
        return (peak, dtype, notes), peak_for(gpu, "bf16-mixed")[:2]
    return (peak, dtype, notes), (peak, dtype)


def step_context(scenario: Scenario, arch: Architecture, gpu: Accelerator, catalog: Catalog | None = None,
                 params: PerformanceModel | None = None, memory_params: MemoryModel | None = None,
                 flops: StepFlops | None = None, state: TrainingState | None = None) -> tuple[StepContext, list[str]]:
    """What every term of a step reads, and notes on the peak used."""
    from trainsizer.estimate.memory import default_memory_model

    p = params or default_performance_model()
    mp = memory_params or default_memory_model()
    cat = catalog or default_catalog()
    sc, hw = scenario, scenario.hardware
    fab: Fabric = fabric(cat, gpu, hw.intra_node, hw.inter_node, hw.nics_per_node, sc.gpus_per_node, p,
                         sc.parallel.gpus)
    (peak, dtype, notes), (attention_peak, attention_dtype) = peaks_for(gpu, sc.training)
    return StepContext(sc, arch, gpu, p, mp, fab, flops or step_flops(sc, arch),
                       state or training_state(sc, arch, mp), peak, dtype, attention_peak, attention_dtype), notes


def estimate_performance(scenario: Scenario, arch: Architecture, gpu: Accelerator,
                         catalog: Catalog | None = None, params: PerformanceModel | None = None,
                         memory_params: MemoryModel | None = None,
                         flops: StepFlops | None = None, state: TrainingState | None = None) -> Performance:
    """One optimizer step as the sum of its terms (:mod:`trainsizer.estimate.step_terms`)."""
    ctx, notes = step_context(scenario, arch, gpu, catalog, params, memory_params, flops, state)
    p, sc, tr, par, fl, peak = ctx.params, scenario, scenario.training, scenario.parallel, ctx.flops, ctx.peak_tflops
    raw = raw_step(ctx)
    breakdown = {k: float(v) for k, v in combine_step(raw, p).items()}
    step = sum(breakdown.values())
    f = speed_figures(step, sc.global_batch_size * tr.seq_len, par.gpus, fl.model_per_token, fl.hardware_per_token,
                      peak, fl.model_full_attention_per_token, fl.hardware_full_attention_per_token)
    tps = f["tokens_per_s"]
    perf = Performance(step, tps, f["tokens_per_s_per_gpu"], f["tflops_per_gpu"], f["hardware_tflops_per_gpu"],
                       f["mfu"], f["hfu"], peak, float(raw_efficiency(raw, p)), breakdown, notes=notes,
                       tflops_per_gpu_full_attention=f["tflops_per_gpu_full_attention"],
                       hardware_tflops_per_gpu_full_attention=f["hardware_tflops_per_gpu_full_attention"])
    if tr.tokens:
        perf.time_to_train_s = tr.tokens / tps if tps else None
        perf.gpu_hours = (perf.time_to_train_s or 0.0) * par.gpus / 3600
    if breakdown.get("mfu_ceiling", 0.0) > 0:
        # the ceiling holds over the part's sustained peak; the note gives it over the nominal one, as the MFU above
        ceiling = with_overhead(mfu_ceiling(gpu.architecture or '', tr.precision, p, tr.compile),
                                reference_share(p, gpu.architecture or "", raw.dtype) or 0.0,
                                raw.overhead_scale) * peak_share(gpu, p)
        perf.notes.append(msg("step.mfu_ceiling_held", architecture=gpu.architecture or gpu.id, precision=tr.precision,
                              pct=ceiling))
    perf.notes.extend(moe_notes(par) if arch.moe else [])
    split_note = uneven_split_note(arch.num_layers, par.pp, par.virtual_pp, par.pipeline_split)
    perf.notes.extend([split_note] if split_note else [])
    perf.notes.append(msg("step.data_loading"))
    return perf


def moe_notes(par: ParallelSpec) -> list[Message]:
    """What a MoE estimate assumed that its user did not state and that moves it most (docs/accuracy.md, the MoE
    runs): routing balanced across the expert-parallel ranks, as benchmarks force it, where no imbalance is stated;
    and, with expert parallelism, a plain all-to-all dispatch without overlap where neither is stated."""
    notes = [note for note in (balanced_routing_note(par),) if note is not None]
    if par.ep > 1 and not par.model_fields_set & {"moe_dispatcher", "moe_a2a_overlap"}:
        notes.append(msg("step.moe_dispatch_default"))
    return notes


def balanced_routing_note(par: ParallelSpec) -> Message | None:
    """That a MoE step is priced with routing balanced over the expert-parallel ranks, where no imbalance is stated
    (said on an estimate and on a plan's answer card, workflows/decide.adjustments); None where one is."""
    return None if "moe_load_imbalance" in par.model_fields_set else msg("step.moe_balanced")
