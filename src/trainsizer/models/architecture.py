"""A transformer's shape, read from Hugging Face ``config.json`` keys.

One reader serves the three ways a scenario names a model (catalog preset, ``hf_config`` file,
inline ``architecture:`` block), so a preset and the same config pasted inline give the same
numbers. Key aliases and per-``model_type`` defaults follow the Hugging Face ``transformers``
configuration classes (``LlamaConfig``, ``GPT2Config``, ``BloomConfig``, ``GPTNeoXConfig``,
``PhiConfig``, ``BertConfig``, ``MixtralConfig``, ``DeepseekV3Config``, ...).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainsizer.errors import InputError


# model_type -> family traits (HF modeling code of that type).
#   norm: rmsnorm | layernorm; norms_per_layer: 2, or 1 for phi's shared pre-norm (parallel block)
#   linear_bias: biases on attention and MLP linears; qkv_bias: bias on q/k/v only (Qwen2)
#   positions: learned absolute position table; token_types: BERT segment embeddings
#   fused_qkv: one query_key_value / c_attn module instead of q_proj/k_proj/v_proj
#   dropout: the reference implementation trains with dropout (GPT-2, BERT: p=0.1)
#   expert_bias: biases on the routed experts' linears and the router (gpt-oss)
#   expert_parameters: the experts are 3-D parameters, not nn.Linear modules (transformers' GptOssExperts)
#   attention_sinks: one learned softmax offset per attention head and layer (gpt-oss ``sinks``)
@dataclass(frozen=True, slots=True, kw_only=True)
class Family:
    """The traits a ``model_type`` fixes (its Hugging Face modeling code); the config's keys may override some."""

    norm: str = "rmsnorm"
    norms_per_layer: int = 2
    gated_default: bool = False  # a gated MLP (SiLU) when the config names no activation
    gated_always: bool = False
    tie_default: bool = False
    linear_bias: bool = False
    qkv_bias: bool | None = None  # None: as linear_bias
    qk_norm: bool = False
    positions: bool = False
    token_types: bool = False
    fused_qkv: str = ""
    dropout: bool = False
    ffn_default: int = 4  # intermediate_size as a multiple of hidden_size when the config leaves it out
    embedding_norm: bool = False
    final_norm: bool = True
    pooler: bool = False
    lm_head: bool = True
    lm_head_bias: bool = False
    expert_bias: bool = False
    expert_parameters: bool = False
    attention_sinks: bool = False


FAMILIES: dict[str, Family] = {
    "llama": Family(norm="rmsnorm", gated_default=True),
    "mistral": Family(norm="rmsnorm", gated_default=True),
    "mixtral": Family(norm="rmsnorm", gated_default=True),
    "qwen2": Family(norm="rmsnorm", gated_default=True, qkv_bias=True),
    "qwen2_moe": Family(norm="rmsnorm", gated_default=True, qkv_bias=True),
    "qwen3": Family(norm="rmsnorm", gated_default=True, qk_norm=True),
    "qwen3_moe": Family(norm="rmsnorm", gated_default=True, qk_norm=True),
    "gemma": Family(norm="rmsnorm", gated_default=True, gated_always=True, tie_default=True),
    "gemma2": Family(norm="rmsnorm", gated_default=True, gated_always=True, tie_default=True, norms_per_layer=4),
    "deepseek_v2": Family(norm="rmsnorm", gated_default=True),
    "deepseek_v3": Family(norm="rmsnorm", gated_default=True),
    # transformers models/gpt_oss/modeling_gpt_oss.py: GptOssAttention (q/k/v/o with config.attention_bias, sinks of
    # num_attention_heads), GptOssExperts (gate_up_proj and down_proj with biases), GptOssTopKRouter (weight, bias)
    "gpt_oss": Family(norm="rmsnorm", gated_default=True, expert_bias=True, expert_parameters=True,
                      attention_sinks=True),
    "gpt2": Family(norm="layernorm", linear_bias=True, positions=True, tie_default=True,
                   fused_qkv="c_attn", dropout=True, ffn_default=4),
    "gpt_neox": Family(norm="layernorm", linear_bias=True, fused_qkv="query_key_value", ffn_default=4),
    "bloom": Family(norm="layernorm", linear_bias=True, fused_qkv="query_key_value", tie_default=True,
                    embedding_norm=True, ffn_default=4),
    "phi": Family(norm="layernorm", linear_bias=True, norms_per_layer=1, lm_head_bias=True, ffn_default=4),
    "bert": Family(norm="layernorm", linear_bias=True, positions=True, token_types=True, tie_default=True,
                   embedding_norm=True, final_norm=False, dropout=True, pooler=True, lm_head=False,
                   ffn_default=4),
}
GATED_ACTIVATIONS = {"silu", "swiglu", "swish", "geglu", "gelu_pytorch_tanh_gated"}
PLAIN_ACTIVATIONS = {"gelu", "gelu_new", "gelu_fast", "gelu_pytorch_tanh", "relu", "quick_gelu", "gelu_python"}

# Hugging Face key aliases: canonical key -> keys that mean the same in some config class.
ALIASES: dict[str, tuple[str, ...]] = {
    "hidden_size": ("hidden_size", "n_embd", "n_embed", "d_model", "dim"),
    "num_hidden_layers": ("num_hidden_layers", "n_layer", "num_layers", "n_layers"),
    "num_attention_heads": ("num_attention_heads", "n_head", "num_heads", "n_heads"),
    "intermediate_size": ("intermediate_size", "n_inner", "ffn_dim", "ffn_hidden_size"),
    "max_position_embeddings": ("max_position_embeddings", "n_positions", "n_ctx"),
    "hidden_act": ("hidden_act", "activation_function", "hidden_activation"),
    "num_experts": ("num_local_experts", "n_routed_experts", "num_experts"),
}


@dataclass(frozen=True)
class MoE:
    """Mixture-of-experts layers (Shazeer et al. 2017; Mixtral, DeepSeek-V3 configs)."""

    num_experts: int
    experts_per_token: int
    expert_intermediate_size: int
    shared_experts: int = 0
    shared_intermediate_size: int = 0  # total width of the shared expert(s)
    dense_layers: int = 0  # first_k_dense_replace: leading layers with a dense MLP
    layer_freq: int = 1  # moe_layer_freq: every n-th layer (after the dense ones) is MoE
    router_bias: bool = False  # DeepSeek-V3 e_score_correction_bias; gpt-oss's router bias (one per expert as well)
    expert_bias: bool = False  # biases on the routed experts' linears (gpt-oss)
    expert_parameters: bool = False  # experts stored as 3-D parameters, not nn.Linear modules (gpt-oss)


@dataclass(frozen=True)
class MLA:
    """Multi-head latent attention (DeepSeek-V2 paper, arXiv:2405.04434, section 2.1)."""

    q_lora_rank: int  # 0 = plain q projection
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int


@dataclass(frozen=True)
class Architecture:
    """A model's architecture: the shapes the estimators count parameters, FLOPs and activations from."""

    model_type: str
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    tie_embeddings: bool
    activation: str
    gated_mlp: bool
    norm: str = "rmsnorm"
    norms_per_layer: int = 2
    qkv_bias: bool = False  # bias on the q/k/v projections
    out_bias: bool = False  # bias on the attention output projection
    mlp_bias: bool = False  # biases on the MLP linears
    qk_norm: bool = False
    max_positions: int = 0  # learned absolute position embeddings (0 = none, e.g. RoPE/ALiBi)
    token_types: int = 0
    embedding_norm: bool = False
    final_norm: bool = True
    lm_head: bool = True  # an output projection to the vocabulary (False: encoder + small task head)
    lm_head_bias: bool = False
    pooler: bool = False
    fused_qkv: str = ""  # module name of a fused q/k/v projection, "" when separate
    dropout: bool = False
    attention_sinks: bool = False  # a learned softmax offset per head and layer (gpt-oss)
    sliding_window: int = 0  # keys a query of a windowed layer attends to (0: no windowed layer)
    windowed_layers: tuple[int, ...] = ()  # indices of the layers with sliding-window attention
    moe: MoE | None = None
    mla: MLA | None = None
    name: str = ""

    @property
    def q_dim(self) -> int:
        if self.mla:
            return self.num_heads * (self.mla.qk_nope_head_dim + self.mla.qk_rope_head_dim)
        return self.num_heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        if self.mla:
            return self.num_heads * (self.mla.qk_nope_head_dim + self.mla.qk_rope_head_dim)
        return self.num_kv_heads * self.head_dim

    @property
    def v_dim(self) -> int:
        return self.num_heads * self.mla.v_head_dim if self.mla else self.kv_dim

    @property
    def attn_out_dim(self) -> int:
        return self.num_heads * self.mla.v_head_dim if self.mla else self.q_dim

    def is_moe_layer(self, index: int) -> bool:
        if not self.moe or index < self.moe.dense_layers:
            return False
        return (index - self.moe.dense_layers) % max(1, self.moe.layer_freq) == 0

    @property
    def moe_layers(self) -> int:
        return sum(self.is_moe_layer(i) for i in range(self.num_layers))

    def attention_window(self, index: int) -> int:
        """Keys a query of layer ``index`` may attend to: the sliding window on a windowed layer, else 0 (all)."""
        return self.sliding_window if index in self.windowed_layers else 0


def _get(config: dict[str, Any], key: str, default: Any = None) -> Any:
    for alias in ALIASES.get(key, (key,)):
        if alias in config and config[alias] is not None:
            return config[alias]
    return default


def _positive_int(config: dict[str, Any], key: str, where: str, default: Any = None) -> int:
    value = _get(config, key, default)
    if value is None:
        raise InputError(f"{where}.{key}", "is required (a positive integer)")
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise InputError(f"{where}.{key}", f"must be a positive integer, got {value!r}")
    if value > 10_000_000:
        raise InputError(f"{where}.{key}", f"{value} is not a plausible size (at most 10,000,000)")
    return value


def _count(config: dict[str, Any], key: str, where: str) -> int:
    """A non-negative integer key (absent or null = 0)."""
    value = config.get(key)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(f"{where}.{key}", f"must be a non-negative integer, got {value!r}")
    return value


# long: one statement per Hugging Face config field family (dense, GQA, MoE, MLA), read in order
def architecture_from_config(config: dict[str, Any], where: str = "model.architecture",
                             name: str = "") -> Architecture:
    """Build an :class:`Architecture` from Hugging Face config.json keys (aliases accepted)."""
    if not isinstance(config, dict):
        raise InputError(where, "must be a mapping of Hugging Face config keys")
    model_type = config.get("model_type")
    if not isinstance(model_type, str) or model_type not in FAMILIES:
        raise InputError(f"{where}.model_type",
                         f"unknown {model_type!r}; accepted: {', '.join(sorted(FAMILIES))}")
    family = FAMILIES[model_type]
    hidden = _positive_int(config, "hidden_size", where)
    layers = _positive_int(config, "num_hidden_layers", where)
    heads = _positive_int(config, "num_attention_heads", where)
    kv_heads = _positive_int(config, "num_key_value_heads", where, default=heads)
    if model_type == "bloom" or model_type == "gpt2":
        kv_heads = heads
    if heads % kv_heads:
        raise InputError(f"{where}.num_key_value_heads",
                         f"{kv_heads} must divide num_attention_heads ({heads})")
    default_head_dim = hidden // heads
    head_dim = _positive_int(config, "head_dim", where, default=default_head_dim)
    if "head_dim" not in config and hidden % heads:
        raise InputError(f"{where}.num_attention_heads", f"{heads} must divide hidden_size ({hidden})")
    ffn = _positive_int(config, "intermediate_size", where, default=family.ffn_default * hidden)
    vocab = _positive_int(config, "vocab_size", where)

    act = str(_get(config, "hidden_act", "silu" if family.gated_default else "gelu")).lower()
    if act in GATED_ACTIVATIONS:
        gated = True
    elif act in PLAIN_ACTIVATIONS:
        gated = False
    else:
        accepted = ", ".join(sorted(GATED_ACTIVATIONS | PLAIN_ACTIVATIONS))
        raise InputError(f"{where}.hidden_act", f"unknown {act!r}; accepted: {accepted}")
    if model_type in ("gpt2", "gpt_neox", "bloom", "phi", "bert"):
        gated = False  # these families have a plain two-matrix MLP whatever the activation
    if family.gated_always:
        gated = True  # Gemma: GeGLU, a gated MLP with a tanh-GELU activation

    tie = config.get("tie_word_embeddings", family.tie_default)
    if not isinstance(tie, bool):
        raise InputError(f"{where}.tie_word_embeddings", f"must be true or false, got {tie!r}")

    linear_bias = family.linear_bias
    qkv_bias = linear_bias if family.qkv_bias is None else family.qkv_bias
    out_bias = linear_bias
    if config.get("attention_bias") is not None and model_type not in ("qwen2", "qwen2_moe"):
        qkv_bias = out_bias = bool(config["attention_bias"])  # LlamaConfig: bias on q, k, v and o
    if config.get("qkv_bias") is not None:
        qkv_bias = bool(config["qkv_bias"])
    mlp_bias = bool(config.get("mlp_bias", linear_bias))

    moe = _moe_from_config(config, where, hidden, ffn, family)
    mla = _mla_from_config(config, where)
    window, windowed = _windowed_layers(config, where, layers)
    positions = 0
    if family.positions:
        positions = _positive_int(config, "max_position_embeddings", where, default=1024)
    token_types = _positive_int(config, "type_vocab_size", where, default=2) if family.token_types else 0
    return Architecture(
        model_type=model_type,
        hidden_size=hidden,
        num_layers=layers,
        num_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        intermediate_size=ffn,
        vocab_size=vocab,
        tie_embeddings=tie,
        activation=act,
        gated_mlp=gated,
        norm=family.norm,
        norms_per_layer=family.norms_per_layer,
        qkv_bias=qkv_bias,
        out_bias=out_bias,
        mlp_bias=mlp_bias,
        qk_norm=bool(config.get("qk_norm", family.qk_norm)),
        max_positions=positions,
        token_types=token_types,
        embedding_norm=family.embedding_norm,
        final_norm=family.final_norm,
        lm_head=family.lm_head,
        lm_head_bias=family.lm_head_bias,
        pooler=family.pooler,
        fused_qkv=family.fused_qkv,
        dropout=family.dropout,
        attention_sinks=family.attention_sinks,
        sliding_window=window,
        windowed_layers=windowed,
        moe=moe,
        mla=mla,
        name=name,
    )


def _windowed_layers(config: dict[str, Any], where: str, layers: int) -> tuple[int, tuple[int, ...]]:
    """(window, indices of the windowed layers) from ``layer_types``: the layers it names ``sliding_attention`` attend
    to the last ``sliding_window`` keys (transformers' per-layer attention type, e.g. GptOssConfig, where it
    alternates sliding and full from layer 0). Without ``layer_types`` no layer is windowed: configs such as Qwen2's
    carry a ``sliding_window`` their code leaves off (``use_sliding_window: false``)."""
    types = config.get("layer_types")
    if types is None:
        return 0, ()
    accepted = ("full_attention", "sliding_attention")
    if not isinstance(types, list) or len(types) != layers or any(t not in accepted for t in types):
        raise InputError(f"{where}.layer_types", f"must list one of {', '.join(accepted)} for each of the {layers} "
                                                 "layers (num_hidden_layers)")
    windowed = tuple(i for i, t in enumerate(types) if t == "sliding_attention")
    return (_positive_int(config, "sliding_window", where) if windowed else 0), windowed


def _moe_from_config(config: dict[str, Any], where: str, hidden: int, ffn: int, family: Family) -> MoE | None:
    experts = _get(config, "num_experts")
    if experts is None:
        return None  # a dense model
    if isinstance(experts, bool) or not isinstance(experts, int) or experts < 1:
        key = next((k for k in ALIASES["num_experts"] if k in config), "num_experts")
        raise InputError(f"{where}.{key}", f"{experts!r} is not accepted; accepted: a positive integer (the experts "
                                           "per MoE layer), or leave the key out for a dense model")
    experts = _positive_int(config, "num_experts", where)
    per_token = _positive_int(config, "num_experts_per_tok", where, default=2)
    if per_token > experts:
        raise InputError(f"{where}.num_experts_per_tok", f"{per_token} exceeds the {experts} experts")
    expert_ffn = _positive_int(config, "moe_intermediate_size", where, default=ffn)
    shared = _count(config, "n_shared_experts", where)
    shared_ffn = _count(config, "shared_expert_intermediate_size", where) or shared * expert_ffn
    if shared_ffn and not shared:
        shared = 1
    return MoE(
        num_experts=experts,
        experts_per_token=per_token,
        expert_intermediate_size=expert_ffn,
        shared_experts=shared,
        shared_intermediate_size=shared_ffn,
        dense_layers=_count(config, "first_k_dense_replace", where),
        layer_freq=_count(config, "moe_layer_freq", where) or _count(config, "decoder_sparse_step", where) or 1,
        router_bias=config.get("topk_method") == "noaux_tc" or config.get("model_type") == "deepseek_v3"
        or family.expert_bias,
        expert_bias=family.expert_bias,
        expert_parameters=family.expert_parameters,
    )


def _mla_from_config(config: dict[str, Any], where: str) -> MLA | None:
    if not config.get("kv_lora_rank"):
        return None
    return MLA(
        q_lora_rank=_count(config, "q_lora_rank", where),
        kv_lora_rank=_positive_int(config, "kv_lora_rank", where),
        qk_nope_head_dim=_positive_int(config, "qk_nope_head_dim", where),
        qk_rope_head_dim=_positive_int(config, "qk_rope_head_dim", where),
        v_head_dim=_positive_int(config, "v_head_dim", where),
    )
