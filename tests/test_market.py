"""Market logic: the default market, availability lookups, closed value sets and user overrides."""

from __future__ import annotations

import pytest
import yaml

from trainsizer.errors import InputError
from trainsizer.hardware.catalog import Accelerator, default_catalog, load_catalog
from trainsizer.hardware.market import (
    REASON_CODES,
    Market,
    MarketAvailability,
    availability,
    available_ids,
    default_market,
    parse_market,
)
from trainsizer.messages import REGISTRY
from trainsizer.report.message_text import text
from trainsizer.system.sites import default_sites


@pytest.mark.parametrize("currency,site,lang,expected", [
    ("CNY", None, None, "cn"),
    ("cny", None, "en", "cn"),
    ("USD", None, None, "global"),
    (None, None, None, "global"),
    ("USD", "chengdu-legacy-colo", "en", "cn"),  # a shipped Chinese site wins over USD
    (None, "east-china-colo", None, "cn"),
    (None, "chengdu-somewhere-new", None, "cn"),  # unknown id, Chinese prefix
    (None, "chengdu", None, "cn"),
    (None, "sichuan-yaan", None, "cn"),
    (None, "CN", None, "cn"),
    (None, "us-west", None, "global"),
    (None, None, "zh-CN", "cn"),
    (None, None, "zh", "cn"),
    (None, None, "zh_CN.UTF-8", "cn"),
    (None, None, "zh-TW", "global"),
    (None, None, "en", "global"),
    ("USD", "frankfurt", "de", "global"),
])
def test_default_market_rules(currency, site, lang, expected):
    assert default_market(currency, site, lang) == expected


def test_default_market_takes_a_site_object_and_every_shipped_chinese_site_makes_it_cn():
    sites = default_sites()
    chinese = [s for s in sites.values() if s.country == "CN"]
    assert chinese and [s.country for s in sites.values() if s.country != "CN"] == ["US"]  # the US wholesale hall
    for site in chinese:
        assert default_market("USD", site, "en") is Market.CN
    assert default_market("USD", sites["us-wholesale-colo"], "en") is Market.GLOBAL
    foreign = next(iter(sites.values())).model_copy(update={"id": "x", "region": "eu-west", "country": "DE"})
    assert default_market("USD", foreign, "en") is Market.GLOBAL


def test_default_market_refuses_an_unknown_currency():
    with pytest.raises(InputError) as exc:
        default_market("EUR")
    assert exc.value.field == "currency" and "CNY" in str(exc.value) and "USD" in str(exc.value)


def test_availability_lookups():
    cat = default_catalog()
    h200 = availability(cat.accelerator("h200-sxm-141gb"), "cn", "buy")
    assert isinstance(h200, MarketAvailability)
    assert (h200.status, h200.available) == ("restricted", False)
    assert h200.reason.code == "availability.export_licence" and h200.detail and h200.source and h200.as_of
    assert availability(cat.accelerator("h200-sxm-141gb"), "global", "buy").available
    l20 = cat.accelerator("l20-48gb")
    assert availability(l20, Market.CN).available and availability(l20, "cn", "rent").available
    assert availability(l20, "global", "buy").status == "no"
    assert availability(cat.accelerator("ascend-910b2-64gb"), "CN", "rent").available  # case-insensitive
    assert availability(cat.accelerator("b200-sxm-180gb"), "cn", "buy").to_dict()["status"] == "no"


def test_a_part_without_data_is_unknown_not_available():
    mine = Accelerator(id="my-npu", name="My NPU", memory_gib=32, source="vendor", as_of="2026-12-01")
    got = availability(mine, "cn", "rent")
    assert (got.status, got.available) == ("unknown", False) and got.reason.code == "availability.no_data"
    assert "--catalog" in text(got.reason, "en") and got.detail is None


def test_every_kind_of_reason_is_a_message_and_every_shipped_entry_states_one():
    """What a reader is told is the kind of reason (a message in either language); the entry's own sentence is
    quoted data (``detail``)."""
    assert all(f"availability.{code}" in REGISTRY for code in (*REASON_CODES, "stated", "no_data"))
    cat = default_catalog()
    for gpu_id, acc in cat.accelerators.items():
        for market in ("cn", "global"):
            for acquisition in ("buy", "rent"):
                got = availability(acc, market, acquisition)
                assert got.reason.code != "availability.stated", (gpu_id, market, acquisition)
                assert got.detail and got.to_dict()["reason"] is got.reason
    licence = availability(cat.accelerator("h20-96gb"), "cn", "buy")
    assert "licence" in text(licence.reason, "en") and "许可" in text(licence.reason, "zh-CN")
    assert "2025-04" in licence.detail  # the data's own sentence, kept as it is


@pytest.mark.parametrize("market,acquisition,field", [("eu", "buy", "market"), ("", "buy", "market"),
                                                      (None, "buy", "market"), ("cn", "lease", "acquisition")])
def test_unknown_market_or_acquisition_is_an_input_error(market, acquisition, field):
    with pytest.raises(InputError) as exc:
        availability(default_catalog().accelerator("h100-sxm5-80gb"), market, acquisition)
    assert exc.value.field == field
    accepted = "cn, global" if field == "market" else "buy, rent"
    assert accepted in str(exc.value)


def test_parse_market_names_the_callers_field():
    assert parse_market(" Global ") is Market.GLOBAL
    with pytest.raises(InputError) as exc:
        parse_market("china", field="--market")
    assert exc.value.field == "--market" and "cn, global" in str(exc.value)


def test_available_ids_filters_by_status():
    cat = default_catalog()
    buyable = available_ids(cat, "cn", "buy")
    assert "l20-48gb" in buyable and "ascend-910b-64gb" in buyable and "h200-sxm-141gb" not in buyable
    assert "h200-sxm-141gb" in available_ids(cat, "cn", "buy", statuses=("yes", "restricted"))
    assert "b200-sxm-180gb" not in available_ids(cat, "cn", "buy", statuses=("yes", "restricted"))
    with pytest.raises(InputError):
        available_ids(cat, "cn", "buy", statuses=("maybe",))


# --- user overrides through --catalog ---------------------------------------------------------------------------

def _write(tmp_path, data, name="mine.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, allow_unicode=True))
    return path


def test_a_user_file_can_override_only_availability(tmp_path):
    buy = {"status": "yes", "reason": "our integrator holds a licence", "source": "quote Q-17", "as_of": "2026-11-20"}
    path = _write(tmp_path, {"accelerators": [{"id": "h200-sxm-141gb", "availability": {"cn": {"buy": buy}}}]})
    cat = load_catalog([path])
    got = availability(cat.accelerator("h200-sxm-141gb"), "cn", "buy")
    assert (got.status, got.available, got.source) == ("yes", True, "quote Q-17")
    # no reason_code in the user's entry: the reader is told the file says so, the sentence kept as its detail
    assert got.reason.code == "availability.stated" and got.detail == "our integrator holds a licence"
    shipped = default_catalog().accelerator("h200-sxm-141gb")
    patched = cat.accelerator("h200-sxm-141gb")
    # everything else kept: other fields, the cn rent entry, the global market
    assert patched.memory_gib == shipped.memory_gib and patched.dense_tflops == shipped.dense_tflops
    assert patched.availability[Market.CN].rent == shipped.availability[Market.CN].rent
    assert patched.availability[Market.GLOBAL] == shipped.availability[Market.GLOBAL]
    assert availability(shipped, "cn", "buy").status == "restricted"  # shipped catalog untouched


def test_bare_yaml_yes_and_no_are_read_as_statuses(tmp_path):
    path = tmp_path / "bare.yaml"
    path.write_text("accelerators:\n  - id: rtx-4090-24gb\n    availability:\n      global:\n"
                    "        buy: {status: yes, reason: r, source: s, as_of: 2026-11-01}\n"
                    "        rent: {status: no, reason: r, source: s, as_of: 2026-11-01}\n")
    acc = load_catalog([path]).accelerator("rtx-4090-24gb")
    assert availability(acc, "global", "buy").status == "yes" and availability(acc, "global", "rent").status == "no"


def test_a_new_user_gpu_with_availability(tmp_path):
    rent = {"status": "restricted", "reason": "r", "source": "s", "as_of": "2026-12-01"}
    path = _write(tmp_path, {"accelerators": [{"id": "my-npu", "name": "My NPU", "memory_gib": 32, "source": "v",
                                               "as_of": "2026-12-01", "default_inter_node": "roce-200",
                                               "availability": {"cn": {"rent": rent}}}]})
    acc = load_catalog([path]).accelerator("my-npu")
    assert availability(acc, "cn", "rent").status == "restricted"
    assert availability(acc, "cn", "buy").status == "unknown"
    assert availability(acc, "global", "buy").status == "unknown"


@pytest.mark.parametrize("availability_data,field_part,accepted", [
    ({"eu": {"buy": {"status": "yes", "reason": "r", "source": "s", "as_of": "2026-01-01"}}}, "availability.eu",
     "accepted: cn, global"),
    ({"cn": {"buy": {"status": "maybe", "reason": "r", "source": "s", "as_of": "2026-01-01"}}}, "status", "restricted"),
    ({"cn": {"lease": {"status": "yes", "reason": "r", "source": "s", "as_of": "2026-01-01"}}}, "lease", ""),
    ({"cn": {"buy": {"status": "yes", "reason": "r", "source": "s", "as_of": "last year"}}}, "as_of", "YYYY-MM-DD"),
    ({"cn": {"buy": {"status": "yes", "reason": "", "source": "s", "as_of": "2026-01-01"}}}, "reason", ""),
    ({"cn": {"buy": {"status": "yes", "reason_code": "cheap", "reason": "r", "source": "s", "as_of": "2026-01-01"}}},
     "reason_code", "export_licence"),
])
def test_bad_availability_in_a_user_file_names_the_field(tmp_path, availability_data, field_part, accepted):
    path = _write(tmp_path, {"accelerators": [{"id": "h100-sxm5-80gb", "availability": availability_data}]})
    with pytest.raises(InputError) as exc:
        load_catalog([path])
    assert field_part in exc.value.field and accepted in str(exc.value)


def test_a_patch_for_an_unknown_id_still_needs_a_full_entry(tmp_path):
    path = _write(tmp_path, {"accelerators": [{"id": "not-shipped", "availability": {}}]})
    with pytest.raises(InputError) as exc:
        load_catalog([path])
    assert "name" in exc.value.field
