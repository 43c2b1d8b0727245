"""What a Chinese team can act on: the market filter, a run priced on its contract's terms, the commitment the
budget limits, rented options never failed by the user's room, and one recommendation with its why."""

from __future__ import annotations

import pytest
from plan_options import plan_option, run_cost

from trainsizer.cost.per_run import Workload, cheapest_rental, covers, price_offer
from trainsizer.cost.prices import RentalOffer, RentalTerms, load_prices
from trainsizer.errors import InputError
from trainsizer.plan.option import PlanOption
from trainsizer.report.message_text import text as _text
from trainsizer.workflows.decide import NEAR_TIE, choose, parse_objective, trade_against
from trainsizer.workflows.jobs import load_job
from trainsizer.workflows.plan_job import PlanRequest, plan_job

QWEN_LORA = "examples/jobs/qwen2.5-7b-lora.yaml"
LLAMA_QLORA = "examples/jobs/llama-3.1-8b-qlora.yaml"
LLAMA_70B = "examples/jobs/llama-3.1-70b-full-finetune.yaml"


def offer(term: str, price: float = 2.0, granularity: str = "per-second", min_hours: float | None = 0.0,
          max_gpus: int | None = None, multi_node: bool | None = None) -> RentalOffer:
    terms = RentalTerms(term=term, billing_granularity=granularity, min_term_hours=min_hours, max_gpus=max_gpus,
                        multi_node=multi_node)
    return RentalOffer("p", "rtx-4090-24gb", price, "CNY", terms, price, "CNY", "H", "s", "2026-09-01")


# --- a run on the offer's own terms ---------------------------------------------------------------------------

def test_on_demand_bills_the_run_in_whole_granules():
    run = price_offer(offer("on-demand", granularity="per-hour"), gpus=2, run_hours=3.2)
    assert run.billed_hours == 4 and run.cost == pytest.approx(2.0 * 2 * 4) and run.commitment == run.cost


def test_a_monthly_contract_bills_a_month_even_for_a_short_run():
    run = price_offer(offer("monthly", price=1.0, min_hours=720), gpus=8, run_hours=50)
    assert run.billed_hours == 720 and run.cost == pytest.approx(8 * 720) and run.notes


def test_a_contracts_minimum_names_its_term_once():
    run = price_offer(offer("yearly", price=1.0, min_hours=None), gpus=8, run_hours=3215.9)
    assert _text(run.notes[0], "en") == "yearly contract: bills at least 8,760 h for a 3,215.9 h run"
    assert _text(run.notes[0], "zh-CN").startswith("包年：")


def test_a_multi_year_lease_binds_its_whole_term_when_no_minimum_is_stated():
    run = price_offer(offer("multi-year", price=1.0, min_hours=None), gpus=8, run_hours=24)
    assert run.billed_hours == pytest.approx(3 * 8760)


def test_single_machine_clouds_do_not_cover_a_multi_node_cluster():
    card_cloud = offer("on-demand", max_gpus=8, multi_node=False)
    assert covers(card_cloud, 8, 1) and not covers(card_cloud, 16, 2) and not covers(card_cloud, 8, 2)
    # several servers only where the offer says it rents them networked and states how many GPUs one order gets
    assert covers(offer("monthly", max_gpus=64, multi_node=True), 64, 8)
    assert not covers(offer("monthly", max_gpus=64, multi_node=True), 128, 16)
    assert not covers(offer("monthly", multi_node=True), 64, 8)  # no cluster size stated: one server
    assert not covers(offer("on-demand"), 16, 2)  # silent on multi-node (an index row): never a cluster


def test_the_cheapest_firm_offer_wins_and_preemptible_only_without_one():
    prices = load_prices("CNY")
    run, why = cheapest_rental(prices, "rtx-4090-24gb", 1, 10.0, "cn")
    assert run is not None and not why and run.term != "preemptible"
    ondemand = [o for o in prices.rental_offers("rtx-4090-24gb") if o.terms and o.terms.term == "on-demand"]
    assert run.cost <= min(o.price_per_gpu_hour for o in ondemand) * 10 + 1e-9
    none, reason = cheapest_rental(prices, "rtx-4090d-24gb", 1, 10.0, "global")  # a China SKU: no offer outside
    assert none is None and reason.code == "cost.no_rental_offer" and reason.args["market"] == "global"


def test_buying_for_one_run_carries_the_whole_cost_unless_the_hardware_stays_busy():
    assert Workload().runs_over(3, 48) == 1
    assert Workload(runs_per_month=4).runs_over(3, 48) == 144
    assert Workload(utilisation=0.5).runs_over(1, 438) == pytest.approx(10)


# --- the plan's answer ----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def small_job():
    return plan_job(load_job(QWEN_LORA), PlanRequest(max_gpus=64, currency="CNY")).out


def test_each_rented_option_cites_its_offer(small_job):
    offers = {(u["item"].args["provider"], u["item"].args["gpu"]) for u in small_job["prices_used"]
              if u["item"].code == "price.rental_offer"}
    rented = [(o["per_run"]["rent"]["provider"], o["hardware"]["gpu"]) for o in small_job["options"]
              if o["per_run"].get("rent")]
    assert rented and set(rented) <= offers


def test_a_small_lora_job_is_rented_on_a_few_china_available_gpus(small_job):
    rec = small_job["recommendation"]
    pick = small_job["options"][rec["option"]]
    assert rec["acquisition"] == "rent" and rec["gpus"] <= 8 and 10 <= rec["per_run"] <= 1000
    assert pick["parallel"]["tp"] == pick["parallel"]["pp"] == pick["parallel"]["cp"] == 1
    assert pick["availability"]["market"] == "cn" and pick["availability"]["rent"]["status"] == "yes"
    assert rec["commitment"] <= rec["per_run"] * 1.01 and "binding" in en(rec["why"])
    assert small_job["market"]["note"] and "b200" in " ".join(e["gpu"] for e in small_job["market"]["excluded"])
    assert all(o["hardware"]["gpu"] not in {e["gpu"] for e in small_job["market"]["excluded"]}
               for o in small_job["options"])


def test_every_option_has_a_per_run_cost_or_the_reason(small_job):
    for o in small_job["options"]:
        pr = o["per_run"]
        assert pr.get("cost") is not None or pr.get("reason"), o["hardware"]
    ranked = small_job["rankings"]["cheapest_per_run"]
    costs = [small_job["options"][i]["per_run"]["cost"] for i in ranked]
    assert costs == sorted(costs)


def test_the_horizon_rents_on_the_options_own_offer(small_job):
    # "rent over N years" is the offer the run is priced on, not the first row of the price list: for an H100 in
    # USD that row is a Guangzhou lessor's 3-year lease (cheapest per card-hour, a Chinese offer)
    first = load_prices("USD").rental_offers("h100-sxm5-80gb")[0]
    assert first.quoted_currency == "CNY"
    usd = plan_job(load_job(QWEN_LORA), PlanRequest(currency="USD", gpus=("h100-sxm5-80gb",))).out
    for out in (small_job, usd):
        rented = [o for o in out["options"] if o["per_run"].get("rent") and o.get("cost")]
        assert rented
        for o in rented:
            run, horizon = o["per_run"]["rent"], o["cost"]["rent"]
            assert (horizon["offer"], horizon["price_per_gpu_hour"]) == (run["provider"], run["price_per_gpu_hour"])
    assert all(o["cost"]["rent"]["offer"] != first.provider for o in usd["options"] if o.get("cost"))


def test_without_a_rental_of_its_own_the_horizon_rents_only_in_the_market():
    # an option no offer holds falls back to the GPU's first offer in its market, never another market's
    from types import SimpleNamespace

    from trainsizer.hardware.catalog import default_catalog
    from trainsizer.workflows.pricing import _horizon_offer
    cat = default_catalog()
    cn = SimpleNamespace(prices=load_prices("CNY"), market="cn")
    offer, rentable = _horizon_offer(cat.accelerator("h100-sxm5-80gb"), None, cn)
    assert rentable and offer.quoted_currency == "CNY"
    assert _horizon_offer(cat.accelerator("l4-24gb"), None, cn) == (None, False)  # not rented in China
    us = SimpleNamespace(prices=load_prices("USD"), market="global")
    assert _horizon_offer(cat.accelerator("rtx-3090-24gb"), None, us) == (None, False)  # AutoDL's only


def test_the_budget_limits_the_commitment():
    out = plan_job(load_job(LLAMA_QLORA), PlanRequest(max_gpus=64, currency="CNY", budget=20000)).out
    rec = out["recommendation"]
    assert rec and rec["commitment"] <= 20000
    assert all((o["per_run"].get("commitment") or 0) <= 20000 for o in out["options"] if o["per_run"].get("cost"))


def test_rented_options_are_not_failed_by_the_users_room():
    out = plan_job(load_job(LLAMA_70B), PlanRequest(max_gpus=64, currency="CNY", deadline_s=30 * 86400,
                                                   site="chengdu-legacy-colo")).out
    rec = out["recommendation"]
    assert rec and rec["gpus"] <= 512 and rec["time_to_train_days"] <= 30
    pick = out["options"][rec["option"]]
    if rec["acquisition"] == "rent":
        assert not pick["site_applies"] and "site:" not in en(pick["verdict"])
    else:
        assert pick["system"]["site_fit"]["fits"]


def test_near_ties_prefer_fewer_gpus_and_a_simpler_layout():
    def option(gpus: int, cost: float, tp: int = 1, device_gib: float = 10.0) -> PlanOption:
        return plan_option("h100-sxm5-80gb", gpus, tp=tp, device_gib=device_gib,
                           per_run=run_cost("rent", cost))
    cheap_many = option(8, 100.0)
    few = option(2, 100.0 * (1 + NEAR_TIE / 2))
    few_tp = option(2, 100.0 * (1 + NEAR_TIE / 4), tp=2)
    assert choose([cheap_many, few, few_tp], "cheapest")[0] == 1
    far = option(1, 100.0 * (1 + 3 * NEAR_TIE))
    assert choose([cheap_many, far], "cheapest")[0] == 0
    crammed = option(1, 95.0, device_gib=78.0)
    assert choose([cheap_many, crammed], "cheapest")[0] == 0  # a tight fit loses to a roomier one within 10 %
    with pytest.raises(InputError):
        parse_objective("cheapest-ish")


def test_near_ties_go_to_the_faster_then_to_fewer_gpus():
    def option(gpus: int, cost: float, seconds: float) -> PlanOption:
        return plan_option("h100-sxm5-80gb", gpus, time_to_train_s=seconds,
                           per_run=run_cost("rent", cost))
    slow_few, fast_many = option(4, 100.0, 26 * 86400.0), option(8, 100.0, 13 * 86400.0)
    assert choose([slow_few, fast_many], "cheapest")[0] == 1  # the same cost: the faster wins
    assert choose([slow_few, option(8, 100.0, 25.5 * 86400.0)], "cheapest")[0] == 0  # as fast: fewer GPUs win
    assert choose([slow_few, option(8, 120.0, 13 * 86400.0)], "cheapest")[0] == 0  # not a tie


def test_a_voucher_of_unconfirmed_eligibility_is_a_possibility_beside_the_price():
    """The 2025 Chengdu voucher names no eligible provider: the run is priced and ranked without it, and what it
    would take off if approved is said beside the price (never folded into the headline)."""
    base = plan_job(load_job(QWEN_LORA), PlanRequest(max_gpus=8, currency="CNY")).out["recommendation"]
    with_voucher = plan_job(load_job(QWEN_LORA), PlanRequest(max_gpus=8, currency="CNY",
                                                             voucher="chengdu-compute-voucher-2025")).out
    rec = with_voucher["recommendation"]
    rent = with_voucher["options"][rec["option"]]["per_run"]["rent"]
    assert rec["per_run"] == base["per_run"] and rent["voucher"]["possible"] and rent["voucher"]["saved"] > 0
    assert "cost_before_voucher" not in rent
    assert any(m.code == "adjust.voucher_possible" for part in rec["adjustments"]
               for m in ([part, *part.args.get("parts", [])] if hasattr(part, "args") else [part]))


def en(message):
    """An engine message in English."""
    return _text(message, "en")


def test_a_runner_ups_time_difference_is_the_difference_in_the_unit_that_reads_best():
    """decide.trade_against: the runner-up's time against the answer's, to the minute, in minutes, hours or days."""
    def trade(pick_h: float, other_h: float, lang: str = "en") -> str:
        other = plan_option(time_to_train_s=other_h * 3600, per_run=run_cost("rent", 100.0))
        return _text(trade_against(100.0, pick_h / 24, other, "CNY"), lang)

    assert "8.3 hours slower" in trade(7.6, 15.9)
    assert "3.1 hours faster" in trade(4.4, 1.3)
    assert "4 minutes slower" in trade(17 / 60, 21 / 60)
    assert "慢 4 分钟" in trade(17 / 60, 21 / 60, "zh-CN")
    assert "3 days slower" in trade(48, 120)


def test_a_named_gpu_the_market_cannot_supply_is_not_reported_as_out_of_memory():
    """The H800 is sold in China only: in the global market a 7B LoRA on it fits in memory but cannot be had. The
    answer says so (blocked by the market) instead of "nothing fits" with relaxations that would not help."""
    from trainsizer.report.answer import card

    out = plan_job(load_job(QWEN_LORA), PlanRequest(currency="USD", gpus=("h800-sxm5-80gb",), max_gpus=8)).out
    assert not out["options"] and out["recommendation"] is None
    assert out["blocked"] == "market"
    assert [m.code for m in out["suggestions"]] == ["plan.fits_not_to_be_had"]
    assert out["suggestions"][0].args["gpu"] == "h800-sxm5-80gb"
    assert "Nothing fits in memory" not in card(out, "en")["reason"]


def test_relaxations_keep_to_the_machines_to_be_had():
    """Every relaxation the search suggests is held to the same machines to be had (here: only A100 80GB servers
    hold any layout): "larger GPUs (the whole catalog)" must not name a GPU the market cannot supply."""
    import numpy as np

    from trainsizer.models.catalog import resolve_model
    from trainsizer.plan.search import Constraints, plan

    job = load_job(LLAMA_70B)

    class OnlyA100:
        def holds(self, gpu, per_node, host):
            return np.full(len(host), gpu == "a100-sxm4-80gb")

    res = plan(job, resolve_model(job.model), Constraints(("v100-sxm2-16gb",), 2, host=OnlyA100()))
    assert not res.options and res.blocked is None
    named = {m.args["gpu"] for m in res.suggestions if m.code == "plan.relaxation_fits"}
    assert named == {"a100-sxm4-80gb"}



def test_a_moe_answer_says_its_routing_is_priced_balanced_until_an_imbalance_is_stated(tmp_path):
    """decide.adjustments: the card of a MoE job names the balanced routing its time assumes (real routing is slower);
    with the imbalance stated it is priced and the line goes; a dense job's card never has it."""
    from pathlib import Path

    import yaml

    def codes(job: Path) -> list[str]:
        rec = plan_job(load_job(job), PlanRequest(max_gpus=8, currency="CNY")).out["recommendation"]
        return [m.code for m in rec["adjustments"]]

    moe = Path("examples/jobs/qwen3-30b-a3b-full.yaml")
    assert "step.moe_balanced" in codes(moe)
    stated = yaml.safe_load(moe.read_text(encoding="utf-8"))
    stated["parallel"] = {"moe_load_imbalance": 1.2}
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(stated), encoding="utf-8")
    assert "step.moe_balanced" not in codes(tmp_path / "job.yaml")
    assert "step.moe_balanced" not in codes(Path(QWEN_LORA))


def test_a_stated_utilisation_is_said_as_the_runs_a_month_it_means():
    # 90 % busy bought servers, priced on this job: the card says how many runs like it a month that is, so a lead
    # sees the workload the purchase assumes (32 GPUs of a minutes-long LoRA: thousands of runs a month)
    out = plan_job(load_job(QWEN_LORA), PlanRequest(currency="USD", utilisation=0.9)).out
    rec = out["recommendation"]
    hours = out["options"][rec["option"]]["performance"]["time_to_train_s"] / 3600
    assert rec["acquisition"] == "buy"
    (note,) = [n for n in rec["adjustments"] if n.code in ("adjust.bought_busy_runs", "adjust.bought_at")]
    assert note.code == "adjust.bought_busy_runs"
    assert note.args["n"] == pytest.approx(0.9 * 730 / hours, rel=0.01)
    assert note.args["n"] > 1000 and "runs like this one a month" in _text(note, "en")
