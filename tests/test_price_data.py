"""The shipped price, availability, tariff and voucher rows: every one traceable to a public address with the
figure's own date, and the data consistent with itself (rentable <=> a rental row; reasons that quote a price
have that row; no internal charge among offers; index rows labelled; per-card conversions as the source
states the unit)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from trainsizer.cost.per_run import OFFER_MARKET
from trainsizer.cost.prices import Quoted, load_prices
from trainsizer.datafiles import packaged_yaml
from trainsizer.hardware.catalog import default_catalog
from trainsizer.hardware.market import MARKETS, availability
from trainsizer.provenance import has_public_address, is_stale, unnamed_parts

PRICES = packaged_yaml("trainsizer.cost", "prices.yaml")
SITES = packaged_yaml("trainsizer.system", "sites.yaml")
CATALOG = default_catalog()


def _rows() -> list[tuple[str, dict[str, Any]]]:
    """Every sourced row a user's numbers rest on: prices, offers, components, opex, vouchers, availability,
    site tariffs."""
    out: list[tuple[str, dict[str, Any]]] = []
    for section in ("fx", "servers", "gpu_cards", "rental", "subsidies"):
        out += [(f"prices.{section}[{i}]", r) for i, r in enumerate(PRICES.get(section) or [])]
    for section in ("components", "opex"):
        out += [(f"prices.{section}.{k}", r) for k, r in PRICES[section].items()]
    for gid, acc in CATALOG.accelerators.items():
        for market in MARKETS:
            for acq in ("buy", "rent"):
                a = availability(acc, market, acq)
                entry = getattr((acc.availability or {}).get(market), acq, None)
                out.append((f"{gid}.availability.{market}.{acq}",
                            {"source": a.source, "as_of": a.as_of, "kind": getattr(entry, "kind", None),
                             "derived_from": getattr(entry, "derived_from", None)}))
    for i, band in enumerate(SITES.get("sichuan_tou_2025") or []):
        out.append((f"sites.sichuan_tou_2025[{i}]", band))
    for site in SITES["sites"]:
        bands = site.get("electricity_tou") or []
        out += [(f"sites.{site['id']}.electricity_tou[{i}]", b) for i, b in enumerate(bands)]
    return out


def test_rules_of_thumb_name_no_internal_path():
    # the guide's rules are claims shown as such (not prices); their guide has no public address, but no row
    # may point at a private path or note
    for key, row in PRICES["rules_of_thumb"].items():
        assert row.get("as_of") and not unnamed_parts(row["source"]), key


def test_site_sources_name_no_internal_path_or_unnamed_note():
    for site in SITES["sites"]:
        assert site.get("as_of"), site["id"]
        assert not unnamed_parts(site["source"]), f"site {site['id']}: {unnamed_parts(site['source'])}"


def _problem(row: dict[str, Any]) -> str | None:
    """Why a row cannot be traced (None: it can): a public address and the figure's date, or an estimate that
    says what it is derived from; never an internal path or an unnamed note."""
    source = str(row.get("source") or "")
    if not row.get("as_of"):
        return "no figure date (as_of)"
    if unnamed_parts(source):
        return f"cites an internal path or unnamed note: {unnamed_parts(source)}"
    if has_public_address(source):
        return None
    if row.get("kind") == "estimate" and row.get("derived_from"):
        return None
    return "no public source address (URL, or repository + path + commit), and not an estimate with derived_from"


def test_the_provenance_rule_rejects_what_it_should():
    assert _problem({"source": "https://news.smm.cn/news/104113796", "as_of": "2026-09-14"}) is None
    assert _problem({"source": "repository grenbel/autodl-autogpu, reference/ledger.md at commit 74ebea5",
                     "as_of": "2026-10-02"}) is None
    assert _problem({"source": "https://news.smm.cn/news/1", "as_of": None}) == "no figure date (as_of)"
    for bad in ("research note 'libtv 技术调研 03'", "notes file in a public repository", "ledger.md",
                "quote-tool preset createH200Blueprint", "https://x.cn/a (shared/reference/china-prices.md)",
                "Estimate from nic_400g of this file", "[S55] grenbel/autodl-autogpu README.md"):
        assert _problem({"source": bad, "as_of": "2026-01-01"}) is not None, bad
    assert _problem({"source": "ESTIMATE", "as_of": "2026-01-01", "kind": "estimate"}) is not None
    assert _problem({"source": "ESTIMATE", "as_of": "2026-01-01", "kind": "estimate", "derived_from": "a x 2"}) is None


def test_every_shipped_row_has_a_public_address_and_a_figure_date():
    bad = [f"{where}: {why}" for where, row in _rows() if (why := _problem(row))]
    assert not bad, "\n".join(bad)
    # contract terms and relays are sources too: never an internal path
    for i, row in enumerate(PRICES["rental"]):
        for text in ((row.get("contract") or {}).get("source"), row.get("relay")):
            assert not unnamed_parts(str(text or "")), f"prices.rental[{i}]: {text}"


def test_a_figure_older_than_18_months_is_stale_from_its_own_date():
    import datetime

    today = datetime.date(2026, 12, 3)
    assert is_stale({"as_of": "2024-08-22"}, today) and is_stale({"as_of": "2025-03-07"}, today)
    assert not is_stale({"as_of": "2026-09-24"}, today) and is_stale({"as_of": "2026-09-24", "stale": True}, today)
    offers = load_prices().rental_offers("h800-sxm5-80gb")
    old = [o for o in offers if o.as_of < "2025-06-01"]
    assert old and all(o.stale for o in old)


def _rental_markets(gpu: str) -> set[str]:
    return {OFFER_MARKET.get(r.get("currency", "CNY"), "global") for r in PRICES["rental"]
            if r.get("gpu") == gpu and r.get("kind") != "internal"}


@pytest.mark.parametrize("market", MARKETS)
def test_rentable_in_a_market_means_a_rental_row_there_and_the_reverse(market):
    for gid, acc in CATALOG.accelerators.items():
        status = availability(acc, market, "rent").status
        has_row = market in _rental_markets(gid)
        if status == "yes":
            assert has_row, f"{gid} is rentable in {market} but has no rental row there"
        if has_row:
            assert status in ("yes", "restricted"), f"{gid} has a rental row in {market} but rent status {status}"


def test_an_availability_reason_that_quotes_a_price_has_that_row():
    money = re.compile(r"(\d[\d,]*(?:\.\d+)?) (?:CNY|USD)")
    rate = re.compile(r"(\d+\.\d+)(?:,| CNY| USD)")
    checked = 0
    for gid, acc in CATALOG.accelerators.items():
        for market in MARKETS:
            a = availability(acc, market, "rent")
            quoted = {float(x) for x in rate.findall(a.detail)}
            if not quoted and not money.search(a.detail):
                continue
            rows = [r for r in PRICES["rental"] if r.get("gpu") == gid]
            per_hour = {round(float(r["price_per_gpu_hour"]), 2) for r in rows if r["price_per_gpu_hour"] is not None}
            originals = {float((r.get("quoted") or {}).get("price", -1)) for r in rows}
            for value in quoted:
                assert round(value, 2) in per_hour, f"{gid} {market}: reason quotes {value}/h, no such rental row"
            for m in money.findall(a.detail):
                value = float(m.replace(",", ""))
                if value >= 100:  # a server-month or card-year figure: the row's quoted original
                    assert value in originals, f"{gid} {market}: reason quotes {m}, no row quotes it"
            checked += 1
    assert checked >= 10


def test_no_internal_charge_among_offers_and_index_rows_are_labelled():
    for i, row in enumerate(PRICES["rental"]):
        text = f"{row['provider']} {row.get('notes', '')}".lower()
        assert "internal" not in text or row.get("kind") == "internal", f"rental[{i}] looks internal, unlabelled"
        assert ("index" not in row["provider"].lower()) or row.get("kind") == "index", \
            f"rental[{i}] {row['provider']}: an index row must say kind: index"
        assert row.get("kind") in ("list", "quote", "index", "internal"), f"rental[{i}]: kind {row.get('kind')!r}"
    prices = load_prices()
    for gpu in {r["gpu"] for r in PRICES["rental"]}:
        assert all(o.kind != "internal" for o in prices.rental_offers(gpu))


def test_per_card_conversions_follow_the_source_unit():
    checked = 0
    for i, row in enumerate(PRICES["rental"]):
        q = row.get("quoted")
        if q is None:
            assert row.get("billing") in ("per-hour", None) or "per card-hour" in str(row.get("notes", "")), \
                f"rental[{i}] {row['provider']}: a {row.get('billing')} price needs `quoted` (its original unit)"
            continue
        expected = Quoted(**q).per_gpu_hour()
        assert row["price_per_gpu_hour"] == pytest.approx(expected, rel=0.01), \
            f"rental[{i}] {row['provider']}: {row['price_per_gpu_hour']} vs {expected:.3f} from {q}"
        checked += 1
    assert checked >= 6
    with pytest.raises(ValueError):
        Quoted(price=90000, unit="P-year").per_gpu_hour()  # a per-P price needs the source's P per card


def test_domestic_accelerators_have_public_rental_rows_in_cn():
    for gid in ("ascend-910b2-64gb", "mtt-s4000-48gb", "ascend-910b4-32gb"):
        offers = [o for o in load_prices().rental_offers(gid) if o.quoted_currency == "CNY"]
        assert offers and all(has_public_address(o.source) for o in offers), gid
    lease = [o for o in load_prices().rental_offers("ascend-910b4-32gb") if o.terms and o.terms.term == "monthly"]
    assert lease, "Ascend 910B4 8-card servers by the month"


def test_a_voucher_without_a_provider_list_says_so():
    for i, row in enumerate(PRICES["subsidies"]):
        assert row.get("eligibility") in ("listed", "unknown"), f"subsidies[{i}]"
        assert (row["eligibility"] == "listed") == bool(row.get("centres")), f"subsidies[{i}] {row['id']}"


def test_catalog_prices_lists_the_rows_with_source_and_date_and_filters_market_and_stale():
    import json

    from typer.testing import CliRunner

    from trainsizer.cli import app

    run = CliRunner().invoke(app, ["catalog", "prices", "--market", "cn", "--json"])
    assert run.exit_code == 0, run.output
    rows = json.loads(run.output)
    assert rows and all(r["source"] and r["as_of"] for r in rows)
    assert {r["market"] for r in rows} <= {"cn", None, "global"}
    assert not [r for r in rows if r["section"] == "rental" and r["market"] == "global"]
    assert any(r["item"].startswith("ascend-910b2-64gb from AutoDL") for r in rows)
    stale = json.loads(CliRunner().invoke(app, ["catalog", "prices", "--stale", "--json"]).output)
    assert stale and all(r["stale"] for r in stale) and len(stale) < len(rows)
    bad = CliRunner().invoke(app, ["catalog", "prices", "--market", "mars"])  # main() turns it into exit 2
    assert bad.exit_code != 0 and "--market" in str(bad.exception)


def test_reports_name_the_item_each_source_backs_and_cite_no_internal_path():
    from pathlib import Path

    from trainsizer.report.message_text import text
    from trainsizer.workflows.jobs import load_job
    from trainsizer.workflows.plan_job import PlanRequest
    from trainsizer.workflows.report_model import build_report

    path = Path(__file__).resolve().parents[1] / "examples" / "jobs" / "qwen2.5-7b-lora.yaml"
    for gpus in ((), ("ascend-910b2-64gb",), ("mtt-s4000-48gb",)):
        req = PlanRequest(currency="CNY", lang="en", top=5, gpus=gpus)
        job = load_job(path, list(gpus) or None)
        if gpus == ("mtt-s4000-48gb",):  # the example's LLaMA-Factory does not train on Moore Threads: none named
            job = job.model_copy(update={"training": job.training.model_copy(update={"framework": None})})
        report = build_report(job, req, path.name)
        rows = report["assumptions"]
        assert rows and all(a["what"].code != "assume.price" for a in rows)  # each names the item it backs
        assert not [a for a in rows if unnamed_parts(a["source"])]
        assert not [u for u in report["plan"]["prices_used"] if unnamed_parts(u["source"])]
        if gpus:  # a domestic accelerator gets a per-run cost in market cn, from a public offer
            assert report["recommended"]["per_run"]["cost"] > 0
            assert any(a["what"].code == "price.rental_offer" and a["what"].args["gpu"] == gpus[0]
                       and a["what"].args["provider"] == "AutoDL" for a in rows)
        for a in rows:
            if a["what"].code.startswith("price."):  # shown in the reader's language
                assert text(a["what"], "zh-CN") != text(a["what"], "en"), a["what"]


def test_a_stale_offer_is_flagged_in_the_answer_card_in_both_languages():
    from trainsizer.report.answer import card

    offer = {"provider": "中贝通信 (H800 cluster lease)", "term": "yearly", "billing": None,
             "price_per_gpu_hour": 2.05, "as_of": "2025-03-07", "stale": True}
    rec = {"option": 0, "acquisition": "rent", "offer": offer, "gpu": "h800-sxm5-80gb", "gpus": 16, "servers": 2,
           "per_run": 287328, "commitment": 287328, "currency": "CNY", "time_to_train_days": 1.3,
           "objective": "cheapest", "binding": {"code": "cost"}, "runner_ups": []}
    out = {"recommendation": rec, "options": [], "site": "chengdu-legacy-colo"}
    en = dict(card(out, "en")["facts"])
    zh = dict(card(out, "zh-CN")["facts"])
    assert "price from 2025: check before you sign" in en["From"]
    assert "2025 年的价格" in zh["来源"]
    fresh = dict(card({**out, "recommendation": {**rec, "offer": {**offer, "stale": False}}}, "en")["facts"])
    assert "check before you sign" not in fresh["From"]
