"""`trainsizer catalog vouchers`: every voucher --voucher can claim, with its share (a ceiling said as one), cap,
the spend and providers it covers, in both languages and as JSON; the default answer never claims one."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from trainsizer.cli import app
from trainsizer.cost.prices import load_prices


def _run(*args: str) -> str:
    result = CliRunner().invoke(app, ["catalog", "vouchers", *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_catalog_vouchers_lists_every_voucher_with_its_cap_and_caveat(monkeypatch):
    from rich.console import Console

    from trainsizer.report import text

    monkeypatch.setattr(text, "_console", lambda: Console(highlight=False, emoji=False, width=2000))  # no folding
    rows = json.loads(_run("--json"))
    shipped = load_prices().subsidies
    assert [r["id"] for r in rows] == [s.id for s in shipped] and rows
    chengdu = next(r for r in rows if r["id"] == "chengdu-compute-voucher-2025")
    assert chengdu["upper_bound"] and chengdu["eligibility"] == "unknown" and chengdu["cap_per_year"] == 5_000_000
    en = _run()
    assert "up to 60%: an upper bound" in en and "5.00 M CNY a year" in en
    assert "unknown: check that the provider is in the scheme" in en
    for s in shipped:
        assert s.id in en
    zh = _run("--lang", "zh-CN")
    assert "最高 60%：上限值" in zh and "每年 500 万元" in zh and "算力券" in zh


def test_the_ceiling_is_data_and_only_the_2025_voucher_is_one():
    assert {s.id for s in load_prices().subsidies if s.upper_bound} == {"chengdu-compute-voucher-2025"}
