"""Hardware-specific system sizing (Ascend RoCE, baseboard NICs, GB200 racks), storage IOPS and its price floor,
Chengdu time-of-use electricity and the user's own bill, and the compute-voucher subsidy."""

import datetime

import pytest
from conftest import base_scenario, price_list

from trainsizer.cost.prices import check_price_file, load_prices
from trainsizer.cost.subsidy import Subsidy, apply_subsidy, subsidy_for
from trainsizer.cost.tco import HOURS_PER_YEAR, BuyCost, buy_cost
from trainsizer.errors import InputError
from trainsizer.hardware.catalog import default_catalog
from trainsizer.models.catalog import resolve_model
from trainsizer.report.message_text import text as _text
from trainsizer.scenario import scenario_from_dict
from trainsizer.system.bom import size_system
from trainsizer.system.inventory import Inventory
from trainsizer.system.network import size_network
from trainsizer.system.power import fit_site, size_power
from trainsizer.system.rules import baseboard_class, sizing_rules
from trainsizer.system.sites import Site, default_sites, with_electricity_price
from trainsizer.system.storage import size_storage

CAT = default_catalog()

# every component's source is its own key, so a bill's citations tell which rows it consulted
COMPONENTS = {
    "parallel_fs_per_tb": 1000, "parallel_fs_minimum": 300_000, "nas_minimum": 100_000, "nvme_ssd_per_tb": 500,
    "nic_400g": 10000, "nic_200g": 6000, "nic_400gbe": 7000, "nic_200gbe": 4000,
    "ib_ndr_switch_64port": 200000, "ib_hdr_switch_40port": 100000, "roce_400g_switch_64port": 150000,
    "roce_200g_switch_64port": 80000, "optical_transceiver_400g": 1000, "rack_and_pdu": 20000,
    "installation_per_server": 5000}
PRICES = {
    "fx": [{"pair": "USD/CNY", "rate": 7.0}],
    "servers": [{"gpu": "ascend-910b-64gb", "gpus": 8, "price": 1_500_000, "currency": "CNY", "source": "server"}],
    "components": {k: {"price": v, "currency": "CNY", "source": k} for k, v in COMPONENTS.items()},
    "opex": {"maintenance_fraction_per_year": {"value": 0.1}, "staff_cost_per_year": {"value": 400000,
                                                                                      "currency": "CNY"},
             "residual_value_after_3_years": {"value": 0.4}},
}


def site(kw=10.0, cooling="air", pue=1.5, price=0.8, tou=None):
    return Site(id="test", name="test", rack_power_kw=kw, cooling=cooling, max_air_kw_per_rack=kw, pue=pue,
                electricity_price=price, electricity_tou=tou, rack_rent_per_month=10000.0, currency="CNY",
                source="test", as_of="2026-12-01")


def consulted(buy: BuyCost) -> set[str]:
    return {c.source for c in buy.cited}


# --- Ascend: RoCE, one NIC per NPU ------------------------------------------------------------------------------

def test_a_roce_part_gets_its_own_fabric_and_never_infiniband():
    assert size_network(4, 8, 32, None, True, "roce-200").fabric == "roce-200"  # none given: the part's own
    forced = size_network(4, 8, 32, "ib-hdr-200", True, "roce-200")
    assert forced.fabric == "roce-200" and "replaced by RoCE v2 200 GbE" in en(forced.reason)  # the link by name
    big = size_network(32, 8, 256, "roce-200", True, "roce-200")  # above the seed's ~100-GPU line
    assert big.fabric == "roce-200" and "no InfiniBand" in en(big.reason)
    # a part without a vendor fabric still moves to InfiniBand at that size (unchanged rule)
    assert size_network(32, 8, 256, "roce-400", True, "ib-ndr-400").fabric == "ib-ndr-400"


def test_baseboard_class_comes_from_server_form():
    assert baseboard_class(CAT.accelerator("ascend-910b-64gb"))  # form factor 'module', server_form baseboard
    assert baseboard_class(CAT.accelerator("h100-sxm5-80gb"))
    assert baseboard_class(CAT.accelerator("gb200-186gb"))
    assert not baseboard_class(CAT.accelerator("rtx-4090-24gb"))
    assert not baseboard_class(CAT.accelerator("h100-pcie-80gb"))


def _ascend_plan(gpus=32):
    data = base_scenario(hardware__gpu="ascend-910b-64gb", parallel__gpus=gpus, hardware__gpus_per_node=8,
                         model__preset="llama-3.1-8b", training__tokens=1e9)
    sc = scenario_from_dict(data)
    return size_system(sc, resolve_model(sc.model), CAT.accelerator("ascend-910b-64gb"), 20_000, site(30.0))


def test_an_ascend_plan_has_one_nic_per_npu_and_no_infiniband_line_in_its_bill():
    plan = _ascend_plan()
    assert plan.network.fabric == "roce-200" and plan.network.nics_per_node == 8
    prices = price_list(PRICES, "CNY")
    buy = buy_cost(plan.inventory(), site(30.0), prices, 3.0, 0.7)
    used = consulted(buy)
    assert {"nic_200gbe", "roce_200g_switch_64port"} <= used
    assert not used & {"nic_400g", "nic_200g", "ib_ndr_switch_64port", "ib_hdr_switch_40port"}
    net = plan.network
    assert buy.capex["network"] == pytest.approx(4 * 8 * 4000 + (net.leaf_switches + net.spine_switches) * 80000
                                                 + net.cables * 2 * 1000)


def test_ascend_servers_get_baseboard_host_power():
    ascend = CAT.accelerator("ascend-910b-64gb")
    r = sizing_rules()["power"]
    gpu_kw = 8 * ascend.tdp_w / 1000
    assert size_power(ascend, 8, 1, 1.0).node_kw == pytest.approx(
        gpu_kw + r["host_base_kw"] + r["host_per_gpu_kw_fraction_sxm"] * gpu_kw)
    assert size_power(ascend, 8, 1, 1.0).node_kw > 5  # the reference: an Atlas 910B server draws > 5 kW


# --- GB200 NVL72: one liquid-cooled rack ------------------------------------------------------------------------

def test_gb200_fails_an_air_cooled_10kw_room_with_the_liquid_cooling_reason():
    gb200 = CAT.accelerator("gb200-186gb")
    rack = sizing_rules()["power"]["rack_scale"]["rack-scale-nvl72"]
    power = size_power(gb200, 8, 9, 1.6)  # the planner's 9 x 8 GPUs = one NVL72
    assert power.total_it_kw == pytest.approx(rack["rack_kw"])  # the whole rack, at its published power
    fit = fit_site(default_sites()["chengdu-legacy-colo"], gb200, 8, 9, power.node_kw)
    assert not fit.fits
    assert "liquid cooling" in en(fit.verdict) and "air-cooled" in en(fit.verdict) and "72 GPUs" in en(fit.verdict)
    assert any("liquid-cooled site" in en(r) for r in fit.remedies)
    assert fit.power_cap_w is None  # no power cap brings 120 kW under 8 kW


def test_gb200_needs_the_rack_power_too_and_fits_a_big_liquid_rack():
    gb200 = CAT.accelerator("gb200-186gb")
    node_kw = size_power(gb200, 8, 9, 1.2).node_kw
    sixty = fit_site(site(60.0, "liquid"), gb200, 8, 9, node_kw)
    verdict = en(sixty.verdict)
    assert not sixty.fits and "exceeds the 48 kW usable" in verdict and "liquid cooling" not in verdict
    big = fit_site(site(160.0, "liquid"), gb200, 8, 18, node_kw)  # 144 GPUs = 2 racks
    assert big.fits and big.racks == 2 + 2  # + one network/storage rack per 128 GPUs, as for 16 8-GPU servers


# --- storage: IOPS and the price floor --------------------------------------------------------------------------

def test_iops_need_is_reported_beside_the_seed_rule():
    q = sizing_rules()["storage"]["iops"]
    st = size_storage(8_030_261_248, 8_030_261_248, 128256, 1e9, 50_000, 12.0, 8 * 989.4, 1, seq_len=2048, gpus=8)
    samples = 50_000 / 2048
    reads = samples * q["ios_per_small_file"] * 2.0  # 8 KiB samples: one read each; x2 read safety factor
    ckpt = st.checkpoint_write_gbps * 1e9 / 2**20 + 8 * 2 * 3 / 180
    assert st.iops_breakdown["small_file_reads"] == pytest.approx(reads)
    assert st.iops_breakdown["checkpoint_bursts"] == pytest.approx(ckpt)
    assert st.iops_needed == pytest.approx(max(reads, ckpt))
    d = st.to_dict()
    note = en(d["iops_note"])
    assert d["iops_needed"] == round(st.iops_needed) and "seed" in note and "not this job" in note
    big = size_storage(405_000_000_000, 405_000_000_000, 128256, 1e12, 1e6, 12.0, 1e6, 128, seq_len=8192, gpus=1024)
    assert "applies" in en(big.iops_note) and "1,000,000" in en(big.iops_note)


def test_shared_storage_is_never_priced_below_the_floor():
    def inv(tb, nodes):
        return Inventory("ascend-910b-64gb", 8 * nodes, 8, nodes, tb, 3.84, 8, 1, 8 * nodes, nodes + 1,
                         6.0 * nodes, "roce-200" if nodes > 1 else None)
    prices = price_list(PRICES, "CNY")
    small = buy_cost(inv(4.0, 4), site(30.0), prices, 3.0, 0.7)
    assert small.capex["shared_storage"] == 300_000
    assert any("below the smallest parallel file system minimum" in en(n) for n in small.notes)
    assert buy_cost(inv(400.0, 4), site(30.0), prices, 3.0, 0.7).capex["shared_storage"] == 400_000
    assert buy_cost(inv(4.0, 1), site(30.0), prices, 3.0, 0.7).capex["shared_storage"] == 100_000
    shipped = load_prices("CNY")
    floor = shipped.component("parallel_fs_minimum").amount
    assert floor > 4 * shipped.component("parallel_fs_per_tb").amount
    assert buy_cost(inv(4.0, 4), site(30.0), shipped, 3.0, 0.7).capex["shared_storage"] == pytest.approx(floor)


# --- Chengdu electricity: time of use and the user's bill ---------------------------------------------------------

def test_tou_weighting_by_hand():
    tou = [{"band": "peak", "hours_per_day": 8, "price": 1.6}, {"band": "flat", "hours_per_day": 7.5, "price": 1.0},
           {"band": "valley", "hours_per_day": 8.5, "price": 0.4}]
    s = site(price=0.9, tou=tou)
    assert s.effective_electricity_price() == pytest.approx((8 * 1.6 + 7.5 + 8.5 * 0.4) / 24)
    assert site(price=0.9).effective_electricity_price("flat-24h") == 0.9  # no TOU: the flat price
    with pytest.raises(ValueError, match="add up to 23"):
        site(tou=tou[:2] + [{"band": "valley", "hours_per_day": 7.5, "price": 0.4}])
    with pytest.raises(InputError):
        s.effective_electricity_price("office-hours")


def test_chengdu_sites_carry_the_sichuan_tou_bands():
    s = default_sites()["chengdu-legacy-colo"]
    bands = {b.band: b for b in s.electricity_tou}
    assert sum(b.hours_per_day for b in bands.values()) == pytest.approx(24)
    assert bands["peak"].price == pytest.approx(bands["flat"].price * 1.6, abs=0.001)
    assert bands["valley"].price == pytest.approx(bands["flat"].price * 0.4, abs=0.001)
    assert all(b.source and b.as_of and b.confidence for b in bands.values())
    assert s.effective_electricity_price() == pytest.approx(0.725 * 0.9875, abs=1e-3)


def test_buy_cost_pays_the_tou_price_and_the_users_bill_replaces_it():
    tou = [{"band": "peak", "hours_per_day": 12, "price": 1.2}, {"band": "valley", "hours_per_day": 12, "price": 0.4}]
    s = site(30.0, pue=1.2, price=0.9, tou=tou)
    inv = Inventory("ascend-910b-64gb", 8, 8, 1, 5.0, 3.84, 0, 0, 0, 1, 6.0, None)
    energy = 6.0 * (0.3 + 0.7 * 0.7) * 1.2 * HOURS_PER_YEAR
    prices = price_list(PRICES, "CNY")
    assert buy_cost(inv, s, prices, 3.0, 0.7).opex_per_year["electricity"] == pytest.approx(energy * 0.8)
    mine = with_electricity_price(s, 0.55)
    assert mine.electricity_tou is None and mine.effective_electricity_price() == 0.55 and s.electricity_tou
    assert buy_cost(inv, mine, prices, 3.0, 0.7).opex_per_year["electricity"] == pytest.approx(
        energy * 0.55)
    with pytest.raises(InputError, match="--electricity-price"):
        with_electricity_price(s, -0.1)


# --- the Chengdu compute voucher ----------------------------------------------------------------------------------

def voucher(fraction=0.3, cap=3_000_000.0):
    return Subsidy(id="v", region="chengdu", fraction=fraction, cap_per_year=cap, source="test", as_of="2025-09-02",
                   confidence="M")


def test_voucher_fraction_and_cap():
    assert apply_subsidy(1_000_000, voucher()) == pytest.approx((700_000, 300_000))
    assert apply_subsidy(20_000_000, voucher()) == pytest.approx((17_000_000, 3_000_000))  # cap binds
    assert apply_subsidy(1_000_000, voucher(), already_used=2_900_000) == pytest.approx((900_000, 100_000))
    assert apply_subsidy(1_000_000, voucher(), already_used=3_500_000) == pytest.approx((1_000_000, 0))
    assert apply_subsidy(1_000_000, voucher(cap=None)) == pytest.approx((700_000, 300_000))
    with pytest.raises(InputError):
        apply_subsidy(-1, voucher())


def test_shipped_vouchers_load_match_chengdu_sites_and_convert():
    subsidies = load_prices().subsidies
    reviewed = datetime.date.fromisoformat(load_prices().file.reviewed)
    for s in subsidies:
        assert s.source and s.as_of and s.confidence in ("H", "M", "L")
        old = (reviewed - datetime.date.fromisoformat(s.as_of)).days > 548  # the data files' 18-month stale rule
        assert s.stale == old, s.id
    chengdu = subsidy_for(default_sites()["chengdu-intelligent-computing-centre"], subsidies)
    assert chengdu and subsidy_for("Chengdu", subsidies) == chengdu
    assert subsidy_for(default_sites()["ningxia-zhongwei-green"], subsidies) == []
    latest = chengdu[0]
    assert (latest.fraction, latest.cap_per_year, latest.eligible) == (0.6, 5_000_000, "rental")
    usd = price_list(PRICES, "USD").in_currency(latest)
    assert usd.currency == "USD" and usd.cap_per_year == pytest.approx(5_000_000 / 7.0)


def test_a_bad_subsidy_row_names_the_field():
    with pytest.raises(InputError, match=r"p\.yaml: subsidies\[0\]\.fraction"):
        check_price_file({"subsidies": [{"id": "x", "region": "chengdu", "fraction": 1.5, "source": "s",
                                         "as_of": "2025-01-01", "confidence": "M"}]}, "p.yaml")


def en(message):
    """An engine message in English."""
    return _text(message, "en")


def test_a_plan_with_no_site_named_is_hosted_in_its_own_market():
    from trainsizer.system.sites import default_site_id
    from trainsizer.workflows.jobs import load_job
    from trainsizer.workflows.plan_job import PlanRequest, plan_job

    sites = default_sites()
    us = sites[default_site_id(sites, "global")]
    assert (us.country, us.currency) == ("US", "USD") and us.source and us.as_of
    assert sites[default_site_id(sites, "cn")].country == "CN"  # a Chengdu hall, as before
    job = load_job("examples/jobs/qwen2.5-7b-lora.yaml")
    usd = plan_job(job, PlanRequest(currency="USD", max_gpus=8)).out
    cny = plan_job(job, PlanRequest(currency="CNY", max_gpus=8)).out
    assert usd["site"] == us.id and sites[cny["site"]].country == "CN"
    named = plan_job(job, PlanRequest(currency="USD", max_gpus=8, site="chengdu-legacy-colo")).out
    assert named["site"] == "chengdu-legacy-colo"  # a named site is kept
