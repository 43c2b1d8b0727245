"""gpt-oss: its sliding-window attention layers (which are windowed, the FLOPs they execute and count), its shape
read from its config, and what LoRA and QLoRA reach of experts held as parameters."""

import pytest

from trainsizer.errors import InputError
from trainsizer.estimate.flops import step_flops, window_share
from trainsizer.models.architecture import architecture_from_config
from trainsizer.models.catalog import preset_entry, resolve_model
from trainsizer.scenario import scenario_from_dict


def _job(attention: str, seq_len: int = 4096, layer_types: bool = True) -> dict:
    config = dict(preset_entry("gpt-oss-20b")["config"])
    if not layer_types:
        config.pop("layer_types")
    return {"model": {"architecture": config},
            "training": {"method": "full", "precision": "bf16-mixed", "micro_batch_size": 1, "seq_len": seq_len,
                         "global_batch_size": 8, "attention": attention, "activation_checkpointing": "none"},
            "parallel": {"gpus": 8, "ep": 8, "zero": 3}, "hardware": {"gpu": "h100-sxm5-80gb", "gpus_per_node": 8}}


def _flops(job: dict):
    sc = scenario_from_dict(job)
    return step_flops(sc, resolve_model(sc.model))


def test_layer_types_window_every_other_layer_from_the_first():
    arch = resolve_model(scenario_from_dict(_job("flash")).model)
    assert arch.sliding_window == 128 and arch.windowed_layers == tuple(range(0, 24, 2))
    assert arch.attention_window(0) == 128 and arch.attention_window(1) == 0


def test_a_causal_window_counts_the_keys_each_query_sees():
    # a query at position i sees min(i + 1, w) keys: sum over s positions ~ s w - w^2 / 2, against s^2 / 2 causal
    s, w = 4096, 128
    keys = sum(min(i + 1, w) for i in range(s))
    assert window_share(w, s) * s * s / 2 == pytest.approx(keys, rel=0.01)
    assert window_share(0, s) == window_share(s, s) == 1.0


def test_a_fused_kernel_skips_what_the_window_masks_and_eager_attention_does_not():
    windowed, full = _flops(_job("flash")), _flops(_job("flash", layer_types=False))
    # half the layers attend to 128 of 4,096 keys: the attention core drops by nearly half, the linears stay
    assert windowed.linear_per_token == full.linear_per_token and windowed.expert_per_token == full.expert_per_token
    share = (1 + window_share(128, 4096)) / 2
    assert windowed.attention_per_token == pytest.approx(full.attention_per_token * share)
    assert windowed.model_per_token < full.model_per_token
    eager, eager_full = _flops(_job("eager")), _flops(_job("eager", layer_types=False))
    assert eager.attention_per_token == eager_full.attention_per_token  # the masked square is still computed
    assert eager.model_per_token == pytest.approx(windowed.model_per_token)  # useful work does not depend on it


@pytest.mark.parametrize("layer_types", [["sliding_attention"] * 3, ["local"] * 24, "sliding_attention"])
def test_layer_types_that_do_not_name_each_layer_are_refused(layer_types):
    config = dict(preset_entry("gpt-oss-20b")["config"], layer_types=layer_types)
    with pytest.raises(InputError) as err:
        architecture_from_config(config)
    assert "layer_types" in str(err.value) and "sliding_attention" in str(err.value)


def _lora_state(targets):
    from trainsizer.estimate.memory import default_memory_model
    from trainsizer.estimate.training_state import training_state

    job = _job("flash")
    job["model"] = {"preset": "gpt-oss-20b"}
    job["training"].update(method="lora", lora={"rank": 16, "targets": targets})
    sc = scenario_from_dict(job)
    return training_state(sc, resolve_model(sc.model), default_memory_model())


def test_lora_on_gpt_oss_reaches_the_attention_linears_only():
    # transformers' GptOssExperts hold gate_up_proj / down_proj as parameters and the router is no nn.Linear: peft's
    # all-linear wraps q/k/v/o alone
    state = _lora_state("all-linear")
    h, q, kv = 2880, 64 * 64, 8 * 64
    per_layer = 16 * ((h + q) + 2 * (h + kv) + (q + h))
    assert state.trainable_params == 24 * per_layer
    with pytest.raises(InputError) as err:
        _lora_state(["q_proj", "down_proj"])
    assert "down_proj" in str(err.value) and "o_proj" in str(err.value)


def _weights_gib(preset: str, method: str) -> float:
    from trainsizer.estimate.estimator import estimate

    job = _job("flash", seq_len=2048)
    job["model"] = {"preset": preset}
    job["training"].update(method=method, lora={"rank": 16, "targets": ["q_proj", "v_proj"]})
    job["parallel"] = {"gpus": 1}
    memory = estimate(scenario_from_dict(job)).memory
    return next(c.bytes for c in memory.components if c.name == "weights") / 2**30


def test_qlora_keeps_gpt_oss_experts_in_16_bits_and_quantizes_module_experts():
    # bitsandbytes replaces nn.Linear modules only: gpt-oss-20b's 19.1 B expert parameters stay bf16 (~36 GiB),
    # while Qwen3-30B-A3B's experts are nn.Linear modules and are stored as 4-bit codes
    experts = 24 * 32 * (2880 * 5760 + 5760 + 5760 * 2880 // 2 + 2880)  # gate_up + down with biases, 24 layers
    gpt_oss = _weights_gib("gpt-oss-20b", "qlora")
    assert gpt_oss == pytest.approx(_weights_gib("gpt-oss-20b", "lora"), rel=0.12)
    assert gpt_oss > experts * 2 / 2**30
    assert _weights_gib("qwen3-30b-a3b", "qlora") < 0.3 * _weights_gib("qwen3-30b-a3b", "lora")
