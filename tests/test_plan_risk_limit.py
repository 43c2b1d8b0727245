"""The search keeps, in each cell (GPU type and count), the fastest layout within the user's --max-oom-risk beside
its fastest layouts and its fastest safe one (``plan.search.risk_limits``): a 70B LoRA whose fastest 8 x H800
layouts fill the cards is answered on 8 x H800 with the roomier layout the limit allows, not on slower cards whose
larger memory holds the risky layout. A limit below the safe one is kept too."""

from __future__ import annotations

from dataclasses import replace

import pytest

from trainsizer.workflows.defaults import DEFAULT_MAX_OOM_RISK
from trainsizer.workflows.jobs import job_from_dict
from trainsizer.workflows.plan_job import PlanRequest, plan_job

JOB = {"model": {"preset": "llama-3.1-70b"},
       "training": {"method": "lora", "precision": "bf16-mixed", "micro_batch_size": 1, "seq_len": 4096,
                    "global_batch_size": 128, "tokens": 1e8}}
H800_ONLY = PlanRequest(currency="CNY", gpus=("h800-sxm5-80gb",), max_gpus=8)


def _answer(req: PlanRequest) -> tuple[dict, dict]:
    out = plan_job(job_from_dict(JOB), req).out
    rec = out["recommendation"]
    assert rec is not None, "no recommendation"
    return rec, out["options"][rec["option"]]


def test_a_cell_whose_fastest_layouts_are_at_risk_offers_its_fastest_one_within_the_limit() -> None:
    rec, option = _answer(H800_ONLY)
    assert (rec["gpu"], rec["gpus"], rec["acquisition"]) == ("h800-sxm5-80gb", 8, "rent")
    # the answer is the layout the limit allows, though the cell's fastest ones are at risk above it
    assert option["range"]["p_exceeds_capacity"] <= DEFAULT_MAX_OOM_RISK
    assert option["memory"]["device_gib"] < 0.6 * option["memory"]["capacity_gib"]


def test_the_whole_catalog_answer_costs_no_more_than_that_one() -> None:
    alone, _ = _answer(H800_ONLY)
    whole, option = _answer(PlanRequest(currency="CNY"))
    assert whole["per_run"] <= alone["per_run"]
    assert option["range"]["p_exceeds_capacity"] <= DEFAULT_MAX_OOM_RISK


@pytest.mark.parametrize("limit", [0.02, 0.2])
def test_the_answer_keeps_within_a_stated_limit(limit: float) -> None:
    _, option = _answer(replace(H800_ONLY, max_gpus=16, max_oom_risk=limit))
    assert option["range"]["p_exceeds_capacity"] <= limit


def test_the_scaling_view_shows_the_fastest_layout_a_plan_could_answer_with() -> None:
    from trainsizer.models.catalog import resolve_model
    from trainsizer.plan.scale import scale
    from trainsizer.workflows.scale_job import scale_job

    job = job_from_dict(JOB)
    limited = {p.gpus: p.tokens_per_s for p in scale_job(job, "h800-sxm5-80gb", 8)[0].points}
    fastest = {p.gpus: p.tokens_per_s for p in scale(job, resolve_model(job.model), "h800-sxm5-80gb", 8)[0].points}
    # 8 x H800's fastest layout fills the cards (over half a chance of running out of memory): the curve shows the
    # fastest one within the plan's limit instead, slower
    assert limited[8] is not None and fastest[8] is not None
    assert limited[8] < fastest[8]


def test_a_rental_quote_is_weighed_at_the_layout_a_plan_could_answer_with() -> None:
    from trainsizer.cost.quotes import Quote, _job_mfu
    from trainsizer.models.catalog import resolve_model

    job = job_from_dict(JOB)
    quote = Quote(name="8 x H800", gpu="h800-sxm5-80gb", price=10.5, unit="gpu-hour")
    at_any_risk = _job_mfu(quote, job, resolve_model(job.model), None)
    within = _job_mfu(quote, job, resolve_model(job.model), None, DEFAULT_MAX_OOM_RISK)
    # the fastest 8 x H800 layout fills the cards; the quote's run is timed on the roomier one, slower
    assert within[1] is not None and at_any_risk[1] is not None
    assert within[1] > at_any_risk[1]
