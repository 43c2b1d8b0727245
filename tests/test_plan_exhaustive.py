"""The search's shortlist loses nothing the answer could be: on jobs whose cells' fastest layouts are at risk of
running out of memory (a 70B LoRA, a Qwen3-30B-A3B full fine-tune) and a small one, over four GPU types of the China
market, the plan recommends what re-checking every screened layout of every cell would (no shortlist cut, no
pruned re-check, every re-checked option kept for the decision)."""

from __future__ import annotations

import pytest

import trainsizer.plan.search as search
import trainsizer.plan.shortlist as shortlist
from trainsizer.workflows.decide import objective_value
from trainsizer.workflows.jobs import job_from_dict
from trainsizer.workflows.plan_job import PlanRequest, plan_job

GPUS = ("h800-sxm5-80gb", "rtx-pro-6000-96gb", "ascend-910b2-64gb", "a800-sxm4-80gb")


def _job(preset: str, method: str, tokens: float) -> dict:
    return {"model": {"preset": preset},
            "training": {"method": method, "precision": "bf16-mixed", "micro_batch_size": 1, "seq_len": 4096,
                         "global_batch_size": 128, "tokens": tokens}}


JOBS = [("70b-lora", _job("llama-3.1-70b", "lora", 1e8)), ("30b-a3b-full", _job("qwen3-30b-a3b", "full", 5e8)),
        ("8b-qlora", _job("llama-3.1-8b", "qlora", 5e7))]


def _answer(job: dict) -> tuple[float, str, int]:
    planned = plan_job(job_from_dict(job), PlanRequest(currency="CNY", gpus=GPUS))
    rec = planned.out["recommendation"]
    assert rec is not None
    return objective_value(planned.result.options[rec["option"]]), rec["gpu"], rec["gpus"]


@pytest.mark.parametrize(("name", "job"), JOBS, ids=[j[0] for j in JOBS])
def test_the_plan_recommends_what_rechecking_every_layout_would(name: str, job: dict, monkeypatch) -> None:
    searched = _answer(job)
    monkeypatch.setattr(search, "SHORTLIST_PER_CELL", 10**6)
    for constant, value in (("MAX_EXACT", 10**6), ("MAX_COMPETITIVE", 10**6), ("COMPETITIVE", 1e9)):
        monkeypatch.setattr(shortlist, constant, value)
    monkeypatch.setattr(search, "_fastest_per_hardware", lambda unique, recheck, *limits: [
        (pos, search._option(*found)) for pos, item in unique if (found := recheck(item)) is not None])
    monkeypatch.setattr(search, "_best_per_hardware", lambda options, *limits: options)
    every = _answer(job)
    assert searched[1:] == every[1:], name
    assert searched[0] == pytest.approx(every[0], rel=1e-9), name
