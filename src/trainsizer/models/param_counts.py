"""Exact parameter counts of a transformer, module by module.

Counting follows the Hugging Face implementations of each family: attention projections (GQA:
k/v have ``num_key_value_heads * head_dim`` outputs, Ainslie et al. 2023), gated MLPs with three
matrices (SwiGLU, Shazeer 2020), biases and norms where the family has them, MoE experts and
routers (Mixtral, DeepSeek-V3 with shared experts; gpt-oss with biased experts and router and a
learned sink per attention head, OpenAI gpt-oss model card, arXiv:2508.10925, section 2.1),
multi-head latent attention (DeepSeek-V2, arXiv:2405.04434), tied or untied output embeddings.
Published totals are checked in the tests.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

from trainsizer.models.architecture import Architecture


@dataclass(frozen=True)
class Linear:
    """One kind of linear module: ``count`` copies per layer of an ``in_features x out_features`` matrix."""

    name: str  # Hugging Face module name, as LoRA ``target_modules`` spell it
    in_features: int
    out_features: int
    bias: bool = False
    count: int = 1  # copies in one layer (experts)
    group: str = "attention"  # attention | mlp | expert | shared_expert | router
    aliases: tuple[str, ...] = ()  # e.g. q_proj/k_proj/v_proj for a fused query_key_value
    module: bool = True  # an nn.Linear module; False for experts held as 3-D parameters (gpt-oss)

    @property
    def adaptable(self) -> bool:
        """Whether a LoRA target list (``all-linear`` or names) can reach it: peft wraps nn.Linear modules
        (``target_modules``), never the router, nor experts stored as parameters (gpt-oss's ``gate_up_proj``; peft
        reaches those only through ``target_parameters``)."""
        return self.module and self.group != "router"

    def targeted_by(self, targets: set[str] | None) -> bool:
        """Whether LoRA adapts it under ``targets`` (module names; None: peft's ``all-linear``), by its name or,
        for a fused q/k/v module, by a slice's name."""
        if not self.adaptable:
            return False
        return targets is None or self.name in targets or bool(targets & set(self.aliases))

    @property
    def params(self) -> int:
        return self.count * (self.in_features * self.out_features + (self.out_features if self.bias else 0))


def attention_linears(arch: Architecture) -> list[Linear]:
    h = arch.hidden_size
    if arch.mla:
        m = arch.mla
        qk_head = m.qk_nope_head_dim + m.qk_rope_head_dim
        mods: list[Linear] = []
        if m.q_lora_rank:
            mods += [Linear("q_a_proj", h, m.q_lora_rank),
                     Linear("q_b_proj", m.q_lora_rank, arch.num_heads * qk_head)]
        else:
            mods.append(Linear("q_proj", h, arch.num_heads * qk_head))
        mods += [
            Linear("kv_a_proj_with_mqa", h, m.kv_lora_rank + m.qk_rope_head_dim),
            Linear("kv_b_proj", m.kv_lora_rank, arch.num_heads * (m.qk_nope_head_dim + m.v_head_dim)),
            Linear("o_proj", arch.num_heads * m.v_head_dim, h, arch.out_bias),
        ]
        return mods
    q, kv = arch.q_dim, arch.kv_dim
    out_name = {"gpt2": "c_proj", "gpt_neox": "dense", "bloom": "dense", "phi": "dense", "bert": "dense"}
    if arch.fused_qkv:
        qkv = Linear(arch.fused_qkv, h, q + 2 * kv, arch.qkv_bias, aliases=("q_proj", "k_proj", "v_proj"))
        return [qkv, Linear(out_name.get(arch.model_type, "o_proj"), q, h, arch.out_bias)]
    std = ("q_proj", "k_proj", "v_proj")
    names = ("query", "key", "value") if arch.model_type == "bert" else std
    aliases = [(alias,) if alias != name else () for name, alias in zip(names, std, strict=True)]
    return [
        Linear(names[0], h, q, arch.qkv_bias, aliases=aliases[0]),
        Linear(names[1], h, kv, arch.qkv_bias, aliases=aliases[1]),
        Linear(names[2], h, kv, arch.qkv_bias, aliases=aliases[2]),
        Linear(out_name.get(arch.model_type, "o_proj"), q, h, arch.out_bias),
    ]


def _mlp(arch: Architecture, width: int, count: int, group: str) -> list[Linear]:
    h, bias = arch.hidden_size, arch.mlp_bias
    if arch.gated_mlp:
        if arch.model_type == "mixtral" and group == "expert":
            names = ("w1", "w3", "w2")
        else:
            names = ("gate_proj", "up_proj", "down_proj")
        return [Linear(names[0], h, width, bias, count, group), Linear(names[1], h, width, bias, count, group),
                Linear(names[2], width, h, bias, count, group)]
    names = {"gpt2": ("c_fc", "c_proj"), "gpt_neox": ("dense_h_to_4h", "dense_4h_to_h"),
             "bloom": ("dense_h_to_4h", "dense_4h_to_h"), "phi": ("fc1", "fc2"),
             "bert": ("dense", "dense")}.get(arch.model_type, ("up_proj", "down_proj"))
    return [Linear(names[0], h, width, bias, count, group), Linear(names[1], width, h, bias, count, group)]


def mlp_linears(arch: Architecture, moe_layer: bool) -> list[Linear]:
    if not (moe_layer and arch.moe):
        return _mlp(arch, arch.intermediate_size, 1, "mlp")
    moe = arch.moe
    mods = [Linear("gate", arch.hidden_size, moe.num_experts, False, 1, "router")]
    experts = _mlp(arch, moe.expert_intermediate_size, moe.num_experts, "expert")
    mods += [replace(lin, bias=lin.bias or moe.expert_bias, module=not moe.expert_parameters) for lin in experts]
    if moe.shared_intermediate_size:
        mods += _mlp(arch, moe.shared_intermediate_size, 1, "shared_expert")
    return mods


def layer_linears(arch: Architecture, index: int) -> list[Linear]:
    return list(_layer_linears(arch, arch.is_moe_layer(index)))


def moe_layer_linears(arch: Architecture, moe_layer: bool) -> tuple[Linear, ...]:
    """The linear modules of a dense (``moe_layer`` False) or MoE layer, built once per model."""
    return _layer_linears(arch, moe_layer)


@lru_cache(maxsize=512)
def _layer_linears(arch: Architecture, moe_layer: bool) -> tuple[Linear, ...]:
    return tuple(attention_linears(arch) + mlp_linears(arch, moe_layer))


def _norm_params(arch: Architecture, width: int) -> int:
    return width * (2 if arch.norm == "layernorm" else 1)


def layer_norm_params(arch: Architecture, moe_layer: bool) -> int:
    """Norm weights (and biases) of one layer, router (correction) biases, MLA's latent norms, attention sinks."""
    n = arch.norms_per_layer * _norm_params(arch, arch.hidden_size)
    if arch.attention_sinks:
        n += arch.num_heads
    if arch.qk_norm:
        n += 2 * _norm_params(arch, arch.head_dim)
    if arch.mla:
        n += _norm_params(arch, arch.mla.kv_lora_rank)
        if arch.mla.q_lora_rank:
            n += _norm_params(arch, arch.mla.q_lora_rank)
    if moe_layer and arch.moe and arch.moe.router_bias:
        n += arch.moe.num_experts
    return n


@dataclass(frozen=True)
class ParamCounts:
    """A model's parameters by part: embeddings, layers, final norm, output head, and per layer."""

    embedding: int  # token (+ position, token-type) embeddings and the embedding norm
    layers: int  # all transformer layers
    final: int  # final norm, pooler
    lm_head: int  # untied output projection (0 when tied or absent)
    active_layers: int  # layers counting only the experts a token uses (MoE), else = layers
    per_layer: tuple[int, ...]  # parameters of each layer

    @property
    def total(self) -> int:
        return self.embedding + self.layers + self.final + self.lm_head

    @property
    def active(self) -> int:
        """Parameters a token uses: routed experts counted k of E (embedding included)."""
        return self.embedding + self.active_layers + self.final + self.lm_head

    @property
    def non_embedding(self) -> int:
        return self.layers + self.final


def layer_params(arch: Architecture, index: int, active_only: bool = False) -> int:
    return _layer_params(arch, arch.is_moe_layer(index), active_only)


@lru_cache(maxsize=1024)
def _layer_params(arch: Architecture, moe_layer: bool, active_only: bool) -> int:
    total = layer_norm_params(arch, moe_layer)
    for lin in _layer_linears(arch, moe_layer):
        if active_only and lin.group == "expert" and arch.moe:
            total += lin.params // lin.count * arch.moe.experts_per_token
        else:
            total += lin.params
    return total


@lru_cache(maxsize=256)
def count_params(arch: Architecture) -> ParamCounts:
    h = arch.hidden_size
    embedding = arch.vocab_size * h + arch.max_positions * h + arch.token_types * h
    if arch.embedding_norm:
        embedding += _norm_params(arch, h)
    per_layer = tuple(layer_params(arch, i) for i in range(arch.num_layers))
    active_layers = sum(layer_params(arch, i, active_only=True) for i in range(arch.num_layers))
    final = _norm_params(arch, h) if arch.final_norm else 0
    if arch.pooler:
        final += h * h + h
    lm_head = 0
    if arch.lm_head and not arch.tie_embeddings:
        lm_head = arch.vocab_size * h
    if arch.lm_head and arch.lm_head_bias:
        lm_head += arch.vocab_size
    return ParamCounts(embedding, sum(per_layer), final, lm_head, active_layers, per_layer)
