"""The seed guide's rule of thumb, shown beside the estimate with how far off it is and why.

Seed (shared/seed, "第一步"): 显存 ≈ 参数量(B)×2GB + 梯度×2 + 优化器状态×4 + 激活值, and
"70B 全量微调至少需要 560GB 显存 (70B×2字节×4倍)", i.e. 8 bytes per parameter for full training,
activations left unspecified; LoRA "一张24GB的消费级卡就能跑" (weights at 2 bytes per parameter).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainsizer.estimate.memory import MemoryEstimate
from trainsizer.models.architecture import Architecture
from trainsizer.models.params import count_params
from trainsizer.scenario import Scenario

GB = 1e9


@dataclass(frozen=True)
class RuleOfThumb:
    formula: str
    total_gb: float  # decimal GB for the whole job, as the seed writes it
    per_gpu_gib: float
    estimate_gib: float  # trainsizer's device-level per-GPU figure
    error: float  # (rule - estimate) / estimate
    reasons: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {"formula": self.formula, "total_gb": round(self.total_gb, 1),
                "per_gpu_gib": round(self.per_gpu_gib, 2), "estimate_gib": round(self.estimate_gib, 2),
                "error": round(self.error, 3), "reasons": self.reasons}


def seed_rule_of_thumb(scenario: Scenario, arch: Architecture, memory: MemoryEstimate) -> RuleOfThumb:
    tr = scenario.training
    n = count_params(arch).total
    if tr.method in ("full", "freeze"):
        bytes_per_param, formula = 8.0, "params x 2 B x 4 (weights 2 + gradients 2 + optimizer 4)"
    elif tr.method == "lora":
        bytes_per_param, formula = 2.0, "params x 2 B (16-bit weights; LoRA states ignored)"
    else:
        bytes_per_param, formula = 0.5, "params x 0.5 B (4-bit weights; the seed has no QLoRA rule)"
    total = n * bytes_per_param
    per_gpu = total / scenario.parallel.gpus / 2**30
    est = memory.device_gib
    groups = memory.groups_gib()
    reasons: list[str] = []
    mixed = tr.precision in ("fp16-mixed", "bf16-mixed", "fp8-mixed")
    if tr.method in ("full", "freeze") and mixed and tr.optimizer == "adamw":
        reasons.append("mixed-precision AdamW keeps fp32 master weights and two fp32 moments: "
                       "16-18 B/param, not 8 (ZeRO paper, section 3.1)")
    if tr.method == "full" and tr.precision == "fp32":
        reasons.append("fp32 training with AdamW needs 16 B/param (4 weights + 4 gradients + 8 moments)")
    if scenario.parallel.zero or scenario.parallel.distributed_optimizer:
        reasons.append("the rule divides evenly over GPUs; ZeRO shards only some states "
                       f"(stage {scenario.parallel.zero})")
    if groups["activations"] > 0.05 * est:
        reasons.append(f"the rule leaves activations open: here {groups['activations']:.1f} GiB "
                       f"(micro-batch {tr.micro_batch_size} x {tr.seq_len} tokens)")
    other = memory.device_gib - memory.allocated_gib + groups["other"]
    if other > 0.3:
        reasons.append(f"allocator cache, CUDA context and buffers add {other:.1f} GiB")
    if tr.optimizer != "adamw" and tr.method in ("full", "freeze"):
        reasons.append(f"{tr.optimizer} states differ from the rule's 4 B/param")
    error = (per_gpu - est) / est if est else 0.0
    return RuleOfThumb(formula, total / GB, per_gpu, est, error, reasons)
