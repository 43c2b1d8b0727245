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
from functools import cache
from typing import Any

from trainsizer.datafiles import packaged_yaml
from trainsizer.estimate.comm import Fabric, all_gather_s, all_reduce_s, all_to_all_s, fabric, p2p_s
from trainsizer.estimate.flops import StepFlops, step_flops
from trainsizer.estimate.training_state import ACTIVATION_BYTES, PRECISION_BYTES, training_state
from trainsizer.hardware.catalog import Accelerator, Catalog, default_catalog
from trainsizer.models.architecture import Architecture
from trainsizer.scenario import Scenario

PRECISION_DTYPE = {"fp32": "fp32", "fp16-mixed": "fp16", "bf16-mixed": "bf16", "bf16-true": "bf16",
                   "fp8-mixed": "fp8"}


@cache
def default_performance_model() -> dict[str, Any]:
    return packaged_yaml("trainsizer.estimate", "performance_model.yaml")


@dataclass
class Performance:
    step_time_s: float
    tokens_per_s: float
    tokens_per_s_per_gpu: float
    tflops_per_gpu: float  # model FLOPs, no recomputation
    hardware_tflops_per_gpu: float  # recomputation included
    mfu: float
    hfu: float
    peak_tflops: float
    compute_efficiency: float
    breakdown_s: dict[str, float]
    time_to_train_s: float | None = None
    gpu_hours: float | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def dominant(self) -> str:
        return max(self.breakdown_s, key=lambda k: self.breakdown_s[k])

    def share(self, key: str) -> float:
        return self.breakdown_s.get(key, 0.0) / self.step_time_s if self.step_time_s else 0.0

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "step_time_s": round(self.step_time_s, 4),
            "tokens_per_s": round(self.tokens_per_s, 1),
            "tokens_per_s_per_gpu": round(self.tokens_per_s_per_gpu, 1),
            "tflops_per_gpu": round(self.tflops_per_gpu, 1),
            "hardware_tflops_per_gpu": round(self.hardware_tflops_per_gpu, 1),
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


def peak_for(gpu: Accelerator, precision: str) -> tuple[float, str, list[str]]:
    """Dense peak TFLOPS used for the training precision, with a note when it falls back."""
    dtype = PRECISION_DTYPE[precision]
    notes: list[str] = []
    peak = gpu.peak_tflops(dtype)
    if not peak and dtype == "fp8":
        notes.append(f"{gpu.id} has no fp8 tensor cores: fp8-mixed runs at the bf16 rate")
        dtype, peak = "bf16", gpu.peak_tflops("bf16")
    if not peak and dtype == "bf16":
        notes.append(f"{gpu.id} has no bf16 support: the fp16 rate is used")
        dtype, peak = "fp16", gpu.peak_tflops("fp16")
    if not peak:
        peak = gpu.peak_tflops("fp16") or gpu.peak_tflops("fp32") or 0.0
        notes.append(f"no {dtype} peak in the catalog for {gpu.id}")
    return float(peak or 0.0), dtype, notes


def _efficiency(gpu: Accelerator, dtype: str, tokens: float, width: float, p: dict[str, Any]) -> float:
    c = p["compute"]
    table = c["max_efficiency"]
    e_max = c["max_efficiency_fp32"] if dtype == "fp32" else table.get(gpu.architecture or "", table["default"])
    return e_max * tokens / (tokens + c["half_tokens"]) * width / (width + c["half_width"])


def _opt_bytes(optimizer: str, precision: str, p: dict[str, Any]) -> float:
    key = "fp32" if precision == "fp32" else ("bf16-true" if precision == "bf16-true" else "mixed")
    return p["memory_bound"]["optimizer_bytes_per_param"][optimizer][key]


def estimate_performance(scenario: Scenario, arch: Architecture, gpu: Accelerator,
                         catalog: Catalog | None = None, params: dict[str, Any] | None = None,
                         memory_params: dict[str, Any] | None = None,
                         flops: StepFlops | None = None) -> Performance:
    from trainsizer.estimate.activations import stage_activations
    from trainsizer.estimate.memory import default_memory_model

    p = params or default_performance_model()
    mp = memory_params or default_memory_model()
    cat = catalog or default_catalog()
    sc, tr, par, hw = scenario, scenario.training, scenario.parallel, scenario.hardware
    fl = flops or step_flops(sc, arch)
    fab: Fabric = fabric(cat, gpu, hw.intra_node, hw.inter_node, hw.nics_per_node, sc.gpus_per_node, p,
                         par.gpus)
    peak, dtype, notes = peak_for(gpu, tr.precision)
    tp, pp, cp, dp, vpp = par.tp, par.pp, par.cp, par.dp, par.virtual_pp
    m = sc.grad_accumulation_steps  # micro-batches per step per pipeline
    tokens_mb = tr.micro_batch_size * tr.seq_len  # one micro-batch of one data-parallel replica
    local_tokens = tokens_mb / cp
    e_act = ACTIVATION_BYTES[tr.precision]
    hbm = (gpu.memory_bandwidth_gbps or 1000.0) * 1e9 * p["memory_bound"]["hbm_efficiency"]
    layers_stage = arch.num_layers / pp

    # compute of one micro-batch on one GPU
    eff = _efficiency(gpu, dtype, local_tokens, arch.hidden_size / tp, p)
    compute_mb = fl.hardware_per_token * tokens_mb / (tp * cp * pp) / (peak * 1e12 * eff) if peak else 0.0

    # memory-bound element-wise work: proportional to the activations a layer keeps
    st = training_state(sc, arch, mp)
    plain = sc.model_copy(update={"training": tr.model_copy(update={"activation_checkpointing": "none"}),
                                  "parallel": par.model_copy(update={"pp": 1, "virtual_pp": 1,
                                                                     "gpus": par.gpus // pp})})
    acts = stage_activations(plain, arch, mp, training_state(plain, arch, mp), 0)
    passes = 1.5 if tr.activation_checkpointing == "full" else 1.0
    elementwise_mb = acts.saved / pp * p["memory_bound"]["elementwise_bytes_per_saved_byte"] * passes / hbm

    dequant_mb = 0.0
    if tr.method == "qlora":
        linear = sum(layer.base_linear_params for layer in st.layers) / (tp * pp)
        dq_passes = 3 if tr.activation_checkpointing == "full" else 2
        dequant_mb = linear * p["memory_bound"]["dequant_bytes_per_param_per_pass"] * dq_passes / hbm

    overlap = p["communication"]["overlap"]
    # tensor parallel: 2 all-reduces forward, 2 backward per layer (+2 with full recomputation)
    tp_mb = 0.0
    if tp > 1:
        colls = 4 + (2 if tr.activation_checkpointing == "full" else 0)
        tp_mb = layers_stage * colls * all_reduce_s(local_tokens * arch.hidden_size * e_act, tp, fab)
    tp_exposed = tp_mb * (1 - overlap["tp"])
    # context parallel: ring exchange of K/V chunks, forward once and backward twice
    cp_mb = 0.0
    if cp > 1:
        chunk = local_tokens * 2 * arch.kv_dim / tp * e_act
        cp_mb = layers_stage * 3 * (cp - 1) * p2p_s(chunk, fab, tp * cp > sc.gpus_per_node)
    cp_exposed = cp_mb * (1 - overlap["cp"])
    # expert parallel: dispatch + combine all-to-all forward and backward per MoE layer
    moe_mb = 0.0
    if arch.moe and par.ep > 1:
        a2a = local_tokens * arch.moe.experts_per_token * arch.hidden_size * e_act
        moe_mb = arch.moe_layers / pp * 4 * all_to_all_s(a2a, par.ep, fab, stride=tp * cp)
    moe_exposed = moe_mb * (1 - overlap["moe"])
    # pipeline point-to-point: activations forward, gradients backward at each stage boundary
    pp_mb = 0.0
    if pp > 1:
        boundary = local_tokens * arch.hidden_size * e_act / (tp if par.sequence_parallel else 1)
        pp_mb = 2 * vpp * p2p_s(boundary, fab, tp * cp * dp >= sc.gpus_per_node)
    pp_exposed = pp_mb * (1 - overlap["pp_p2p"])
    launch_mb = p["overhead"]["per_layer_s"] * layers_stage

    # ZeRO-3 / FSDP: gather weights forward and backward, reduce-scatter gradients, per micro-batch
    w_b, _, grad_b, _ = PRECISION_BYTES[tr.precision]
    trainable_local = st.trainable_params / (tp * pp)
    if tr.method in ("lora", "qlora") and tr.precision not in ("bf16-true", "fp32"):
        grad_b = 4.0
    z3_mb = 0.0
    if par.zero == 3 and dp > 1:
        weights_local = sum(layer.base_linear_params + layer.norm_params for layer in st.layers) / (tp * pp)
        z3_mb = 2 * all_gather_s(weights_local * w_b, dp, fab, stride=tp * cp)
        z3_mb += all_gather_s(trainable_local * grad_b, dp, fab, stride=tp * cp)
    z3_exposed = max(0.0, z3_mb - overlap["zero3"] * compute_mb)

    t_mb = compute_mb + elementwise_mb + dequant_mb + tp_exposed + cp_exposed + moe_exposed + pp_exposed + launch_mb
    t_mb += z3_exposed
    bubble = t_mb * (pp - 1) / vpp if pp > 1 else 0.0

    # data-parallel gradient reduction, overlapped with the last micro-batch's backward
    dp_s = 0.0
    if dp > 1 and par.zero != 3:
        dp_s = all_reduce_s(trainable_local * grad_b, dp, fab, stride=tp * cp)
    dp_exposed = max(0.0, dp_s - overlap["dp"] * compute_mb * 2 / 3)

    # optimizer step (memory bound; sharded by ZeRO / distributed optimizer), or offloaded to CPU
    shards = dp if (par.zero >= 1 or par.distributed_optimizer) else 1
    optimizer_s = trainable_local / shards * _opt_bytes(tr.optimizer, tr.precision, p) / hbm
    offload_s = 0.0
    if par.offload != "none":
        pcie = {3: 16.0, 4: 32.0, 5: 64.0, 6: 128.0}.get(gpu.pcie_gen or 4, 32.0) * 0.8e9
        moved = trainable_local / shards * (grad_b + w_b)
        offload_s = moved / pcie + trainable_local / shards / p["overhead"].get("cpu_adam_params_per_s", 1.0e9)
        if par.offload == "optimizer+params":
            offload_s += m * 2 * sum(layer.base_linear_params for layer in st.layers) / (tp * pp) / dp * w_b / pcie
        optimizer_s = 0.0

    breakdown = {
        "compute": m * compute_mb,
        "elementwise": m * elementwise_mb,
        "dequantization": m * dequant_mb,
        "tp_comm": m * tp_exposed,
        "cp_comm": m * cp_exposed,
        "moe_all_to_all": m * moe_exposed,
        "pp_p2p": m * pp_exposed,
        "pp_bubble": bubble,
        "zero3_gather": m * z3_exposed,
        "dp_grad_sync": dp_exposed,
        "optimizer": optimizer_s,
        "offload": offload_s,
        "launch_overhead": m * launch_mb + p["overhead"]["per_step_s"],
        "data_loading": 0.0,
    }
    step = sum(breakdown.values())
    tokens_step = sc.global_batch_size * tr.seq_len
    tps = tokens_step / step if step else 0.0
    tflops = fl.model_per_token * tps / par.gpus / 1e12
    hw_tflops = fl.hardware_per_token * tps / par.gpus / 1e12
    perf = Performance(step, tps, tps / par.gpus, tflops, hw_tflops, tflops / peak if peak else 0.0,
                       hw_tflops / peak if peak else 0.0, peak, eff, breakdown, notes=notes)
    if tr.tokens:
        perf.time_to_train_s = tr.tokens / tps if tps else None
        perf.gpu_hours = (perf.time_to_train_s or 0.0) * par.gpus / 3600
    perf.notes.append("data loading is not modelled yet (storage sizing comes with the system model)")
    return perf
