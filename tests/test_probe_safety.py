"""Safe probes: a probe that measures a GPU refuses to fall back to the CPU unless --cpu says so; on the CPU a model
too big for the machine is refused with the --layers that fits; a gloo/CPU link profile is marked so, is never
preferred over the shipped figures and applies only where it is passed; long work shows progress on a terminal
only, never under --json. CPU only: "no GPU" is made certain by patching the CUDA check."""

from __future__ import annotations

import io
import json

import pytest
import yaml
from conftest import base_scenario
from typer.testing import CliRunner

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")

from rich.console import Console  # noqa: E402

import trainsizer.probe.comm.settings as comm_settings  # noqa: E402
import trainsizer.probe.common.progress as progress  # noqa: E402
import trainsizer.probe.workload.safety as safety  # noqa: E402
from trainsizer.cli import app  # noqa: E402
from trainsizer.errors import InputError  # noqa: E402
from trainsizer.estimate.comm import fabric  # noqa: E402
from trainsizer.estimate.step import default_performance_model  # noqa: E402
from trainsizer.hardware.catalog import load_catalog  # noqa: E402
from trainsizer.probe.burnin.cli import burnin_app  # noqa: E402
from trainsizer.probe.comm.link_profile import link_profile, write_link_profile  # noqa: E402
from trainsizer.probe.comm.result import CommEnvironment, CommProbeResult, CommRow  # noqa: E402
from trainsizer.scenario import scenario_from_dict  # noqa: E402

TINY = {"model_type": "llama", "hidden_size": 128, "num_hidden_layers": 4, "num_attention_heads": 4,
        "num_key_value_heads": 2, "intermediate_size": 256, "vocab_size": 512}
GIB = 2**30


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(safety, "cuda_available", lambda: False)
    monkeypatch.setattr(comm_settings, "_cuda_available", lambda: False)


@pytest.fixture
def tiny_job(tmp_path):
    data = base_scenario(training__micro_batch_size=2, training__seq_len=64)
    data["model"] = {"architecture": dict(TINY)}
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def invoke(args):
    """The real CLI app in-process; an InputError is what `trainsizer` prints as one line with exit 2."""
    return CliRunner().invoke(app, args)


# --- no GPU: refused unless --cpu ---------------------------------------------------------------------------------

@pytest.mark.parametrize("args", [
    ["probe", "memory", "{job}"],
    ["probe", "memory", "{job}", "--device", "auto"],
    ["probe", "profile", "{job}"],
    ["probe", "comm", "--max-size", "4K"],
])
def test_a_gpu_probe_without_a_gpu_is_refused_and_names_cpu(no_gpu, tiny_job, args):
    res = invoke([a.format(job=tiny_job) for a in args])
    assert isinstance(res.exception, InputError), res.output
    assert res.exception.field in ("--device", "--backend") and "--cpu" in str(res.exception)
    assert "\n" not in str(res.exception)


def test_cpu_flag_and_device_cpu_alias_run_on_the_cpu(no_gpu, tiny_job):
    for flag in (["--cpu"], ["--device", "cpu"]):
        res = invoke(["probe", "memory", str(tiny_job), *flag, "--steps", "2", "--json"])
        assert res.exit_code == 0, res.output
        assert json.loads(res.stdout)["measurement"]["meter"] == "memtracker-cpu"


@pytest.mark.parametrize("args,field", [
    (["probe", "memory", "{job}", "--cpu", "--device", "cuda"], "--cpu"),
    (["probe", "profile", "{job}", "--cpu", "--device", "cuda"], "--cpu"),
    (["probe", "profile", "--trace", "{job}", "--cpu"], "--cpu"),
    (["probe", "comm", "--cpu", "--backend", "nccl"], "--cpu"),
])
def test_cpu_conflicts_are_refused(no_gpu, tiny_job, args, field):
    res = invoke([a.format(job=tiny_job) for a in args])
    assert isinstance(res.exception, InputError) and res.exception.field == field, res.output


def test_comm_cpu_runs_over_gloo_and_its_profile_is_marked(no_gpu, tmp_path):
    out, profile = tmp_path / "r.json", tmp_path / "pcie4.yaml"
    res = invoke(["probe", "comm", "--cpu", "--nproc", "2", "--ops", "all_reduce", "--min-size", "1K",
                  "--max-size", "16K", "--iters", "2", "--warmup", "0", "--timeout", "120", "--out", str(out),
                  "--link-profile", str(profile), "--link-id", "pcie4"])
    assert res.exit_code == 0, res.output
    assert json.loads(out.read_text())["environment"]["backend"] == "gloo"
    written = yaml.safe_load(profile.read_text())
    assert written["backend"] == "gloo" and written["links"][0]["prefer_measured"] is False
    assert "replaces the shipped pcie4 entry" in res.output and "prefer_measured false" in res.output


# --- the CPU size guard ----------------------------------------------------------------------------------------

def _llama_1b(**training):
    data = base_scenario(model__preset="llama-3.2-1b", training__seq_len=256, **training)
    return scenario_from_dict(data)


def test_size_guard_refuses_a_model_above_the_bound_and_names_the_layers_that_fit():
    sc = _llama_1b()
    full = safety.estimated_cpu_bytes(sc, 16)
    two_four = safety.estimated_cpu_bytes(sc, 4)  # --layers 2 runs 2 and 4 layers
    bound = (full + two_four) / 2
    assert two_four < bound < full
    with pytest.raises(InputError) as err:
        safety.check_cpu_size(sc, None, extrapolate=True, bound_bytes=bound)
    text = str(err.value)
    assert err.value.field == "--layers" and "--layers " in text and "16 of 16 layers" in text and "\n" not in text
    suggested = int(text.split("--layers ")[-1].split()[0])
    safety.check_cpu_size(sc, suggested, extrapolate=True, bound_bytes=bound)  # the suggestion passes
    safety.check_cpu_size(sc, None, extrapolate=True, bound_bytes=2 * full)  # a big enough machine: no refusal


def test_size_guard_counts_every_process_and_says_when_nothing_fits():
    one = _llama_1b()
    eight = scenario_from_dict(base_scenario(model__preset="llama-3.2-1b", training__seq_len=256, parallel__gpus=8,
                                             parallel__zero=3))
    assert safety.estimated_cpu_bytes(eight, 16) > 4 * safety.estimated_cpu_bytes(one, 16) / 8
    with pytest.raises(InputError) as err:
        safety.check_cpu_size(one, None, extrapolate=False, bound_bytes=0.01 * GIB)
    assert "even 1 layer(s)" in str(err.value) and "a bigger machine" in str(err.value)


def test_size_guard_through_the_cli_uses_the_machine_memory(no_gpu, monkeypatch, tmp_path):
    monkeypatch.setattr(safety, "machine_memory_bytes", lambda: 8.0 * GIB)
    path = tmp_path / "big.yaml"
    path.write_text(yaml.safe_dump(base_scenario(model__preset="llama-3.1-8b")))
    for args in (["probe", "memory", str(path), "--cpu"], ["probe", "profile", str(path), "--cpu"]):
        res = invoke(args)
        assert isinstance(res.exception, InputError) and res.exception.field == "--layers", res.output
        assert "50% of this machine's 8.0 GiB" in str(res.exception)
    assert not list(tmp_path.glob("*.json")) and not (tmp_path / "probe-cases.yaml").exists()


def test_machine_memory_is_read_from_sysconf():
    total = safety.machine_memory_bytes()
    assert total is None or total > 256 * 2**20
    assert safety.run_depths(None, 16, True) == [16] and safety.run_depths(4, 16, True) == [4, 8]
    assert safety.run_depths(12, 16, True) == [8, 16] and safety.run_depths(4, 16, False) == [4]


# --- a gloo/CPU link profile is never preferred ----------------------------------------------------------------

def _result(backend, nodes, devices, busbw):
    world = 2 * nodes
    env = CommEnvironment(backend=backend, world_size=world, nodes=nodes, local_world_size=2,
                          dtype="fp32" if backend == "gloo" else "bf16", device_names=devices, torch_version="2.13",
                          nccl_version=None, hostname="h0", hostnames=[f"h{i}" for i in range(nodes)],
                          date="2026-12-01T10:00:00+00:00")
    rows = [CommRow(1 << (20 + i), 1 << (18 + i), 100.0, bw, bw) for i, bw in enumerate(busbw)]
    return CommProbeResult(env, {"all_reduce": rows}, iters=5, warmup=2)


def test_gloo_profile_records_its_backend_and_the_shipped_figure_it_replaces(tmp_path):
    catalog = load_catalog()
    profile = link_profile(_result("gloo", 1, ["cpu"], [1.0, 2.0, 3.0]), catalog, "pcie4")
    entry = profile["links"][0]
    assert (profile["backend"], profile["measured_on"], entry["prefer_measured"]) == ("gloo", "cpu", False)
    assert "shipped pcie4 entry" in profile["replaces"] and "2 GB/s" in profile["replaces"]
    assert f"{catalog.link('pcie4').per_direction_gbps:g} GB/s per direction" in profile["replaces"]
    path = tmp_path / "p.yaml"
    write_link_profile(profile, path)
    assert "not a GPU link figure" in path.read_text() and "replaces the shipped pcie4" in path.read_text()
    gpu_profile = link_profile(_result("nccl", 1, ["NVIDIA H100 80GB HBM3"], [300.0, 320.0]), catalog, "nvlink4")
    assert gpu_profile["links"][0]["prefer_measured"] is True and gpu_profile["measured_on"] == "gpu"


def test_the_writer_refuses_a_gloo_profile_marked_preferred(tmp_path):
    profile = link_profile(_result("gloo", 1, ["cpu"], [1.0, 2.0]), load_catalog(), "pcie4")
    profile["links"][0]["prefer_measured"] = True
    path = tmp_path / "p.yaml"
    with pytest.raises(InputError) as err:
        write_link_profile(profile, path)
    assert err.value.field == "--link-profile" and not path.exists()


def test_a_gloo_scale_out_profile_is_not_applied_even_when_passed(tmp_path):
    """prefer_measured false: the estimator keeps the shipped line-rate figure for a NIC link."""
    profile = link_profile(_result("gloo", 2, ["cpu"], [0.5, 0.6, 0.7]), load_catalog(), "ib-ndr-400",
                           nics_per_node=8)
    path = tmp_path / "ib.yaml"
    write_link_profile(profile, path)
    params = default_performance_model()
    passed, shipped = load_catalog([path]), load_catalog()
    gpu = shipped.accelerator("h100-sxm5-80gb")
    assert fabric(passed, gpu, None, "ib-ndr-400", 8, 8, params, total_gpus=16).inter_busbw_gbps == \
        pytest.approx(fabric(shipped, gpu, None, "ib-ndr-400", 8, 8, params, total_gpus=16).inter_busbw_gbps)
    assert shipped.link("pcie4").prefer_measured is False  # without --catalog nothing changes at all


# --- progress: on a terminal only, never under --json ------------------------------------------------------------

@pytest.fixture
def terminal(monkeypatch):
    buf = io.StringIO()
    monkeypatch.setattr(progress, "make_console", lambda: Console(file=buf, force_terminal=True, width=120))
    return buf


def test_simulate_shows_progress_on_a_terminal_and_none_under_json(terminal, tiny_job):
    res = invoke(["probe", "memory", str(tiny_job), "--simulate"])
    assert res.exit_code == 0, res.output
    assert "building the model on fake tensors" in terminal.getvalue() and "simulated step 2/2" in terminal.getvalue()
    terminal.truncate(0)
    terminal.seek(0)
    res = invoke(["probe", "memory", str(tiny_job), "--simulate", "--json"])
    assert res.exit_code == 0 and json.loads(res.stdout)["simulation"]["allocated_gib"] > 0
    assert terminal.getvalue() == ""


def test_burnin_start_up_shows_progress_on_a_terminal_and_none_under_json(terminal, tmp_path):
    args = ["--backend", "fake", "--duration", "0.3s", "--interval", "0.1"]
    res = CliRunner().invoke(burnin_app, [*args, "--db", str(tmp_path / "a.db")])
    assert res.exit_code == 0, res.output
    assert "opening the GPU telemetry (fake)" in terminal.getvalue() and "creating" in terminal.getvalue()
    terminal.truncate(0)
    terminal.seek(0)
    res = CliRunner().invoke(burnin_app, [*args, "--db", str(tmp_path / "b.db"), "--json"])
    assert res.exit_code == 0 and json.loads(res.stdout)["verdict"] == "STABLE"
    assert terminal.getvalue() == ""


def test_no_progress_when_stdout_is_not_a_terminal(monkeypatch):
    monkeypatch.setattr("sys.stdout", io.StringIO())  # a pipe or a file, as in CI
    assert progress.make_console() is None
    say = progress.StatusLine(progress.progress_console())
    say("anything")
    say(None)
