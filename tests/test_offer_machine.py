"""Offers describe the machine they rent, and every rented option is sized on it (issue 21 items 1 and 7):
host RAM, CPU cores and disk a layout needs never exceed what its offer's machine states; an offer silent on a
figure holds no layout that depends on it (CPU offload without a stated RAM); several servers only where an offer
says so with a cluster size; plans sized to the job; a rental's timeline and checks are a rental's."""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np
import pytest
import yaml
from conftest import REPO

from trainsizer.cost.machine import MachineNeed, ram_gib, shortfall, vcpus
from trainsizer.cost.per_run import cheapest_rental
from trainsizer.cost.prices import OfferMachine, RentalOffer, RentalTerms, load_prices
from trainsizer.workflows.decide import SPAN_COST, SPAN_GPUS, objective_value
from trainsizer.workflows.jobs import load_job
from trainsizer.workflows.plan_job import PlanOutcome, PlanRequest, plan_job

JOBS = REPO / "examples" / "jobs"


def _job(name: str, **training: Any) -> Any:
    job = load_job(JOBS / name)
    if training.pop("model", None):
        job = job.model_copy(update={"model": job.model.model_copy(update={"preset": "qwen2.5-32b"})})
    return job.model_copy(update={"training": job.training.model_copy(update=training)}) if training else job


@cache
def _planned(case: str, currency: str, all_options: bool = False) -> PlanOutcome:
    job = {"7b-lora": lambda: _job("qwen2.5-7b-lora.yaml"),
           "8b-qlora": lambda: _job("llama-3.1-8b-qlora.yaml"),
           "32b-full": lambda: _job("llama-3.1-70b-full-finetune.yaml", model="qwen2.5-32b"),
           "70b-full": lambda: _job("llama-3.1-70b-full-finetune.yaml")}[case]()
    return plan_job(job, PlanRequest(currency=currency, all_options=all_options))


def _plan(case: str, currency: str, all_options: bool = False) -> dict[str, Any]:
    return _planned(case, currency, all_options).out


CASES = [("7b-lora", "CNY"), ("8b-qlora", "USD"), ("32b-full", "CNY"), ("70b-full", "CNY"), ("70b-full", "USD")]


def test_every_rental_row_states_its_machine_with_a_source():
    rows = yaml.safe_load((REPO / "src/trainsizer/cost/prices.yaml").read_text())["rental"]
    for row in rows:
        machine = OfferMachine(**row["machine"])  # typed: unknown keys refused
        assert machine.source.startswith(("http", "repository")) and machine.as_of, row["provider"]
    # the one sourced per-card allocation: 优云智算's API example, 16 vCPU and 64 GB for one RTX 4090
    ucloud = [o for o in load_prices("CNY").rental_offers("rtx-4090-24gb") if o.provider == "优云智算"]
    assert ucloud and all(ram_gib(o.machine, 1) == pytest.approx(64e9 / 2**30) and vcpus(o.machine, 2) == 32
                          for o in ucloud)


def test_sourced_host_machines_of_the_us_clouds():
    # Lambda's instance table (1x..8x H100 SXM: 26 vCPUs and 225 GiB per card), RunPod's pricing cards (one-card pod)
    usd = load_prices("USD")
    lam = {o.gpu: o for o in usd.rental_offers("h100-sxm5-80gb") + usd.rental_offers("a100-sxm4-80gb")
           if o.provider == "Lambda"}
    assert ram_gib(lam["h100-sxm5-80gb"].machine, 8) == pytest.approx(1800, rel=1e-3)  # GiB
    assert vcpus(lam["h100-sxm5-80gb"].machine, 8) == 208 and vcpus(lam["a100-sxm4-80gb"].machine, 8) == 240
    runpod = {o.gpu: o for o in usd.rental_offers("h200-sxm-141gb") if o.provider == "RunPod"}
    assert ram_gib(runpod["h200-sxm-141gb"].machine, 1) == pytest.approx(276e9 / 2**30)
    for o in usd.rental_offers("h100-sxm5-80gb") + usd.rental_offers("h200-sxm-141gb"):
        if o.machine and o.machine.ram_gb_per_gpu is not None:  # a figure is stated only with the page it is on
            assert o.machine.source.startswith(("https://lambda.ai/", "https://www.runpod.io/")), o.provider


def test_a_70b_full_fine_tune_in_usd_is_rented_on_a_machine_that_states_its_ram():
    # before the US clouds' machines were sourced, no offer held the offload layout and the answer was to buy
    out = _plan("70b-full", "USD")
    rec = out["recommendation"]
    pick = out["options"][rec["option"]]
    assert rec["acquisition"] == "rent"
    rent = pick["per_run"]["rent"]
    have = ram_gib(OfferMachine(**rent["machine"]), pick["hardware"]["gpus_per_node"])
    assert have is not None and pick["system"]["host"]["instance_ram_gib"] <= have


@pytest.mark.parametrize(("case", "currency"), CASES)
def test_no_rented_option_needs_more_than_its_offers_machine(case, currency):
    out = _plan(case, currency)
    rented = [o for o in out["options"] if (o["per_run"] or {}).get("rent")]
    assert out["options"] and (rented or case.startswith("70b"))
    for o in rented:
        rent, host = o["per_run"]["rent"], o["system"]["host"]
        machine = OfferMachine(**rent["machine"]) if rent["machine"] else None
        per_node = min(o["hardware"]["gpus"], o["hardware"]["gpus_per_node"])
        have = ram_gib(machine, per_node)
        if have is None:  # not stated: only layouts that keep nothing in host RAM beyond the processes
            assert o["parallel"]["offload"] == "none", (case, rent["provider"])
        else:
            assert host["instance_ram_gib"] <= have + 1e-6, (case, rent["provider"], host["instance_ram_gib"], have)
        cores = vcpus(machine, per_node)
        assert cores is None or host["instance_cores"] <= cores
        if o["hardware"]["nodes"] > 1:  # a cluster only on an offer that states one of that size
            offer = next(x for x in load_prices(currency).rental_offers(o["hardware"]["gpu"])
                         if x.provider == rent["provider"] and x.terms and x.terms.multi_node)
            assert offer.terms.max_gpus and o["hardware"]["gpus"] <= offer.terms.max_gpus


def test_a_32b_full_fine_tune_in_cny_gets_a_machine_that_holds_it():
    out = _plan("32b-full", "CNY")
    rec = out["recommendation"]
    if rec["acquisition"] == "quote":  # no known offer within 3x its floor: the quote asks for the host RAM it needs
        quoted = out["options"][rec["option"]]
        need = quoted["system"]["host"]["instance_ram_gib"]
        assert quoted["parallel"]["offload"] == "none" or out["offer_gap"]["host_ram_gib"] >= need - 0.5
        rec = rec["priced"]  # and the priced answer beside it holds the job on the machine it names
    pick = out["options"][rec["option"]]
    assert rec["acquisition"] in ("rent", "buy")
    if rec["acquisition"] == "rent":
        rent = pick["per_run"]["rent"]
        machine = OfferMachine(**rent["machine"]) if rent["machine"] else None
        have = ram_gib(machine, pick["hardware"]["gpus_per_node"])
        assert (pick["parallel"]["offload"] == "none" if have is None
                else pick["system"]["host"]["instance_ram_gib"] <= have)
    # no rented RTX 4090 with the optimizer offloaded: no 4090 offer states the ~850 GiB that needs
    assert not any(o["hardware"]["gpu"] == "rtx-4090-24gb" and o["parallel"]["offload"] != "none"
                   and o["per_run"].get("acquisition") == "rent" for o in out["options"])


def _offer(machine: OfferMachine | None, multi_node: bool | None = False, max_gpus: int | None = 8) -> RentalOffer:
    terms = RentalTerms(term="on-demand", billing_granularity="per-second", min_term_hours=0, max_gpus=max_gpus,
                        multi_node=multi_node)
    return RentalOffer("cloud", "rtx-4090-24gb", 2.0, "CNY", terms, 2.0, "CNY", "H", "s", "2026-10-04",
                       machine=machine)


def test_the_reason_names_the_shortfall():
    per_card = OfferMachine(ram_gb_per_gpu=64, vcpus_per_gpu=16, disk_gb=100, source="s", as_of="2026-10-04")
    need = MachineNeed(4, ram_gib=850.0, cores=80, disk_gb=500.0, offload=True)
    reason = shortfall(_offer(per_card), need)
    parts = {p.code: p.args for p in reason.args["parts"].args["parts"]}
    assert reason.code == "machine.does_not_hold"
    assert parts["machine.short_ram"]["need"] == 850.0
    assert parts["machine.short_ram"]["have"] == pytest.approx(4 * 64e9 / 2**30)
    assert parts["machine.short_cores"] == {"need": 80, "have": 64, "n": 4}
    assert parts["machine.short_disk"] == {"need": 500.0, "have": 100}
    # a machine that states nothing holds no offload layout, and every layout without one
    silent = _offer(OfferMachine(source="s", as_of="2026-10-04"))
    assert shortfall(silent, need).args["parts"].code == "machine.ram_unknown_offload"
    assert shortfall(silent, MachineNeed(4, 120.0, 32, None, offload=False)) is None
    assert shortfall(_offer(per_card), MachineNeed(4, 200.0, 32, 50.0, offload=True)) is None


def test_a_layout_no_offer_holds_is_not_priced_and_the_reason_says_why():
    prices = load_prices("CNY")
    need = MachineNeed(4, ram_gib=850.0, cores=32, disk_gb=None, offload=True)
    run, why = cheapest_rental(prices, "rtx-4090-24gb", 4, 10.0, "cn", 1, None, need)
    assert run is None and why.code == "cost.no_offer_holds" and why.args["reason"].code == "machine.does_not_hold"
    light = MachineNeed(4, ram_gib=120.0, cores=32, disk_gb=None, offload=True)  # within 优云's 4 x 64 GB
    run, why = cheapest_rental(prices, "rtx-4090-24gb", 4, 10.0, "cn", 1, None, light)
    assert run is not None and run.offer.provider == "优云智算"


def test_an_index_row_silent_on_multi_node_is_never_a_cluster():
    run, why = cheapest_rental(load_prices("USD"), "h100-sxm5-80gb", 512, 10.0, "global", 64)
    assert run is None and why.code == "cost.no_cluster_lease"
    out = _plan("70b-full", "USD", all_options=True)
    assert not any(o["hardware"]["nodes"] > 1 and o["per_run"].get("acquisition") == "rent" for o in out["options"])


def test_the_screen_keeps_host_memory_on_the_machines_to_be_had():
    from trainsizer.hardware.catalog import default_catalog
    from trainsizer.system.sites import get_site, load_sites
    from trainsizer.workflows.pricing import MoneyTerms
    from trainsizer.workflows.screen_pricing import HostFit

    terms = MoneyTerms(get_site("chengdu-legacy-colo", load_sites([])), load_prices("CNY"), "cn")
    fits = HostFit(terms, default_catalog(), 32_000_000_000).holds
    per_node, gib = np.array([4, 8, 8]), np.array([0.0, 10.0, 100.0]) * 2**30
    # RTX 4090 in China, rented: 优云's 64 GB per card holds (24 + 10) GiB a card and a 32B weight copy on 8 cards
    # ((34 x 8 + 59.6) x 1.25 = 415 GiB of 477), not 100 GiB a card offloaded
    assert fits("rtx-4090-24gb", per_node, gib).tolist() == [True, True, False]
    # H800: rented only (AutoDL states no RAM; not sold new in China): no offload layout is held
    held = fits("h800-sxm5-80gb", per_node, gib).tolist()
    assert held[0] and not held[1] and not held[2]


@pytest.mark.parametrize(("case", "currency"), [("7b-lora", "CNY"), ("70b-full", "USD")])
def test_options_are_sized_to_the_job_unless_all_are_asked_for(case, currency):
    planned, every = _planned(case, currency), _plan(case, currency, all_options=True)
    out, options = planned.out, planned.result.options
    pick = options[out["recommendation"]["option"]]
    assert out["recommendation"]["gpu"] == every["recommendation"]["gpu"]
    assert out["recommendation"]["gpus"] == every["recommendation"]["gpus"]
    limit = objective_value(pick) * SPAN_COST
    for o in options:
        assert o.gpus <= pick.gpus * SPAN_GPUS or objective_value(o) <= limit
    assert len(every["options"]) >= len(out["options"])
    rows = [(o["hardware"]["gpu"], o["hardware"]["gpus"]) for o in every["options"]]
    assert len(rows) == len(set(rows))  # no duplicate rows
