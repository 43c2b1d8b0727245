"""The seed guide's rule of thumb, shown beside the estimate with how far off it is and why.

The Chinese guide '成都AI训练服务器选型' (undated; section "第一步"):
显存 ≈ 参数量(B)×2GB + 梯度×2 + 优化器状态×4 + 激活值, and
"70B 全量微调至少需要 560GB 显存 (70B×2字节×4倍)", i.e. 8 bytes per parameter for full training,
activations left unspecified; LoRA "一张24GB的消费级卡就能跑" (weights at 2 bytes per parameter).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from trainsizer.estimate.memory import MemoryEstimate
from trainsizer.messages import Message, msg
from trainsizer.models.architecture import Architecture
from trainsizer.models.param_counts import count_params
from trainsizer.scenario import Scenario

if TYPE_CHECKING:
    from trainsizer.estimate.estimate_json import RuleOfThumbJSON

GB = 1e9


@dataclass(frozen=True)
class RuleOfThumb:
    """The seed's rule of thumb for the job's memory beside the estimate, and why they differ."""

    formula: Message
    total_gb: float  # decimal GB for the whole job, as the seed writes it
    per_gpu_gib: float
    estimate_gib: float  # trainsizer's device-level per-GPU figure
    error: float  # (rule - estimate) / estimate
    reasons: list[Message]

    def to_dict(self) -> RuleOfThumbJSON:
        return {"formula": self.formula, "total_gb": round(self.total_gb, 1),
                "per_gpu_gib": round(self.per_gpu_gib, 2), "estimate_gib": round(self.estimate_gib, 2),
                "error": round(self.error, 3), "reasons": self.reasons}


def seed_rule_of_thumb(scenario: Scenario, arch: Architecture, memory: MemoryEstimate) -> RuleOfThumb:
    tr = scenario.training
    n = count_params(arch).total
    if tr.method in ("full", "freeze"):
        bytes_per_param, formula = 8.0, msg("rule.full")
    elif tr.method == "lora":
        bytes_per_param, formula = 2.0, msg("rule.lora")
    else:
        bytes_per_param, formula = 0.5, msg("rule.qlora")
    total = n * bytes_per_param
    per_gpu = total / scenario.parallel.gpus / 2**30
    est = memory.device_gib
    groups = memory.groups_gib()
    reasons: list[Message] = []
    mixed = tr.precision in ("fp16-mixed", "bf16-mixed", "fp8-mixed")
    if tr.method in ("full", "freeze") and mixed and tr.optimizer == "adamw":
        reasons.append(msg("rule.mixed_adamw"))
    if tr.method == "full" and tr.precision == "fp32":
        reasons.append(msg("rule.fp32_adamw"))
    if scenario.parallel.zero or scenario.parallel.distributed_optimizer:
        reasons.append(msg("rule.zero", stage=scenario.parallel.zero))
    if groups["activations"] > 0.05 * est:
        reasons.append(msg("rule.activations", gib=groups["activations"], mbs=tr.micro_batch_size, seq=tr.seq_len))
    other = memory.device_gib - memory.allocated_gib + groups["other"]
    if other > 0.3:
        reasons.append(msg("rule.overheads", gib=other))
    if tr.optimizer != "adamw" and tr.method in ("full", "freeze"):
        reasons.append(msg("rule.optimizer", optimizer=tr.optimizer))
    error = (per_gpu - est) / est if est else 0.0
    return RuleOfThumb(formula, total / GB, per_gpu, est, error, reasons)
