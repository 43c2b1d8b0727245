"""What each GPU stores for a method, precision and optimizer: weights, masters, grads, states.

Bytes per element follow the frameworks' defaults:
- fp32: everything fp32.
- fp16-/bf16-mixed: 16-bit compute weights, fp32 master weights, fp32 gradients and fp32
  optimizer moments (Micikevicius et al. 2018, arXiv:1710.03740; torch.amp keeps fp32 weights and
  casts them per use, Megatron/DeepSpeed keep bf16 weights plus an fp32 master: both are 18
  bytes per parameter with AdamW, ZeRO paper section 3.1 counts 16 without the gradient upcast).
- bf16-true: weights, gradients and optimizer states all bf16 (torch optimizers keep states in
  the parameter dtype).
- fp8-mixed: as bf16-mixed plus an fp8 copy of each linear weight (NVIDIA Transformer Engine).
- LoRA adapters in mixed precision are fp32 (peft ``autocast_adapter_dtype=True``).
ZeRO sharding (Rajbhandari et al. 2020): stage 1 shards optimizer states and masters over the
data-parallel group, stage 2 adds gradients, stage 3 adds weights; Megatron's distributed
optimizer shards like stage 1.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any

from trainsizer.estimate.cache_keys import json_key
from trainsizer.estimate.model_params import MemoryModel
from trainsizer.estimate.pipeline_split import stage_layer_indices
from trainsizer.messages import Message
from trainsizer.models.architecture import Architecture
from trainsizer.models.param_counts import Linear, count_params, layer_linears, layer_norm_params
from trainsizer.scenario import Scenario

# precision -> (compute weight bytes, master bytes, gradient bytes, optimizer-state element bytes)
PRECISION_BYTES: dict[str, tuple[float, float, float, float]] = {
    "fp32": (4, 0, 4, 4),
    "fp16-mixed": (2, 4, 4, 4),
    "bf16-mixed": (2, 4, 4, 4),
    "bf16-true": (2, 0, 2, 2),
    "fp8-mixed": (2, 4, 4, 4),
}


def gradient_bytes(scenario: Scenario) -> float:
    """Bytes per gradient element of the trained (non-adapter) weights, kept and summed over data parallelism:
    fp32 under bf16/fp16/fp8-mixed (PRECISION_BYTES; PyTorch DDP under autocast, Megatron-LM's
    ``accumulate_allreduce_grads_in_fp32``), or the 16-bit compute dtype with ``parallel.grad_reduce_dtype: compute``:
    InternLM casts the model to bf16 (``internlm/core/naive_amp.py`` NaiveAMPModel ``model.to(dtype)``) and its hybrid
    zero all-reduces the bf16 ``param.grad`` buckets in that dtype (``internlm/solver/optimizer/hybrid_zero_optim.py``
    ``reduce_tensor(dtype=self.dtype)``, ``self._dtype`` = the parameters' dtype; InternLM/InternLM @ c18bec9)."""
    w_b, master_b, grad_b, _ = PRECISION_BYTES[scenario.training.precision]
    if scenario.parallel.grad_reduce_dtype == "compute" and master_b > 0:
        return float(w_b)
    return float(grad_b)


def fp32_adapters(scenario: Scenario) -> bool:
    """Whether LoRA / QLoRA adapters are fp32 (peft's ``autocast_adapter_dtype=True``) under a mixed precision: their
    weights, gradients and optimizer states are 4 bytes whatever the compute dtype."""
    tr = scenario.training
    return tr.method in ("lora", "qlora") and tr.precision not in ("bf16-true", "fp32")


def frozen_weight_bytes(precision: str) -> int:
    """Bytes per frozen, unquantized weight element as stored: 16 bits, fp32 only in fp32 training."""
    return 4 if precision == "fp32" else 2


def weight_grad_bytes(scenario: Scenario) -> tuple[float, float]:
    """(compute weight bytes, gradient bytes) per trained element, as the step's collectives move them: the
    gradients of :func:`gradient_bytes`, but LoRA / QLoRA adapters are fp32 under autocast, so their gradients are
    fp32 (4 bytes) in every mixed precision (the estimate's step terms and the planner's screen both read this)."""
    tr = scenario.training
    if fp32_adapters(scenario):
        return float(PRECISION_BYTES[tr.precision][0]), 4.0
    return float(PRECISION_BYTES[tr.precision][0]), gradient_bytes(scenario)


ACTIVATION_BYTES = {"fp32": 4, "fp16-mixed": 2, "bf16-mixed": 2, "bf16-true": 2, "fp8-mixed": 2}
# bytes per element of the residual stream (a checkpointed layer's input). bf16-mixed and fp8-mixed compute with bf16
# weights beside fp32 masters (PRECISION_BYTES), so the residual stream is bf16: Megatron-LM's fp32_residual_connection
# defaults to False, torchtitan's FSDP2 MixedPrecisionPolicy(param_dtype=bf16) casts every weight, DeepSpeed's bf16
# engine runs the model in bf16. fp16-mixed is torch.cuda.amp autocast over fp32 weights (the HF Trainer's fp16):
# layer_norm autocasts to fp32 and the residual adds stay fp32.
RESIDUAL_BYTES = {"fp32": 4, "fp16-mixed": 4, "bf16-mixed": 2, "bf16-true": 2, "fp8-mixed": 2}


@dataclass(frozen=True)
class LayerState:
    """One transformer layer as training holds it: its linears, which train (full, frozen, LoRA) and its parameters."""

    index: int
    linears: tuple[Linear, ...]
    trainable_base: bool  # the layer's own weights get gradients (full, or freeze's top layers)
    lora: tuple[Linear, ...]  # linears with a LoRA adapter
    lora_params: int
    base_linear_params: int  # on one expert-parallel rank (experts / ep)
    norm_params: int
    expert_linear_params: int = 0  # the part of base_linear_params that is routed experts
    expert_lora_params: int = 0


@dataclass
class TrainingState:
    """What a scenario trains and keeps per layer: the layers' states and the embedding, head and adapter parameters."""

    scenario: Scenario
    arch: Architecture
    params: MemoryModel
    layers: list[LayerState]
    embedding_params: int
    final_params: int
    lm_head_params: int
    lm_head_lora_params: int
    notes: list[Message] = field(default_factory=list)
    # per-stage results that depend only on this state (model states do not change with micro-batch or
    # sequence length: the fit-limit searches ask for them again and again)
    stage_cache: dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)

    @cached_property  # read by every step term of an estimate and of each screened GPU
    def trainable_params(self) -> int:
        n = sum(layer.lora_params for layer in self.layers) + self.lm_head_lora_params
        n += sum(layer.base_linear_params + layer.norm_params for layer in self.layers if layer.trainable_base)
        if self.scenario.training.method == "full":
            n += self.embedding_params + self.final_params + self.lm_head_params
        return n

    @cached_property
    def expert_trainable_params(self) -> int:
        """The part of :attr:`trainable_params` that is routed experts (on one expert-parallel rank)."""
        return sum(layer.expert_lora_params + (layer.expert_linear_params if layer.trainable_base else 0)
                   for layer in self.layers)

    def stage_layers(self, stage: int) -> list[LayerState]:
        """The layers pipeline rank ``stage`` holds (estimate/pipeline_split.py)."""
        par = self.scenario.parallel
        return [self.layers[i] for i in stage_layer_indices(len(self.layers), par.pp, par.virtual_pp,
                                                             par.pipeline_split, stage)]


# peft's default target modules per model type (peft/utils/constants.py,
# TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING), used when a scenario names none.
PEFT_DEFAULT_TARGETS: dict[str, list[str]] = {
    "gpt2": ["c_attn"], "bloom": ["query_key_value"], "gpt_neox": ["query_key_value"],
    "bert": ["query", "value"], "phi": ["q_proj", "v_proj", "fc1", "fc2"],
    "deepseek_v3": ["q_a_proj", "kv_a_proj_with_mqa"], "deepseek_v2": ["q_proj", "kv_a_proj_with_mqa"],
}


def lora_targets(scenario: Scenario, arch: Architecture) -> set[str] | None:
    """The module names the scenario's adapters target (None: all linears): its own, else peft's default for the
    model type. Read alike by the trainable parameters, the trainable tensors' shapes and the adapters' FLOPs."""
    lora = scenario.training.lora
    targets = lora.targets if lora and lora.targets is not None else None
    if targets is None:
        targets = PEFT_DEFAULT_TARGETS.get(arch.model_type, ["q_proj", "v_proj"])
        q_lora = arch.mla.q_lora_rank if arch.mla else None
        if q_lora is not None:  # MLA: the query projection is q_a_proj when q is low-rank
            targets = ["q_a_proj" if q_lora else "q_proj", "kv_a_proj_with_mqa"]
    return None if targets == "all-linear" else set(targets)


def adapter_params(linear: Linear, rank: int, targets: set[str] | None) -> int:
    """Adapter parameters r*(in+out) per copy (Hu et al. 2021). On a fused q/k/v module targeted by
    slice names (q_proj, v_proj), each targeted slice gets its own adapter (litgpt LoRAQKVLinear)."""
    if len(linear.aliases) > 1 and targets is not None and linear.name not in targets:
        slices = len(targets & set(linear.aliases))
        per_slice_out = linear.out_features // 3
        return linear.count * slices * rank * (linear.in_features + per_slice_out)
    return linear.count * rank * (linear.in_features + linear.out_features)


@dataclass(frozen=True, eq=False)  # hashed by identity: a cache key that costs nothing to hash
class _Layers:
    """The per-layer part of a training state: it depends only on the model, the method, the adapters, the
    expert-parallel degree and the trainable layers, so every layout of a job shares it."""

    layers: tuple[LayerState, ...]
    lm_head_lora: int
    missing: tuple[str, ...]  # adapter targets no linear module matches
    known: tuple[str, ...]  # the module names a target may use


@lru_cache(maxsize=256)
def _layer_states(arch: Architecture, method: str, targets: frozenset[str] | None, rank: int, ep: int,
                  trainable_top: int) -> _Layers:
    adapted = method in ("lora", "qlora")
    n_layers = arch.num_layers
    layers: list[LayerState] = []
    matched: set[str] = set()
    target_set = None if targets is None else set(targets)
    for i in range(n_layers):
        linears = tuple(layer_linears(arch, i))
        lora = tuple(lin for lin in linears if adapted and lin.targeted_by(target_set))
        for lin in lora:
            matched.add(lin.name)
            if target_set is not None:
                matched.update(target_set & set(lin.aliases))
        trainable_base = method == "full" or (method == "freeze" and i >= n_layers - trainable_top)
        layers.append(LayerState(
            index=i, linears=linears, trainable_base=trainable_base, lora=lora,
            lora_params=sum(adapter_params(lin, rank, target_set) // (ep if lin.group == "expert" else 1)
                            for lin in lora),
            base_linear_params=sum(lin.params // (ep if lin.group == "expert" else 1) for lin in linears),
            norm_params=layer_norm_params(arch, arch.is_moe_layer(i)),
            expert_linear_params=sum(lin.params // ep for lin in linears if lin.group == "expert"),
            expert_lora_params=sum(adapter_params(lin, rank, target_set) // ep for lin in lora
                                   if lin.group == "expert"),
        ))
    lm_head_lora = 0
    # peft's "all-linear" leaves the output layer out; lm_head is adapted only when named
    if adapted and arch.lm_head and target_set and "lm_head" in target_set:
        lm_head_lora = rank * (arch.hidden_size + arch.vocab_size)
        matched.add("lm_head")
    missing: tuple[str, ...] = ()
    known: tuple[str, ...] = ()
    if adapted and target_set is not None:
        missing = tuple(sorted(target_set - matched))
        known = tuple(sorted({lin.name for layer in layers for lin in layer.linears if lin.adaptable}
                             | {a for layer in layers for lin in layer.linears if lin.adaptable for a in lin.aliases}
                             | ({"lm_head"} if arch.lm_head else set())))
    return _Layers(tuple(layers), lm_head_lora, missing, known)


# What a layout varies that the model states of a stage never read: the planner's layouts that differ only in
# these (and in the GPU) share their per-stage results (``TrainingState.stage_cache``).
PER_LAYOUT_ONLY = frozenset({"micro_batch_size", "activation_checkpointing"})
_STAGE_CACHES: OrderedDict[tuple[Any, ...], tuple[MemoryModel, dict[Any, Any]]] = OrderedDict()
STAGE_CACHES = 1024
_STAGE_LOCK = threading.Lock()


def _shared_stage_cache(built: _Layers, scenario: Scenario, params: MemoryModel) -> dict[Any, Any]:
    """The per-stage cache of every state with these layers, memory parameters, training (but for
    PER_LAYOUT_ONLY) and parallel layout."""
    key = (built, id(params), json_key(scenario.training, PER_LAYOUT_ONLY), json_key(scenario.parallel))
    with _STAGE_LOCK:  # the web server's threads may plan at once
        hit = _STAGE_CACHES.get(key)
        if hit is not None and hit[0] is params:
            _STAGE_CACHES.move_to_end(key)
            return hit[1]
        cache: dict[Any, Any] = {}
        _STAGE_CACHES[key] = (params, cache)  # the parameters held with it: their id is not reused while it lives
        if len(_STAGE_CACHES) > STAGE_CACHES:
            _STAGE_CACHES.popitem(last=False)
        return cache


def clear_caches() -> None:
    with _STAGE_LOCK:
        _STAGE_CACHES.clear()
    _layer_states.cache_clear()


def training_state(scenario: Scenario, arch: Architecture, params: MemoryModel) -> TrainingState:
    """The training state of ``scenario``; its layers are built once per model, method, adapters, expert
    parallelism and trainable layers (:func:`_layer_states`) and shared by every layout."""
    tr = scenario.training
    counts = count_params(arch)
    targets = lora_targets(scenario, arch) if tr.method in ("lora", "qlora") else set()
    rank = tr.lora.rank if tr.lora else 8
    n_layers = arch.num_layers
    built = _layer_states(arch, tr.method, None if targets is None else frozenset(targets), rank,
                          scenario.parallel.ep, tr.freeze_trainable_layers if tr.method == "freeze" else 0)
    st = TrainingState(scenario, arch, params, list(built.layers), counts.embedding, counts.final, counts.lm_head,
                       built.lm_head_lora, stage_cache=_shared_stage_cache(built, scenario, params))
    if built.missing:
        from trainsizer.errors import InputError

        raise InputError("training.lora.targets",
                         f"{', '.join(built.missing)} not a linear module of {arch.model_type}; "
                         f"accepted: {', '.join(built.known)}, or all-linear")
    if tr.method == "freeze" and tr.freeze_trainable_layers > n_layers:
        from trainsizer.errors import InputError

        raise InputError("training.freeze_trainable_layers",
                         f"{tr.freeze_trainable_layers} exceeds the model's {n_layers} layers")
    return st
