"""trainsizer probe profile: trace analysis (hand-built GPU and CPU traces, exact times), the 20 % rule verdict,
real CPU profiles (a sleeping DataLoader is storage-bound), the script runner, the built-in step and the CLI.

CPU only; no assertion on absolute timings beyond the sleep-dominated classification.
"""

import dataclasses
import gzip
import json
import subprocess
import sys
import time

import pytest
from conftest import REPO, base_scenario

pytest.importorskip("torch")

from trainsizer.errors import InputError  # noqa: E402
from trainsizer.probe.profile.analysis import (  # noqa: E402
    CATEGORIES,
    StepBreakdown,
    StepProfile,
    analyze_trace,
    profile_callable,
    profile_rules,
    verdict,
)
from trainsizer.probe.profile.cli import runner_command  # noqa: E402

US = 1e-6


def _x(name, ts, dur, cat="cpu_op", pid=1, tid=1, **args):
    event = {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "pid": pid, "tid": tid}
    if args:
        event["args"] = args
    return event


def _kernel(name, ts, dur, stream=7, cat="kernel", **args):
    return _x(name, ts, dur, cat=cat, pid=0, tid=stream, **args)


def gpu_trace():
    """One 1000 us step. Device: a GEMM (one part before the step), an optimizer kernel (by correlation), an
    all-reduce half hidden behind the GEMM, an exposed all-gather, a copy. Host: DataLoader, a sync."""
    return {"traceEvents": [
        {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "GPU 0"}},
        _x("ProfilerStep#1", 0, 1000, cat="user_annotation"),
        _x("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 100, cat="user_annotation"),
        _x("aten::mm", 100, 20),  # host side of the GEMM: the device timeline decides, not this
        _x("Optimizer.step#AdamW.step", 800, 150, cat="user_annotation"),
        _x("cudaLaunchKernel", 810, 5, cat="cuda_runtime", correlation=7),
        _x("cudaStreamSynchronize", 960, 30, cat="cuda_runtime"),
        _kernel("ProfilerStep#1", 0, 1000, cat="gpu_user_annotation"),  # GPU-side annotation: not work
        _kernel("void cutlass_gemm_previous_step", -50, 100),  # clipped to 0-50
        _kernel("sm90_xmma_gemm_bf16bf16_bf16f32", 100, 400),
        _kernel("void at::native::multi_tensor_apply_kernel", 850, 50, correlation=7),
        _kernel("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 400, 300, stream=20),
        _kernel("ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclWorkElem)", 720, 40, stream=20),
        _kernel("Memcpy HtoD (Pinned -> Device)", 760, 20, cat="gpu_memcpy"),
        {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 7, "pid": 1, "tid": 1, "ts": 810},
    ]}


def cpu_trace():
    """Two steps of CPU ops on two threads, with nesting that must not be counted twice."""
    return {"traceEvents": [
        _x("ProfilerStep#3", 0, 1000, cat="user_annotation"),
        _x("train.py(12): <module>", 0, 1500, cat="python_function"),  # with_stack container: ignored
        _x("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 300, cat="user_annotation"),
        _x("aten::stack", 50, 100),  # inside the DataLoader: data loading
        _x("aten::linear", 300, 200),
        _x("aten::addmm", 310, 150),  # nested: no double count
        _x("autograd::engine::evaluate_function: AddmmBackward0", 450, 250, tid=2),  # overlaps thread 1
        _x("Optimizer.step#SGD.step", 750, 100, cat="user_annotation"),
        _x("aten::add_", 760, 50),
        _x("gloo:all_reduce", 860, 60, cat="user_annotation"),
        _x("aten::item", 930, 20),
        _x("aten::_local_scalar_dense", 932, 15),
        _x("ProfilerStep#4", 1000, 500, cat="user_annotation"),
        _x("aten::mm", 1000, 500),
    ]}


def _us(step, category):
    return step.category_s[category] / US


# --- analyze_trace ---------------------------------------------------------------------------------------

def test_gpu_trace_splits_device_time_and_counts_only_exposed_communication():
    profile = analyze_trace(gpu_trace())
    assert profile.trace_kind == "gpu" and len(profile.steps) == 1
    step = profile.steps[0]
    expected = {"compute": 450, "optimizer": 50, "communication": 240, "memcpy": 20, "data_loading": 50,
                "host_wait": 30, "idle": 160}
    assert {c: _us(step, c) for c in CATEGORIES} == pytest.approx(expected)
    assert sum(step.category_s.values()) == pytest.approx(step.wall_s) == pytest.approx(1000 * US)
    assert step.communication_total_s == pytest.approx(340 * US)
    assert step.communication_exposed_s == pytest.approx(240 * US)
    assert step.communication_by_kind_s == pytest.approx({"all_gather": 40 * US, "all_reduce": 300 * US})
    assert step.communication_exposed_by_kind_s == pytest.approx({"all_gather": 40 * US, "all_reduce": 200 * US})
    assert step.data_loading_total_s == pytest.approx(100 * US)  # 50 of it hidden behind the previous GEMM
    assert step.host_wait_total_s == pytest.approx(30 * US)
    assert step.device_busy_s == pytest.approx(760 * US)


def test_cpu_trace_uses_top_level_ops_per_thread_and_outermost_category(tmp_path):
    path = tmp_path / "cpu.pt.trace.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        json.dump(cpu_trace(), fh)
    profile = analyze_trace(path)
    assert profile.trace_kind == "cpu" and [s.name for s in profile.steps] == ["ProfilerStep#3", "ProfilerStep#4"]
    first, second = profile.steps
    expected = {"compute": 400, "optimizer": 100, "communication": 60, "memcpy": 0, "data_loading": 300,
                "host_wait": 20, "idle": 120}
    assert {c: _us(first, c) for c in CATEGORIES} == pytest.approx(expected)
    assert first.communication_by_kind_s == pytest.approx({"all_reduce": 60 * US})
    assert _us(second, "compute") == pytest.approx(500) and second.wall_s == pytest.approx(500 * US)
    assert profile.mean.wall_s == pytest.approx(750 * US)
    assert _us(profile.mean, "compute") == pytest.approx(450)
    assert profile.fraction("data_loading") == pytest.approx(150 / 750)


def test_trace_without_step_marks_is_one_step_and_begin_end_pairs_are_read():
    trace = [  # the JSON Array form of the Chrome trace format
        {"ph": "B", "name": "aten::mm", "ts": 10, "pid": 1, "tid": 1},
        {"ph": "E", "ts": 60, "pid": 1, "tid": 1},
        _x("DataLoader batch", 60, 40, cat="user_annotation"),
        _x("aten::relu", 150, 10),
    ]
    profile = analyze_trace(trace)
    (step,) = profile.steps
    assert step.name == "whole trace" and step.wall_s == pytest.approx(150 * US)
    assert _us(step, "compute") == pytest.approx(60) and _us(step, "data_loading") == pytest.approx(40)
    assert _us(step, "idle") == pytest.approx(50)
    assert any("whole trace" in n for n in profile.notes)


@pytest.mark.parametrize("content", ["{not json", json.dumps({"traceEvents": []}), json.dumps({"x": 1})])
def test_bad_traces_are_input_errors(tmp_path, content):
    path = tmp_path / "t.json"
    path.write_text(content)
    with pytest.raises(InputError) as exc:
        analyze_trace(path)
    assert exc.value.field == "trace"
    with pytest.raises(InputError, match="no such file"):
        analyze_trace(tmp_path / "missing.json")


# --- verdict ---------------------------------------------------------------------------------------------

def _profile(**fractions):
    category_s = {c: fractions.get(c, 0.0) for c in CATEGORIES}
    category_s["compute"] = 1.0 - sum(category_s.values())
    step = StepBreakdown(name="mean", wall_s=1.0, category_s=category_s,
                         communication_total_s=fractions.get("communication", 0.0),
                         data_loading_total_s=fractions.get("data_loading", 0.0))
    return StepProfile(source="constructed", trace_kind="gpu", steps=[step], mean=step)


def test_verdict_applies_the_rule_from_the_yaml():
    rules = profile_rules()
    threshold = rules.data_and_sync.value
    host = rules.host_idle.value
    assert "20%" in rules.data_and_sync.quote_zh and rules.as_of == "2026-12-02"
    cases = [
        ({"data_loading": threshold + 0.05}, "storage-bound"),
        ({"communication": threshold + 0.05}, "network-bound"),
        ({"data_loading": 0.6 * threshold, "communication": 0.6 * threshold}, "storage-bound"),  # the sum counts
        ({"data_loading": 0.5 * threshold, "communication": 0.7 * threshold}, "network-bound"),
        ({"data_loading": 0.4 * threshold, "communication": 0.4 * threshold}, "compute-bound"),
        ({"data_loading": threshold - 0.01}, "compute-bound"),
        ({"idle": host + 0.05}, "host-bound"),
        ({"idle": host / 2, "host_wait": host / 2 + 0.05}, "host-bound"),
        ({"idle": host - 0.05}, "compute-bound"),
    ]
    for fractions, expected in cases:
        result = verdict(_profile(**fractions))
        assert result.verdict == expected, (fractions, result.reason)
        assert result.advice == list(rules.advice[expected]) and result.threshold_fraction == threshold
    storage = verdict(_profile(data_loading=threshold + 0.05))
    assert storage.rule_fraction == pytest.approx(threshold + 0.05) and "seed" in storage.reason
    assert "实操评估清单" in storage.source
    both = verdict(_profile(data_loading=threshold, communication=threshold / 2))
    assert any("communication alone" in n for n in both.notes)


def test_verdict_takes_the_threshold_from_the_given_rules():
    shipped = profile_rules()
    rules = dataclasses.replace(shipped, data_and_sync=dataclasses.replace(shipped.data_and_sync, value=0.5))
    assert verdict(_profile(data_loading=0.3)).verdict == "storage-bound"
    assert verdict(_profile(data_loading=0.3), rules).verdict == "compute-bound"


def test_gpu_trace_verdict_is_network_bound():
    result = verdict(analyze_trace(gpu_trace()))
    assert result.verdict == "network-bound"
    assert result.communication_fraction == pytest.approx(0.24) and result.data_loading_fraction == pytest.approx(0.05)


# --- real profiles on the CPU ----------------------------------------------------------------------------

def _tiny_training_step(sleep_s):
    import torch
    from torch.utils.data import DataLoader, Dataset

    class Sleepy(Dataset):
        def __len__(self):
            return 16

        def __getitem__(self, i):
            if sleep_s:
                time.sleep(sleep_s)  # a slow disk or network file system
            return torch.randn(32), torch.randn(1)

    torch.manual_seed(0)
    # a step of a few ms of compute (a 1M-parameter MLP and its AdamW update), so that the loader's own overhead
    # (~1 ms for two samples on a loaded CI machine) stays a small share of a normal step
    model = torch.nn.Sequential(torch.nn.Linear(32, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024),
                                torch.nn.ReLU(), torch.nn.Linear(1024, 1))
    optimizer = torch.optim.AdamW(model.parameters())
    loader = DataLoader(Sleepy(), batch_size=2)

    def batches():
        while True:
            yield from loader

    it = batches()

    def step():
        x, y = next(it)
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()

    return step


@pytest.fixture
def one_thread():
    """One intra-op thread: on a loaded 2-core machine, spinning torch threads inflate compute many times over."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_profile_callable_sleepy_loader_is_storage_bound_and_normal_is_not(tmp_path, one_thread):
    sleepy, sleepy_trace = profile_callable(_tiny_training_step(0.1), steps=3, warmup=1,
                                            trace_out=tmp_path / "sleepy.json", device="cpu")
    assert sleepy_trace.is_file() and len(sleepy.steps) == 3 and sleepy.trace_kind == "cpu"
    assert [s.name for s in sleepy.steps] == ["ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4"]
    result = verdict(sleepy)
    assert result.verdict == "storage-bound", result.reason
    assert sleepy.fraction("data_loading") > result.threshold_fraction  # 2 x 100 ms of sleep per step

    normal, _ = profile_callable(_tiny_training_step(0.0), steps=3, warmup=1,
                                 trace_out=tmp_path / "normal.json.gz", device="cpu")
    assert verdict(normal).verdict != "storage-bound"
    assert normal.mean.category_s["compute"] > 0 and normal.mean.category_s["optimizer"] > 0


# --- the runner (the user's script, in a subprocess) -----------------------------------------------------

TRAIN_SCRIPT = """
import sys
import torch

model = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(int(sys.argv[1])):
    loss = model(torch.randn(4, 8)).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
print("script finished", __name__)
sys.exit(int(sys.argv[2]))
"""


def _env():
    import os

    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO / "src") + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("RANK", None)
    return env


def test_runner_profiles_a_script_and_keeps_its_exit_status(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(TRAIN_SCRIPT)
    trace = tmp_path / "run.json"
    proc = subprocess.run([sys.executable, "-m", "trainsizer.probe.profile.runner", "--trace-out", str(trace),
                           "--steps", "2", "--warmup", "1", "--", str(script), "8", "5"],
                          capture_output=True, text=True, timeout=120, env=_env(), cwd=tmp_path)
    assert proc.returncode == 5, proc.stderr
    assert "script finished __main__" in proc.stdout  # it ran to the end after profiling stopped
    profile = analyze_trace(trace)
    assert len(profile.steps) >= 1 and profile.mean.category_s["optimizer"] > 0


def test_runner_without_enough_steps_writes_no_trace(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(TRAIN_SCRIPT)
    trace = tmp_path / "run.json"
    proc = subprocess.run([sys.executable, "-m", "trainsizer.probe.profile.runner", "--trace-out", str(trace),
                           "--warmup", "3", "--", str(script), "2", "0"],
                          capture_output=True, text=True, timeout=120, env=_env(), cwd=tmp_path)
    assert proc.returncode == 3 and not trace.exists() and "at least 5" in proc.stderr


def test_runner_command_rewrites_python_and_torchrun(tmp_path):
    out = tmp_path / "t.json"
    runner = ["-m", "trainsizer.probe.profile.runner", "--trace-out", str(out), "--steps", "4", "--warmup", "1", "--"]
    assert runner_command(["python", "train.py", "--lr", "1"], out, 4, 1) == [sys.executable, *runner, "train.py",
                                                                             "--lr", "1"]
    assert runner_command(["python3", "-u", "-m", "pkg.train", "x"], out, 4, 1) == [sys.executable, "-u", *runner,
                                                                                   "-m", "pkg.train", "x"]
    assert runner_command(["/opt/venv/bin/python", "t.py"], out, 4, 1)[0] == "/opt/venv/bin/python"
    assert runner_command(["torchrun", "--nproc-per-node", "2", "train.py", "--lr", "1"], out, 4, 1) == \
        ["torchrun", "--nproc-per-node", "2", *runner, "train.py", "--lr", "1"]
    assert runner_command(["python", "-m", "torch.distributed.run", "--nproc_per_node=2", "t.py"], out, 4, 1) == \
        [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", *runner, "t.py"]
    for bad in (["bash", "run.sh"], ["torchrun", "--nproc-per-node", "2", "-m", "pkg.train"], ["python"],
                ["python", "-c", "print(1)"]):
        with pytest.raises(InputError) as exc:
            runner_command(bad, out, 4, 1)
        assert exc.value.field == "command"


# --- the CLI -----------------------------------------------------------------------------------------------

def _app():
    from trainsizer.cli import app

    return app


@pytest.fixture
def cli(tmp_path):
    """Run `trainsizer probe profile ARGS` in a subprocess (user mistakes: one line, exit 2)."""
    prefix = [sys.executable, "-m", "trainsizer.cli", "probe", "profile"]

    def run(*args):
        return subprocess.run([*prefix, *args], capture_output=True, text=True, timeout=180, env=_env(),
                               cwd=tmp_path)

    return run


def test_cli_bad_input_exits_2_with_one_line(cli, tmp_path):
    existing = tmp_path / "exists.json"
    existing.write_text("{}")
    for args, field in ((["--trace", str(tmp_path / "missing.json")], "trace"),
                        (["--trace-out", str(existing), "--", "python", "train.py"], "--trace-out"),
                        ([], "probe profile"),
                        (["--trace", str(existing), "--", "python", "train.py"], "probe profile"),
                        (["--trace", str(existing), "--steps", "0"], "--steps"),
                        (["--trace-out", str(tmp_path / "t.json"), "--", "bash", "run.sh"], "command")):
        proc = cli(*args)
        assert proc.returncode == 2, (args, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"error: {field}:") and "Traceback" not in proc.stderr


def test_cli_reads_a_trace_and_prints_table_and_verdict(tmp_path):
    from typer.testing import CliRunner

    path = tmp_path / "gpu.json"
    path.write_text(json.dumps(gpu_trace()))
    res = CliRunner().invoke(_app(), ["probe", "profile", "--trace", str(path)])
    assert res.exit_code == 0, res.output
    assert "communication (exposed)" in res.output and "all_reduce" in res.output
    assert "Verdict: network-bound" in res.output and "bucket_cap_mb" in res.output
    res = CliRunner().invoke(_app(), ["probe", "profile", "--trace", str(path), "--json"])
    data = json.loads(res.stdout)
    assert data["verdict"]["verdict"] == "network-bound"
    assert data["profile"]["mean"]["communication_by_kind_s"]["all_reduce"] == pytest.approx(300 * US)


def test_cli_wraps_a_python_script(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    script = tmp_path / "train.py"
    script.write_text(TRAIN_SCRIPT)
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(_app(), ["probe", "profile", "--steps", "2", "--warmup", "0", "--trace-out", "w.json",
                                      "--json", "--", "python", str(script), "6", "0"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)  # the script's own output went to stderr
    assert data["trace"] == str(tmp_path / "w.json") and data["profile"]["steps_count"] >= 1
    assert data["verdict"]["verdict"] in ("storage-bound", "network-bound", "host-bound", "compute-bound")


def test_cli_profiles_the_built_in_step_of_a_scenario(tmp_path):
    from typer.testing import CliRunner

    pytest.importorskip("transformers")
    data = base_scenario(training__precision="fp32", training__seq_len=32)
    data["model"] = {"architecture": {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
                                      "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128,
                                      "vocab_size": 256}}
    path = tmp_path / "tiny.yaml"
    path.write_text(json.dumps(data))  # JSON is YAML
    out = tmp_path / "builtin.json"
    res = CliRunner().invoke(_app(), ["probe", "profile", str(path), "--device", "cpu", "--steps", "2", "--warmup", "1",
                                      "--layers", "1", "--trace-out", str(out), "--json"])
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert out.is_file() and report["profile"]["steps_count"] == 2 and report["profile"]["trace_kind"] == "cpu"
    mean = report["profile"]["mean"]["category_s"]
    assert mean["compute"] > 0 and mean["optimizer"] > 0 and mean["data_loading"] == 0
    assert report["verdict"]["verdict"] != "storage-bound"
    assert any("built-in step" in n for n in report["notes"])
