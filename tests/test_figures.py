"""One figure per quantity: the answer card, the CLI's tables, the report (Markdown and HTML, with its cost
section), the web page's result and the spreadsheet show the same per-run cost, commitment and time for the
recommended option, read from its ``per_run``; buying is checked against the stated workload; every adjustment
behind the figures is on the card."""

from __future__ import annotations

import csv
import json
from html import unescape
from pathlib import Path

import pytest
from plan_options import plan_option, rented, run_cost
from typer.testing import CliRunner

from trainsizer.cli import app
from trainsizer.cost.run_cost import Bought, VoucherClaim
from trainsizer.i18n import tr
from trainsizer.plan.option import PlanOption
from trainsizer.report import words as w
from trainsizer.report.answer import card
from trainsizer.report.message_text import text
from trainsizer.workflows.decide import adjustments

QWEN_LORA = "examples/jobs/qwen2.5-7b-lora.yaml"
LLAMA_70B = "examples/jobs/llama-3.1-70b-full-finetune.yaml"
VOUCHER = "chengdu-compute-voucher-2025"

JOBS = {
    "lora-cny": (QWEN_LORA, ["--currency", "CNY", "--max-gpus", "8"]),
    "lora-voucher": (QWEN_LORA, ["--currency", "CNY", "--max-gpus", "8", "--voucher", VOUCHER]),
    "70b-bought-4-runs": (LLAMA_70B, ["--currency", "CNY", "--max-gpus", "64", "--gpu", "rtx-4090d-24gb",
                                      "--runs-per-month", "4"]),
    "70b-usd": (LLAMA_70B, ["--currency", "USD", "--max-gpus", "16", "--market", "global"]),
}


def _run(args: list[str]) -> str:
    result = CliRunner().invoke(app, args, env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module", params=sorted(JOBS))
def faces(request, tmp_path_factory) -> dict[str, object]:
    """One job through every face: the plan's JSON, the terminal, the report as .md, .html and .csv, the page."""
    job, flags = JOBS[request.param]
    d = tmp_path_factory.mktemp(request.param)
    out = json.loads(_run(["plan", job, *flags, "--json"]))
    faces: dict[str, object] = {"out": out, "cli": _run(["plan", job, *flags])}
    for ext in ("md", "html", "csv"):
        _run(["report", job, *flags, "--out", str(d / f"plan.{ext}")])
        faces[ext] = (d / f"plan.{ext}").read_text(encoding="utf-8-sig")
    from trainsizer.web.jobs import ui_plan  # the page's result, from the same request the form sends
    from trainsizer.web.schemas import UiPlanIn

    faces["web"] = _web(job, flags, ui_plan, UiPlanIn)
    return faces


def _web(job: str, flags: list[str], ui_plan, model) -> str:
    import yaml

    keys = {"--currency": "currency", "--max-gpus": "max_gpus", "--gpu": "gpus", "--runs-per-month": "runs_per_month",
            "--market": "market", "--voucher": "voucher"}
    constraints: dict[str, object] = {}
    for flag, value in zip(flags[::2], flags[1::2], strict=True):
        key = keys[flag]
        if key == "gpus":
            constraints["gpus"] = [value]
        elif key in ("max_gpus",):
            constraints[key] = int(value)
        elif key == "runs_per_month":
            constraints[key] = float(value)
        else:
            constraints[key] = value
    body = {"job": yaml.safe_load(Path(job).read_text(encoding="utf-8")), "constraints": constraints}
    return unescape(ui_plan(model.model_validate(body), "en"))


def _figures(out: dict) -> tuple[str, str, str]:
    rec = out["recommendation"]
    pick = out["options"][rec["option"]]
    cur = rec["currency"]
    return (w.money(rec["per_run"], cur, "en"), w.money(rec["commitment"], cur, "en"),
            w.duration(pick["performance"]["time_to_train_s"], "en"))


def test_the_recommendation_reads_the_options_per_run(faces):
    out = faces["out"]
    rec = out["recommendation"]
    pr = out["options"][rec["option"]]["per_run"]
    assert rec["per_run"] == pr["cost"] == pr[pr["acquisition"]]["cost"]
    assert rec["commitment"] == pr["commitment"] == pr[pr["acquisition"]]["commitment"]
    assert "per_run" not in (out["options"][rec["option"]].get("cost") or {})  # no second figure for a run


def test_every_face_shows_the_same_per_run_cost_commitment_and_time(faces):
    out = faces["out"]
    rec = out["recommendation"]
    pr = out["options"][rec["option"]]["per_run"]
    cost, commitment, time = _figures(out)
    acq = w.word(w.ACQUISITIONS, rec["acquisition"], "en")
    other = {"rent": "buy", "buy": "rent"}[rec["acquisition"]]
    other_cost = w.money((pr.get(other) or {}).get("cost"), rec["currency"], "en")
    split = f"{cost} / {other_cost}" if rec["acquisition"] == "buy" else f"{other_cost} / {cost}"  # buy share / rent
    cli = faces["cli"]
    assert f"Per run: {cost}" in cli and f"Commitment: {commitment}" in cli and f"Time to train: {time}" in cli
    assert f"{acq} {cost}" in cli  # the pick's row in the rankings
    md = faces["md"]
    assert f"**Per run**: {cost}" in md and f"**Commitment**: {commitment}" in md and f"**Time to train**: {time}" in md
    assert f"| One run: buy share / rent | {split} |" in md and f"| One run: commitment | {commitment} |" in md
    for page in (unescape(faces["html"]), faces["web"]):
        # the run's cost first (a voucher of unconfirmed eligibility follows it in brackets, never folded in)
        assert f"<dt>Per run</dt><dd>{cost}" in page and f"<dt>Commitment</dt><dd>{commitment}</dd>" in page
        assert f"<dt>Time to train</dt><dd>{time}</dd>" in page
        assert f"<td>One run: buy share / rent</td><td>{split}</td>" in page
    rows = {r[1]: r[2] for r in csv.reader(faces["csv"].splitlines()) if len(r) > 2 and r[0] == "Recommendation"}
    assert float(rows["one training run: cost"]) == rec["per_run"]
    assert float(rows["one training run: commitment"]) == rec["commitment"]
    assert float(rows["time to train"]) == pytest.approx(rec["time_to_train_days"], abs=0.01)


def test_buying_is_priced_for_the_stated_workload():
    """4 runs a month of a run longer than a week cannot come from one set of servers: buying is priced for as
    many sets as the month needs, and the utilisation and payback are the stated workload's, not 70 %."""
    from trainsizer.workflows.jobs import load_job
    from trainsizer.workflows.plan_job import PlanRequest, plan_job

    out = plan_job(load_job(LLAMA_70B), PlanRequest(gpus=("rtx-4090d-24gb",), max_gpus=8, currency="CNY",
                                                    runs_per_month=4)).out
    bought = [o for o in out["options"] if (o["per_run"].get("buy") or {}).get("cost") is not None]
    assert bought
    for o in bought:
        hours, buy = o["per_run"]["hours"], o["per_run"]["buy"]
        sets = -(-4 * hours // 730)
        assert buy["sets"] == max(1, sets) and buy["utilisation"] == pytest.approx(4 * hours / (730 * buy["sets"]),
                                                                                  abs=1e-3)
        assert buy["utilisation"] <= 1
        verdict = o["cost"]["verdict"]
        if "pct" in verdict.args:
            assert verdict.args["pct"] == pytest.approx(buy["utilisation"], abs=1e-3)
        if buy["sets"] > 1:
            assert buy["commitment"] == pytest.approx(o["cost"]["buy"]["capex_total"], abs=1)
            assert "sets of these servers" in text(buy["note"], "en")


def test_no_buy_price_where_the_market_does_not_sell_the_part():
    from trainsizer.workflows.jobs import load_job
    from trainsizer.workflows.plan_job import PlanRequest, plan_job

    out = plan_job(load_job(QWEN_LORA), PlanRequest(gpus=("h100-sxm5-80gb",), max_gpus=8, currency="CNY",
                                                    market="cn")).out
    assert out["options"]
    for o in out["options"]:
        assert o["availability"]["buy"]["status"] not in ("yes", "unknown")
        assert o["cost"] is None and o["per_run"]["buy"] is None and o["per_run"]["buy_unavailable"] is not None


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_the_voucher_its_cap_and_caveats_are_on_the_card(lang):
    from trainsizer.workflows.jobs import load_job
    from trainsizer.workflows.plan_job import PlanRequest, plan_job

    plain = plan_job(load_job(QWEN_LORA), PlanRequest(max_gpus=8, currency="CNY")).out
    assert not any(a.code.startswith("adjust.voucher") for a in plain["recommendation"]["adjustments"])
    out = plan_job(load_job(QWEN_LORA), PlanRequest(max_gpus=8, currency="CNY", voucher=VOUCHER)).out
    rec = out["recommendation"]
    rent = out["options"][rec["option"]]["per_run"]["rent"]
    facts = dict(card(out, lang)["facts"])
    adjusted = facts[tr("Adjusted for", lang)]
    saved = w.money(rent["voucher"]["saved"], "CNY", lang)
    assert saved in adjusted and w.money(5_000_000, "CNY", lang) in adjusted  # what it took off, its cap
    voucher = next(a for a in rec["adjustments"] if "voucher" in text(a, "en"))
    english = text(voucher, "en")
    assert "upper bound" in english and "eligible providers unknown" in english and "60%" in english


def _option(device: float, capacity: float) -> PlanOption:
    return plan_option("rtx-4090-24gb", 1, gpus_per_node=1, device_gib=device, capacity_gib=capacity,
                       per_run=run_cost("rent", 10, 10, rent=rented(10)))


def test_a_tight_pick_says_so_on_its_card():
    tight = adjustments(_option(23.0, 24.0), "CNY")
    assert [a.code for a in tight] == ["adjust.tight_fit"] and "96%" in text(tight[0], "en")
    assert "96%" in text(tight[0], "zh-CN")
    assert adjustments(_option(20.0, 24.0), "CNY") == []


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_minimum_term_voucher_workload_and_time_value_each_say_themselves(lang):
    from trainsizer.messages import msg
    from trainsizer.workflows.time_value import TimeValue

    rent = rented(700, notes=(msg("cost.contract_minimum", term="monthly", hours=720.0, run=50.0),),
                  voucher=VoucherClaim(id="v", saved=300, fraction=0.3, confidence="M", eligibility="listed",
                                       cap=3_000_000, cap_period="total", upper_bound=False))
    pick = plan_option(device_gib=10.0, capacity_gib=80.0, per_run=run_cost("rent", 700, 700, rent=rent))
    said = [text(a, lang) for a in adjustments(pick, "CNY", TimeValue(50.0, "CNY", False))]
    assert len(said) == 3  # the voucher, the minimum term, the stated time value
    assert w.money(300, "CNY", lang) in said[0] and w.money(3_000_000, "CNY", lang) in said[0]
    assert "720" in said[1] and w.money(50, "CNY", lang) in said[2]
    assert "upper bound" not in said[0] and "上限" not in said[0]  # a fixed share is not a ceiling
    bought = plan_option(device_gib=10.0, capacity_gib=80.0,
                         per_run=run_cost("buy", 1, 9, workload=msg("cost.workload_runs", n=4.0),
                                          buy=Bought(cost=1, commitment=9, sets=2, utilisation=0.9,
                                                     note=msg("cost.buy_sets", sets=2, n=4.0, run=400 * 3600.0))))
    said = [text(a, lang) for a in adjustments(bought, "CNY", TimeValue(0.0, "CNY", False))]
    assert len(said) == 2 and "90%" in said[0] and "2" in said[1]
