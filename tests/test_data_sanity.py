"""Impossible or stale data fails here: market availability in the catalog, servers cheaper than their chips,
rents that repay a card absurdly fast or never, undated or stale prices, Chinese price rows not linked to a
catalogued GPU, Ascend parts on InfiniBand, GB200 modelled as an 8-GPU air-cooled server."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from trainsizer.cost.prices import Prices, check_price_file, load_prices
from trainsizer.datafiles import packaged_yaml
from trainsizer.hardware.catalog import default_catalog
from trainsizer.hardware.market import ACQUISITIONS, MARKETS, REASON_CODES, STATUSES

PRICES: dict[str, Any] = packaged_yaml("trainsizer.cost", "prices.yaml")
RAW_ACCELERATORS: list[dict[str, Any]] = packaged_yaml("trainsizer.hardware", "accelerators.yaml")["accelerators"]

# A price older than this, counted back from the file's `reviewed` date, must say `stale: true` (18 months).
STALE_AFTER = datetime.timedelta(days=548)
# Rent vs purchase: hours of 24/7 rental that add up to one card's purchase price. Lessors price GPUs to
# repay them in roughly 1.5-4 years, so a rent that repays the card in under ~3 months is implausibly high
# (or the purchase price implausibly low), and one that would not repay it within 10 years (beyond any
# GPU's useful life) is implausibly low (or the purchase price too high).
MIN_PAYBACK_HOURS = 3 * 730  # ~3 months of 24/7 use
MAX_PAYBACK_HOURS = 10 * 8760  # 10 years of 24/7 use


def _date(value: Any) -> datetime.date:
    return datetime.date.fromisoformat(str(value))


def _priced_rows() -> list[tuple[str, dict[str, Any]]]:
    """Every dated figure of prices.yaml as (where, entry)."""
    rows: list[tuple[str, dict[str, Any]]] = []
    for section in ("fx", "servers", "gpu_cards", "rental"):
        rows += [(f"{section}[{i}]", e) for i, e in enumerate(PRICES.get(section) or [])]
    for section in ("components", "opex", "rules_of_thumb"):
        rows += [(f"{section}.{k}", e) for k, e in (PRICES.get(section) or {}).items()]
    return rows


def _gpu_rows() -> list[tuple[str, dict[str, Any]]]:
    return [(f"{section}[{i}]", e) for section in ("servers", "gpu_cards", "rental")
            for i, e in enumerate(PRICES.get(section) or [])]


def _cny(prices: Prices, entry: dict[str, Any], key: str) -> float:
    return prices.convert(float(entry[key]), entry.get("currency", "CNY"))


# --- market availability ------------------------------------------------------------------------------------

@pytest.mark.parametrize("raw", RAW_ACCELERATORS, ids=lambda e: e["id"])
def test_every_accelerator_has_sourced_availability_for_each_market(raw):
    reviewed = _date(PRICES["reviewed"])
    avail = raw.get("availability") or {}
    assert set(MARKETS) <= set(avail), f"{raw['id']}: availability needs {MARKETS}, has {sorted(avail)}"
    for market in MARKETS:
        for acquisition in ACQUISITIONS:
            entry = (avail[market] or {}).get(acquisition)
            where = f"{raw['id']}.availability.{market}.{acquisition}"
            assert entry, f"{where} missing"
            status = {True: "yes", False: "no"}.get(entry["status"], entry["status"])
            assert status in STATUSES, where
            assert entry.get("reason", "").strip() and "\n" not in entry["reason"], f"{where}: one-line reason"
            assert entry.get("reason_code") in REASON_CODES, f"{where}: reason_code, one of {REASON_CODES}"
            assert entry.get("source", "").strip(), f"{where}: source"
            assert _date(entry["as_of"]) <= reviewed, f"{where}: as_of in the future"
    acc = default_catalog().accelerator(raw["id"])  # and the typed model accepts it
    assert set(acc.availability) == set(MARKETS)


def test_blackwell_is_not_for_sale_in_china_and_china_skus_are_not_sold_abroad():
    cat = default_catalog()
    for gpu in ("b200-sxm-180gb", "b300-sxm-288gb", "gb200-186gb"):
        assert cat.accelerator(gpu).availability["cn"].buy.status == "no", gpu
    for gpu in ("h20-96gb", "l20-48gb", "rtx-4090d-24gb", "a800-sxm4-80gb", "h800-sxm5-80gb"):
        assert cat.accelerator(gpu).availability["global"].buy.status == "no", gpu
    assert cat.accelerator("h200-sxm-141gb").availability["cn"].buy.status == "restricted"


# --- prices ---------------------------------------------------------------------------------------------------

def test_every_price_has_an_iso_as_of():
    for where, entry in _priced_rows():
        assert "as_of" in entry, where
        _date(entry["as_of"])


def test_prices_older_than_18_months_are_marked_stale_and_only_those():
    reviewed = _date(PRICES["reviewed"])
    for where, entry in _priced_rows():
        old = reviewed - _date(entry["as_of"]) > STALE_AFTER
        assert bool(entry.get("stale")) == old, (
            f"{where} ({entry.get('gpu') or entry.get('pair') or ''}, as of {entry['as_of']}): "
            + ("older than 18 months: add stale: true or a newer figure" if old else "marked stale but recent"))


def test_chinese_price_rows_link_to_catalogued_gpus():
    ids = set(default_catalog().accelerators)
    for where, entry in _gpu_rows():
        if entry.get("currency", "CNY") == "CNY":
            assert entry.get("gpu") in ids, f"{where}: CNY row for {entry.get('gpu')!r} is not a catalog id"
        elif entry.get("gpu") is not None:
            assert entry["gpu"] in ids, where


def test_no_server_is_cheaper_than_its_chips():
    prices = load_prices("CNY")
    cards = [(e["gpu"], _cny(prices, e, "price"), e) for e in PRICES["gpu_cards"]]
    checked = 0
    for server in PRICES["servers"]:
        for gpu, card_price, card in cards:
            if gpu == server["gpu"]:
                chips = int(server["gpus"]) * card_price
                assert _cny(prices, server, "price") >= chips, (
                    f"server {server['id']} at {server['price']} {server.get('currency', 'CNY')} is cheaper than "
                    f"{server['gpus']} x {gpu} at {card['price']} {card.get('currency', 'CNY')} ({card['as_of']})")
                checked += 1
    assert checked >= 3  # the check ran on real pairs (H20, H200, Ascend 910B, RTX 4090 ...)


def _purchase_per_gpu(prices: Prices) -> dict[str, list[tuple[float, str]]]:
    out: dict[str, list[tuple[float, str]]] = {}
    for e in PRICES["gpu_cards"]:
        out.setdefault(e["gpu"], []).append((_cny(prices, e, "price"), f"card {e['price']} ({e['as_of']})"))
    for e in PRICES["servers"]:
        out.setdefault(e["gpu"], []).append((_cny(prices, e, "price") / int(e["gpus"]), f"server {e['id']}"))
    return out


def test_rent_repays_the_card_in_more_than_3_months_and_less_than_10_years():
    prices = load_prices("CNY")
    purchase = _purchase_per_gpu(prices)
    checked = 0
    for i, rent in enumerate(PRICES["rental"]):
        if rent["price_per_gpu_hour"] is None:  # price on request: nothing to check
            continue
        hourly = _cny(prices, rent, "price_per_gpu_hour")
        for price, what in purchase.get(rent.get("gpu"), []):
            hours = price / hourly
            where = f"rental[{i}] {rent['provider']} {rent['gpu']} at {rent['price_per_gpu_hour']}/h vs {what}"
            assert hours >= MIN_PAYBACK_HOURS, f"{where}: repays the card in {hours / 730:.1f} months"
            assert hours <= MAX_PAYBACK_HOURS, f"{where}: repays the card only after {hours / 8760:.1f} years"
            checked += 1
    assert checked >= 10


# --- fabrics and system form ----------------------------------------------------------------------------------

def test_default_inter_node_links_exist_and_are_scale_out():
    cat = default_catalog()
    for gpu in cat.accelerators.values():
        if gpu.default_inter_node:
            assert cat.link(gpu.default_inter_node).scope == "scale-out", gpu.id


def test_ascend_uses_hccs_inside_the_node_and_roce_between_nodes():
    cat = default_catalog()
    ascend = [g for g in cat.accelerators.values() if g.vendor == "huawei"]
    assert {"ascend-910b-64gb", "ascend-910b2-64gb", "ascend-910c-64gb"} <= {g.id for g in ascend}
    for gpu in ascend:
        assert gpu.default_intra_node == "hccs", gpu.id
        assert gpu.default_inter_node and gpu.default_inter_node.startswith("roce-"), gpu.id


def test_gb200_is_a_liquid_cooled_rack_scale_nvl72_system():
    gb200 = default_catalog().accelerator("gb200-186gb")
    assert gb200.server_form == "rack-scale-nvl72" and gb200.cooling == "liquid"
    assert gb200.gpus_per_node == 72 and gb200.scale_up and gb200.scale_up.max_gpus == 72


def test_node_sizes_agree_with_the_scale_up_domain():
    for gpu in default_catalog().accelerators.values():
        if gpu.server_form == "baseboard":
            assert gpu.gpus_per_node and gpu.scale_up and gpu.scale_up.max_gpus, gpu.id
            assert gpu.gpus_per_node <= gpu.scale_up.max_gpus, gpu.id


# --- rental contract terms -------------------------------------------------------------------------------------

MIN_HOURS_BY_TERM = {"monthly": 28 * 24, "yearly": 8760, "multi-year": 2 * 8760}  # a commitment at least this long


def test_every_rental_offer_has_consistent_contract_terms():
    prices = load_prices("CNY")
    gpus = {e.get("gpu") for e in PRICES["rental"]}
    offers = [o for gpu in gpus for o in prices.rental_offers(gpu)]
    assert len(offers) == len([e for e in PRICES["rental"] if e["price_per_gpu_hour"] is not None])
    for o in offers:
        where = f"{o.provider} {o.gpu}"
        assert o.terms is not None, f"{where}: contract missing"
        if o.terms.term in ("on-demand", "preemptible"):
            assert o.terms.min_term_hours in (0, None), where
        elif o.terms.min_term_hours is not None:
            assert o.terms.min_term_hours >= MIN_HOURS_BY_TERM.get(o.terms.term, 0), where
        if o.terms.term == "preemptible":  # rentals() ranks an offer as weak by these words in its notes
            assert any(w in (o.notes or "").lower() for w in ("preempt", "spot")), where
        assert len(set(o.terms.includes)) == len(o.terms.includes), where


def test_an_offer_without_a_public_price_is_listed_never_priced():
    # price_per_gpu_hour: null = the offer and its machine are public, its price is not (ask for a quote)
    from trainsizer.workflows.catalogs import price_rows

    unpriced = [e for e in PRICES["rental"] if e["price_per_gpu_hour"] is None]
    assert unpriced and all((e.get("machine") or {}).get("instance") and e.get("notes") for e in unpriced)
    prices = load_prices("CNY")
    for e in unpriced:
        name = e["machine"]["instance"]
        assert not any(o.machine and o.machine.instance == name for o in prices.rental_offers(e["gpu"])), name
    listed = {r["item"]: r for r in price_rows("cn") if r["section"] == "rental"}
    for e in unpriced:
        row = listed[f"{e['gpu']} from {e['provider']}, {e['machine']['instance']}"]
        assert row["price"] is None and row["machine"]["instance"] == e["machine"]["instance"]
    # the Chinese public clouds' GPU instances are listed with their machines, each sourced and dated
    clouds = {r["item"].split(" from ")[1].split(",")[0] for r in listed.values()
              if (r["machine"] or {}).get("instance") and r["source"] and r["as_of"]}
    assert len(clouds) >= 4, clouds


def test_bad_contract_terms_name_the_field():
    from trainsizer.errors import InputError

    data = {"fx": PRICES["fx"], "rental": [{"provider": "X", "gpu": "h100-sxm5-80gb", "price_per_gpu_hour": 15,
                                            "currency": "CNY", "contract": {"term": "weekly"},
                                            "source": "https://example.com/x", "as_of": "2026-01-01"}]}
    with pytest.raises(InputError) as exc:
        check_price_file(data, "p.yaml")
    assert "rental[0].contract.term" in exc.value.field and "multi-year" in str(exc.value)
    data["rental"][0]["contract"] = {"term": "monthly", "includes": ["rack", "coffee"]}
    with pytest.raises(InputError) as exc:
        check_price_file(data, "p.yaml")
    assert "includes" in exc.value.field
    del data["rental"][0]["contract"]
    offers = Prices(check_price_file(data, "p.yaml"), "CNY").rental_offers("h100-sxm5-80gb")
    assert offers[0].terms is None  # rows without terms still load


def test_the_shipped_price_list_passes_the_checks_a_users_prices_file_gets():
    from trainsizer.cost.prices import _default_data, check_price_file
    from trainsizer.hardware.catalog import INTER_NODE_SCOPES, INTRA_NODE_SCOPES, _check_links_of, default_catalog

    check_price_file(dict(_default_data()), "prices.yaml")
    catalog = default_catalog()  # and every shipped GPU's links exist, each in its scope
    assert set(INTRA_NODE_SCOPES) | set(INTER_NODE_SCOPES) == {"scale-up", "pcie", "scale-out"}
    for gpu_id, gpu in catalog.accelerators.items():
        _check_links_of(gpu, catalog, gpu_id)
