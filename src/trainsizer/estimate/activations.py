"""Activation memory: the tensors autograd saves for backward, per layer and per token.

Structure after Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
Models" (arXiv:2205.05198): per layer ``s*b*h*(34 + 5*a*s/h)`` bytes for a 16-bit GPT layer,
split into a part replicated across tensor-parallel ranks (norm and linear inputs, dropout masks)
and a part sharded by ``tp`` (q/k/v, attention core, MLP intermediates); sequence parallelism
shards the replicated part too; full recomputation keeps only each layer's input; selective
recomputation drops the attention-score terms. The tensor list is generalised to what the Hugging
Face implementations save: GQA k/v widths, gated MLPs (three ``f``-wide tensors), fp32 RMSNorm
inputs, frozen weights whose inputs need not be kept (LoRA, freeze), LoRA dropout, MoE routing
(each token's activations in its ``k`` experts), and FlashAttention (Dao et al. 2022), which
keeps only the output and the log-sum-exp instead of the ``s*s`` scores.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from trainsizer.arrays import maximum, minimum, where
from trainsizer.estimate.cache_keys import json_key
from trainsizer.estimate.flops import recomputed_layer
from trainsizer.estimate.model_params import MemoryModel
from trainsizer.estimate.training_state import (
    ACTIVATION_BYTES,
    RESIDUAL_BYTES,
    LayerState,
    TrainingState,
    training_state,
)
from trainsizer.messages import Message, listing, msg
from trainsizer.models.architecture import Architecture
from trainsizer.models.param_counts import Linear
from trainsizer.scenario import Scenario


@dataclass(frozen=True)
class LayerActivations:
    """Activation bytes per token of one layer: replicated, tensor-parallel sharded, attention scores, unsaved."""

    replicated: float  # bytes per token not split by tensor parallelism
    sharded: float  # bytes per token split by tensor parallelism
    scores: float  # bytes per token of eager attention scores (dropped by selective recomputation)
    # bytes per token element-wise work writes and reads but autograd does not keep (tp-sharded): eager attention's
    # probs @ V output, read once by the contiguous copy that feeds o_proj; the speed model's traffic counts them (as
    # counted: no implementation_factor, which scales what is kept)
    unsaved: float = 0.0


@dataclass(frozen=True)
class StageActivations:
    """The activations of one pipeline stage: kept for backward, the logits on top, backward's working set."""

    saved: float  # bytes kept for backward at the end of the forward pass (all in-flight micro-batches)
    logits: float  # logits and loss buffers on top of ``saved`` at the loss
    backward_working: float  # one layer's gradients / recomputed activations during backward
    why: Message
    logits_why: Message
    # how the fitted activation parameters act (a fit re-prices a case from these without re-running):
    scaled_saved: float = 0.0  # the part of ``saved`` proportional to implementation_factor
    largest_layer: float = 0.0  # the largest layer's activations without recomputation (scaled too)
    full_checkpointing: bool = False  # backward recomputes layers (full, selective-op, every-n-layers)
    unsaved_traffic: float = 0.0  # LayerActivations.unsaved of the stage's layers, all micro-batches in flight

    def refit(self, factor_ratio: float, backward_working_fraction: float) -> tuple[float, float]:
        """(saved, backward_working) with implementation_factor multiplied by ``factor_ratio`` and another
        backward_working_fraction: the formula of :func:`stage_activations`."""
        largest = self.largest_layer * factor_ratio
        working = largest * ((1 if self.full_checkpointing else 0) + backward_working_fraction)
        return self.saved + self.scaled_saved * (factor_ratio - 1), working


def _needs_input(linears: list[Linear], layer: LayerState, saves_frozen_input: bool = False) -> bool:
    """Whether a linear's input is kept: its weight or adapter needs a gradient, or (bitsandbytes
    4-bit ``MatMul4Bit``) the quantized base saves its input whenever the input requires grad."""
    return saves_frozen_input or layer.trainable_base or any(lin in layer.lora for lin in linears)


# long: one term per saved tensor of a transformer layer, in the order of Korthikanti et al. 2022, Table 2
def layer_activations(sc: Scenario, arch: Architecture, p: MemoryModel, layer: LayerState) -> LayerActivations:
    """Saved bytes per token of one layer without recomputation."""
    tr = sc.training
    e = ACTIVATION_BYTES[tr.precision]
    r = RESIDUAL_BYTES[tr.precision]
    pa = p.activations
    nb = pa.rmsnorm_saved_bytes if arch.norm == "rmsnorm" else r
    h = arch.hidden_size
    attn = [lin for lin in layer.linears if lin.group == "attention"]
    qkv_mods, out_mods = attn[:-1], attn[-1:]
    mlp = [lin for lin in layer.linears if lin.group != "attention"]
    q_saves = _quantized_saves_input(sc, p)

    replicated = arch.norms_per_layer * h * nb
    sharded = 0.0
    # LoRA branch: dropout mask + dropped input per adapted module (peft keeps one dropout per
    # module), and the rank-r intermediate (input of lora_B).
    rank = tr.lora.rank if tr.lora else 8
    dropout = tr.lora.dropout if tr.lora else 0.0
    for lin in layer.lora:
        # a routed expert sees each token k times (once per expert it is sent to)
        visits = arch.moe.experts_per_token if (lin.group == "expert" and arch.moe) else 1
        if dropout > 0:
            replicated += lin.in_features * (1 + e) * visits
        replicated += rank * e * visits
    # attention
    if _needs_input(qkv_mods, layer, q_saves):
        replicated += h * e
    if arch.mla:
        m = arch.mla
        sharded += _mla_up_projected(arch, e)
        replicated += (m.kv_lora_rank + m.q_lora_rank) * e
    else:
        sharded += (arch.q_dim + 2 * arch.kv_dim) * e
    if arch.qk_norm:
        sharded += (arch.q_dim + arch.kv_dim) * nb
    scores = 0.0
    if tr.attention == "eager":
        softmax_b = 4.0  # HF eager attention (and autocast) run softmax in fp32; its output is saved
        cast_b = e if e < 4 else 0.0  # probabilities cast to the compute dtype for probs @ V (saved)
        # attention dropout: the mask, plus the dropped probabilities when no cast follows
        drop_b = (pa.eager_mask_bytes + (softmax_b if not cast_b else 0.0)) if arch.dropout else 0.0
        kv_len = tr.seq_len
        scores = arch.num_heads * kv_len * (softmax_b + drop_b + cast_b)
    else:
        sharded += arch.num_heads * 4.0  # log-sum-exp per head (FlashAttention backward)
    # attention output: kept by a fused kernel's backward (FlashAttention, SDPA); eager attention's probs @ V saves its
    # inputs (probabilities, V), not its output (PyTorch tools/autograd/derivatives.yaml, bmm: grads from self, mat2)
    unsaved = arch.attn_out_dim * e if tr.attention == "eager" else 0.0
    sharded += arch.attn_out_dim * e - unsaved
    if _needs_input(out_mods, layer, q_saves):
        sharded += arch.attn_out_dim * e  # contiguous copy that feeds o_proj
    if arch.dropout:
        replicated += h * pa.eager_mask_bytes
    # MLP
    moe_layer = arch.is_moe_layer(layer.index) and arch.moe is not None
    ups, downs = _ups_downs(arch, mlp)
    if _needs_input(ups, layer, q_saves) and arch.norms_per_layer > 1:
        replicated += h * e  # (a shared pre-norm, as in phi, feeds attention and MLP one tensor)
    if moe_layer:
        down = _needs_input(downs, layer, q_saves)
        sharded += _routed_bytes(arch, e, down) + _shared_bytes(arch, e, down)
    else:
        sharded += _mlp_bytes(arch, arch.intermediate_size, e, _needs_input(downs, layer, q_saves))
    if arch.dropout:
        replicated += h * pa.eager_mask_bytes
    factor = activation_factor(tr.compile, p)
    return LayerActivations(replicated * factor, sharded * factor, scores * factor, unsaved)


def _quantized_saves_input(sc: Scenario, p: MemoryModel) -> bool:
    """Whether a QLoRA run's quantized linears keep their inputs (bitsandbytes' ``MatMul4Bit``)."""
    tr = sc.training
    return tr.method == "qlora" and bool(p.activations.quantized_linear_saves_input) and tr.quantized_inputs != "none"


def _mla_up_projected(arch: Architecture, e: float) -> float:
    """Bytes per token (tp-sharded) of MLA's up-projected q, k and v."""
    return (arch.q_dim + arch.kv_dim + arch.v_dim) * e


def _routed_bytes(arch: Architecture, e: float, down_input: bool) -> float:
    """Bytes per token (tp-sharded) of a MoE layer's router probabilities, dispatched copies and k experts."""
    moe = arch.moe
    return moe.num_experts * 4.0 + moe.experts_per_token * (
        arch.hidden_size * e + _mlp_bytes(arch, moe.expert_intermediate_size, e, down_input))


def _shared_bytes(arch: Architecture, e: float, down_input: bool) -> float:
    """Bytes per token (tp-sharded) of a MoE layer's shared experts' intermediates (0 without them)."""
    return _mlp_bytes(arch, arch.moe.shared_intermediate_size, e, down_input) if arch.moe.shared_intermediate_size \
        else 0.0


def _ups_downs(arch: Architecture, mlp: list[Linear]) -> tuple[list[Linear], list[Linear]]:
    """The MLP's (input-side, output-side) linears, the router left out."""
    ups = [lin for lin in mlp if lin.name in ("gate_proj", "up_proj", "w1", "w3", "c_fc", "fc1", "dense_h_to_4h")
           or (lin.name == "dense" and lin.out_features > arch.hidden_size)]
    return ups, [lin for lin in mlp if lin not in ups and lin.group != "router"]


def selective_dropped(sc: Scenario, arch: Architecture, p: MemoryModel, layer: LayerState) -> tuple[float, float]:
    """(replicated, tp-sharded) bytes per token of one layer that Megatron-Core's selective recomputation of
    ``training.recompute_modules`` drops besides the attention scores (:func:`layer_activations`' terms and factor):
    'layernorm' the norm outputs, 'mla_up_proj' MLA's up-projected q, k, v, 'moe' a MoE layer past its input, 'moe_act'
    the experts' activation outputs, 'shared_experts' and 'mlp' theirs (transformer_config.py @ d98e8a64)."""
    chosen = set(sc.training.recompute_modules or ())
    e, h = ACTIVATION_BYTES[sc.training.precision], arch.hidden_size
    q_saves = _quantized_saves_input(sc, p)
    attn = [lin for lin in layer.linears if lin.group == "attention"]
    ups, downs = _ups_downs(arch, [lin for lin in layer.linears if lin.group != "attention"])
    down = _needs_input(downs, layer, q_saves)
    replicated = sharded = 0.0
    if "layernorm" in chosen:
        replicated += h * e * (_needs_input(attn[:-1], layer, q_saves)
                               + (_needs_input(ups, layer, q_saves) and arch.norms_per_layer > 1))
    if "mla_up_proj" in chosen and arch.mla:
        sharded += _mla_up_projected(arch, e)
    moe = arch.moe if arch.is_moe_layer(layer.index) else None
    if moe is not None and "moe" in chosen:
        sharded += _routed_bytes(arch, e, down)
    elif moe is not None and "moe_act" in chosen and down:
        sharded += moe.experts_per_token * moe.expert_intermediate_size * e
    if moe is not None and chosen & {"moe", "shared_experts"}:
        sharded += _shared_bytes(arch, e, down)
    if moe is None and "mlp" in chosen:
        sharded += _mlp_bytes(arch, arch.intermediate_size, e, down)
    factor = activation_factor(sc.training.compile, p)
    return replicated * factor, sharded * factor


def activation_factor(compiled: bool, p: MemoryModel) -> float:
    """The factor on a layer's saved bytes: ``implementation_factor``, times ``compiled_factor`` under
    torch.compile."""
    return p.activations.implementation_factor * compiled_activation_factor(compiled, p)


def compiled_activation_factor(compiled: bool | float, p: MemoryModel) -> float:
    """The share of a layer's saved bytes kept under torch.compile: AOTAutograd's min-cut partitioner recomputes
    cheap element-wise intermediates in backward instead of saving them (Ansel et al. 2024, PyTorch 2, ASPLOS,
    section 4.3: 'rematerialization'); 1 in eager mode. ``compiled_factor`` is fitted."""
    return float(p.activations.compiled_factor) if compiled else 1.0


def _mlp_bytes(arch: Architecture, width: int, e: float, down_input: bool) -> float:
    if arch.gated_mlp:
        # gate output (saved by the activation), up output and activation output (saved by the product)
        return 3 * width * e + (width * e if down_input else 0.0)
    # first linear output (saved by GELU), activation output feeds the second linear
    return width * e + (width * e if down_input else 0.0)


def grad_reaches(st: TrainingState, layer: LayerState) -> bool:
    """Whether backward runs through this layer (below the lowest trainable weight it stops)."""
    method = st.scenario.training.method
    if method != "freeze":
        return True
    first_trainable = len(st.layers) - st.scenario.training.freeze_trainable_layers
    return layer.index >= first_trainable


def selective_op_saved(sc: Scenario, arch: Architecture, layer: LayerState) -> tuple[float, float]:
    """(replicated, tp-sharded) bytes per token torchtitan's per-op checkpointing keeps of one layer: its input, the
    outputs of the odd-numbered matmuls (in forward order; the even ones are recomputed) and of the attention kernel
    with its log-sum-exp (torchtitan ``_apply_ac_to_transformer_block``: ``_save_list`` = mm, SDPA, reduce-scatter;
    every second mm recomputed). Everything element-wise is recomputed. No implementation factor: only these
    tensors are kept."""
    tr = sc.training
    e, r = ACTIVATION_BYTES[tr.precision], RESIDUAL_BYTES[tr.precision]
    replicated = arch.hidden_size * r  # the checkpointed layer's input
    sharded = arch.attn_out_dim * e + arch.num_heads * 4.0
    for n, lin in enumerate(layer.linears, start=1):
        if n % 2 == 0 or lin.group == "router":
            continue
        copies = arch.moe.experts_per_token if (lin.group == "expert" and arch.moe) else lin.count
        if lin.out_features == arch.hidden_size and lin.group != "expert":
            replicated += lin.out_features * e * copies  # row-parallel output (reduced over tp)
        else:
            sharded += lin.out_features * e * copies
    return replicated, sharded


def kept_quantized_inputs(sc: Scenario, arch: Architecture, layer: LayerState) -> tuple[float, float]:
    """(replicated, tp-sharded) bytes per token of one layer's quantized-linear inputs that checkpointing cannot drop
    (``training.quantized_inputs: kept``; (0, 0) otherwise): bitsandbytes' ``MatMul4Bit.forward`` before 0.43.2 keeps
    its input as a plain attribute (``ctx.tensors = (A, B)``), not through ``save_for_backward``, so non-reentrant
    checkpointing (``torch.utils.checkpoint(use_reentrant=False)``, whose saved-tensor hooks only see saved tensors)
    leaves it alive from the layer's forward to its backward (bitsandbytes-foundation/bitsandbytes
    ``bitsandbytes/autograd/_functions.py`` @ 0.41.0; fixed by PR #1270, commit 9e75374, released in 0.43.2, "the bug
    that caused a lot of memory issues with QLoRA"). Reentrant checkpointing runs the forward without a graph and
    keeps nothing. Kept: the attention input (one norm output for q/k/v), the output projection's input, the MLP
    input and the down projection's input (each routed expert's for a token's ``k`` experts)."""
    tr = sc.training
    if tr.method != "qlora" or tr.quantized_inputs != "kept":
        return 0.0, 0.0
    e, h = ACTIVATION_BYTES[tr.precision], arch.hidden_size
    replicated = h * e * (2 if arch.norms_per_layer > 1 else 1)  # attention input, MLP input (one with a shared norm)
    sharded = arch.attn_out_dim * e
    if arch.is_moe_layer(layer.index) and arch.moe is not None:
        moe = arch.moe
        sharded += moe.experts_per_token * (h + moe.expert_intermediate_size) * e  # dispatched copies, down inputs
        sharded += (moe.shared_intermediate_size or 0) * e
    else:
        sharded += arch.intermediate_size * e
    return replicated, sharded


def lm_head_cast_bytes(sc: Scenario, arch: Architecture) -> float:
    """Bytes of the LM head's weight that autocast casts to bf16 and keeps for backward when a QLoRA run holds its
    unquantized layers in fp16 (``training.unquantized_dtype: fp16``; 0 otherwise): transformers loads the layers it
    leaves unquantized in float16 when a bitsandbytes model is loaded without a ``torch_dtype`` (the quantizer's
    ``update_torch_dtype``: "Overriding torch_dtype=None with torch_dtype=torch.float16 ... Pass your own torch_dtype
    to specify the dtype of the remaining non-linear layers"), and under bf16 autocast ``F.linear`` casts its fp16
    weight to a bf16 copy, which the matmul saves to compute its input's gradient (PyTorch autocast: ``linear`` runs in
    the lower-precision dtype; the cast of a weight that needs no gradient is not cached but saved by the op). One
    ``vocab x hidden`` bf16 copy (per tensor-parallel rank's share) from the loss's forward to the head's backward."""
    tr = sc.training
    if tr.method != "qlora" or tr.unquantized_dtype != "fp16" or not arch.lm_head:
        return 0.0
    return arch.vocab_size * arch.hidden_size * 2.0 / sc.parallel.tp


def _recomputes(sc: Scenario) -> bool:
    """Whether backward recomputes layers (then one layer's activations are rebuilt at a time)."""
    return sc.training.activation_checkpointing in ("full", "selective-op", "every-n-layers")


def _layer_saved(sc: Scenario, arch: Architecture, p: MemoryModel, layer: LayerState, la: LayerActivations,
                 full: float, tokens: float, replicated_div: int) -> tuple[float, float]:
    """(part scaled by implementation_factor, exact part) of one layer's saved bytes under the checkpointing policy."""
    policy, tp = sc.training.activation_checkpointing, sc.parallel.tp
    kept_rep, kept_sh = kept_quantized_inputs(sc, arch, layer)  # what checkpointing cannot drop (bitsandbytes < 0.43.2)
    kept = layer_bytes(kept_rep, kept_sh, tp, replicated_div, tokens)
    if policy == "selective-op":
        rep, sh = selective_op_saved(sc, arch, layer)
        sdpa_out = arch.attn_out_dim * ACTIVATION_BYTES[sc.training.precision] / tp * tokens if kept else 0.0
        return 0.0, (rep / replicated_div + sh / tp) * tokens + kept - sdpa_out  # the o_proj input is saved already
    layer_input = checkpoint_input_per_token(arch, sc.training.precision) * tokens / replicated_div
    dropped = la.scores / tp * tokens
    if policy == "selective":  # Megatron-Core's modules: the attention core (its scores) unless others are named
        dropped *= "core_attn" in (sc.training.recompute_modules or ("core_attn",))
        dropped += layer_bytes(*selective_dropped(sc, arch, p, layer), tp, replicated_div, tokens)
    return layer_saved(recomputed_layer(sc, layer.index), policy == "selective", full, dropped, layer_input, kept)


def layer_saved(recomputed: Any, selective: Any, full: Any, scores: Any, layer_input: Any,
                kept: Any) -> tuple[Any, Any]:
    """(part scaled by implementation_factor, exact part) of one layer's saved bytes on one GPU: a recomputed layer
    keeps only its input (and what checkpointing cannot drop, ``kept``), selective recomputation drops the attention
    scores, else the whole layer is kept (Korthikanti et al. 2022, arXiv:2205.05198, sections 4-5); numbers, or arrays
    of many layouts (plan/fast.py)."""
    return (where(recomputed, 0.0, where(selective, full - scores, full)),
            where(recomputed, layer_input + kept, 0.0))


def last_layer_alive(largest_layer: Any, recomputes: Any) -> Any:
    """The last layer's activations still alive when backward starts: none where backward recomputes layers (the
    working set holds them, :func:`backward_working`); numbers or arrays."""
    return where(recomputes, 0.0, largest_layer)


def checkpoint_input_per_token(arch: Architecture, precision: str) -> float:
    """Bytes per token a checkpointed layer keeps: its input, in the residual stream's dtype."""
    return arch.hidden_size * RESIDUAL_BYTES[precision]


def embedding_saved_per_token(arch: Architecture, precision: str) -> float:
    """Bytes per token the embedding side of the first stage keeps: the dropout mask (one byte an element) and the
    embedding norm's input (residual dtype), where the model has them."""
    return (arch.hidden_size if arch.dropout else 0.0) + (
        arch.hidden_size * RESIDUAL_BYTES[precision] if arch.embedding_norm else 0.0)


def final_norm_input_per_token(arch: Architecture) -> float:
    """Bytes per token of the final norm's fp32 input, kept with the logits on the last stage."""
    return arch.hidden_size * 4.0


def stage_activations(sc: Scenario, arch: Architecture, p: MemoryModel, st: TrainingState,
                      stage: int) -> StageActivations:
    """What one GPU of pipeline stage ``stage`` keeps for backward, the logits and the backward working set.
    They read the model, the memory parameters, the state's layers and the scenario's training and layout (never
    the GPU): computed once per layout and stage in the state's shared cache (the planner re-checks the same
    layout on many GPU types)."""
    if p is not st.params or arch is not st.arch:
        return _stage_activations(sc, arch, p, st, stage)
    key = ("activations", stage, json_key(sc.training), json_key(sc.parallel))
    if key not in st.stage_cache:
        st.stage_cache[key] = _stage_activations(sc, arch, p, st, stage)
    return st.stage_cache[key]


# long: per-layer saved bytes, the pipeline schedule's in-flight micro-batches, embedding and loss ends
def _stage_activations(sc: Scenario, arch: Architecture, p: MemoryModel, st: TrainingState,
                       stage: int) -> StageActivations:
    tr, par = sc.training, sc.parallel
    tp, pp = par.tp, par.pp
    tokens = tr.micro_batch_size * tr.seq_len / par.cp  # tokens of one micro-batch on this GPU
    e = ACTIVATION_BYTES[tr.precision]
    layers = [layer for layer in st.stage_layers(stage) if grad_reaches(st, layer)]
    replicated_div = replicated_divisor(tp, par.sequence_parallel)

    scaled_layers = exact_layers = unsaved = 0.0
    per_layer_full: list[float] = []
    computed: dict[tuple, tuple[float, float, float, float]] = {}
    for layer in layers:
        # layers differ only by MoE-ness, trainability and adapters, and by whether backward recomputes them: compute
        # each kind once (the adapters by module name: within one MoE-ness a name is one shape, and a str hashes once,
        # a Linear on every lookup); the sums below still add every layer's figures in order
        key = (arch.is_moe_layer(layer.index), layer.trainable_base, tuple(lin.name for lin in layer.lora),
               recomputed_layer(sc, layer.index))
        if key not in computed:
            la = layer_activations(sc, arch, p, layer)
            full = layer_bytes(la.replicated, la.sharded + la.scores, tp, replicated_div, tokens)
            computed[key] = (full, la.unsaved / tp * tokens,
                             *_layer_saved(sc, arch, p, layer, la, full, tokens, replicated_div))
        full, layer_unsaved, scaled, exact = computed[key]
        per_layer_full.append(full)
        unsaved += layer_unsaved
        scaled_layers += scaled
        exact_layers += exact

    in_flight, interleave = pipeline_in_flight(pp, stage, sc.grad_accumulation_steps, par.virtual_pp)
    # embedding-side tensors on the first stage (dropout masks, embedding norm input)
    embedding = embedding_saved_per_token(arch, tr.precision) * tokens if stage == 0 and layers else 0.0
    saved = stage_saved_bytes(scaled_layers + exact_layers, in_flight, interleave, embedding)
    scaled_saved = scaled_layers * in_flight * interleave
    why = listing([msg("mem.activations", layers=len(layers), tokens=tokens, ckpt=tr.activation_checkpointing,
                       attention=tr.attention), msg("mem.compiled") if tr.compile else None,
                   msg("mem.in_flight", n=in_flight) if in_flight > 1 else None,
                   msg("mem.interleaving", x=interleave) if interleave > 1 else None])

    # logits and loss on the last stage
    logits = 0.0
    logits_why = msg("mem.no_logits")
    if stage == pp - 1 and arch.lm_head:
        # Liger's fused linear cross-entropy (linkedin/Liger-Kernel src/liger_kernel/ops/fused_linear_cross_entropy.py)
        # runs the lm_head and the loss chunk by chunk: a standard loss under it is a chunked one
        loss = "chunked" if tr.liger_kernel and tr.loss == "standard" else tr.loss
        per_logit = {"chunked": e + p.logits.chunked_extra_bytes, "compute-dtype": e * p.logits.compute_dtype_copies,
                     "vocab-parallel": e + p.logits.vocab_parallel_fp32_bytes}.get(loss, p.logits.standard_bytes)
        logits = tokens * arch.vocab_size / tp * per_logit + tokens * final_norm_input_per_token(arch)
        saved += lm_head_cast_bytes(sc, arch)  # a bf16 copy of an fp16 LM head, saved for backward
        logits_why = msg("mem.logits", tokens=tokens, vocab=arch.vocab_size, b=per_logit, loss=loss)

    largest = max(per_layer_full, default=0.0)
    working = backward_working(largest, _recomputes(sc), p)
    return StageActivations(saved, logits, working, why, logits_why, scaled_saved, largest, _recomputes(sc),
                            unsaved * in_flight * interleave)


def replicated_divisor(tp: Any, sequence_parallel: Any) -> Any:
    """What the replicated part of a layer's activations is split by: tp under sequence parallelism (Korthikanti et
    al. 2022, section 4.2.2), else nothing; numbers or arrays."""
    return where(sequence_parallel, tp, 1)


def layer_bytes(replicated: Any, sharded: Any, tp: Any, replicated_div: Any, tokens: Any) -> Any:
    """One layer's activations on one GPU: the replicated part split by sequence parallelism (``replicated_div``),
    the rest by tensor parallelism (Korthikanti et al. 2022, arXiv:2205.05198, section 4); numbers or arrays."""
    return (replicated / replicated_div + sharded / tp) * tokens


def pipeline_in_flight(pp: Any, stage: int, accumulation: Any, virtual_pp: Any) -> tuple[Any, Any]:
    """(micro-batches in flight on pipeline stage ``stage``, the interleaved schedule's factor on it): under 1F1B
    stage s holds (pp - s) micro-batches in flight, the interleaved schedule 1 + (pp-1)/(pp*v) times more on the
    first stage (Korthikanti et al. 2022, section 5); numbers or arrays of many layouts (plan/fast.py)."""
    in_flight = where(pp > 1, minimum(pp - stage, maximum(1, accumulation)), 1)
    interleaved = (pp > 1) & (virtual_pp > 1) & (stage == 0)
    return in_flight, where(interleaved, 1 + (pp - 1) / (pp * virtual_pp), 1)


def stage_saved_bytes(layers: Any, in_flight: Any, interleave: Any, embedding: Any) -> Any:
    """What a pipeline stage keeps for backward: its layers' saved bytes of one micro-batch (``layers``) and the
    embedding side's (``embedding``, first stage only) for each micro-batch in flight, the layers' times the
    interleaved schedule's factor (:func:`pipeline_in_flight`); numbers or arrays."""
    return layers * in_flight * interleave + embedding * in_flight


def backward_working(largest_layer: Any, recomputes: Any, p: MemoryModel) -> Any:
    """The backward pass's working set: ``backward_working_fraction`` of the largest layer's activations, plus the
    layer itself where backward recomputes it (memory_model.yaml); numbers or arrays."""
    frac = p.activations.backward_working_fraction
    return where(recomputes, largest_layer * (1 + frac), largest_layer * frac)


_COUNTED: dict[tuple[str, str, int], tuple[Architecture, MemoryModel, float]] = {}
_COUNT_SETS_TRAINING = frozenset({"activation_checkpointing", "compile"})  # what eager_traffic_bytes sets itself
_COUNT_SETS_PARALLEL = frozenset({"pp", "virtual_pp", "gpus"})
COUNTED_KEPT = 4096
_COUNTED_LOCK = threading.Lock()


def clear_caches() -> None:
    with _COUNTED_LOCK:
        _COUNTED.clear()


def eager_traffic_bytes(sc: Scenario, arch: Architecture, p: MemoryModel) -> float:
    """The activation bytes one GPU's layers write in a step's forward without checkpointing, in eager mode and as
    counted (without the memory fit's implementation_factor), with those written but not kept: what the step's
    element-wise term reads (``step_terms.saved_traffic_s``). Kept per training and parallel block (a layout is
    re-checked on many GPU types), but for what the count sets itself (checkpointing, compile, the pipeline split)."""
    key = (json_key(sc.training, _COUNT_SETS_TRAINING), json_key(sc.parallel, _COUNT_SETS_PARALLEL),
           sc.parallel.gpus // sc.parallel.pp)
    hit = _COUNTED.get(key)
    if hit is not None and hit[0] is arch and hit[1] is p:
        return hit[2]
    tr, par = sc.training, sc.parallel
    plain = sc.model_copy(update={"training": tr.model_copy(update={"activation_checkpointing": "none",
                                                                    "compile": False}),
                                  "parallel": par.model_copy(update={"pp": 1, "virtual_pp": 1,
                                                                     "gpus": par.gpus // par.pp})})
    acts = stage_activations(plain, arch, p, training_state(plain, arch, p), 0)
    counted = acts.refit(1.0 / p.activations.implementation_factor, 0.0)[0] + acts.unsaved_traffic
    with _COUNTED_LOCK:  # the web server's threads may plan at once
        if len(_COUNTED) >= COUNTED_KEPT:
            _COUNTED.pop(next(iter(_COUNTED)))
        _COUNTED[key] = (arch, p, counted)
    return counted
