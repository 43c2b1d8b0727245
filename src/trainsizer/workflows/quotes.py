"""``trainsizer quotes`` and the web's quotes: rental offers compared per delivered PFLOP and per run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trainsizer.cost.prices import load_prices
from trainsizer.cost.quotes import Quote, compare_quotes, load_quotes

__all__ = ["Quote", "compare_offers", "load_quotes"]
from trainsizer.hardware.catalog import Catalog, default_catalog
from trainsizer.i18n import resolve_lang
from trainsizer.models.catalog import resolve_model
from trainsizer.scenario import Scenario


def compare_offers(offers: list[Quote], currency: str | None = None, job: Scenario | None = None,
                   catalog: Catalog | None = None, prices: list[Path] | tuple[Path, ...] = (),
                   lang: str | None = None) -> dict[str, Any]:
    cat = catalog or default_catalog()
    for i, q in enumerate(offers):
        cat.accelerator(q.gpu, f"quotes[{i}].gpu")
    money = load_prices(currency or ("CNY" if resolve_lang(lang) == "zh-CN" else "USD"), list(prices))
    arch = resolve_model(job.model) if job is not None else None
    results = compare_quotes(offers, money, job, arch, cat)
    return {"currency": money.currency, "quotes": [r.to_dict() for r in results],
            "mfu_basis": "the job's best layout on each offer" if job else "an assumed MFU of 0.35 (no job given)"}
