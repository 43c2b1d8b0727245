"""Invariants that must hold for every scenario (hypothesis)."""

import pytest
from conftest import base_scenario
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainsizer.api import estimate

PRESETS = ["llama-3.2-1b", "qwen2.5-1.5b", "gpt2-124m", "phi-1.5", "mixtral-8x7b", "bert-large", "qwen3-8b"]
scenario_parts = st.fixed_dictionaries({
    "preset": st.sampled_from(PRESETS),
    "method": st.sampled_from(["full", "lora", "qlora", "freeze"]),
    "precision": st.sampled_from(["fp32", "bf16-mixed", "bf16-true", "fp16-mixed", "fp8-mixed"]),
    "optimizer": st.sampled_from(["adamw", "adamw-8bit", "paged-adamw-8bit", "adafactor", "sgd", "sgd-momentum",
                                  "lion"]),
    "mbs": st.integers(1, 8),
    "seq": st.sampled_from([128, 512, 2048]),
    "ckpt": st.sampled_from(["none", "selective", "full"]),
    "attention": st.sampled_from(["flash", "sdpa", "eager"]),
    "gpus": st.sampled_from([1, 2, 8]),
    "zero": st.sampled_from([0, 1, 2, 3]),
})
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def build(p, **changes):
    p = {**p, **changes}
    data = base_scenario(training__method=p["method"], training__precision=p["precision"],
                         training__optimizer=p["optimizer"], training__micro_batch_size=p["mbs"],
                         training__seq_len=p["seq"], training__activation_checkpointing=p["ckpt"],
                         training__attention=p["attention"], parallel__gpus=p["gpus"], parallel__zero=p["zero"])
    data["model"] = {"preset": p["preset"]}
    if p["method"] == "qlora":
        data["training"]["quantization"] = "nf4"
    return data


def mem(data):
    return estimate(data, with_limits=False).memory


@given(scenario_parts)
@SETTINGS
def test_memory_never_shrinks_when_micro_batch_or_sequence_grows(p):
    base = mem(build(p))
    assert mem(build(p, mbs=p["mbs"] + 1)).allocated_bytes >= base.allocated_bytes
    assert mem(build(p, seq=p["seq"] * 2)).allocated_bytes >= base.allocated_bytes


@given(scenario_parts)
@SETTINGS
def test_per_gpu_memory_never_grows_with_zero_stage_or_sharding_degree(p):
    values = [mem(build(p, gpus=8, zero=z)).allocated_bytes for z in range(4)]
    assert all(a >= b - 1 for a, b in zip(values, values[1:], strict=False))
    by_gpus = [mem(build(p, gpus=g, zero=3)).allocated_bytes for g in (1, 2, 4, 8)]
    # more shards never cost more (DDP buckets appear only at zero 0)
    assert all(a >= b - 1 for a, b in zip(by_gpus[1:], by_gpus[2:], strict=False))


@given(scenario_parts)
@SETTINGS
def test_lora_never_needs_more_than_full_and_qlora_weights_never_more_than_lora(p):
    full = mem(build(p, method="full")).allocated_bytes
    lora_mem = mem(build(p, method="lora"))
    # a full fine-tune whose gradients are freed between steps (training.zero_grad: none) and whose optimizer keeps
    # no state (sgd) holds nothing but its weights at the loss, where LoRA holds its adapters too
    adapters = sum(c.bytes for c in lora_mem.components if c.name == "lora_adapters")
    assert lora_mem.allocated_bytes <= full + adapters
    # QLoRA's 4-bit base is smaller than LoRA's 16-bit one; its total can exceed LoRA's at long
    # sequences because bitsandbytes' 4-bit matmul saves the input of every frozen linear.
    def weights(m):
        return sum(c.bytes for c in m.components if c.group == "weights")

    assert weights(mem(build(p, method="qlora"))) <= weights(mem(build(p, method="lora")))


@given(scenario_parts)
@SETTINGS
def test_checkpointing_never_adds_memory_and_totals_are_ordered(p):
    none = mem(build(p, ckpt="none"))
    full = mem(build(p, ckpt="full"))
    assert full.allocated_bytes <= none.allocated_bytes + 1  # equal where freed gradients set the backward's end
    assert none.allocated_bytes <= none.reserved_bytes <= none.device_bytes
    assert abs(sum(c.bytes for c in none.components) - none.allocated_bytes) < 1e3
    assert all(c.bytes >= 0 for c in none.components)


# --- every valid scenario: no crash, finite figures; every invalid one: one InputError ------------------------

def _finite(obj):
    from trainsizer.jsonout import finite

    return finite(obj, strict=True)  # raises NonFiniteNumber naming the first NaN / infinity


@given(scenario_parts)
@SETTINGS
def test_valid_scenarios_never_crash_and_every_figure_is_finite(p):
    result = estimate(build(p))  # limits and performance included
    data = _finite(result.to_dict())
    mem = data["memory"]
    assert 0 < mem["allocated_gib"] <= mem["reserved_gib"] <= mem["device_gib"]
    if result.performance is not None:
        assert result.performance.step_time_s > 0 and 0 <= result.performance.mfu <= 1


@given(scenario_parts, st.sampled_from([0, 1, 2, 3]))
@SETTINGS
def test_sharding_never_raises_per_gpu_allocated_memory_at_fixed_gpus(p, gpus_exp):
    gpus = 2 ** gpus_exp
    values = [mem(build(p, gpus=gpus, zero=z)).allocated_bytes for z in range(4)]
    assert all(a >= b - 1 for a, b in zip(values, values[1:], strict=False)), values


NAN, INF = float("nan"), float("inf")
CORRUPTIONS = [
    *[("training.micro_batch_size", v) for v in (0, -1, True, 2.5, "2", NAN, 10**6)],
    *[("training.seq_len", v) for v in (0, -128, False, 1.5, INF)],
    *[("parallel.gpus", v) for v in (0, -8, True, 1.5, "8")],
    *[("parallel.zero", v) for v in (4, -1, True, "3", 1.5)],
    *[("parallel.tp", v) for v in (0, True, 3)],
    *[("training.tokens", v) for v in (NAN, INF, -INF, -1, 0, True)],
    *[("training.method", v) for v in ("lorra", 3, None)],
    *[("training.precision", v) for v in ("bf16", "fp64")],
    ("training.optimizer", "adam"), ("training.attention", "flash3"), ("parallel.offload", "gpu"),
    ("parallel.sequence_parallel", "yes"), ("parallel.sequence_parallel", 1),
    ("training.extra_key", 1), ("parallel.zero_stage", 3), ("hardware.gpu", "rtx-9090"), ("model.preset", "nope"),
    ("hardware.gpu", {"name": "x", "memory_gib": NAN}), ("hardware.gpu", {"name": "x", "memory_gib": True}),
    ("training.lora", {"rank": 0}), ("training.global_batch_size", 0),
]


@given(scenario_parts, st.sampled_from(CORRUPTIONS))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_invalid_scenarios_always_raise_one_input_error(p, corruption):
    from trainsizer.errors import InputError

    path, value = corruption
    data = build(p)
    section, key = path.split(".", 1)
    if value is None:
        data[section].pop(key, None)
    else:
        data[section][key] = value
    if path == "training.lora":
        data["training"]["method"] = "lora"
    with pytest.raises(InputError) as err:
        estimate(data, with_limits=False)
    assert err.value.field and "\n" not in str(err.value)
