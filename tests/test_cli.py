"""The CLI: tables, --json contract, exit code 2 and no traceback on bad input."""

import json
import subprocess
import sys

import pytest
from conftest import VALIDATION


def run(*args, check=True):
    proc = subprocess.run([sys.executable, "-m", "trainsizer.cli", *args], capture_output=True, text=True,
                          timeout=300)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def test_estimate_without_arguments_runs_the_built_in_example():
    out = run("estimate").stdout
    assert "built-in example" in out and "FITS" in out and "rule of thumb" in out


def test_estimate_json_has_the_format_contract():
    data = json.loads(run("estimate", "--json").stdout)
    mem = data["memory"]
    for key in ("allocated_gib", "reserved_gib", "device_gib", "capacity_gib", "fits", "components_gib"):
        assert key in mem
    assert set(mem["components_gib"]) == {"weights", "gradients", "optimizer", "activations", "other"}
    assert mem["allocated_gib"] <= mem["reserved_gib"] <= mem["device_gib"]
    assert sum(mem["components_gib"].values()) == pytest.approx(mem["allocated_gib"], abs=0.01)
    assert "performance" in data


def test_estimate_from_flags_matches_the_equivalent_file(tmp_path):
    flags = run("estimate", "--model", "llama-3.1-8b", "--method", "lora", "--gpu", "rtx-4090-24gb",
                "--seq-len", "1024", "--precision", "bf16-true", "--json").stdout
    path = tmp_path / "s.yaml"
    path.write_text("model: {preset: llama-3.1-8b}\ntraining: {method: lora, precision: bf16-true, "
                    "micro_batch_size: 1, seq_len: 1024}\nparallel: {gpus: 1}\nhardware: {gpu: rtx-4090-24gb}\n")
    from_file = run("estimate", str(path), "--json").stdout
    assert json.loads(flags)["memory"] == json.loads(from_file)["memory"]


def test_chinese_labels():
    assert "单卡显存" in run("estimate", "--lang", "zh-CN").stdout


@pytest.mark.parametrize("args,field", [
    (["estimate", "--model", "llama-3.1-8b", "--method", "lorra", "--gpu", "rtx-4090-24gb"], "training.method"),
    (["estimate", "--model", "llama-3.1-8b", "--method", "lora", "--gpu", "rtx-9090"], "hardware.gpu"),
    (["estimate", "--model", "llama-3.1-8b", "--method", "full", "--gpu", "h100-sxm5-80gb", "--gpus", "-1"],
     "parallel.gpus"),
    (["estimate", "--method", "full", "--gpu", "h100-sxm5-80gb"], "model"),
    (["estimate", "/nonexistent/job.yaml"], "scenario"),
    (["estimate", "--lang", "fr"], "--lang"),
])
def test_bad_input_exits_2_with_one_line_and_no_traceback(args, field):
    proc = run(*args, check=False)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and field in lines[0], proc.stderr


def test_bad_scenario_file_is_not_modified(tmp_path):
    path = tmp_path / "job.yaml"
    text = "model: {preset: llama-3.1-8b}\ntraining: {method: full, micro_batch_size: 0, seq_len: 10}\n"
    path.write_text(text)
    assert run("estimate", str(path), check=False).returncode == 2
    assert path.read_text() == text


def test_validate_json_on_the_fitted_memory_cases():
    data = json.loads(run("validate", str(VALIDATION / "memory.yaml"), "--json").stdout)
    assert data["summary"]["all"]["count"] == len(data["cases"])


def test_catalog_listings():
    assert "h100-sxm5-80gb" in run("catalog", "gpus").stdout
    assert "ib-ndr-400" in run("catalog", "links").stdout
    models = json.loads(run("catalog", "models", "--json").stdout)
    assert any(m["id"] == "deepseek-v3" for m in models)


def test_a_non_numeric_option_is_a_usage_error_not_a_traceback():
    proc = run("scale", "examples/jobs/qwen2.5-7b-lora.yaml", "--gpu", "rtx-4090-24gb", "--max-gpus", "abc",
               check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "max-gpus" in proc.stderr
