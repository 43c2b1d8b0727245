"""trainsizer probe memory: the workload built from a scenario, the CPU simulation cross-checked against the
analytic estimator, scaled-down extrapolation, case files, multi-process data parallelism (gloo), the CLI.

CPU only: real steps run on the CPU and MemTracker counts their live tensors; the CUDA meter runs on a GPU
(benchmarks/gpu_ground_truth.sh).
"""

import json

import pytest
from conftest import base_scenario
from typer.testing import CliRunner

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")

from trainsizer.api import estimate  # noqa: E402
from trainsizer.cli import app  # noqa: E402
from trainsizer.errors import InputError  # noqa: E402
from trainsizer.estimate.memory import default_memory_model  # noqa: E402
from trainsizer.estimate.memory_types import GIB  # noqa: E402
from trainsizer.estimate.training_state import training_state  # noqa: E402
from trainsizer.evidence.cases import case_documents  # noqa: E402
from trainsizer.evidence.validate import load_cases, validate_cases  # noqa: E402
from trainsizer.models.catalog import resolve_model  # noqa: E402
from trainsizer.models.param_counts import count_params  # noqa: E402
from trainsizer.probe.common.gpu_match import detect_gpu_id  # noqa: E402
from trainsizer.probe.memory.cases import measured_cases, write_cases  # noqa: E402
from trainsizer.probe.memory.measure import Reading, extrapolate, measure  # noqa: E402
from trainsizer.probe.memory.simulate import simulate  # noqa: E402
from trainsizer.probe.workload.build import build_workload  # noqa: E402
from trainsizer.probe.workload.config import scaled_scenario  # noqa: E402
from trainsizer.scenario import scenario_from_dict  # noqa: E402

TINY = {"model_type": "llama", "hidden_size": 128, "num_hidden_layers": 4, "num_attention_heads": 4,
        "num_key_value_heads": 2, "intermediate_size": 256, "vocab_size": 512}
SMALL = {"model_type": "llama", "hidden_size": 512, "num_hidden_layers": 4, "num_attention_heads": 8,
         "num_key_value_heads": 4, "intermediate_size": 1376, "vocab_size": 8000}


def scenario(arch=TINY, **training):
    data = base_scenario(training__micro_batch_size=2, training__seq_len=64)
    data["model"] = {"architecture": dict(arch)}
    data["training"].update(training)
    return scenario_from_dict(data)


@pytest.mark.parametrize("method,precision,extra", [
    ("full", "bf16-mixed", {}), ("full", "fp32", {"activation_checkpointing": "full"}),
    ("full", "fp16-mixed", {}), ("lora", "bf16-mixed", {"lora": {"rank": 4, "targets": "all-linear"}}),
    ("lora", "bf16-true", {"activation_checkpointing": "full"}), ("freeze", "bf16-mixed", {}),
    ("full", "bf16-true", {"optimizer_in_backward": True}), ("full", "bf16-true", {"optimizer": "adafactor"}),
    ("full", "bf16-true", {"optimizer": "sgd-momentum"}),
])
def test_workload_trains_and_counts_the_parameters_the_estimator_counts(method, precision, extra):
    sc = scenario(method=method, precision=precision, **extra)
    wl = build_workload(sc, "cpu")
    losses = [wl.step() for _ in range(2)]
    assert all(0 < loss < 20 for loss in losses)
    arch = resolve_model(sc.model)
    state = training_state(sc, arch, default_memory_model())
    assert wl.trainable_params == state.trainable_params
    adapters = wl.trainable_params if method == "lora" else 0
    assert wl.total_params - adapters == count_params(arch).total
    assert wl.tokens_per_step == 2 * 64


def test_workload_builds_each_family_scaled_down():
    for preset in ("gpt2-124m", "qwen2.5-0.5b", "bert-large", "mixtral-8x7b", "phi-2"):
        data = base_scenario(model__preset=preset, training__method="lora", training__seq_len=8)
        sc = scenario_from_dict(data)
        from trainsizer.probe.workload.build import transformers_config

        config = transformers_config(sc, layers=1)
        assert config.num_hidden_layers == 1


@pytest.mark.parametrize("field,value", [("precision", "fp8-mixed"), ("activation_checkpointing", "selective"),
                                         ("loss", "chunked")])
def test_probe_refuses_what_it_cannot_run_faithfully(field, value):
    with pytest.raises(InputError) as exc:
        build_workload(scenario(**{field: value}), "cpu")
    assert exc.value.field == f"training.{field}" and "accepted" in str(exc.value)


def test_probe_refuses_tensor_parallel_layouts():
    data = base_scenario(parallel__gpus=2, parallel__tp=2)
    data["model"] = {"architecture": dict(TINY)}
    with pytest.raises(InputError) as exc:
        build_workload(scenario_from_dict(data), "cpu", multi_process=True)
    assert exc.value.field == "parallel.tp"


# --- the simulation against the analytic estimator ----------------------------------------------------------

@pytest.mark.parametrize("method,precision,ckpt", [("full", "bf16-true", "none"), ("full", "fp32", "none"),
                                                   ("lora", "bf16-mixed", "none"), ("full", "bf16-mixed", "full")])
def test_simulation_agrees_with_the_estimator_component_by_component(method, precision, ckpt):
    sc = scenario(SMALL, method=method, precision=precision, activation_checkpointing=ckpt, seq_len=512,
                  attention="sdpa")
    sim = simulate(sc)
    est = estimate(sc, with_limits=False, with_performance=False).memory
    simulated, predicted = sim.groups_gib(), est.groups_gib()
    # model states are exact counts on both sides
    assert simulated["optimizer"] == pytest.approx(predicted["optimizer"], rel=0.03, abs=1e-3)
    if precision in ("fp32", "bf16-true") or method == "lora":
        assert simulated["weights"] == pytest.approx(predicted["weights"], rel=0.03)
    else:  # autocast's bf16 weight copies are activations to MemTracker, the estimator's 'weights'
        assert simulated["weights"] + simulated["activations"] == pytest.approx(
            predicted["weights"] - predicted["weights"] / 3 + predicted["activations"] + predicted["weights"] / 3,
            rel=0.35)
    # the estimator keeps gradients alive through the forward pass (accumulation, DDP buckets); a single-GPU
    # step with zero_grad(set_to_none=True) frees them, so the estimator is above the simulation, not far
    assert 0.85 < est.allocated_gib / sim.peak_gib < 1.40
    assert sim.peak_bytes > 0 and sim.modules_peak_bytes


def test_simulation_scaled_down_runs_fewer_layers():
    sim = simulate(scenario(SMALL, method="lora"), layers=2)
    assert sim.layers == 2 and sim.layers_full == 4


def test_simulation_refuses_qlora_with_a_reason():
    with pytest.raises(InputError) as exc:
        simulate(scenario(method="qlora", quantization="nf4"))
    assert exc.value.field == "training.method"


# --- extrapolation ------------------------------------------------------------------------------------------

def test_extrapolation_is_linear_in_depth():
    low = Reading(2, 10 * GIB, 12 * GIB, 13 * GIB, [9.0, 1.0, 1.0])
    high = Reading(4, 14 * GIB, 17 * GIB, 18 * GIB, [9.0, 1.5, 1.5])
    line = extrapolate(low, high, 32)
    assert line["allocated"] == pytest.approx((10 + 30 * 2) * GIB)
    assert line["reserved"] == pytest.approx((12 + 30 * 2.5) * GIB)
    assert line["step_time"] == pytest.approx(1.0 + 30 * 0.25)
    low_cpu = Reading(2, 10 * GIB, None, None, [1.0])
    assert extrapolate(low_cpu, high, 32)["reserved"] is None


def test_scaled_down_measurement_extrapolates_to_the_full_depth_measurement():
    sc = scenario(SMALL, method="full", precision="bf16-true", seq_len=128)
    full = measure(sc, "cpu", None, steps=2)
    scaled = measure(sc, "cpu", 1, steps=2)
    assert [r.layers for r in scaled.readings] == [1, 2] and scaled.extrapolated
    assert scaled.allocated_gib == pytest.approx(full.allocated_gib, rel=0.08)


def test_scaled_scenario_keeps_everything_but_depth():
    sc = scenario_from_dict(base_scenario(model__preset="llama-3.1-8b"))
    small = scaled_scenario(sc, 4)
    assert resolve_model(small.model).num_layers == 4
    assert small.training == sc.training and small.parallel == sc.parallel


# --- cases --------------------------------------------------------------------------------------------------

def test_probe_cases_validate_and_append_without_losing_anything(tmp_path):
    sc = scenario(method="lora")
    measurement = measure(sc, "cpu", None, steps=2)
    env = {"hostname": "test", "date": "2026-12-02", "libraries": {}}
    cases = measured_cases(sc, "h100-sxm5-80gb", measurement, env, "test run")
    assert [c["measured"]["memory_metric"] for c in cases] == ["allocated"]  # CPU: no reserved/device
    out = tmp_path / "cases.yaml"
    write_cases(out, cases)
    with pytest.raises(InputError) as exc:
        write_cases(out, cases)
    assert exc.value.field == "--out"
    other = measured_cases(scenario(method="full"), "h100-sxm5-80gb", measurement, env, "test run")
    write_cases(out, other, append=True)
    loaded = load_cases(out)
    assert [c.id for c in loaded] == [cases[0]["id"], other[0]["id"]]
    results = validate_cases(loaded)
    assert all(r.predicted and r.predicted > 0 for r in results)
    written = case_documents(out)
    assert written[0]["environment"]["hostname"] == "test" and written[0]["probe"]["meter"] == "memtracker-cpu"


@pytest.mark.parametrize("name,memory,expected", [
    ("NVIDIA H200", 139.8, "h200-sxm-141gb"), ("NVIDIA GeForce RTX 4090", 23.6, "rtx-4090-24gb"),
    ("NVIDIA A100-SXM4-80GB", 79.2, "a100-sxm4-80gb"), ("NVIDIA A100-SXM4-40GB", 39.4, "a100-sxm4-40gb"),
    ("NVIDIA L40S", 44.5, "l40s-48gb"), ("Some Unknown Accelerator", 10.0, None),
])
def test_gpu_detection_from_cuda_device_name(name, memory, expected):
    assert detect_gpu_id(name, memory) == expected


# --- data parallel under torchrun (gloo on the CPU) ---------------------------------------------------------

def test_fsdp_probe_under_torchrun_shards_model_states(tmp_path):
    path = tmp_path / "job.yaml"
    data = base_scenario(training__micro_batch_size=2, training__seq_len=64, parallel__gpus=2, parallel__zero=3)
    data["model"] = {"architecture": dict(SMALL)}
    data["training"]["precision"] = "bf16-true"
    import yaml

    path.write_text(yaml.safe_dump(data))
    result = CliRunner().invoke(app, ["probe", "memory", str(path), "--device", "cpu", "--json"])
    assert result.exit_code == 0, f"{result.output}\n{result.exception}"
    out = json.loads(result.output[result.output.index("{"):])
    sharded = out["measurement"]["allocated_gib"]
    single = measure(scenario_from_dict({**data, "parallel": {"gpus": 1}}), "cpu", None, steps=2).allocated_gib
    states_one_gpu = 8 * count_params(resolve_model(scenario_from_dict(data).model)).total / GIB  # 2+2+4 B/param
    assert out["measurement"]["world_size"] == 2
    assert single - sharded > 0.3 * states_one_gpu  # half of the model states live on the other rank


# --- CLI ----------------------------------------------------------------------------------------------------

def test_cli_simulate_prints_components_and_json(tmp_path):
    import yaml

    path = tmp_path / "job.yaml"
    data = base_scenario(training__micro_batch_size=2, training__seq_len=64)
    data["model"] = {"architecture": dict(TINY)}
    path.write_text(yaml.safe_dump(data))
    result = CliRunner().invoke(app, ["probe", "memory", str(path), "--simulate", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output[result.output.index("{"):])
    assert out["simulation"]["allocated_gib"] > 0 and "optimizer" in out["predicted"]["components_gib"]
    text = CliRunner().invoke(app, ["probe", "memory", str(path), "--simulate"])
    assert "Peak by component" in text.output and "estimator" in text.output


@pytest.mark.parametrize("args,field", [(["--device", "tpu"], "--device"), (["--steps", "1"], "--steps"),
                                        (["--device", "cuda"], "--device")])
def test_cli_bad_probe_input_exits_2_with_one_line(tmp_path, args, field):
    import torch

    if args == ["--device", "cuda"] and torch.cuda.is_available():
        pytest.skip("a CUDA device is visible: --device cuda is valid here")
    import subprocess
    import sys

    import yaml

    path = tmp_path / "job.yaml"
    data = base_scenario()
    data["model"] = {"architecture": dict(TINY)}
    path.write_text(yaml.safe_dump(data))
    done = subprocess.run([sys.executable, "-m", "trainsizer.cli", "probe", "memory", str(path), *args],
                          capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.strip().startswith(f"error: {field}") and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


# --- probe output feeds calibration --------------------------------------------------------------------------

def test_probe_cases_feed_calibrate_and_improve_held_out_cases(tmp_path):
    """A team's probe runs (here: readings 10 % above the estimate, as an allocator-heavy stack shows) written
    as case files and fitted with calibrate: the held-out runs are predicted better after the fit."""
    from trainsizer.estimate.calibration import load_calibration
    from trainsizer.evidence.calibrate import calibrate, write_profile
    from trainsizer.probe.memory.measure import Measurement

    cases = []
    for method in ("full", "lora"):
        for seq in (512, 1024, 2048, 4096):
            for mbs in (1, 2):
                sc = scenario_from_dict(base_scenario(model__preset="qwen2.5-0.5b", training__method=method,
                                                      training__seq_len=seq, training__micro_batch_size=mbs))
                predicted = estimate(sc, with_limits=False, with_performance=False).memory
                m = Measurement([Reading(24, predicted.allocated_bytes * 1.10, None, None, [])], 24)
                cases += measured_cases(sc, "h100-sxm5-80gb", m, {"hostname": "t"}, "test")
    path = tmp_path / "probe-cases.yaml"
    write_cases(path, cases)
    result = calibrate(load_cases(path), holdout=3)
    summary = result.summary["memory"]
    assert summary["held_out_median_after"] < summary["held_out_median_before"]
    write_profile(result, tmp_path / "cal.yaml")
    memory_params, _ = load_calibration(tmp_path / "cal.yaml")
    held = [c for c in load_cases(path) if c.id in result.profile["held_out"]]
    from trainsizer.evidence.validate import summarize

    assert summarize(validate_cases(held, memory_params)).median_abs_error < summarize(
        validate_cases(held)).median_abs_error


def test_ground_truth_script_runs_its_grid_on_tiny_models(tmp_path):
    import subprocess
    import sys

    from conftest import REPO

    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "gpu_ground_truth.py"), str(tmp_path),
                           "--smoke", "--device", "cpu", "--budget-s", "1", "--steps", "2"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary[0]["allocated_gib"] > 0 and "stopped" in summary[-1]
    assert load_cases(tmp_path / "cases.yaml") and (tmp_path / "environment.json").is_file()


def test_a_planner_job_without_hardware_runs_on_this_machine(tmp_path):
    """`trainsizer plan` prints `trainsizer probe memory JOB.yaml` as its first verification step: the job has no
    parallel or hardware block, so the probe takes this machine's device on one process."""
    import yaml

    from trainsizer.probe.workload.build import load_probe_scenario

    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump({"model": {"architecture": dict(TINY)},
                                    "training": {"method": "lora", "micro_batch_size": 1, "seq_len": 32}}))
    sc = load_probe_scenario(path)
    assert sc.parallel.gpus == 1 and isinstance(sc.hardware.gpu, str)
    result = CliRunner().invoke(app, ["probe", "memory", str(path), "--device", "cpu", "--json"])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("quantization,optimizer,weight_dtype", [("nf4", "paged-adamw-8bit", "uint8"),
                                                                  ("nf4-dq", "adamw-8bit", "uint8"),
                                                                  ("int8", "adamw", "int8")])
def test_qlora_quantizes_the_base_linears_and_trains_the_adapters(quantization, optimizer, weight_dtype):
    """bitsandbytes runs on the CPU too (its multi-backend build), so the QLoRA path is exercised here."""
    pytest.importorskip("bitsandbytes")
    sc = scenario(method="qlora", quantization=quantization, optimizer=optimizer)
    wl = build_workload(sc, "cpu")
    assert all(0 < wl.step() < 20 for _ in range(2))
    state = training_state(sc, resolve_model(sc.model), default_memory_model())
    assert wl.trainable_params == state.trainable_params
    base = dict(wl.model.named_modules())
    q_proj = next(m for name, m in base.items() if name.endswith("layers.0.self_attn.q_proj.base_layer"))
    assert str(q_proj.weight.dtype) == f"torch.{weight_dtype}"
    packed = q_proj.weight.numel() * q_proj.weight.element_size()
    full = TINY["hidden_size"] * TINY["hidden_size"]
    assert packed == (full // 2 if weight_dtype == "uint8" else full)  # 4 bits or 8 bits a weight


def test_accumulation_runs_two_micro_batches_and_the_case_records_what_ran():
    sc = scenario(method="full", precision="bf16-true", global_batch_size=8)  # 4 micro-batches of 2
    wl = build_workload(sc, "cpu")
    assert wl.accumulation == 2 and wl.tokens_per_step == 2 * 2 * 64 and wl.notes
    measurement = measure(sc, "cpu", None, steps=2)
    case = measured_cases(sc, "h100-sxm5-80gb", measurement, {"hostname": "t"}, "test")[0]
    ran = scenario_from_dict(case["scenario"])
    assert ran.grad_accumulation_steps == 2 and ran.training.micro_batch_size == 2
    single = measure(scenario(method="full", precision="bf16-true"), "cpu", None, steps=2)
    grads = 2 * count_params(resolve_model(sc.model)).total / GIB  # bf16 gradients
    # the second micro-batch runs its forward with the first one's gradients alive
    assert measurement.allocated_gib - single.allocated_gib == pytest.approx(grads, rel=0.25)
