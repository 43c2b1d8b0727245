"""What one GPU of one pipeline stage holds for the model: weights in their storage format, fp32 masters,
optimizer states, gradients and communication / quantization buffers, sharded as ZeRO stage, distributed
optimizer and expert parallelism say (Rajbhandari et al. 2020, arXiv:1910.02054, section 5; see
:mod:`trainsizer.estimate.training_state` for the bytes per element)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainsizer.arrays import is_array
from trainsizer.estimate.deferred_sync import held_gradients, skips_sync, unsharded_gradient_bytes
from trainsizer.estimate.memory_types import GIB, Component
from trainsizer.estimate.model_params import QuantFormat
from trainsizer.estimate.state_terms import (
    OFFLOAD_PARAMS,
    contiguous_gradient_buffer,
    copies_into_buckets,
    expert_data_shards,
    expert_state_shards,
    gathered_unit_bytes,
    gathers_units,
    reduce_bucket_bytes,
    split_shards,
    state_shards,
    trainable_states_on_gpu,
    uses_reduce_bucket,
    weights_on_gpu,
)
from trainsizer.estimate.step_layout import OFFLOADS
from trainsizer.estimate.training_state import (
    PRECISION_BYTES,
    LayerState,
    TrainingState,
    adapter_params,
    fp32_adapters,
    frozen_weight_bytes,
    gradient_bytes,
    lora_targets,
)
from trainsizer.messages import Message, clauses, listing, msg
from trainsizer.scenario import Scenario


@dataclass
class StageStates:
    """The model states of one pipeline stage: weights, gradients, optimizer states and the step's temporaries."""

    static: list[Component]
    gradients: Component
    step_temporaries: float
    managed_bytes: float  # CUDA managed memory (paged optimizers): outside the PyTorch allocator
    step_temporaries_per_unit: float = 0.0  # step_temporaries per unit of optimizer.foreach_temp_states
    unsharded_weights: float = 0.0  # the stage's weights before ZeRO-3 sharding (a full state dict of the stage)


def _optimizer_bytes(st: TrainingState, shapes: list[tuple[int, int, int]], state_elem: float) -> float:
    """Optimizer state bytes for trainable tensors given as (rows, cols, copies); cols=1 for vectors."""
    opt = st.scenario.training.optimizer
    p_opt = st.params.optimizer
    total = 0.0
    for rows, cols, copies in shapes:
        n = rows * cols
        if opt == "adamw":
            b = 2 * state_elem * n
        elif opt in ("adamw-8bit", "paged-adamw-8bit"):
            # bitsandbytes keeps small tensors in 32-bit; larger ones as 8-bit blocks + fp32 absmax
            small = n < p_opt.bnb_min_8bit_size
            b = 8.0 * n if small else 2.0 * n + 2 * 4.0 * n / p_opt.bnb_block
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
    targets = lora_targets(st.scenario, arch)
    for layer in layers:
        if layer.trainable_base:
            for lin in layer.linears:
                copies = max(1, lin.count // ep) if lin.group == "expert" else lin.count
                split = {"router": 1, "expert": st.scenario.parallel.expert_tp}.get(lin.group, tp)  # etp: folded
                shapes.append((lin.out_features // split, lin.in_features, copies))
                if lin.bias:
                    shapes.append((lin.out_features, 1, copies))
            shapes.append((layer.norm_params, 1, 1))
        for lin in layer.lora:
            adapter = adapter_params(lin, rank, targets)
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


@dataclass
class _StageTrainables:
    """The trainable parameters of one pipeline stage and how their states are held."""

    base_shapes: list[tuple[int, int, int]]
    lora_shapes: list[tuple[int, int, int]]
    trainable: float  # elements on this GPU before sharding
    lora_elems: float
    lora_mixed: bool  # fp32 adapters under autocast
    adapter_bytes: tuple[float, float, float, float]  # weight, master, gradient, state bytes of an adapter element
    opt_shards: int
    grad_shards: int
    opt_div: float  # fraction of optimizer states / masters on this GPU
    grad_div: float
    offload_opt: bool


def model_states(st: TrainingState, stage: int) -> StageStates:
    """Weights, masters, optimizer states, gradients and buffers of one pipeline stage on one GPU (computed
    once per state and stage)."""
    key = ("model_states", stage)
    if key not in st.stage_cache:
        st.stage_cache[key] = _model_states(st, stage)
    return st.stage_cache[key]


def _model_states(st: TrainingState, stage: int) -> StageStates:
    layers = st.stage_layers(stage)
    first, last = stage == 0, stage == st.scenario.parallel.pp - 1
    tr = st.scenario.training
    quant = st.params.quantization.formats.get(tr.quantization or "") if tr.method == "qlora" else None
    t = _stage_trainables(st, layers, first, last)
    weights, unsharded = _stage_weights(st, layers, first, last, quant)
    static = [weights]
    trainable_static, gradients, managed = _stage_trainable_states(st, layers, t)
    if skips_sync(st.scenario):  # FSDP no_sync: each micro-batch's gradients kept unsharded until the last one
        held = held_gradients(gradients.bytes, unsharded_gradient_bytes(st, layers, first, last), True)
        gradients = Component(gradients.name, held, gradients.group,
                              clauses([gradients.why, msg("mem.grads_unsharded", gib=held / GIB)]))
    static += trainable_static
    buffers = _stage_buffers(st, layers, t, quant)
    if buffers:
        static.append(buffers)
    per_unit = 0.0  # foreach temporaries: a copy of the states per unit (torch optimizers' _foreach paths)
    if not t.offload_opt and not tr.optimizer_in_backward and tr.optimizer in ("adamw", "lion", "sgd-momentum"):
        state_b = PRECISION_BYTES[tr.precision][3]
        per_unit = (t.trainable / t.opt_shards) * (t.adapter_bytes[3] if tr.method in ("lora", "qlora") else state_b)
    step_temp = st.params.optimizer.foreach_temp_states * per_unit
    return StageStates(static, gradients, step_temp, managed, per_unit, unsharded)


def _stage_weights(st: TrainingState, layers: list[LayerState], first: bool, last: bool,
                   quant: QuantFormat | None) -> tuple[Component, float]:
    """Every parameter of the stage in its storage format, sharded by ZeRO-3 or offloaded; and the bytes of them
    all unsharded."""
    arch, tr, par = st.arch, st.scenario.training, st.scenario.parallel
    tp = par.tp
    w_b = PRECISION_BYTES[tr.precision][0]
    frozen_w_b = frozen_weight_bytes(tr.precision)
    expert_w = sum(layer.expert_linear_params for layer in layers) / par.expert_tp  # folded experts: over etp
    # every linear of the stage on one tensor-parallel rank: experts over etp, the router whole
    linear_params = sum(tp_rank_linear_params(layer, tp, par.expert_tp) for layer in layers)
    norm_params = sum(layer.norm_params for layer in layers)
    embed_params = (st.embedding_params / tp if first else 0)
    head_params = (st.lm_head_params / tp if last else 0) + (st.final_params if last else 0)
    if last and not first and arch.lm_head and arch.tie_embeddings:
        head_params += arch.vocab_size * arch.hidden_size / tp  # Megatron keeps a copy of a tied embedding
    # ZeRO shards over the data-parallel x context-parallel group; routed experts only over the
    # expert-data-parallel group (dp*cp/ep ranks), as Megatron-Core and DeepSpeed-MoE do; or over the smaller
    # group ``parallel.zero_shard_gpus`` names (FSDP HYBRID_SHARD, MiCS, InternLM zero1=8).
    group = par.zero_group
    expert_group = expert_data_shards(group, tp, par.ep, par.expert_tp)  # expert data parallelism
    if tr.method == "full":
        weight_bytes = (linear_params + norm_params + embed_params + head_params) * w_b
        if autocast_copies_linears_only(st.scenario):  # no 16-bit copy of the embeddings and norms
            tied_head = embed_params if last and arch.lm_head and arch.tie_embeddings else 0.0
            weight_bytes -= (norm_params + embed_params - tied_head) * w_b
        expert_bytes = expert_w * w_b
        why_w = msg("mem.weights", precision=tr.precision, b=w_b)
    elif quant:
        weight_bytes, expert_bytes, why_w = _quantized_weights(st, quant, linear_params, expert_w,
                                                               norm_params + embed_params + head_params)
    else:
        trainable_lin = sum(tp_rank_linear_params(layer, tp, par.expert_tp) + layer.norm_params for layer in layers
                            if layer.trainable_base)
        frozen = linear_params + norm_params + embed_params + head_params - trainable_lin
        weight_bytes = frozen * frozen_w_b + trainable_lin * w_b
        expert_bytes = sum(layer.expert_linear_params * (w_b if layer.trainable_base else frozen_w_b)
                           for layer in layers) / par.expert_tp
        why_w = listing([msg("mem.weights_frozen", b=frozen_w_b),
                         msg("mem.weights_trainable", b=w_b) if trainable_lin else None])
    if tr.precision == "fp8-mixed" and tr.method in ("full", "freeze"):
        weight_bytes += linear_params * 1.0
        expert_bytes += expert_w * 1.0
        why_w = clauses([why_w, msg("mem.fp8_copies")])
    offload, master_only = OFFLOADS.index(par.offload), master_only_shards(st.scenario)
    shards = state_shards(par.zero, par.distributed_optimizer, group)[2]
    sharded = (split_shards(weight_bytes - expert_bytes, expert_bytes, shards, expert_group) if shards > 1
               else weight_bytes)
    weights_gpu = weights_on_gpu(sharded, offload, master_only)
    if offload == OFFLOAD_PARAMS:
        why_w = clauses([why_w, msg("mem.params_offloaded")])
    elif master_only:
        why_w = clauses([why_w, msg("mem.sharded_master_only", group=group)])
    elif shards > 1:
        why_w = clauses([why_w, msg("mem.sharded_zero3", group=group)])
    return Component("weights", weights_gpu, "weights", why_w), weight_bytes


def autocast_copies_linears_only(scenario: Scenario) -> bool:
    """Whether a mixed-precision full fine-tune's 16-bit weights are autocast's casts (``training.autocast``:
    torch.cuda.amp over fp32 weights, the Hugging Face Trainer's ``--fp16`` without DeepSpeed), which exist only for
    the weights of the ops autocast runs in 16 bits: linear layers and matmuls (a tied LM head casts the embedding).
    Embedding lookups are on neither of autocast's lists and layer norms on its fp32 list, so they read the fp32
    weight itself and have no copy (PyTorch "Automatic Mixed Precision package", "CUDA Ops that can autocast to
    float16" / "to float32"; aten/src/ATen/autocast_mode.cpp @ v1.10.0). DeepSpeed's and Megatron's 16-bit engines
    keep every parameter in 16 bits."""
    tr = scenario.training
    return bool(tr.autocast) and tr.method == "full" and tr.precision in ("fp16-mixed", "bf16-mixed")


def master_only_shards(scenario: Scenario) -> bool:
    """Whether each rank keeps only the fp32 master shard of its weights (``parallel.sharded_weights: master-only``
    with a full fine-tune under mixed precision, weights sharded by zero 3 over more than one rank, nothing offloaded):
    PyTorch FSDP's mixed precision "keeps the high-precision sharded parameters in memory anyway ... does not require
    any extra memory to keep a high-precision copy of the parameters for the optimizer step"; ``param_dtype`` is the
    dtype of the unsharded parameter, made at each all-gather, and "the optimizer step uses the sharded parameter in
    the original dtype" (pytorch/pytorch torch/distributed/fsdp/_fully_shard/_fsdp_api.py, ``MixedPrecisionPolicy``,
    @ 05f814f; the same text in torch/distributed/_composable/fsdp/_fsdp_api.py of the 2024-25 releases torchtitan
    ran). An fp8 run's fp8 weights are likewise cast per gathered unit (torchao float8 with FSDP2's float8
    all-gather). DeepSpeed ZeRO-3 instead keeps a compute-dtype partition beside the fp32 one (``compute-copy``)."""
    tr, par = scenario.training, scenario.parallel
    return bool(keeps_master_only(par.sharded_weights, tr.method, tr.precision, par.zero, par.zero_group,
                                  par.offload != "none"))


def keeps_master_only(sharded_weights: str, method: str, precision: str, zero: Any, group: Any, offloaded: Any) -> Any:
    """:func:`master_only_shards` over the layout's quantities: numbers, or arrays of many layouts (plan/fast.py)."""
    kept = sharded_weights == "master-only" and method == "full" and PRECISION_BYTES[precision][1] > 0
    return kept & (zero == 3) & (group > 1) & ~offloaded if is_array(zero) else (
        kept and zero == 3 and group > 1 and not offloaded)


def _stage_trainables(st: TrainingState, layers: list[LayerState], first: bool, last: bool) -> _StageTrainables:
    tr, par = st.scenario.training, st.scenario.parallel
    w_b, master_b, _, state_b = PRECISION_BYTES[tr.precision]
    grad_b = gradient_bytes(st.scenario)  # fp32, or the compute dtype (parallel.grad_reduce_dtype)
    base_shapes, lora_shapes = _trainable_shapes(st, layers, first, last, par.tp)
    trainable = sum(r * c * n for r, c, n in base_shapes + lora_shapes)
    lora_elems = sum(layer.lora_params for layer in layers) / 1 + (st.lm_head_lora_params if last else 0)
    lora_mixed = fp32_adapters(st.scenario)
    # fp32 adapters under autocast: weight and master are the same fp32 tensor
    adapter_bytes = (4.0, 0.0, 4.0, 4.0) if lora_mixed else (w_b, master_b, grad_b, state_b)
    expert_trainable = sum(layer.expert_lora_params + (layer.expert_linear_params / par.expert_tp
                                                       if layer.trainable_base else 0) for layer in layers)
    share_e = min(1.0, expert_trainable / trainable) if trainable else 0.0
    group = par.zero_group  # dp x cp, or the smaller group of parallel.zero_shard_gpus
    opt_shards, grad_shards, _ = state_shards(par.zero, par.distributed_optimizer, group)
    # expert data parallelism spans tp / etp more ranks under MoE parallel folding
    def divisor(shards: int) -> float:  # the share of the stage's trainable states one rank keeps
        return split_shards(1 - share_e, share_e, shards, expert_state_shards(shards, par.tp, par.ep, par.expert_tp))
    opt_div, grad_div = divisor(opt_shards), divisor(grad_shards)
    return _StageTrainables(base_shapes, lora_shapes, trainable, lora_elems, lora_mixed, adapter_bytes, opt_shards,
                            grad_shards, opt_div, grad_div, par.offload != "none")


def _stage_trainable_states(st: TrainingState, layers: list[LayerState],
                            t: _StageTrainables) -> tuple[list[Component], Component, float]:
    """Adapters, fp32 masters and optimizer states (static) and the gradients of one stage, and the bytes
    a paged optimizer keeps in CUDA managed memory."""
    arch, tr, par = st.arch, st.scenario.training, st.scenario.parallel
    _, master_b, _, state_b = PRECISION_BYTES[tr.precision]
    grad_b = gradient_bytes(st.scenario)
    adapter_w_b, adapter_master_b, adapter_grad_b, adapter_state_b = t.adapter_bytes
    base_trainable = t.trainable - t.lora_elems
    masters = base_trainable * master_b + t.lora_elems * adapter_master_b
    optimizer = (_optimizer_bytes(st, t.base_shapes, state_b) + _optimizer_bytes(st, t.lora_shapes, adapter_state_b))
    grads = base_trainable * grad_b + t.lora_elems * adapter_grad_b
    adapters = t.lora_elems * adapter_w_b
    group = par.zero_group

    static: list[Component] = []
    if adapters:
        static.append(Component("lora_adapters", adapters, "weights",
                                msg("mem.lora_adapters", m=t.lora_elems / 1e6, b=adapter_w_b)))
    managed = 0.0
    where = msg("mem.on_cpu") if t.offload_opt else (msg("mem.sharded", group=group) if t.opt_shards > 1 else None)
    offload = OFFLOADS.index(par.offload)
    if masters:
        static.append(Component("master_weights", trainable_states_on_gpu(masters * t.opt_div, offload), "weights",
                                listing([msg("mem.master_weights"), where])))
    opt_gpu = trainable_states_on_gpu(optimizer * t.opt_div, offload)
    opt_why = listing([msg("mem.optimizer_states", optimizer=tr.optimizer, b=optimizer / max(t.trainable, 1)), where])
    if tr.optimizer == "paged-adamw-8bit" and not t.offload_opt:
        managed, opt_gpu = opt_gpu, 0.0
        opt_why = clauses([opt_why, msg("mem.paged_states")])
    static.append(Component("optimizer_states", opt_gpu, "optimizer", opt_why))

    grads_gpu = trainable_states_on_gpu(grads * t.grad_div, offload)
    grad_why = listing([msg("mem.gradients", m=t.trainable / 1e6, b=grad_b if not t.lora_mixed else 4),
                        msg("mem.grads_sharded", group=group) if t.grad_shards > 1 else None])
    if t.offload_opt:
        grad_why = clauses([grad_why, msg("mem.grads_streamed")])
    elif tr.optimizer_in_backward:
        # one tensor-parallel rank's share of a layer, as the gathered unit (_stage_buffers): experts over etp, norms
        # and router whole on every rank (tp_rank_linear_params)
        per_layer = max((layer.lora_params / par.tp + (tp_rank_linear_params(layer, par.tp, par.expert_tp)
                                                       + layer.norm_params if layer.trainable_base else 0)
                         for layer in layers), default=0)
        largest = max(per_layer, (arch.vocab_size * arch.hidden_size / par.tp) if tr.method == "full" else 0)
        per_tensor_b = adapter_grad_b if tr.method in ("lora", "qlora") else grad_b
        grads_gpu = min(grads * t.grad_div, largest * per_tensor_b * t.grad_div)
        grad_why = clauses([grad_why, msg("mem.grads_in_backward")])
    return static, Component("gradients", grads_gpu, "gradients", grad_why), managed


def _stage_buffers(st: TrainingState, layers: list[LayerState], t: _StageTrainables,
                   quant: QuantFormat | None) -> Component | None:
    """Communication buckets, ZeRO-3 gathered layers and quantization work buffers."""
    tr, par = st.scenario.training, st.scenario.parallel
    tp = par.tp
    w_b = PRECISION_BYTES[tr.precision][0]
    grad_b = gradient_bytes(st.scenario)
    comm = st.params.communication
    grads = (t.trainable - t.lora_elems) * grad_b + t.lora_elems * t.adapter_bytes[2]
    other = 0.0
    why_other: list[Message] = []
    megatron_style = contiguous_gradient_buffer(tp, par.pp)
    offload = OFFLOADS.index(par.offload)
    if copies_into_buckets(par.dp, par.zero, par.distributed_optimizer, offload, megatron_style):
        other += grads
        why_other.append(msg("mem.ddp_buckets"))
    elif uses_reduce_bucket(par.dp, par.zero, megatron_style):
        other += reduce_bucket_bytes(comm.zero_reduce_bucket_elements, t.trainable * grad_b, grad_b)
        why_other.append(msg("mem.zero_bucket"))
    if gathers_units(par.zero, par.zero_group, offload, tr.optimizer_in_backward):
        # one tensor-parallel rank's share of a layer: its norms and router whole (see tp_rank_linear_params), each
        # weight as _stage_weights stores it: QLoRA quantizes the linear layers (the router's nn.Linear too), the
        # norms stay 16-bit: transformers' _replace_with_bnb_linear swaps only nn.Linear / Conv1D modules for
        # bitsandbytes' Linear4bit (huggingface/transformers src/transformers/integrations/bitsandbytes.py
        # @ 01ae98ae2414210efd0d9ac1ffe78ff21588f1f7)
        linear_b = quant.code_bytes + quant.constant_bytes if quant else w_b
        norm_b = frozen_weight_bytes(tr.precision) if quant else w_b
        biggest_w = max((tp_rank_linear_params(layer, tp, par.expert_tp) * linear_b + layer.norm_params * norm_b
                         for layer in layers), default=0)
        unit_grads = max((layer.lora_params / tp + (tp_rank_linear_params(layer, tp, par.expert_tp)
                                                    + layer.norm_params if layer.trainable_base else 0)
                          for layer in layers), default=0)
        unit_grads *= t.adapter_bytes[2] if tr.method != "full" else grad_b
        other += gathered_unit_bytes(comm.zero3_gathered_units, biggest_w, unit_grads)
        why_other.append(msg("mem.zero3_gathered", n=comm.zero3_gathered_units))
    if quant:
        biggest_linear = max((lin.in_features * lin.out_features for layer in layers for lin in layer.linears
                              if lin.group != "router"), default=0) / tp
        other += 2 * biggest_linear * 2
        why_other.append(msg("mem.dequant_copy"))
    return Component("buffers", other, "other", clauses(why_other)) if other else None


def router_params(layer: LayerState) -> int:
    """The elements of a layer's MoE router (gate) weights."""
    return sum(lin.params for lin in layer.linears if lin.group == "router")


def _quantized_weights(st: TrainingState, quant: QuantFormat, linear_params: float, expert_w: float,
                       other_params: float) -> tuple[float, float, Message]:
    """QLoRA's stored weights of a stage: (all bytes, the routed experts' bytes, why). The base linears as codes
    and constants; embeddings, norms and head in 16 bits; and so experts held as 3-D parameters (gpt-oss), since
    transformers' bitsandbytes integration replaces nn.Linear modules only (integrations/bitsandbytes.py
    ``replace_with_bnb_linear``)."""
    arch, tr = st.arch, st.scenario.training
    frozen_w_b = frozen_weight_bytes(tr.precision)
    code = quant.code_bytes + quant.constant_bytes
    expert_b = frozen_w_b if arch.moe and arch.moe.expert_parameters else code
    weight_bytes = (linear_params - expert_w) * code + expert_w * expert_b + other_params * frozen_w_b
    why = clauses([msg("mem.weights_quantized", quantization=tr.quantization, b=code),
                   msg("mem.experts_unquantized", b=frozen_w_b) if expert_b != code else None,
                   msg("mem.weights_unquantized", b=frozen_w_b)])
    return weight_bytes, expert_w * expert_b, why


def tp_rank_linear_params(layer: LayerState, tp: int, expert_tp: int) -> float:
    """A layer's linear weights on one tensor-parallel rank: attention and dense MLP split over ``tp``, routed experts
    over the expert tensor parallelism, the MoE router whole: Megatron-Core's ``Router`` holds the full
    ``num_moe_experts x hidden_size`` weight on every rank (NVIDIA/Megatron-LM megatron/core/transformer/moe/router.py,
    ``Router.__init__``, @ 7d231ef); layer norms are replicated likewise (counted apart, ``norm_params``)."""
    router = router_params(layer)
    dense = layer.base_linear_params - layer.expert_linear_params - router
    return dense / tp + layer.expert_linear_params / expert_tp + router
