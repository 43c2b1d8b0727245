"""A profile's ``parallelism`` says which parallel layouts and whose accelerators its framework release runs, each read
from the release's source: an estimate under a named framework refuses a layout (or a GPU) its release does not run,
naming the frameworks whose profiles say they do; the planner searches only what the named framework runs, leaves out
the GPU types it does not train on (saying so once) and refuses a --gpu of those; a job that names no framework is
planned as before."""

from __future__ import annotations

import pytest
import yaml
from conftest import REPO, run_cli

import trainsizer.plan.search as search
from trainsizer.frameworks import families, load_profile, parallelism_of
from trainsizer.hardware.catalog import default_catalog
from trainsizer.models.catalog import resolve_model
from trainsizer.plan.constraints import Constraints
from trainsizer.workflows.jobs import load_job

FULL = {"model": {"preset": "qwen2.5-7b"},
        "training": {"method": "full", "precision": "bf16-mixed", "optimizer": "adamw", "micro_batch_size": 1,
                     "seq_len": 4096, "global_batch_size": 64}}


def _scenario(tmp_path, framework: str | None, parallel: dict, gpu: str = "h800-sxm5-80gb") -> str:
    training = {**FULL["training"], **({"framework": framework} if framework else {})}
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump({**FULL, "training": training, "parallel": {"gpus": 8, **parallel},
                                    "hardware": {"gpu": gpu}}))
    return str(path)


def test_every_stated_fact_cites_the_release_it_is_read_from() -> None:
    for family in families():
        facts = load_profile(family).parallelism
        for name in ("tensor", "pipeline", "context", "sharding", "offload", "vendors"):
            fact = getattr(facts, name)
            if fact is not None:
                assert "@" in fact.source and (fact.quote or fact.looked), (family, name)


@pytest.mark.parametrize(("framework", "parallel", "gpu", "field"), [
    ("llama-factory", {"tp": 2}, "h800-sxm5-80gb", "parallel.tp"),
    ("ms-swift", {"pp": 2}, "h800-sxm5-80gb", "parallel.pp"),
    ("megatron-lm", {"zero": 2}, "h800-sxm5-80gb", "parallel.zero"),
    ("megatron-lm", {"tp": 2, "distributed_optimizer": True}, "ascend-910b-64gb", "hardware.gpu"),
    ("mindspeed-llm", {"tp": 2}, "h800-sxm5-80gb", "hardware.gpu"),
])
def test_an_estimate_refuses_what_its_framework_does_not_run_on_one_line(framework, parallel, gpu, field, tmp_path,
                                                                         monkeypatch, capsys) -> None:
    code, out = run_cli(["estimate", _scenario(tmp_path, framework, parallel, gpu)], monkeypatch, capsys)
    lines = [line for line in out.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1, out
    assert field in lines[0] and framework in lines[0] and "accepted:" in lines[0] and "training.framework" in lines[0]


def test_the_frameworks_it_names_instead_are_those_whose_profiles_say_they_run_it(tmp_path, monkeypatch,
                                                                                  capsys) -> None:
    _, out = run_cli(["estimate", _scenario(tmp_path, "llama-factory", {"tp": 2})], monkeypatch, capsys)
    named = out.split("training.framework one of", 1)[1]
    assert "megatron-lm" in named and "nemo" in named
    assert "hf-trainer" not in named  # its profile does not say whether it runs tensor parallelism


@pytest.mark.parametrize(("framework", "parallel", "gpu"), [
    ("megatron-lm", {"tp": 2, "distributed_optimizer": True}, "h800-sxm5-80gb"),
    ("mindspeed-llm", {"tp": 2, "distributed_optimizer": True}, "ascend-910b-64gb"),
    ("llama-factory", {"zero": 3}, "ascend-910b-64gb"),
    (None, {"tp": 2}, "h800-sxm5-80gb"),  # the assumed framework refuses no stated layout
])
def test_what_a_framework_runs_is_estimated(framework, parallel, gpu, tmp_path, monkeypatch, capsys) -> None:
    code, out = run_cli(["estimate", _scenario(tmp_path, framework, parallel, gpu)], monkeypatch, capsys)
    assert code == 0, out


def _layouts(framework: str | None, tmp_path):
    path = REPO / "examples/jobs/qwen2.5-7b-lora.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["training"] = {**data["training"], "method": "full", "global_batch_size": 64}
    data["training"].pop("lora", None)
    data["training"].pop("framework", None)
    if framework:
        data["training"]["framework"] = framework
    job_file = tmp_path / f"{framework}.yaml"
    job_file.write_text(yaml.safe_dump(data))
    job = load_job(job_file)
    gpu = default_catalog().accelerator("h800-sxm5-80gb")
    return search.enumerate_layouts(job, resolve_model(job.model), gpu, Constraints((), 64), 8, 64)


def test_the_planner_searches_only_the_layouts_the_named_framework_runs(tmp_path) -> None:
    free = _layouts(None, tmp_path)
    assert (free.tp > 1).any() and (free.pp > 1).any() and (free.zero == 2).any()  # nothing named: as before
    hf = _layouts("llama-factory", tmp_path)
    assert (hf.tp == 1).all() and (hf.pp == 1).all() and not hf.dist_opt.any() and (hf.zero == 3).any()
    megatron = _layouts("megatron-lm", tmp_path)
    assert (megatron.tp > 1).any() and (megatron.pp > 1).any()
    assert set(megatron.zero.tolist()) <= {0, 3}
    # ZeRO-1's sharding over data parallelism alone is Megatron's distributed optimizer there
    assert (megatron.dist_opt & (megatron.tp == 1) & (megatron.pp == 1)).any()


def test_a_plan_leaves_out_the_gpus_its_framework_does_not_train_on(tmp_path, monkeypatch, capsys) -> None:
    assert parallelism_of("megatron-lm", "full").runs_vendor("nvidia")
    path = _scenario(tmp_path, "megatron-lm", {})
    code, out = run_cli(["plan", path, "--currency", "CNY", "--json"], monkeypatch, capsys)
    assert code == 0, out[-2000:]
    plan = yaml.safe_load(out)
    vendors = {default_catalog().accelerator(o["hardware"]["gpu"]).vendor for o in plan["options"]}
    assert vendors == {"nvidia"}
    assert any("megatron-lm" in str(n) and "mindspeed-llm" in str(n) for n in plan["notes"])
    code, out = run_cli(["plan", path, "--currency", "CNY", "--gpu", "ascend-910b-64gb"], monkeypatch, capsys)
    lines = [line for line in out.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "--gpu" in lines[0] and "mindspeed-llm" in lines[0], out


def test_a_plan_refuses_a_job_whose_own_gpu_its_framework_does_not_train_on(tmp_path, monkeypatch, capsys) -> None:
    path = _scenario(tmp_path, "megatron-lm", {}, gpu="ascend-910b-64gb")
    code, out = run_cli(["plan", path, "--currency", "CNY"], monkeypatch, capsys)
    lines = [line for line in out.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "hardware.gpu" in lines[0] and "mindspeed-llm" in lines[0], out
    assert "a Huawei accelerator" in lines[0] and "a GPU from NVIDIA" in lines[0]  # vendors by name, not code
    code, out = run_cli(["plan", path, "--currency", "CNY", "--lang", "zh-CN"], monkeypatch, capsys)
    assert code == 2 and "是华为的加速卡" in out and "英伟达的 GPU" in out, out
