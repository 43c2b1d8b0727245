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

from dataclasses import dataclass, field
from typing import Any

from trainsizer.estimate.memory_types import Component
from trainsizer.models.architecture import Architecture
from trainsizer.models.params import Linear, count_params, layer_linears, layer_norm_params
from trainsizer.scenario import Scenario

# precision -> (compute weight bytes, master bytes, gradient bytes, optimizer-state element bytes)
PRECISION_BYTES: dict[str, tuple[float, float, float, float]] = {
    "fp32": (4, 0, 4, 4),
    "fp16-mixed": (2, 4, 4, 4),
    "bf16-mixed": (2, 4, 4, 4),
    "bf16-true": (2, 0, 2, 2),
    "fp8-mixed": (2, 4, 4, 4),
}
ACTIVATION_BYTES = {"fp32": 4, "fp16-mixed": 2, "bf16-mixed": 2, "bf16-true": 2, "fp8-mixed": 2}
RESIDUAL_BYTES = {"fp32": 4, "fp16-mixed": 4, "bf16-mixed": 4, "bf16-true": 2, "fp8-mixed": 4}


@dataclass(frozen=True)
class LayerState:
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
class StageStates:
    static: list[Component]
    gradients: Component
    step_temporaries: float
    managed_bytes: float  # CUDA managed memory (paged optimizers): outside the PyTorch allocator


@dataclass
class TrainingState:
    scenario: Scenario
    arch: Architecture
    params: dict[str, Any]
    layers: list[LayerState]
    embedding_params: int
    final_params: int
    lm_head_params: int
    lm_head_lora_params: int
    notes: list[str] = field(default_factory=list)

    @property
    def trainable_params(self) -> int:
        n = sum(layer.lora_params for layer in self.layers) + self.lm_head_lora_params
        n += sum(layer.base_linear_params + layer.norm_params for layer in self.layers if layer.trainable_base)
        if self.scenario.training.method == "full":
            n += self.embedding_params + self.final_params + self.lm_head_params
        return n

    def stage_layers(self, stage: int) -> list[LayerState]:
        pp = self.scenario.parallel.pp
        n = len(self.layers)
        start, end = stage * n // pp, (stage + 1) * n // pp
        return self.layers[start:end]

    def model_states(self, stage: int) -> StageStates:
        return _model_states(self, stage)


# peft's default target modules per model type (peft/utils/constants.py,
# TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING), used when a scenario names none.
PEFT_DEFAULT_TARGETS: dict[str, list[str]] = {
    "gpt2": ["c_attn"], "bloom": ["query_key_value"], "gpt_neox": ["query_key_value"],
    "bert": ["query", "value"], "phi": ["q_proj", "v_proj", "fc1", "fc2"],
    "deepseek_v3": ["q_a_proj", "kv_a_proj_with_mqa"], "deepseek_v2": ["q_proj", "kv_a_proj_with_mqa"],
}


def _targets(scenario: Scenario, model_type: str = "", mla_q_lora: int | None = None) -> set[str] | None:
    lora = scenario.training.lora
    targets = lora.targets if lora and lora.targets is not None else None
    if targets is None:
        targets = PEFT_DEFAULT_TARGETS.get(model_type, ["q_proj", "v_proj"])
        if mla_q_lora is not None:  # MLA: the query projection is q_a_proj when q is low-rank
            targets = ["q_a_proj" if mla_q_lora else "q_proj", "kv_a_proj_with_mqa"]
    return None if targets == "all-linear" else set(targets)


def _is_target(linear: Linear, targets: set[str] | None) -> bool:
    if linear.group == "router":
        return False
    if targets is None:
        return True
    return linear.name in targets or bool(targets & set(linear.aliases))


def _lora_params(linear: Linear, rank: int, targets: set[str] | None) -> int:
    """Adapter parameters r*(in+out) per copy (Hu et al. 2021). On a fused q/k/v module targeted by
    slice names (q_proj, v_proj), each targeted slice gets its own adapter (litgpt LoRAQKVLinear)."""
    if len(linear.aliases) > 1 and targets is not None and linear.name not in targets:
        slices = len(targets & set(linear.aliases))
        per_slice_out = linear.out_features // 3
        return linear.count * slices * rank * (linear.in_features + per_slice_out)
    return linear.count * rank * (linear.in_features + linear.out_features)


def training_state(scenario: Scenario, arch: Architecture, params: dict[str, Any]) -> TrainingState:
    tr = scenario.training
    counts = count_params(arch)
    mla_q = arch.mla.q_lora_rank if arch.mla else None
    targets = _targets(scenario, arch.model_type, mla_q) if tr.method in ("lora", "qlora") else set()
    rank = tr.lora.rank if tr.lora else 8
    n_layers = arch.num_layers
    ep = scenario.parallel.ep
    layers: list[LayerState] = []
    matched: set[str] = set()
    for i in range(n_layers):
        linears = tuple(layer_linears(arch, i))
        lora = tuple(lin for lin in linears if tr.method in ("lora", "qlora") and _is_target(lin, targets))
        for lin in lora:
            matched.add(lin.name)
            if targets is not None:
                matched.update(targets & set(lin.aliases))
        trainable_base = tr.method == "full" or (tr.method == "freeze" and i >= n_layers - tr.freeze_trainable_layers)
        layers.append(LayerState(
            index=i, linears=linears, trainable_base=trainable_base, lora=lora,
            lora_params=sum(_lora_params(lin, rank, targets) // (ep if lin.group == "expert" else 1) for lin in lora),
            base_linear_params=sum(lin.params // (ep if lin.group == "expert" else 1) for lin in linears),
            norm_params=layer_norm_params(arch, arch.is_moe_layer(i)),
            expert_linear_params=sum(lin.params // ep for lin in linears if lin.group == "expert"),
            expert_lora_params=sum(_lora_params(lin, rank, targets) // ep for lin in lora if lin.group == "expert"),
        ))
    lm_head_lora = 0
    # peft's "all-linear" leaves the output layer out; lm_head is adapted only when named
    if tr.method in ("lora", "qlora") and arch.lm_head and targets and "lm_head" in targets:
        lm_head_lora = rank * (arch.hidden_size + arch.vocab_size)
        matched.add("lm_head")
    st = TrainingState(scenario, arch, params, layers, counts.embedding, counts.final, counts.lm_head, lm_head_lora)
    if tr.method in ("lora", "qlora") and targets is not None:
        from trainsizer.errors import InputError

        known = sorted({lin.name for layer in layers for lin in layer.linears if lin.group != "router"}
                       | {a for layer in layers for lin in layer.linears for a in lin.aliases}
                       | ({"lm_head"} if arch.lm_head else set()))
        missing = sorted(targets - matched)
        if missing:
            raise InputError("training.lora.targets",
                             f"{', '.join(missing)} not a linear module of {arch.model_type}; "
                             f"accepted: {', '.join(known)}, or all-linear")
    if tr.method == "freeze" and tr.freeze_trainable_layers > n_layers:
        from trainsizer.errors import InputError

        raise InputError("training.freeze_trainable_layers",
                         f"{tr.freeze_trainable_layers} exceeds the model's {n_layers} layers")
    return st


def _optimizer_bytes(st: TrainingState, shapes: list[tuple[int, int, int]], state_elem: float) -> float:
    """Optimizer state bytes for trainable tensors given as (rows, cols, copies); cols=1 for vectors."""
    opt = st.scenario.training.optimizer
    p_opt = st.params["optimizer"]
    total = 0.0
    for rows, cols, copies in shapes:
        n = rows * cols
        if opt == "adamw":
            b = 2 * state_elem * n
        elif opt in ("adamw-8bit", "paged-adamw-8bit"):
            # bitsandbytes keeps small tensors in 32-bit; larger ones as 8-bit blocks + fp32 absmax
            small = n < p_opt["bnb_min_8bit_size"]
            b = 8.0 * n if small else 2.0 * n + 2 * 4.0 * n / p_opt["bnb_block"]
        elif opt == "adafactor":
            # Shazeer & Stern 2018: factored second moment (row + column fp32 vectors) for matrices,
            # full second moment for vectors; no first moment (beta1=None, HF default).
            b = 4.0 * (rows + cols) if cols > 1 else 4.0 * n
        elif opt in ("sgd-momentum", "lion"):
            b = state_elem * n  # one momentum buffer (Chen et al. 2023 Lion keeps one)
        else:  # sgd
            b = 0.0
        total += b * copies
    return total


def _trainable_shapes(st: TrainingState, layers: list[LayerState], first: bool, last: bool,
                      tp: int) -> tuple[list[tuple[int, int, int]], list[tuple[int, int, int]]]:
    """(base shapes, adapter shapes) of the trainable tensors on a stage, as (rows, cols, copies)."""
    arch, method = st.arch, st.scenario.training.method
    rank = st.scenario.training.lora.rank if st.scenario.training.lora else 8
    ep = st.scenario.parallel.ep
    shapes: list[tuple[int, int, int]] = []
    adapters: list[tuple[int, int, int]] = []
    for layer in layers:
        if layer.trainable_base:
            for lin in layer.linears:
                copies = max(1, lin.count // ep) if lin.group == "expert" else lin.count
                shapes.append((lin.out_features // (tp if lin.group != "router" else 1), lin.in_features, copies))
                if lin.bias:
                    shapes.append((lin.out_features, 1, copies))
            shapes.append((layer.norm_params, 1, 1))
        for lin in layer.lora:
            adapter = _lora_params(lin, rank, _targets(st.scenario, arch.model_type,
                                                      arch.mla.q_lora_rank if arch.mla else None))
            copies = max(1, lin.count // ep) if lin.group == "expert" else lin.count
            # A: r x in, B: out x r (per copy), as one rank x (in + out) matrix per copy
            adapters.append((rank, adapter // max(1, lin.count * rank), copies))
    if method == "full":
        if first:
            shapes.append((arch.vocab_size // tp, arch.hidden_size, 1))
            extra = st.embedding_params - arch.vocab_size * arch.hidden_size
            if extra:
                shapes.append((extra, 1, 1))
        if last:
            tied_copy = not first and arch.lm_head and arch.tie_embeddings
            if st.lm_head_params or tied_copy:
                shapes.append((arch.vocab_size // tp, arch.hidden_size, 1))
            if st.final_params:
                shapes.append((st.final_params, 1, 1))
    if last and st.lm_head_lora_params:
        adapters.append((rank, st.lm_head_lora_params // rank, 1))
    return shapes, adapters


def _model_states(st: TrainingState, stage: int) -> StageStates:
    sc, arch, p = st.scenario, st.arch, st.params
    tr, par = sc.training, sc.parallel
    tp, pp, dp = par.tp, par.pp, par.dp
    w_b, master_b, grad_b, state_b = PRECISION_BYTES[tr.precision]
    layers = st.stage_layers(stage)
    first, last = stage == 0, stage == pp - 1
    quant = p["quantization"].get(tr.quantization) if tr.method == "qlora" else None

    # --- weights (every parameter, in its storage format) --------------------------------------
    frozen_w_b = 4 if tr.precision == "fp32" else 2
    linear_params = sum(layer.base_linear_params for layer in layers) / tp
    norm_params = sum(layer.norm_params for layer in layers)
    embed_params = (st.embedding_params / tp if first else 0)
    head_params = (st.lm_head_params / tp if last else 0) + (st.final_params if last else 0)
    if last and not first and arch.lm_head and arch.tie_embeddings:
        head_params += arch.vocab_size * arch.hidden_size / tp  # Megatron keeps a copy of a tied embedding
    # ZeRO shards over the data-parallel x context-parallel group; routed experts only over the
    # expert-data-parallel group (dp*cp/ep ranks), as Megatron-Core and DeepSpeed-MoE do.
    group = dp * par.cp
    expert_group = max(1, group // par.ep)
    expert_w = sum(layer.expert_linear_params for layer in layers) / tp
    if tr.method == "full":
        weight_bytes = (linear_params + norm_params + embed_params + head_params) * w_b
        why_w = f"{tr.precision} weights, {w_b:g} B/param"
    elif quant:
        code = quant["code_bytes"] + quant["constant_bytes"]
        weight_bytes = linear_params * code + (norm_params + embed_params + head_params) * frozen_w_b
        why_w = (f"{tr.quantization} base linears {code:.3f} B/param incl. quantization constants; "
                 f"embeddings, norms, output head {frozen_w_b} B/param")
    else:
        trainable_lin = sum(layer.base_linear_params + layer.norm_params for layer in layers
                            if layer.trainable_base) / tp
        frozen = linear_params + norm_params + embed_params + head_params - trainable_lin
        weight_bytes = frozen * frozen_w_b + trainable_lin * w_b
        why_w = f"frozen weights {frozen_w_b} B/param" + (
            f", trainable layers {w_b:g} B/param" if trainable_lin else "")
    if tr.precision == "fp8-mixed" and tr.method in ("full", "freeze"):
        weight_bytes += linear_params * 1.0
        why_w += "; + fp8 copies of linear weights (Transformer Engine)"
    total_w_params = linear_params + norm_params + embed_params + head_params
    weight_share_expert = expert_w / total_w_params if total_w_params else 0.0
    if par.offload == "optimizer+params":
        weights_gpu = 0.0
        why_w += "; offloaded to CPU (ZeRO-3 param offload)"
    elif par.zero == 3 and group > 1:
        weights_gpu = _sharded(weight_bytes, weight_share_expert, group, expert_group)
        why_w += f"; sharded over dp*cp={group} (ZeRO-3/FSDP)"
    else:
        weights_gpu = weight_bytes

    # --- trainable states ------------------------------------------------------------------------
    base_shapes, lora_shapes = _trainable_shapes(st, layers, first, last, tp)
    shapes = base_shapes + lora_shapes
    trainable = sum(r * c * n for r, c, n in shapes)
    lora_elems = sum(layer.lora_params for layer in layers) / 1 + (st.lm_head_lora_params if last else 0)
    lora_mixed = tr.precision != "bf16-true" and tr.precision != "fp32" and tr.method in ("lora", "qlora")
    if lora_mixed:
        # fp32 adapters: weight and master are the same fp32 tensor
        adapter_w_b, adapter_master_b, adapter_grad_b, adapter_state_b = 4.0, 0.0, 4.0, 4.0
    else:
        adapter_w_b, adapter_master_b, adapter_grad_b, adapter_state_b = w_b, master_b, grad_b, state_b
    base_trainable = trainable - lora_elems
    expert_trainable = sum(layer.expert_lora_params + (layer.expert_linear_params / tp if layer.trainable_base else 0)
                           for layer in layers)
    share_e = min(1.0, expert_trainable / trainable) if trainable else 0.0
    opt_shards = group if (par.zero >= 1 or par.distributed_optimizer) else 1
    grad_shards = group if par.zero >= 2 else 1
    opt_div = _sharded(1.0, share_e, opt_shards, max(1, opt_shards // par.ep)) if opt_shards > 1 else 1.0
    grad_div = _sharded(1.0, share_e, grad_shards, max(1, grad_shards // par.ep)) if grad_shards > 1 else 1.0
    offload_opt = par.offload != "none"

    masters = base_trainable * master_b + lora_elems * adapter_master_b
    optimizer = (_optimizer_bytes(st, base_shapes, state_b) + _optimizer_bytes(st, lora_shapes, adapter_state_b))
    grads = base_trainable * grad_b + lora_elems * adapter_grad_b
    adapters = lora_elems * adapter_w_b

    static: list[Component] = [Component("weights", weights_gpu, "weights", why_w)]
    if adapters:
        static.append(Component("lora_adapters", adapters, "weights",
                                f"{lora_elems / 1e6:.2f} M adapter params, {adapter_w_b:g} B each"))
    managed = 0.0
    where = "on CPU (offload)" if offload_opt else (f"sharded over dp*cp={group}" if opt_shards > 1 else "")
    if masters:
        static.append(Component("master_weights", 0 if offload_opt else masters * opt_div, "weights",
                                f"fp32 master copy of trainable params {where}".strip()))
    opt_gpu = 0 if offload_opt else optimizer * opt_div
    opt_why = f"{tr.optimizer} states {optimizer / max(trainable, 1):.2f} B/trainable param {where}".strip()
    if tr.optimizer == "paged-adamw-8bit" and not offload_opt:
        managed, opt_gpu = opt_gpu, 0.0
        opt_why += "; paged (CUDA managed memory, outside the PyTorch allocator)"
    static.append(Component("optimizer_states", opt_gpu, "optimizer", opt_why))

    grads_gpu = grads * grad_div
    grad_why = f"{trainable / 1e6:,.1f} M trainable params x {grad_b if not lora_mixed else 4:g} B"
    if grad_shards > 1:
        grad_why += f", sharded over dp*cp={group} (ZeRO-2/3)"
    if offload_opt:
        grads_gpu = 0.0
        grad_why += "; streamed to CPU for the offloaded optimizer step"
    elif tr.optimizer_in_backward:
        per_layer = max((layer.lora_params + (layer.base_linear_params + layer.norm_params
                                              if layer.trainable_base else 0) for layer in layers), default=0)
        largest = max(per_layer / tp, (arch.vocab_size * arch.hidden_size / tp) if tr.method == "full" else 0)
        per_tensor_b = adapter_grad_b if tr.method in ("lora", "qlora") else grad_b
        grads_gpu = min(grads * grad_div, largest * per_tensor_b * grad_div)
        grad_why += "; optimizer in backward: only the largest tensor group's gradients live at once"

    # --- communication buffers, quantization work buffers ---------------------------------------
    comm = p["communication"]
    other = 0.0
    why_other: list[str] = []
    megatron_style = tp > 1 or pp > 1  # contiguous gradient buffer, buckets are views (no copy)
    if dp > 1 and par.zero == 0 and not par.distributed_optimizer and not offload_opt and not megatron_style:
        # torch DDP copies gradients into its buckets (gradient_as_bucket_view=False by default)
        other += grads
        why_other.append("DDP gradient buckets (a copy of the gradients)")
    elif dp > 1 and par.zero in (1, 2) and not megatron_style:
        other += min(comm["zero_reduce_bucket_elements"], trainable) * grad_b
        why_other.append("ZeRO reduce bucket")
    if (par.zero == 3 and group > 1 or par.offload == "optimizer+params") and not tr.optimizer_in_backward:
        biggest = max((layer.base_linear_params + layer.norm_params for layer in layers), default=0) / tp
        biggest_w = biggest * (quant["code_bytes"] + quant["constant_bytes"] if quant else w_b)
        unit_grads = max((layer.lora_params + (layer.base_linear_params if layer.trainable_base else 0)
                          for layer in layers), default=0) * (adapter_grad_b if tr.method != "full" else grad_b)
        other += comm["zero3_gathered_units"] * biggest_w + unit_grads
        why_other.append(f"ZeRO-3/FSDP: {comm['zero3_gathered_units']} gathered layers + one layer's "
                         "unsharded gradients")
    if quant:
        biggest_linear = max((lin.in_features * lin.out_features for layer in layers for lin in layer.linears
                              if lin.group != "router"), default=0) / tp
        other += 2 * biggest_linear * 2
        why_other.append("dequantized bf16 copy of the largest linear (forward and backward)")
    if other:
        static.append(Component("buffers", other, "other", "; ".join(why_other)))

    step_temp = 0.0
    if not offload_opt and not tr.optimizer_in_backward and tr.optimizer in ("adamw", "lion", "sgd-momentum"):
        step_temp = p["optimizer"]["foreach_temp_states"] * (trainable / opt_shards) * (
            adapter_state_b if tr.method in ("lora", "qlora") else state_b)
    return StageStates(static, Component("gradients", grads_gpu, "gradients", grad_why), step_temp, managed)


def _sharded(value: float, expert_share: float, group: int, expert_group: int) -> float:
    """``value`` split over ``group`` ranks, its routed-expert share over ``expert_group`` ranks."""
    return value * ((1 - expert_share) / group + expert_share / expert_group)
