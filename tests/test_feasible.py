"""A job without a recommendation says what would make one, each found by planning again: the shortest time that
works where the deadline binds (a deadline of that time gets an answer, a tenth less none), and the smallest
change to the job where memory binds (the job with that change gets the answer it names)."""

from __future__ import annotations

from dataclasses import replace

from conftest import REPO

from trainsizer.report.answer import card
from trainsizer.workflows.jobs import load_job
from trainsizer.workflows.plan_job import PlanRequest, plan_job

LLAMA_70B = load_job(str(REPO / "examples/jobs/llama-3.1-70b-full-finetune.yaml"))
CNY = PlanRequest(currency="CNY")


def _codes(out: dict) -> list[str]:
    return [getattr(m, "code", None) for m in out["suggestions"]]


def test_a_deadline_too_short_gives_the_shortest_time_that_works():
    out = plan_job(LLAMA_70B, replace(CNY, deadline_s=60.0)).out
    assert out["recommendation"] is None
    answer = card(out, "zh-CN")
    assert answer["cause"] == "deadline" and answer["advice"][0].startswith("最短可行的训练时长")
    assert _codes(out)[0] == "plan.shortest_time" and "plan.deadline_binds" not in _codes(out)
    shortest = out["suggestions"][0].args["time"]
    assert plan_job(LLAMA_70B, replace(CNY, deadline_s=shortest * 1.01)).out["recommendation"]
    assert plan_job(LLAMA_70B, replace(CNY, deadline_s=shortest * 0.9)).out["recommendation"] is None


def test_where_memory_binds_the_smallest_change_is_planned_again():
    req = replace(CNY, gpus=("rtx-4090d-24gb",), max_gpus=4)
    out = plan_job(LLAMA_70B, req).out
    assert out["recommendation"] is None and card(out, "en")["cause"] == "memory"
    change = out["suggestions"][0]
    assert change.code == "plan.smallest_change", _codes(out)
    what, hardware = change.args["change"], change.args["hardware"]
    job, changed = LLAMA_70B, req
    if what.code.startswith("change.precision_"):
        precision = what.code.removeprefix("change.precision_").replace("_", "-")
        assert precision != LLAMA_70B.training.precision
        job = LLAMA_70B.model_copy(update={"training": LLAMA_70B.training.model_copy(
            update={"precision": precision})})
    elif what.code == "change.more_gpus":
        changed = replace(req, max_gpus=what.args["n"])
    else:
        job = LLAMA_70B.model_copy(update={"training": LLAMA_70B.training.model_copy(
            update={"seq_len": what.args["n"]})})
    rec = plan_job(job, changed).out["recommendation"]
    assert rec and (rec["gpus"], rec["gpu"]) == (hardware["gpus"], hardware["gpu"])
    assert card(out, "zh-CN")["advice"][0].startswith("改动最小的可行办法")


def test_a_job_with_an_answer_plans_once():
    out = plan_job(LLAMA_70B, CNY).out
    assert out["recommendation"] and not {"plan.shortest_time", "plan.smallest_change"} & set(_codes(out))


def test_the_least_budget_said_gets_an_answer_when_planned_again(tmp_path):
    """The least budget a plan within too small a budget names is that of an option the answer may recommend (at most
    --max-oom-risk of running out of memory): planned again with it, the plan answers."""
    import yaml

    job = tmp_path / "job.yaml"  # a 14B full fine-tune whose cheapest 8 x H800 layout risks running out of memory
    job.write_text(yaml.safe_dump({"model": {"preset": "qwen2.5-14b"}, "training": {
        "method": "full", "framework": "llama-factory+deepspeed", "precision": "bf16-mixed", "optimizer": "adamw",
        "micro_batch_size": 1, "seq_len": 4096, "global_batch_size": 64, "activation_checkpointing": "full",
        "tokens": 5.0e8}}), encoding="utf-8")
    out = plan_job(load_job(job), replace(CNY, budget=100.0)).out
    assert out["recommendation"] is None
    least = next(n for n in out["notes"] if n.code == "plan.least_budget").args["money"]["amount"]
    again = plan_job(load_job(job), replace(CNY, budget=least)).out["recommendation"]
    assert again is not None and again["commitment"] <= least
