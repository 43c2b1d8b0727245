"""FLOPs of one training step, from the architecture.

- Matmul FLOPs: 2 per parameter per token forward, twice that backward (input and weight
  gradients): 6N per token for full training (Kaplan et al. 2020, arXiv:2001.08361, section 2.1;
  PaLM appendix B for MFU). MoE counts the experts a token uses (k of E) and the router.
- Attention: QK^T and PV, 4*s*d per token per layer forward. With a causal mask only the half on and
  below the diagonal is useful work, and that half is what model FLOPs (MFU, TFLOPS/GPU) count, as
  NVIDIA's Megatron-Bridge does since 2025 (``attn_layer_flops``: ``core_seq / 2``,
  src/megatron/bridge/training/utils/flop_utils.py); the older convention of PaLM (appendix B) and
  Megatron-LM (Narayanan et al. 2021, arXiv:2104.04473, appendix) counts the full square, which
  inflates MFU with the sequence length (at 24k tokens a 7B model's "MFU" is 1.5x its useful work).
  The full-attention figures are kept (``*_full_attention_per_token``) to compare with published
  numbers that use that convention.
- Frozen weights (LoRA, QLoRA, freeze) need no weight gradient: backward costs 2N instead of 4N;
  layers below the lowest trainable one run forward only.
- Model FLOPs (for MFU, TFLOPS/GPU) exclude recomputation; hardware FLOPs (HFU) count what the kernels
  execute (all of the masked square for eager attention, the causal half for fused kernels) and add the recomputed
  forward (full checkpointing, every n-th layer), the modules Megatron's selective recomputation names (the
  attention core by default: :func:`selective_recomputed`), every
  second matmul (torchtitan's per-op policy) and FlashAttention's backward recomputation of the
  scores (Dao et al. 2022, arXiv:2205.14135, section 3.1).
- What the GPUs execute, and so the step time, differs from the convention in one place: with a
  causal mask FlashAttention and SDPA's fused kernels skip the blocks above the diagonal, half of
  the score and value matmuls (Dao 2023, FlashAttention-2, arXiv:2307.08691, section 3.1.1); eager
  attention computes the full score matrix and masks it. The executed FLOPs are split into
  linear GEMMs, routed-expert GEMMs and the attention core, which run at different rates (FP8 covers
  the linears only; expert GEMMs are small).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from trainsizer.arrays import where
from trainsizer.estimate.cache_keys import json_key
from trainsizer.estimate.training_state import lora_targets
from trainsizer.models.architecture import Architecture
from trainsizer.models.param_counts import Linear, layer_linears, moe_layer_linears
from trainsizer.scenario import Scenario


@dataclass(frozen=True)
class StepFlops:
    """FLOPs per token of the whole model (all GPUs together)."""

    model_per_token: float  # useful training FLOPs, no recomputation, causal attention counted as its half
    hardware_per_token: float  # what the GPUs execute: recomputation, attention as the kernel runs it
    forward_per_token: float  # one forward pass
    attention_forward_per_token: float  # QK^T and PV of one forward pass (all layers)
    # executed, for the step time: linear GEMMs (dense layers, shared experts, router, LM head, adapters),
    # routed-expert GEMMs, the attention core (causal masking skips half)
    linear_per_token: float = 0.0
    expert_per_token: float = 0.0
    attention_per_token: float = 0.0
    # the same two figures with attention counted in full (PaLM appendix B, Narayanan et al. 2021): how
    # published TFLOPS/GPU and MFU before 2025 were computed
    model_full_attention_per_token: float = 0.0
    hardware_full_attention_per_token: float = 0.0
    # the LM head's GEMMs (forward and backward), part of linear_per_token: under pipeline parallelism they all run
    # on the last stage (:func:`pipeline_stage_linear`)
    head_per_token: float = 0.0

    def model_tflops(self, tokens_per_s: float, gpus: int) -> float:
        return self.model_per_token * tokens_per_s / gpus / 1e12


def _mats(arch: Architecture, lin: Linear) -> float:
    """Matmul parameters one token uses in one linear kind (routed experts: k of E)."""
    if lin.group == "expert" and arch.moe:
        return lin.in_features * lin.out_features * arch.moe.experts_per_token
    return lin.in_features * lin.out_features * lin.count


def _layer_matmul_params(arch: Architecture, index: int) -> tuple[float, float]:
    """(non-expert, routed-expert) matmul parameters one token uses in layer ``index``."""
    return _matmul_params(arch, arch.is_moe_layer(index))


@lru_cache(maxsize=512)
def _matmul_params(arch: Architecture, moe_layer: bool) -> tuple[float, float]:
    """(non-expert, routed-expert) matmul parameters one token uses in a dense or MoE layer (once per model)."""
    dense = expert = 0.0
    for lin in moe_layer_linears(arch, moe_layer):
        if lin.group == "expert":
            expert += _mats(arch, lin)
        else:
            dense += _mats(arch, lin)
    return dense, expert


def selective_op_recomputed(arch: Architecture, index: int) -> tuple[float, float]:
    """torchtitan's per-op checkpointing saves the output of every odd-numbered matmul of a layer (counted in
    forward order, per layer) and recomputes the even-numbered ones (torchtitan ``_apply_ac_to_transformer_block``,
    ``_save_list`` and ``mm_count``): the (non-expert, expert) matmul parameters per token recomputed."""
    dense = expert = 0.0
    for n, lin in enumerate(layer_linears(arch, index), start=1):
        if n % 2 == 0:
            if lin.group == "expert":
                expert += _mats(arch, lin)
            else:
                dense += _mats(arch, lin)
    return dense, expert


MLA_UP_PROJECTIONS = ("q_b_proj", "kv_b_proj")  # param_counts.attention_linears' names of MLA's up projections


def selective_recomputed(arch: Architecture, index: int, modules: tuple[str, ...] | None) -> tuple[float, float, float]:
    """Megatron-Core's selective recomputation of ``modules`` (``training.recompute_modules``; default the attention
    core): the (non-expert, expert) matmul parameters per token whose forward backward runs again, and the share of
    the attention core run again. 'moe' re-runs a MoE layer's router, shared and routed experts, 'shared_experts'
    and 'mlp' their linears, 'mla_up_proj' MLA's up projections; 'layernorm' and 'moe_act' re-run element-wise work
    only (megatron/core/transformer/transformer_config.py @ d98e8a64ddf34856e74b24714e3bedb2f5a39553,
    recompute_modules)."""
    chosen = set(modules or ("core_attn",))
    moe_layer = arch.is_moe_layer(index) and arch.moe is not None
    groups = {"expert", "router", "shared_expert"} if moe_layer and "moe" in chosen else set()
    if moe_layer and "shared_experts" in chosen:
        groups.add("shared_expert")
    if not moe_layer and "mlp" in chosen:
        groups.add("mlp")
    dense = expert = 0.0
    for lin in layer_linears(arch, index):
        if lin.group in groups or ("mla_up_proj" in chosen and lin.name in MLA_UP_PROJECTIONS):
            if lin.group == "expert":
                expert += _mats(arch, lin)
            else:
                dense += _mats(arch, lin)
    return dense, expert, 1.0 if "core_attn" in chosen else 0.0


def _attention_forward_per_token(arch: Architecture, seq_len: int) -> float:
    if arch.mla:
        qk = arch.mla.qk_nope_head_dim + arch.mla.qk_rope_head_dim
        v = arch.mla.v_head_dim
    else:
        qk = v = arch.head_dim
    return 2.0 * seq_len * arch.num_heads * (qk + v)


def window_share(window: int, seq_len: int) -> float:
    """A sliding-window layer's attention FLOPs over a full-attention layer's, both counted in full: a causal query
    at position ``i`` attends to ``min(i + 1, w)`` keys, on average ``w - w^2 / 2s`` of ``s`` (Beltagy et al. 2020,
    Longformer, arXiv:2004.05150, section 3.1: sliding-window attention is O(s w)), so ``(2w - w^2/s) / s`` against
    the full count's ``s``; 1 for a full layer (``window`` 0) or a window as long as the sequence. A fused kernel skips
    the blocks outside the window (FlashAttention-2's ``window_size``); eager attention computes the square and masks
    it (:func:`count_step_flops`)."""
    if not window or window >= seq_len:
        return 1.0
    return (2.0 * window - window * window / seq_len) / seq_len


def useful_attention_fraction(scenario: Scenario, arch: Architecture) -> float:
    """Fraction of the full attention square that is useful work: 1/2 under a causal mask (decoders), else 1; with
    packed documents that attend only to themselves, the blocks on the diagonal: sum(s_i^2) / S^2 = document /
    sequence length (Megatron-Bridge's THD count, sum of s_i^2, flop_utils ``accumulate_flops_metadata``)."""
    tr = scenario.training
    mask = tr.attention_mask or ("causal" if arch.lm_head else "full")
    documents = min(tr.document_tokens, tr.seq_len) / tr.seq_len if tr.document_tokens else 1.0
    return (0.5 if mask == "causal" else 1.0) * documents


def causal_fraction(scenario: Scenario, arch: Architecture) -> float:
    """Fraction of the attention matmuls executed: the useful fraction in a fused kernel that skips masked blocks
    (1/2 under a causal mask, less with packed documents); eager attention computes the whole square."""
    useful = useful_attention_fraction(scenario, arch)
    return useful if scenario.training.attention in ("flash", "sdpa") else 1.0


def recomputed_layer(scenario: Scenario, index: int) -> bool:
    """Whether layer ``index`` is recomputed whole in backward (full, or one in n layers)."""
    tr = scenario.training
    if tr.activation_checkpointing == "full":
        return True
    return tr.activation_checkpointing == "every-n-layers" and index % tr.checkpoint_every_n_layers == 0


_FLOPS: dict[tuple[Architecture, str], StepFlops] = {}
FLOPS_CACHED = 512
_FLOPS_LOCK = threading.Lock()


def clear_caches() -> None:
    with _FLOPS_LOCK:
        _FLOPS.clear()
    _matmul_params.cache_clear()


def step_flops(scenario: Scenario, arch: Architecture) -> StepFlops:
    """The FLOPs per token of ``scenario`` on ``arch``. They read the model and the training block only (not the
    layout or the GPU: ``tests/test_plan.py`` checks it), so every layout of a job shares one count."""
    key = (arch, json_key(scenario.training))
    found = _FLOPS.get(key)
    if found is None:
        found = count_step_flops(scenario, arch)
        with _FLOPS_LOCK:  # the web server's threads may plan at once
            if len(_FLOPS) >= FLOPS_CACHED:
                _FLOPS.pop(next(iter(_FLOPS)))
            _FLOPS[key] = found
    return found


# long: one layer's forward, backward and recomputation per checkpointing policy, then adapters and the head
def count_step_flops(scenario: Scenario, arch: Architecture) -> StepFlops:
    tr = scenario.training
    attn = _attention_forward_per_token(arch, tr.seq_len)
    causal = causal_fraction(scenario, arch)
    head = 2.0 * arch.vocab_size * arch.hidden_size if arch.lm_head else 0.0
    frozen_base = tr.method in ("lora", "qlora", "freeze")
    first_trainable = arch.num_layers - tr.freeze_trainable_layers if tr.method == "freeze" else 0
    rank = tr.lora.rank if tr.lora else 8
    flash = tr.attention in ("flash", "sdpa")

    model = hardware = forward = 0.0
    model_attn = 0.0  # the attention square's share of the model FLOPs (full convention)
    lin = exp = att = 0.0  # executed: linear, expert, attention
    attention_forward = 0.0
    for i in range(arch.num_layers):
        d_par, e_par = _layer_matmul_params(arch, i)
        dense_d, dense_e = 2.0 * d_par, 2.0 * e_par
        dense = dense_d + dense_e
        layer_attn = attn * window_share(arch.attention_window(i), tr.seq_len)
        run = (layer_attn if flash else attn) * causal  # executed: eager attention masks the full square
        attention_forward += layer_attn
        fwd = dense + layer_attn
        forward += fwd
        if tr.method == "freeze" and i < first_trainable:
            model += fwd  # no gradient reaches these layers
            hardware += fwd
            model_attn += layer_attn
            lin, exp, att = lin + dense_d, exp + dense_e, att + run
            continue
        grads = 1.0 if not frozen_base or tr.method == "freeze" else 0.0  # weight gradients
        layer = 3 * layer_attn + dense * (2 + grads)  # fwd + input-grad + weight-grad
        model += layer
        model_attn += 3 * layer_attn
        lin += dense_d * (2 + grads)
        exp += dense_e * (2 + grads)
        att += 3 * run
        recompute_lin = recompute_exp = recompute_attn = 0.0
        if recomputed_layer(scenario, i):
            recompute_lin, recompute_exp, recompute_attn = dense_d, dense_e, 1.0
        elif tr.activation_checkpointing == "selective":
            r_d, r_e, recompute_attn = selective_recomputed(arch, i, tr.recompute_modules)
            recompute_lin, recompute_exp = 2.0 * r_d, 2.0 * r_e
        elif tr.activation_checkpointing == "selective-op":
            r_d, r_e = selective_op_recomputed(arch, i)
            recompute_lin, recompute_exp = 2.0 * r_d, 2.0 * r_e
        flash_recompute = 0.5 if flash else 0.0  # QK^T again in backward
        hardware += layer + recompute_lin + recompute_exp + (recompute_attn + flash_recompute) * layer_attn
        lin += recompute_lin
        exp += recompute_exp
        att += (recompute_attn + flash_recompute) * run
    if tr.method in ("lora", "qlora"):
        # adapters: r*(in+out) per targeted linear, 6 FLOPs per adapter parameter per token; the targets the memory
        # estimate adapts (peft's defaults per model type where the scenario names none)
        adapters = 0.0
        named = lora_targets(scenario, arch)
        for i in range(arch.num_layers):
            for lin_ in layer_linears(arch, i):
                if lin_.targeted_by(named):
                    copies = arch.moe.experts_per_token if (lin_.group == "expert" and arch.moe) else lin_.count
                    adapters += 6.0 * rank * (lin_.in_features + lin_.out_features) * copies
        model += adapters
        hardware += adapters
        lin += adapters
    head_cost = head * (3 if tr.method == "full" else 2)
    model += head_cost
    hardware += head_cost
    lin += head_cost
    forward += head
    # model FLOPs count the useful part of the square; hardware FLOPs are what the kernels execute
    useful = model - (1 - useful_attention_fraction(scenario, arch)) * model_attn
    return StepFlops(useful, lin + exp + att, forward, attention_forward, lin, exp, att, model, hardware,
                     head_per_token=head_cost)


def pipeline_stage_linear(linear_per_token: Any, head_per_token: Any, pp: Any, share: Any = 1.0,
                          holds_head: bool = True) -> Any:
    """The linear GEMM FLOPs per token of the pipeline's slowest stage, times ``pp`` (so that dividing by ``pp``,
    as every other per-GPU term does, gives the stage's own): ``share`` times the mean stage's layers and, where it
    holds it, the LM head besides (estimate/pipeline_split.py: under Megatron-LM's default even split the last
    stage, ``share`` 1; Narayanan et al. 2021, arXiv:2104.04473, section 2.2). Every stage waits for the slowest, in
    the steady state and in the bubble. Floats or arrays (plan/fast.py)."""
    if holds_head is True:
        return share * linear_per_token + (pp - share) * head_per_token
    return where(holds_head, share * linear_per_token + (pp - share) * head_per_token,
                 share * (linear_per_token - head_per_token))
