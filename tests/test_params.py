"""Exact parameter counts against published figures."""

import pytest

from trainsizer.models.architecture import architecture_from_config
from trainsizer.models.catalog import model_ids, preset_architecture, preset_entry
from trainsizer.models.param_counts import count_params

# Published counts (model cards / papers / safetensors metadata) named in the issue.
PUBLISHED = {
    "llama-3.1-8b": (8.03e9, None),
    "qwen2.5-7b": (7.62e9, None),
    "mixtral-8x7b": (46.7e9, 12.9e9),
    "deepseek-v3": (671e9, 37e9),
    "llama-2-7b": (6.74e9, None),
    "gpt2-124m": (124e6, None),
    "bloom-176b": (176e9, None),
    "bert-large": (335e6, None),
}


@pytest.mark.parametrize("preset", sorted(PUBLISHED))
def test_preset_total_and_active_match_published_counts(preset):
    total, active = PUBLISHED[preset]
    counts = count_params(preset_architecture(preset))
    assert counts.total == pytest.approx(total, rel=0.006)
    if active:
        assert counts.active == pytest.approx(active, rel=0.02)


def rounding_tolerance(published: float) -> float:
    """Relative tolerance: 0.1 % for exact integers, else half a unit of the last published digit."""
    text = f"{published:.6g}".split("e")[0].replace(".", "").rstrip("0").lstrip("0")
    if len(text) >= 6:
        return 0.001
    digits = max(len(text), 1)
    return 0.5 * 10 ** (1 - digits) / float(text[0] + "." + (text[1:] or "0")) + 0.002


@pytest.mark.parametrize("preset", model_ids())
def test_every_preset_matches_the_count_its_entry_cites(preset):
    entry = preset_entry(preset)
    counts = count_params(preset_architecture(preset))
    published = float(entry["published_params"])
    assert counts.total == pytest.approx(published, rel=rounding_tolerance(published)), entry["published_params_source"]
    if entry.get("published_active_params"):
        active = counts.active - (counts.embedding if entry.get("published_active_excludes_embedding") else 0)
        published_active = float(entry["published_active_params"])
        assert active == pytest.approx(published_active, rel=rounding_tolerance(published_active))


def test_exact_safetensors_counts_for_dense_gqa_and_moe():
    assert count_params(preset_architecture("llama-3.1-8b")).total == 8_030_261_248
    assert count_params(preset_architecture("qwen2.5-7b")).total == 7_615_616_512
    assert count_params(preset_architecture("mixtral-8x7b")).total == 46_702_792_704


def test_tied_embeddings_drop_the_output_head():
    cfg = dict(model_type="llama", hidden_size=2048, num_hidden_layers=16, num_attention_heads=32,
               num_key_value_heads=8, intermediate_size=8192, vocab_size=128256)
    untied = count_params(architecture_from_config({**cfg, "tie_word_embeddings": False}))
    tied = count_params(architecture_from_config({**cfg, "tie_word_embeddings": True}))
    assert untied.total - tied.total == 128256 * 2048


def test_gqa_shrinks_only_k_and_v():
    cfg = dict(model_type="llama", hidden_size=4096, num_hidden_layers=1, num_attention_heads=32,
               intermediate_size=11008, vocab_size=32000, tie_word_embeddings=True)
    mha = count_params(architecture_from_config({**cfg, "num_key_value_heads": 32}))
    gqa = count_params(architecture_from_config({**cfg, "num_key_value_heads": 8}))
    assert mha.total - gqa.total == 2 * 4096 * (4096 - 1024)


def test_gated_mlp_has_three_matrices_plain_mlp_two():
    base = dict(hidden_size=1024, num_hidden_layers=1, num_attention_heads=16, intermediate_size=4096,
                vocab_size=1000, tie_word_embeddings=True)
    gated = count_params(architecture_from_config({**base, "model_type": "llama", "hidden_act": "silu"}))
    plain = count_params(architecture_from_config({**base, "model_type": "llama", "hidden_act": "gelu"}))
    assert gated.layers - plain.layers == 1024 * 4096


def test_moe_active_counts_only_routed_experts():
    arch = preset_architecture("mixtral-8x7b")
    counts = count_params(arch)
    expert = 3 * 4096 * 14336
    assert counts.total - counts.active == arch.num_layers * (8 - 2) * expert


def test_hf_alias_keys_read_like_canonical_ones():
    gpt2 = architecture_from_config(dict(model_type="gpt2", n_embd=768, n_layer=12, n_head=12, vocab_size=50257,
                                         n_positions=1024, activation_function="gelu_new"))
    assert count_params(gpt2).total == 124_439_808


INLINE = {
    "llama": {}, "qwen2": {}, "qwen3": {"head_dim": 128}, "mistral": {}, "mixtral": {"num_local_experts": 8,
                                                                                      "num_experts_per_tok": 2},
    "gpt2": {}, "gpt_neox": {}, "bloom": {}, "phi": {}, "bert": {},
    "deepseek_v3": {"n_routed_experts": 16, "num_experts_per_tok": 2, "moe_intermediate_size": 512,
                    "n_shared_experts": 1, "first_k_dense_replace": 1, "q_lora_rank": 256, "kv_lora_rank": 128,
                    "qk_nope_head_dim": 64, "qk_rope_head_dim": 32, "v_head_dim": 64},
}


@pytest.mark.parametrize("model_type", sorted(INLINE))
@pytest.mark.parametrize("act", ["silu", "swiglu", "gelu", "gelu_new", "relu"])
def test_every_format_model_type_and_activation_is_read(model_type, act):
    cfg = dict(model_type=model_type, hidden_size=1024, num_hidden_layers=4, num_attention_heads=8,
               num_key_value_heads=8, intermediate_size=2816, vocab_size=32000, hidden_act=act, **INLINE[model_type])
    arch = architecture_from_config(cfg)
    counts = count_params(arch)
    assert counts.total > counts.layers > 0
    assert counts.active <= counts.total
    if model_type in ("llama", "qwen2", "qwen3", "mistral", "mixtral", "deepseek_v3"):
        assert arch.gated_mlp == (act in ("silu", "swiglu"))


def test_unknown_model_type_or_activation_names_the_field():
    from trainsizer.errors import InputError

    with pytest.raises(InputError) as exc:
        architecture_from_config(dict(model_type="llamma", hidden_size=8, num_hidden_layers=1,
                                      num_attention_heads=1, vocab_size=8))
    assert exc.value.field == "model.architecture.model_type" and "llama" in str(exc.value)
    with pytest.raises(InputError) as exc:
        architecture_from_config(dict(model_type="llama", hidden_size=8, num_hidden_layers=1,
                                      num_attention_heads=1, vocab_size=8, hidden_act="swish2"))
    assert exc.value.field == "model.architecture.hidden_act"
