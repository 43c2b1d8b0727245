"""Scenario format: every FORMAT.md key accepted; bad input gets one clear message naming the field."""

import pytest
import yaml
from conftest import base_scenario

from trainsizer.api import estimate
from trainsizer.errors import InputError
from trainsizer.scenario import load_scenario, scenario_from_dict

FORMAT_EXAMPLE = """
model:
  preset: llama-3.1-8b
training:
  method: full
  precision: bf16-mixed
  optimizer: adamw
  micro_batch_size: 1
  seq_len: 2048
  global_batch_size: 512
  activation_checkpointing: none
  attention: flash
  tokens: 1.0e9
parallel:
  gpus: 8
  tp: 1
  pp: 1
  cp: 1
  virtual_pp: 1
  sequence_parallel: false
  zero: 0
  distributed_optimizer: false
  offload: none
hardware:
  gpu: h100-sxm5-80gb
  gpus_per_node: 8
  intra_node: nvlink4
  inter_node: ib-ndr-400
  nics_per_node: 8
"""


def test_format_example_with_every_key_is_accepted(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(FORMAT_EXAMPLE)
    sc = load_scenario(path)
    assert sc.parallel.dp == 8 and sc.grad_accumulation_steps == 64 and sc.training.tokens == 1e9


def test_optional_keys_have_documented_defaults():
    sc = scenario_from_dict(base_scenario(training__precision=None, training__optimizer=None))
    assert (sc.training.precision, sc.training.optimizer, sc.training.attention) == ("bf16-mixed", "adamw", "flash")
    assert sc.training.activation_checkpointing == "none" and sc.parallel.zero == 0
    assert sc.global_batch_size == 1 and sc.gpus_per_node == 1


def test_inline_architecture_and_lora_block():
    data = base_scenario(training__method="lora", training__lora={"rank": 16, "alpha": 32, "targets": "all-linear"})
    data["model"] = {"architecture": {"model_type": "qwen2", "hidden_size": 896, "num_hidden_layers": 24,
                                      "num_attention_heads": 14, "num_key_value_heads": 2,
                                      "intermediate_size": 4864, "vocab_size": 151936, "tie_word_embeddings": True}}
    result = estimate(data)
    assert result.params.total == 494_032_768


def test_hf_config_file_relative_to_the_scenario(tmp_path):
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "config.json").write_text(
        '{"model_type": "llama", "hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 32,'
        ' "num_key_value_heads": 8, "intermediate_size": 8192, "vocab_size": 128256, "tie_word_embeddings": true}')
    data = base_scenario()
    data["model"] = {"hf_config": "cfg/config.json"}
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(data))
    assert estimate(path).params.total == 1_235_814_400


BAD = [
    ({"training__micro_batch": 1}, "training.micro_batch", "micro_batch_size"),
    ({"training__method": "lorra"}, "training.method", "lora"),
    ({"training__precision": "bf16"}, "training.precision", "bf16-mixed"),
    ({"training__micro_batch_size": 0}, "training.micro_batch_size", "greater than 0"),
    ({"training__seq_len": -5}, "training.seq_len", "greater than 0"),
    ({"training__seq_len": 10**12}, "training.seq_len", "less than or equal"),
    ({"training__quantization": "nf4"}, "training.quantization", "qlora"),
    ({"parallel__gpus": 8, "parallel__tp": 3}, "parallel.gpus", "must divide"),
    ({"parallel__gpus": 8, "parallel__zero": 5}, "parallel.zero", "accepted"),
    ({"parallel__gpus": 4, "parallel__pp": 2, "parallel__zero": 3}, "parallel.zero", "pp"),
    ({"hardware__gpu": "h100"}, "hardware.gpu", "h100-sxm5-80gb"),
    ({"training__global_batch_size": 3, "parallel__gpus": 2}, "training.global_batch_size", "multiple"),
    ({"training__sequence_lengths": "ragged"}, "training.sequence_lengths", "fixed, variable"),
    ({"training__quantized_inputs": "dropped"}, "training.quantized_inputs", "saved, kept, none"),
    ({"training__unquantized_dtype": "bf16"}, "training.unquantized_dtype", "compute, fp16"),
    ({"training__zero_grad": "set_to_none"}, "training.zero_grad", "none, zeros"),
    ({"parallel__checkpoint_loading": "rank0"}, "parallel.checkpoint_loading", "sharded, full"),
    ({"parallel__sharded_weights": "fp32"}, "parallel.sharded_weights", "compute-copy, master-only"),
    ({"parallel__zero_grad_sync": "ring"}, "parallel.zero_grad_sync", "reduce-scatter, all-reduce"),
    ({"parallel__grad_reduce_dtype": "bf16"}, "parallel.grad_reduce_dtype", "fp32, compute"),
    ({"parallel__gpus": 8, "parallel__zero": 1, "parallel__zero_shard_gpus": 3}, "parallel.zero_shard_gpus", "divide"),
]


@pytest.mark.parametrize("overrides,field,hint", BAD)
def test_bad_input_names_field_and_accepted_values(overrides, field, hint):
    with pytest.raises(InputError) as exc:
        estimate(base_scenario(**overrides), with_limits=False)
    assert exc.value.field == field, str(exc.value)
    assert hint in str(exc.value)


def test_qlora_without_quantization_is_nf4_with_double_quantization():
    """QLoRA means NF4 with double quantization (Dettmers et al. 2023); it is the default, not an error."""
    sc = scenario_from_dict(base_scenario(training__method="qlora"))
    assert sc.training.quantization == "nf4-dq"
    assert scenario_from_dict(base_scenario(training__method="qlora", training__quantization="int8")) \
        .training.quantization == "int8"


def test_layouts_that_need_the_architecture():
    for overrides, field in [({"parallel__gpus": 3, "parallel__tp": 3}, "parallel.tp"),
                             ({"parallel__gpus": 64, "parallel__pp": 64}, "parallel.pp"),
                             ({"parallel__gpus": 2, "parallel__cp": 2, "training__seq_len": 1001}, "parallel.cp")]:
        with pytest.raises(InputError) as exc:
            estimate(base_scenario(**overrides), with_limits=False)
        assert exc.value.field == field


def test_unknown_preset_and_unknown_lora_target():
    with pytest.raises(InputError) as exc:
        estimate({**base_scenario(), "model": {"preset": "llama-3-8b"}})
    assert exc.value.field == "model.preset" and "llama-3.1-8b" in str(exc.value)
    with pytest.raises(InputError) as exc:
        estimate(base_scenario(training__method="lora", training__lora={"targets": ["qkv"]}))
    assert exc.value.field == "training.lora.targets" and "q_proj" in str(exc.value)


def test_model_block_needs_exactly_one_source():
    data = base_scenario()
    data["model"] = {"preset": "llama-3.1-8b", "hf_config": "x.json"}
    with pytest.raises(InputError) as exc:
        scenario_from_dict(data)
    assert exc.value.field == "model"


def test_malformed_yaml_names_the_line(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("model:\n  preset: [llama\ntraining: {}\n")
    with pytest.raises(InputError) as exc:
        load_scenario(path)
    assert "line" in str(exc.value)
