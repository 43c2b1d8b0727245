"""FLOPs of one training step, from the architecture.

- Matmul FLOPs: 2 per parameter per token forward, twice that backward (input and weight
  gradients): 6N per token for full training (Kaplan et al. 2020, arXiv:2001.08361, section 2.1;
  PaLM appendix B for MFU). MoE counts the experts a token uses (k of E) and the router.
- Attention: QK^T and PV, 4*s*d per token per layer forward, counted non-causal as Megatron
  (Narayanan et al. 2021, arXiv:2104.04473, appendix) and PaLM do.
- Frozen weights (LoRA, QLoRA, freeze) need no weight gradient: backward costs 2N instead of 4N;
  layers below the lowest trainable one run forward only.
- Model FLOPs (for MFU, TFLOPS/GPU) exclude recomputation; hardware FLOPs add the recomputed
  forward (full checkpointing), the attention core (selective) and FlashAttention's backward
  recomputation of the scores (Dao et al. 2022, arXiv:2205.14135, section 3.1).
"""

from __future__ import annotations

from dataclasses import dataclass

from trainsizer.models.architecture import Architecture
from trainsizer.models.params import layer_linears
from trainsizer.scenario import Scenario


@dataclass(frozen=True)
class StepFlops:
    """FLOPs per token of the whole model (all GPUs together)."""

    model_per_token: float  # useful training FLOPs, no recomputation
    hardware_per_token: float  # what the GPUs execute, recomputation included
    forward_per_token: float  # one forward pass
    attention_forward_per_token: float  # QK^T and PV of one forward pass (all layers)

    def model_tflops(self, tokens_per_s: float, gpus: int) -> float:
        return self.model_per_token * tokens_per_s / gpus / 1e12


def _layer_matmul_params(arch: Architecture, index: int) -> float:
    """Matmul parameters one token uses in layer ``index`` (routed experts: k of E)."""
    total = 0.0
    for lin in layer_linears(arch, index):
        mats = lin.in_features * lin.out_features
        if lin.group == "expert" and arch.moe:
            total += mats * arch.moe.experts_per_token
        else:
            total += mats * lin.count
    return total


def _attention_forward_per_token(arch: Architecture, seq_len: int) -> float:
    if arch.mla:
        qk = arch.mla.qk_nope_head_dim + arch.mla.qk_rope_head_dim
        v = arch.mla.v_head_dim
    else:
        qk = v = arch.head_dim
    return 2.0 * seq_len * arch.num_heads * (qk + v)


def step_flops(scenario: Scenario, arch: Architecture) -> StepFlops:
    tr = scenario.training
    attn = _attention_forward_per_token(arch, tr.seq_len)
    head = 2.0 * arch.vocab_size * arch.hidden_size if arch.lm_head else 0.0
    frozen_base = tr.method in ("lora", "qlora", "freeze")
    first_trainable = arch.num_layers - tr.freeze_trainable_layers if tr.method == "freeze" else 0
    rank = tr.lora.rank if tr.lora else 8

    model = hardware = forward = 0.0
    for i in range(arch.num_layers):
        dense = 2.0 * _layer_matmul_params(arch, i)
        fwd = dense + attn
        forward += fwd
        if tr.method == "freeze" and i < first_trainable:
            model += fwd  # no gradient reaches these layers
            hardware += fwd
            continue
        weight_grads = dense if not frozen_base or tr.method == "freeze" else 0.0
        layer = 3 * attn + dense + dense + weight_grads  # fwd + input-grad + weight-grad
        model += layer
        recompute = 0.0
        if tr.activation_checkpointing == "full":
            recompute = fwd
        elif tr.activation_checkpointing == "selective":
            recompute = attn
        flash_recompute = attn / 2 if tr.attention in ("flash", "sdpa") else 0.0  # QK^T again in backward
        hardware += layer + recompute + flash_recompute
    if tr.method in ("lora", "qlora"):
        # adapters: r*(in+out) per targeted linear, 6 FLOPs per adapter parameter per token
        adapters = 0.0
        targets = tr.lora.targets if tr.lora and tr.lora.targets else ["q_proj", "v_proj"]
        for i in range(arch.num_layers):
            for lin in layer_linears(arch, i):
                if targets == "all-linear" or lin.name in targets or set(lin.aliases) & set(targets):
                    copies = arch.moe.experts_per_token if (lin.group == "expert" and arch.moe) else lin.count
                    adapters += 6.0 * rank * (lin.in_features + lin.out_features) * copies
        model += adapters
        hardware += adapters
    head_cost = head * (3 if tr.method == "full" else 2)
    model += head_cost
    hardware += head_cost
    forward += head
    return StepFlops(model, hardware, forward, attn * arch.num_layers)
