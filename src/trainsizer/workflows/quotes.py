"""``trainsizer quotes`` and the web's quotes: rental offers compared per delivered PFLOP and per run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trainsizer.cost.prices import load_prices
from trainsizer.cost.quotes import DEFAULT_MFU, Quote, compare_quotes, load_quotes
from trainsizer.errors import InputError, in_file
from trainsizer.hardware.catalog import INTER_NODE_SCOPES, Catalog, default_catalog
from trainsizer.i18n import default_currency
from trainsizer.messages import msg
from trainsizer.models.catalog import resolve_model
from trainsizer.scenario import Scenario
from trainsizer.workflows.defaults import DEFAULT_MAX_OOM_RISK

__all__ = ["Quote", "compare_offers", "load_quotes"]


def compare_offers(offers: list[Quote], currency: str | None = None, job: Scenario | None = None,
                   catalog: Catalog | None = None, prices: list[Path] | tuple[Path, ...] = (),
                   lang: str | None = None, source: str | None = None) -> dict[str, Any]:
    """The offers compared; ``source`` is the quotes file they came from (an unknown id names it)."""
    cat = catalog or default_catalog()
    for i, q in enumerate(offers):
        try:
            cat.accelerator(q.gpu, f"quotes[{i}].gpu")
            if q.inter_node is not None:  # the network between the offer's servers: InfiniBand, RoCE or Ethernet
                cat.link(q.inter_node, f"quotes[{i}].inter_node", INTER_NODE_SCOPES)
        except InputError as exc:
            raise in_file(exc, source) from None
    money = load_prices(currency or default_currency(lang), list(prices),
                        gpu_ids=cat.accelerators)
    arch = resolve_model(job.model) if job is not None else None
    # each offer at the fastest layout a plan could answer with (its default chance of running out of memory)
    results = compare_quotes(offers, money, job, arch, cat, DEFAULT_MAX_OOM_RISK)
    return {"currency": money.currency, "quotes": [r.to_dict() for r in results],
            "mfu_basis": msg("quote.basis_job") if job else msg("quote.basis_assumed", mfu=DEFAULT_MFU)}
