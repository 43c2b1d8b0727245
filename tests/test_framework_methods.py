"""What each framework runs (its profile's ``methods``): every method a profile lists is cited; an estimate or plan
refuses a method the named framework does not run, naming both fields and what each accepts; with no framework named
nothing is refused; the planner neither suggests a method the named framework lacks nor searches expert parallelism
for a method the framework does not run with it."""

from __future__ import annotations

from typing import get_args

import pytest
import yaml
from conftest import run_cli

import trainsizer.plan.search as search
from trainsizer.datafiles import packaged_yaml
from trainsizer.errors import InputError
from trainsizer.frameworks import assumed, families, load_profile, method_families, resolve, runs_method
from trainsizer.frameworks.profiles import PACKAGE, Profile
from trainsizer.hardware.catalog import default_catalog
from trainsizer.models.catalog import resolve_model
from trainsizer.plan.constraints import Constraints
from trainsizer.scenario import Method, scenario_from_dict
from trainsizer.workflows.jobs import job_from_dict

LORA = {"model": {"preset": "llama-3.1-8b"},
        "training": {"method": "lora", "micro_batch_size": 1, "seq_len": 2048,
                     "lora": {"rank": 16, "targets": "all-linear"}},
        "parallel": {"gpus": 8}, "hardware": {"gpu": "h800-sxm5-80gb"}}
FULL_70B = {"model": {"preset": "llama-3.1-70b"},
            "training": {"method": "full", "micro_batch_size": 1, "seq_len": 4096, "global_batch_size": 64,
                         "tokens": 1.0e8}}


def test_every_listed_method_is_cited_with_its_date() -> None:
    for family in families():
        profile = load_profile(family)
        assert profile.methods, family
        for run in profile.methods:
            assert run.method in get_args(Method)
            assert run.as_of and run.quote.strip()
            read = "@" in run.source or run.source.startswith("http")  # repository path at a commit or tag, or URL
            assert read or run.source.startswith("assumed:"), (family, run.method, run.source)


def test_the_framework_assumed_for_a_method_runs_it() -> None:
    for method in get_args(Method):
        assert load_profile(assumed(method)).runs(method) is not None, method
        assert assumed(method) in method_families(method)


def test_a_named_framework_that_lacks_the_method_is_refused_naming_both_fields() -> None:
    # Megatron-LM core_r0.10.0 has no adapter arguments: LoRA is not plannable under it
    assert not runs_method("megatron-lm", "lora")
    with pytest.raises(InputError) as exc:
        resolve(scenario_from_dict(LORA), "megatron-lm@core_r0.10.0")
    err = exc.value
    assert err.field == "training.method"
    assert err.values["methods"] == "full"  # what megatron-lm accepts
    assert "ms-swift-megatron" in err.values["frameworks"].split(", ")  # who runs LoRA
    assert "megatron-lm" not in err.values["frameworks"].split(", ")
    assert "training.framework" in err.message


def test_the_same_job_is_estimated_under_a_framework_that_runs_it_or_none() -> None:
    for framework in (None, "ms-swift-megatron", "llama-factory"):
        resolved, use = resolve(scenario_from_dict(LORA), framework)
        assert resolved.training.method == "lora" and use.assumed is (framework is None)


@pytest.mark.parametrize("command", ["estimate", "plan"])
def test_the_cli_refuses_it_on_one_line_with_exit_2(command, tmp_path, monkeypatch, capsys) -> None:
    job = tmp_path / "qlora.yaml"
    job.write_text(yaml.safe_dump({**LORA, "training": {**LORA["training"], "method": "qlora", "framework": "nemo"}}))
    code, out = run_cli([command, str(job)], monkeypatch, capsys)
    lines = [line for line in out.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1, out
    assert "training.method" in lines[0] and "nemo" in lines[0] and "qlora" in lines[0]


def _profile_data(family: str) -> dict:
    return packaged_yaml(PACKAGE, f"{family}.yaml")


def test_a_profile_must_say_whether_each_method_runs_with_expert_parallelism() -> None:
    data = _profile_data("ms-swift-megatron")
    Profile.model_validate(data)
    unstated = [{k: v for k, v in m.items() if k != "expert_parallel"} for m in data["methods"]]
    with pytest.raises(ValueError, match="expert_parallel"):
        Profile.model_validate({**data, "methods": unstated})
    none = _profile_data("llama-factory")
    with pytest.raises(ValueError, match="expert_parallel true"):
        Profile.model_validate({**none, "methods": [{**none["methods"][0], "expert_parallel": True}]})
    with pytest.raises(ValueError, match="each method once"):
        Profile.model_validate({**none, "methods": [none["methods"][0]] * 2})


def _suggested_methods(job_dict: dict, framework: str | None, monkeypatch) -> set[str]:
    """The methods ``search.suggest`` tries for a job that fits nowhere (its plan calls recorded, not run)."""
    tried: list[str] = []

    def record(sc, *args, **kwargs):
        tried.append(sc.training.method)

    monkeypatch.setattr(search, "plan", record)
    job, _use = resolve(job_from_dict(job_dict), framework)
    search.suggest(job, resolve_model(job.model), Constraints(("rtx-4090d-24gb",), 1), default_catalog(),
                   None, None)
    return set(tried)


def test_the_planner_suggests_only_methods_the_named_framework_runs(monkeypatch) -> None:
    # LLaMA-Factory (and the framework assumed when none is named) runs LoRA and QLoRA: both are tried
    assert {"lora", "qlora"} <= _suggested_methods(FULL_70B, None, monkeypatch)
    assert {"lora", "qlora"} <= _suggested_methods(FULL_70B, "llama-factory", monkeypatch)
    # Megatron-LM runs full fine-tunes only; NeMo 2.0 runs LoRA but no QLoRA
    assert _suggested_methods(FULL_70B, "megatron-lm", monkeypatch) == {"full"}
    assert _suggested_methods(FULL_70B, "nemo", monkeypatch) == {"full", "lora"}


def test_expert_parallelism_is_searched_only_for_a_method_the_profile_runs_with_it() -> None:
    """Megatron-SWIFT runs LoRA with EP (its lora/moe.sh); PaddleNLP runs EP for full fine-tunes but LoRA with EP was
    not read, so the same DeepSeek-V2-Lite LoRA job gets EP layouts under the first only."""
    job = {"model": {"preset": "deepseek-v2-lite"},
           "training": {"method": "lora", "micro_batch_size": 1, "seq_len": 2048, "global_batch_size": 64,
                        "lora": {"rank": 16, "targets": "all-linear"}}}
    gpu = default_catalog().accelerator("h800-sxm5-80gb")
    for framework, expected in (("ms-swift-megatron", True), ("paddlenlp", False), ("nemo", True)):
        sc, _use = resolve(job_from_dict(job), framework)
        arch = resolve_model(sc.model)
        lay = search.enumerate_layouts(sc, arch, gpu, Constraints((), 64), 8, 64)  # with the searched axes
        assert bool((lay.ep > 1).any()) is expected, framework
