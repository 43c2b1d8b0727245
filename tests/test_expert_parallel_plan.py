"""The planner searches expert parallelism (EP) for models with routed experts: the layouts it enumerates are the ones
Megatron-Core accepts, a dense job's are unchanged, and the answer for the two MoE example jobs in CNY is the best over
the EP axis; where it uses EP > 1, the same layout without EP is slower, runs out of memory or risks it."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import REPO

import trainsizer.plan.layouts as layouts
import trainsizer.plan.search as search
from trainsizer.estimate.estimator import estimate
from trainsizer.hardware.catalog import default_catalog
from trainsizer.models.catalog import resolve_model
from trainsizer.plan.constraints import Constraints
from trainsizer.workflows.decide import NEAR_TIE, objective_value
from trainsizer.workflows.jobs import job_from_dict, load_job
from trainsizer.workflows.plan_job import PlanRequest, plan_job

QWEN3_FULL = str(REPO / "examples/jobs/qwen3-30b-a3b-full.yaml")
DEEPSEEK_LORA = str(REPO / "examples/jobs/deepseek-v2-lite-lora.yaml")
CNY = PlanRequest(currency="CNY")


def _layouts(job, gpu: str = "h800-sxm5-80gb", per_node: int = 8):
    arch = resolve_model(job.model)
    return search.enumerate_layouts(job, arch, default_catalog().accelerator(gpu), Constraints((), 64), per_node, 128)


def _rows(lay) -> list[tuple]:
    return sorted(zip(*(getattr(lay, f).tolist() for f in ("gpus", "tp", "pp", "cp", "vpp", "zero", "offload", "mbs",
                                                          "ckpt")), strict=True))


@pytest.mark.parametrize("path", [QWEN3_FULL, DEEPSEEK_LORA])
def test_every_expert_parallel_layout_is_one_megatron_core_accepts(path: str, monkeypatch) -> None:
    job = load_job(path)
    experts = resolve_model(job.model).moe.num_experts
    lay = _layouts(job)
    assert (lay.ep > 1).any()
    assert (experts % lay.ep == 0).all()
    assert (lay.dp % lay.ep == 0).all()  # Megatron-Core: ep divides the data-parallel size (etp = tp)
    assert set(lay.ep[lay.dp == 1].tolist()) == {1}
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
    job = load_job(path)
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


def test_expert_parallelism_pays_for_the_deepseek_lora_in_cny() -> None:
    """DeepSeek-V2-Lite LoRA on the GPUs of one node: ZeRO below stage 3 shards none of the frozen weights, while EP
    splits the experts (most of the 16 B parameters) over the ranks, their all-to-all on NVLink; so an EP layout runs
    with room to spare where without EP the same layout risks running out of memory and ZeRO-3 adds its gathers."""
    pick = _pick(plan_job(load_job(DEEPSEEK_LORA), CNY))
    assert pick.scenario.parallel.ep > 1
    assert pick.gpus <= pick.scenario.gpus_per_node  # one node: the dispatch crosses NVLink only


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
