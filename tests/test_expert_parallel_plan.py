"""The planner searches expert parallelism (EP) for models with routed experts when the job's framework runs it with
the job's method (its profile's ``expert_parallel`` and ``methods``): the layouts it enumerates are the ones
Megatron-Core accepts, a dense job's are unchanged, and the answer for the two MoE example jobs in CNY (both under
Megatron-SWIFT, which runs full and LoRA fine-tunes with EP) is the best over the EP axis; where it uses EP > 1, the
same layout without EP is slower, runs out of memory or risks it. Under a framework without EP (the assumed
LLaMA-Factory) no layout has EP, the plan says so once, and an estimate stating ep > 1 is refused."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import REPO, run_cli

import trainsizer.plan.layouts as layouts
import trainsizer.plan.search as search
from trainsizer.estimate.estimator import estimate
from trainsizer.frameworks import assumed, expert_parallel_families, load_profile, resolve
from trainsizer.hardware.catalog import default_catalog
from trainsizer.models.catalog import resolve_model
from trainsizer.plan.constraints import Constraints
from trainsizer.workflows.decide import NEAR_TIE, objective_value
from trainsizer.workflows.jobs import job_from_dict, load_job
from trainsizer.workflows.plan_job import PlanRequest, plan_job

QWEN3_FULL = str(REPO / "examples/jobs/qwen3-30b-a3b-full.yaml")
DEEPSEEK_LORA = str(REPO / "examples/jobs/deepseek-v2-lite-lora.yaml")
CNY = PlanRequest(currency="CNY")
WITH_EP = "ms-swift-megatron"  # a framework whose profile runs full and LoRA fine-tunes with expert parallelism


def _unnamed(path: str):
    """The example job with its framework left out: the one assumed for its method (LLaMA-Factory)."""
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    data["training"].pop("framework", None)
    return resolve(job_from_dict(data))[0]


def _layouts(job, gpu: str = "h800-sxm5-80gb", per_node: int = 8):
    arch = resolve_model(job.model)
    return search.enumerate_layouts(job, arch, default_catalog().accelerator(gpu), Constraints((), 64), per_node, 128)


def _rows(lay) -> list[tuple]:
    return sorted(zip(*(getattr(lay, f).tolist() for f in ("gpus", "tp", "pp", "cp", "vpp", "zero", "offload", "mbs",
                                                          "ckpt")), strict=True))


@pytest.mark.parametrize("path", [QWEN3_FULL, DEEPSEEK_LORA])
def test_every_expert_parallel_layout_is_one_megatron_core_accepts(path: str, monkeypatch) -> None:
    job = load_job(path, framework=WITH_EP)
    experts = resolve_model(job.model).moe.num_experts
    lay = _layouts(job)
    assert (lay.ep > 1).any()
    assert (experts % lay.ep == 0).all()
    # Megatron-Core: ep x etp divides tp x cp x dp (etp = tp here: ep divides cp x dp, context parallelism folded in)
    assert (lay.cp * lay.dp % lay.ep == 0).all()
    assert set(lay.ep[lay.cp * lay.dp == 1].tolist()) == {1}
    # the EP axis adds layouts and removes none: those at ep 1 are the layouts of the search without it
    monkeypatch.setattr(layouts, "with_expert_parallelism", lambda lay, *args: lay)
    assert _rows(lay.take(np.nonzero(lay.ep == 1)[0])) == _rows(_layouts(job))


def test_a_dense_job_has_no_expert_parallel_layouts() -> None:
    job = load_job(str(REPO / "examples/jobs/llama-3.1-70b-full-finetune.yaml"))
    lay = _layouts(job)
    assert len(lay) and set(lay.ep.tolist()) == {1}


def _pick(planned):
    rec = planned.out["recommendation"]
    assert rec, "no recommendation"
    return planned.result.options[rec["option"]]


@pytest.mark.parametrize("path", [QWEN3_FULL, DEEPSEEK_LORA], ids=["qwen3-30b-a3b-full", "deepseek-v2-lite-lora"])
def test_the_answer_is_the_best_over_expert_parallelism(path: str, monkeypatch) -> None:
    job = load_job(path, framework=WITH_EP)
    with_ep = plan_job(job, CNY)
    pick = _pick(with_ep)
    monkeypatch.setattr(layouts, "with_expert_parallelism", lambda lay, *args: lay)
    without = _pick(plan_job(job, CNY))
    assert without.scenario.parallel.ep == 1
    # the EP axis only adds layouts: the answer is at least as good (the pick may trade NEAR_TIE for speed)
    assert objective_value(pick) <= objective_value(without) * (1 + NEAR_TIE) + 1e-6
    if pick.scenario.parallel.ep == 1:
        return
    # why EP pays: the same layout without it is slower, or does not fit, or is at real risk of running out
    sc = pick.scenario
    plain = estimate(sc.model_copy(update={"parallel": sc.parallel.model_copy(update={"ep": 1})}),
                     with_limits=False)
    slower = plain.performance.step_time_s > pick.step_time_s
    risky = not plain.memory.fits or not search._safe(search._option(plain, sc))
    assert slower or risky, (plain.performance.step_time_s, pick.step_time_s, plain.memory.device_gib)


def test_the_deepseek_lora_in_cny_weighs_expert_parallel_layouts() -> None:
    """DeepSeek-V2-Lite LoRA under Megatron-SWIFT (the example names it): expert-parallel layouts are re-checked
    and priced beside the others, the answer costs no more than the best of them (the objective the plan ranks by),
    and an expert-parallel answer keeps its dispatch on one node's NVLink."""
    planned = plan_job(load_job(DEEPSEEK_LORA), replace(CNY, all_options=True))
    pick = _pick(planned)
    split = [o for o in planned.result.options if o.scenario.parallel.ep > 1 and o.acquisition]
    assert split, "no expert-parallel layout re-checked and priced"
    assert objective_value(pick) <= min(objective_value(o) for o in split) * (1 + NEAR_TIE) + 1e-6
    if pick.scenario.parallel.ep > 1:
        assert pick.gpus <= pick.scenario.gpus_per_node


def test_a_stated_ep_of_the_job_is_not_the_screens_base() -> None:
    """A job that states parallel.ep is screened from the one-GPU, ep-1 basis, as a job that does not."""
    data = {"model": {"preset": "deepseek-v2-lite"},
            "training": {"method": "lora", "precision": "bf16-mixed", "micro_batch_size": 1, "seq_len": 2048,
                         "global_batch_size": 32, "lora": {"rank": 8, "alpha": 16, "targets": "all-linear"},
                         "tokens": 1.0e8}}
    plain = job_from_dict(data)
    stated = plain.model_copy(update={"parallel": plain.parallel.model_copy(update={"ep": 4, "gpus": 4})})
    arch = resolve_model(plain.model)
    a, b = search.job_basis(plain, arch), search.job_basis(stated, arch)
    assert a.layer_div == b.layer_div and a.experts == b.experts


def test_the_profiles_split_on_expert_parallelism_as_their_sources_say() -> None:
    """Megatron-based frameworks run EP; the Hugging Face Trainer family (LLaMA-Factory, the one assumed for LoRA and
    full fine-tunes) does not; each answer cites where it is read."""
    can = expert_parallel_families("full")
    assert {"megatron-lm", "nemo", "mindspeed-llm"} <= set(can)
    assert not {"llama-factory", "hf-trainer", "accelerate-fsdp", "ms-swift"} & set(can)
    assert assumed("lora") not in expert_parallel_families("lora") and assumed("full") not in can
    for family in ("megatron-lm", "llama-factory"):
        assert load_profile(family).expert_parallel.source.strip()


@pytest.mark.parametrize("framework", [None, "hf-trainer+deepspeed", "paddlenlp"],
                         ids=["assumed", "named", "not-with-lora"])
def test_no_expert_parallel_layout_under_a_framework_without_it(framework: str | None) -> None:
    """Without EP at all, or (PaddleNLP) with EP for full fine-tunes but not read for LoRA."""
    job = _unnamed(DEEPSEEK_LORA) if framework is None else load_job(DEEPSEEK_LORA, framework=framework)
    lay = _layouts(job)
    assert len(lay) and set(lay.ep.tolist()) == {1}
    assert (_layouts(load_job(DEEPSEEK_LORA, framework=WITH_EP)).ep > 1).any()  # the same job under Megatron has EP


def test_the_plan_says_once_why_no_expert_parallelism_and_who_runs_it() -> None:
    job = _unnamed(DEEPSEEK_LORA)
    planned = plan_job(job, CNY)
    assert _pick(planned).scenario.parallel.ep == 1
    notes = [n for n in planned.result.notes if n.code == "plan.no_expert_parallel"]
    assert len(notes) == 1
    assert notes[0].args["framework"] == assumed("lora") and notes[0].args["method"] == "lora"
    assert notes[0].args["frameworks"].split(", ") == expert_parallel_families("lora")
    named = plan_job(load_job(DEEPSEEK_LORA, framework=WITH_EP), CNY).result.notes
    assert not [n for n in named if n.code == "plan.no_expert_parallel"]


def test_an_estimate_stating_ep_under_a_framework_without_it_is_refused(tmp_path, monkeypatch, capsys) -> None:
    scenario = tmp_path / "moe.yaml"
    scenario.write_text(yaml.safe_dump({"model": {"preset": "deepseek-v2-lite"},
                                        "training": {"method": "lora", "micro_batch_size": 1, "seq_len": 2048},
                                        "parallel": {"gpus": 8, "ep": 2}, "hardware": {"gpu": "h800-sxm5-80gb"}}))
    code, out = run_cli(["estimate", str(scenario), "--framework", "llama-factory"], monkeypatch, capsys)
    lines = [line for line in out.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1, out
    assert "parallel.ep" in lines[0] and "llama-factory" in lines[0]
    assert all(f in lines[0] for f in expert_parallel_families("lora"))
    # the same scenario under a framework that runs EP is estimated; so is it with none named (the stated EP says
    # the user runs a framework that has it, not the assumed one)
    assert run_cli(["estimate", str(scenario), "--framework", WITH_EP, "--json"], monkeypatch, capsys)[0] == 0
    assert run_cli(["estimate", str(scenario), "--json"], monkeypatch, capsys)[0] == 0
