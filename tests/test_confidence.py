"""recommendation.confidence: the share of plausible outcomes (the per-option speed errors sampled, correlated within
a GPU family) in which the pick stays the best, meets the deadline and stays within the budget."""

from __future__ import annotations

import pytest
from plan_options import plan_option, run_cost

from trainsizer.plan.option import PlanOption
from trainsizer.workflows.robust import close_call, confidence, option_range, p_misses_deadline


def _option(gpu: str, gpus: int, cost: float, hours: float, device_gib: float = 40.0) -> PlanOption:
    return plan_option(gpu, gpus, time_to_train_s=hours * 3600, device_gib=device_gib,
                       per_run=run_cost("rent", cost, cost))


def _option_dict(gpu: str, gpus: int, cost: float, hours: float, device_gib: float = 40.0) -> dict:
    """The same option as the plan's JSON writes what the charts read of it."""
    return {"hardware": {"gpu": gpu, "gpus": gpus, "gpus_per_node": 8},
            "training": {"method": "full"},
            "memory": {"device_gib": device_gib, "capacity_gib": 80.0},
            "performance": {"step_time_s": 1.0, "time_to_train_s": hours * 3600},
            "per_run": {"cost": cost, "commitment": cost, "acquisition": "rent"}}


def test_a_clear_call_is_confident_and_a_close_one_says_what_settles_it():
    clear = [_option("h100-sxm5-80gb", 8, 1000.0, 10.0), _option("a100-sxm4-80gb", 8, 3000.0, 30.0)]
    c = confidence(clear, [0, 1], [1000.0, 3000.0], None, None)
    assert c.share > 0.95 and not c.close
    assert close_call(c, clear) is None

    close = [_option("h100-sxm5-80gb", 8, 1000.0, 10.0), _option("a100-sxm4-80gb", 8, 1040.0, 10.4)]
    c = confidence(close, [0, 1], [1000.0, 1040.0], None, None)
    assert 0.3 < c.share < 0.75 and c.close and c.contender
    assert c.contender.option == 1
    assert c.contender.best_on_objective == pytest.approx(1 - c.best_on_objective, abs=2e-4)
    message = close_call(c, close)
    assert message.code == "range.close_call" and message.args["hardware"]["gpu"] == "a100-sxm4-80gb"
    assert confidence(close, [0, 1], [1000.0, 1040.0], None, None) == c  # seeded: the same answer every run


def test_options_on_one_gpu_family_share_their_error():
    """Two H100 layouts 4 % apart: the family's error moves both, so the cheaper stays cheaper more often than
    against another family at the same gap."""
    same = [_option("h100-sxm5-80gb", 8, 1000.0, 10.0), _option("h100-sxm5-80gb", 16, 1040.0, 5.2)]
    other = [_option("h100-sxm5-80gb", 8, 1000.0, 10.0), _option("a100-sxm4-80gb", 16, 1040.0, 5.2)]
    assert (confidence(same, [0, 1], [1000.0, 1040.0], None, None).best_on_objective
            > confidence(other, [0, 1], [1000.0, 1040.0], None, None).best_on_objective)


def test_the_deadline_and_the_budget_count_in_the_share():
    opts = [_option("h100-sxm5-80gb", 8, 1000.0, 10.0), _option("a100-sxm4-80gb", 8, 3000.0, 30.0)]
    c = confidence(opts, [0, 1], [1000.0, 3000.0], deadline_s=10.0 * 3600, budget=1000.0)
    assert c.meets_deadline is not None and c.within_budget is not None
    assert 0.2 < c.meets_deadline < 0.8 and 0.2 < c.within_budget < 0.8
    assert c.share <= min(c.meets_deadline, c.within_budget)


def test_a_bought_pick_within_the_budget_stays_within_it_in_every_outcome():
    """Buying commits the price whatever the run's time: within the budget in every outcome, or in none."""
    bought = [plan_option("h100-sxm5-80gb", 8, time_to_train_s=36000.0, per_run=run_cost("buy", 1000.0, 5000.0)),
              _option("a100-sxm4-80gb", 8, 3000.0, 30.0)]
    assert confidence(bought, [0, 1], [1000.0, 3000.0], None, budget=10000.0).within_budget == 1.0
    assert confidence(bought, [0, 1], [1000.0, 3000.0], None, budget=4000.0).within_budget == 0.0


def test_an_option_near_its_gpu_capacity_states_its_chance_of_running_out_of_memory():
    safe, risky = option_range(_option("a100-sxm4-80gb", 8, 1000.0, 10.0, 30.0)), \
        option_range(_option("a100-sxm4-80gb", 8, 1000.0, 10.0, 76.0))
    assert safe.p_exceeds_capacity < 0.05 < risky.p_exceeds_capacity and risky.at_risk
    assert risky.notes[0].code == "range.oom_risk"
    assert risky.per_run_cost and risky.time_to_train_s
    lo, hi = risky.per_run_cost
    assert lo < 1000.0 < hi and risky.time_to_train_s[0] < 36000.0 < risky.time_to_train_s[1]


def test_plan_json_carries_the_confidence_and_each_option_its_ranges():
    import json
    import os
    import subprocess
    import sys

    from conftest import REPO

    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.run([sys.executable, "-m", "trainsizer.cli", "plan",
                           str(REPO / "examples" / "jobs" / "llama-3.1-8b-qlora.yaml"), "--json"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    conf = out["recommendation"]["confidence"]
    assert 0.0 <= conf["share"] <= conf["best_on_objective"] <= 1.0 and conf["samples"] == 4000
    for o in out["options"]:
        r = o["range"]  # a summary's range keeps the chance of running out and the two ranges (docs/plan-json.md)
        assert r.get("level", 0.8) == 0.8 and 0.0 <= r["p_exceeds_capacity"] <= 1.0
        assert o["detail"] == "summary" or r["level"] == 0.8
        if o["performance"].get("time_to_train_s"):
            lo, hi = r["time_to_train_s"]
            assert lo < o["performance"]["time_to_train_s"] < hi
        if (o.get("per_run") or {}).get("cost"):
            lo, hi = r["per_run_cost"]
            assert lo <= o["per_run"]["cost"] <= hi


def test_the_planner_prefers_a_safe_layout_within_a_few_percent_of_a_risky_one():
    from trainsizer.workflows.decide import choose, tight
    from trainsizer.workflows.robust import with_ranges

    risky = _option("a100-sxm4-80gb", 8, 970.0, 10.0, device_gib=71.0)  # 89 % of memory: under TIGHT_FRACTION
    safe = _option("a100-sxm4-80gb", 8, 1000.0, 10.0, device_gib=30.0)
    options = with_ranges([risky, safe])
    assert options[0].at_risk and not options[1].at_risk
    assert tight(options[0]) and not tight(risky)  # the range, not the fraction, makes it tight
    assert choose(options, "cheapest")[0] == 1
    assert any(n.code == "range.oom_risk" for n in options[0].notes)


def test_the_time_chart_draws_the_recommended_options_range_as_an_error_bar():
    from trainsizer.report.charts import render_chart
    from trainsizer.report.specs import pareto_spec

    option = {**_option_dict("h100-sxm5-80gb", 8, 1000.0, 10.0),
              "range": {"time_to_train_s": [8 * 3600.0, 13 * 3600.0]}}
    out = {"options": [option], "rankings": {"recommended": [0], "pareto_time_vs_gpus": [0]}}
    spec = pareto_spec(out)
    assert spec["recommended_range"] == [8.0, 13.0]
    assert "data-testid='recommended-range'" in render_chart(spec)
    del option["range"]
    assert "recommended-range" not in render_chart(pareto_spec(out))


def test_a_short_run_at_real_risk_loses_to_a_safe_one_that_costs_more_but_a_long_run_keeps_its_saving():
    """A failed attempt costs about an hour of the run (robust.failure_cost): worth paying a third more to avoid on a
    38-minute run, not on a 100-hour one (where the risky pick says its risk instead)."""
    from trainsizer.workflows.decide import choose
    from trainsizer.workflows.robust import failure_cost, with_ranges

    for hours, pick in ((0.6, 1), (100.0, 0)):
        risky = _option("h800-sxm5-80gb", 8, 40.0 * hours, hours, device_gib=76.0)  # 95 % of memory
        safe = _option("h800-sxm5-80gb", 8, 53.0 * hours, 1.34 * hours, device_gib=36.0)
        options = with_ranges([risky, safe])
        assert options[0].at_risk and not options[1].at_risk
        assert failure_cost(options[1], 53.0 * hours) == 0.0 < failure_cost(options[0], 40.0 * hours)
        assert choose(options, "cheapest")[0] == pick, hours


@pytest.fixture(scope="module")
def default_outcome():
    from conftest import REPO

    from trainsizer.workflows.jobs import load_job
    from trainsizer.workflows.plan_job import PlanRequest, plan_job

    return plan_job(load_job(REPO / "examples" / "jobs" / "qwen2.5-7b-lora.yaml"), PlanRequest(currency="CNY"))


def test_the_default_plans_pick_weighs_its_risk_against_a_safe_layout_and_says_it(default_outcome):
    """The pick states its chance of running out of memory; a pick at real risk says so on its card and is cheaper
    with the expected cost of a failed attempt (robust.failure_cost) priced in, beside safe options."""
    from trainsizer.workflows.robust import failure_cost

    default_plan = default_outcome.out
    rec = default_plan["recommendation"]
    pick = default_plan["options"][rec["option"]]
    assert 0 <= pick["range"]["p_exceeds_capacity"] < 0.5
    if pick["range"]["at_risk"]:
        assert any(n.code == "range.oom_risk" for n in pick["range"]["notes"])
        safe = [o for o in default_plan["options"] if not o["range"]["at_risk"]
                and o["per_run"].get("cost") is not None]
        assert safe  # the shortlist kept safe layouts to weigh against
        chosen = default_outcome.result.options[rec["option"]]
        assert failure_cost(chosen, rec["per_run"]) > 0  # the risk was priced into the choice


def test_the_exact_shortlist_keeps_a_safe_layout_of_each_gpu_and_count_beside_its_fastest():
    from conftest import REPO

    from trainsizer.estimate.intervals import RISK
    from trainsizer.models.catalog import resolve_model
    from trainsizer.plan.search import Constraints, plan
    from trainsizer.workflows.jobs import load_job

    job = load_job(REPO / "examples" / "jobs" / "qwen2.5-7b-lora.yaml")
    found = plan(job, resolve_model(job.model), Constraints(("h800-sxm5-80gb",), 8, exact_gpus=8))
    ranged = [option_range(o) for o in found.options]
    assert ranged[0].at_risk  # the fastest layout fills 84 % of the card
    safe = [o for o, r in zip(found.options, ranged, strict=True) if r.p_exceeds_capacity <= RISK]
    assert safe and safe[0].hardware_dict() == found.options[0].hardware_dict()
    assert safe[0].step_time_s > found.options[0].step_time_s


def test_the_memory_chart_draws_the_picks_80_percent_range_as_an_error_bar():
    from trainsizer.report.charts import render_chart
    from trainsizer.report.specs import memory_spec

    option = {**_option_dict("h800-sxm5-80gb", 8, 1000.0, 10.0, device_gib=67.0),
              "memory": {"device_gib": 67.0, "capacity_gib": 80.0, "reserved_gib": 60.0,
                         "components_gib": {"weights": 15.0, "activations": 40.0}}}
    assert "memory-range" not in render_chart(memory_spec(option))
    option["range"] = option_range(_option("h800-sxm5-80gb", 8, 1000.0, 10.0, device_gib=67.0)).to_dict()
    spec = memory_spec(option, "zh-CN")
    lo, hi = spec["total_range"]
    assert lo < 67.0 < hi and "GiB" in spec["text"]["range"] and "范围" in spec["text"]["range"]
    svg = render_chart(spec)
    assert "data-testid='memory-range'" in svg and spec["text"]["range"] in svg


@pytest.fixture(scope="module")
def default_plan(default_outcome):
    return default_outcome.out


def test_every_face_of_an_option_carries_its_ranges_in_both_languages(default_plan):
    from trainsizer.report import option_text as ot
    from trainsizer.report.tables import options_sheet

    pick = default_plan["options"][default_plan["recommendation"]["option"]]
    r = pick["range"]
    en, zh = ot.range_text(pick, "CNY", "en"), ot.range_text(pick, "CNY", "zh-CN")
    assert "fits unless memory is" in en and "a run" in en
    assert any(f"{unit};" in en for unit in ("minutes", "hours", "days"))  # the time to train's range, in its unit
    assert "否则放得下" in zh and any(f"{unit}；" in zh for unit in ("分钟", "小时", "天"))
    assert "–" in ot.time_cell(pick, "en") and "–" in ot.run_cell(pick, "CNY", "en")
    assert f"({r['device_gib'][0]:.0f}–{r['device_gib'][1]:.0f})" in ot.memory_cell(pick)
    sheet = options_sheet(default_plan)
    head = {h: k for k, h in enumerate(sheet.headers)}
    row = next(row for row in sheet.rows if row[0] == default_plan["recommendation"]["option"])
    assert row[head["tokens/s, low"]] < row[head["tokens/s"]] < row[head["tokens/s, high"]]
    assert row[head["step time, low (s)"]] < row[head["step time (s)"]] < row[head["step time, high (s)"]]
    assert row[head["time to train, low (days)"]] < row[head["time to train (days)"]] < \
        row[head["time to train, high (days)"]]
    assert row[head["memory per GPU, low (GiB)"]] < row[head["memory per GPU (GiB)"]] < \
        row[head["memory per GPU, high (GiB)"]]
    assert float(row[head["one run, low"]]) < pick["per_run"]["cost"] < float(row[head["one run, high"]])
    assert row[head["chance of running out of memory"]] == r["p_exceeds_capacity"]
    zh_headers = options_sheet(default_plan, "zh-CN").headers
    assert "每卡显存上限（GiB）" in zh_headers and "显存不足的概率" in zh_headers


def test_the_web_page_shows_each_figure_with_its_range(default_plan):
    from trainsizer.report import option_text as ot

    pick = default_plan["options"][default_plan["recommendation"]["option"]]
    for what in ("time", "step", "tokens", "memory", "run"):
        assert ot.span(pick, what, "CNY", "zh-CN").startswith("(")
    assert any(unit in ot.span(pick, "time", "CNY", "zh-CN") for unit in ("分钟", "小时", "天"))
    assert ot.span({**pick, "range": {}}, "time", "CNY", "en") == ""


def test_the_cost_chart_draws_the_rent_lines_range_where_the_runs_hours_move_it():
    from trainsizer.messages import msg
    from trainsizer.report.charts import render_chart
    from trainsizer.report.specs import cost_spec

    option = {**_option_dict("h800-sxm5-80gb", 8, 1000.0, 10.0),
              "cost": {"series": [{"month": 0, "buy": 100.0, "rent": 0.0}, {"month": 36, "buy": 200.0, "rent": 360.0}],
                       "rent": {"per_year": 120.0}}}
    option["range"] = option_range(_option("h800-sxm5-80gb", 8, 1000.0, 10.0)).to_dict()
    assert "cost-range" not in render_chart(cost_spec(option, "CNY"))  # one run: the prices' line alone
    option["per_run"]["workload"] = msg("cost.workload_runs", n=4)
    spec = cost_spec(option, "CNY")
    lo, hi = spec["marks"][0]["y_range"]
    t_lo, t_hi = option["range"]["time_to_train_s"]
    assert lo == pytest.approx(360.0 * t_lo / 36000.0) and hi == pytest.approx(360.0 * t_hi / 36000.0) and lo < 360 < hi
    assert "data-testid='cost-range'" in render_chart(spec)


def test_with_a_deadline_the_answer_says_its_chance_of_missing_it_from_its_time_range():
    """plan --deadline: the answer (text and JSON) states the chance its run misses the deadline, read from the same
    band as its 80 % time range: a deadline at the range's upper end is missed in a tenth of the outcomes, one at
    its lower end in nine tenths."""
    from conftest import REPO

    from trainsizer.report.answer import card
    from trainsizer.workflows.jobs import load_job
    from trainsizer.workflows.plan_job import PlanRequest, plan_job

    job = load_job(str(REPO / "examples/jobs/llama-3.1-70b-full-finetune.yaml"))
    out = plan_job(job, PlanRequest(currency="USD", deadline_s=3 * 86400)).out
    rec = out["recommendation"]
    risk = rec["deadline_risk"]
    assert risk["deadline_days"] == 3 and 0 < risk["p_misses"] < 1
    facts = dict(card(out, "en")["facts"])
    assert f"chance of missing the deadline (3 days) {risk['p_misses']:.0%}" in facts["Range (80 %)"]
    assert "超出 3 天工期的概率" in dict(card(out, "zh-CN")["facts"])["范围（80%）"]
    assert "deadline_risk" not in plan_job(job, PlanRequest(currency="USD")).out["recommendation"]
    option = _option("h100-sxm5-80gb", 8, 1000.0, 30.0)
    lo, hi = option_range(option).time_to_train_s
    assert p_misses_deadline(option, hi) == pytest.approx(0.1, abs=0.002)
    assert p_misses_deadline(option, lo) == pytest.approx(0.9, abs=0.002)
    assert p_misses_deadline(option, 30 * 3600) < p_misses_deadline(option, 29 * 3600)
