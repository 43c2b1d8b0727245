"""What the catalogs hold, as rows for ``trainsizer catalog`` and the web's catalog endpoints and forms."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from trainsizer.hardware.catalog import Catalog, load_catalog
from trainsizer.models.catalog import model_ids, preset_architecture, preset_entry
from trainsizer.models.param_counts import count_params
from trainsizer.system.sites import default_site_id, load_sites

if TYPE_CHECKING:
    from trainsizer.cost.price_rows import OfferMachine, RentalRow, SourcedRow
    from trainsizer.cost.subsidy import Subsidy
    from trainsizer.system.sites import Site

KINDS = ("models", "gpus", "links", "sites")
_MARKET_OF = {"CNY": "cn", "USD": "global"}  # a row quoted in CNY is a Chinese seller's (cost/per_run.py)


class ModelRow(TypedDict):
    """A model preset in ``trainsizer catalog models``: its exact parameter counts and the published one."""

    id: str
    name: str
    params: int
    active_params: int
    published_params: float | None
    source: str | None


class PriceRow(TypedDict):
    """A price figure in ``trainsizer catalog prices``, with its source, date and (a rental's) machine."""

    section: str
    item: str
    price: float | None
    currency: str | None
    unit: str
    kind: str | None
    confidence: str | None
    market: str | None
    source: str
    relay: str | None
    derived_from: str | None
    as_of: str  # the figure's own date (ISO)
    read_on: str | None  # the day the source was read, where it differs
    stale: bool
    machine: dict[str, Any] | None


@cache
def _model_rows() -> tuple[ModelRow, ...]:
    rows: list[ModelRow] = []
    for mid in model_ids():
        counts = count_params(preset_architecture(mid))
        entry = preset_entry(mid)
        rows.append({"id": mid, "name": entry.get("name", mid), "params": counts.total,
                     "active_params": counts.active, "published_params": entry.get("published_params"),
                     "source": entry.get("source")})
    return tuple(rows)


def model_rows() -> list[ModelRow]:
    """Model presets with their exact parameter counts."""
    return [ModelRow(**r) for r in _model_rows()]


def gpu_rows(catalogs: list[Path] | tuple[Path, ...] = ()) -> list[dict[str, Any]]:
    return [a.model_dump() for a in load_catalog(list(catalogs)).accelerators.values()]


def gpu_names(catalogs: list[Path] | tuple[Path, ...] = ()) -> dict[str, str]:
    """Each GPU's id and name, as in :func:`gpu_rows`, without dumping every entry (the first dump builds the
    entries' serializer: ~20 ms of a plan that only names its GPUs)."""
    return {a.id: a.name for a in load_catalog(list(catalogs)).accelerators.values()}


def link_names(catalogs: list[Path] | tuple[Path, ...] = ()) -> dict[str, str]:
    """Each link's id and name (links.yaml ``name``)."""
    return {link.id: link.name for link in load_catalog(list(catalogs)).links.values()}


def price_names() -> dict[str, dict[str, str]]:
    """The names of the shipped price data's rows a plan names by id: ``servers`` and ``subsidies`` (vouchers),
    each id -> its ``name`` (a row without one is left out)."""
    from trainsizer.cost.prices import shipped_price_file

    shipped = shipped_price_file()
    return {"servers": {s.id: s.name for s in shipped.servers if s.id and s.name},
            "subsidies": {s.id: s.name for s in shipped.subsidies if s.id and s.name}}


def link_rows(catalogs: list[Path] | tuple[Path, ...] = ()) -> list[dict[str, Any]]:
    return [link.model_dump() for link in load_catalog(list(catalogs)).links.values()]


def site_rows(sites: list[Path] | tuple[Path, ...] = ()) -> list[dict[str, Any]]:
    return [s.model_dump() for s in load_sites(list(sites)).values()]


def default_site(sites: list[Path] | tuple[Path, ...] = (), market: str = "cn") -> str:
    """The site a plan in ``market`` is hosted at when none is named (system/sites.default_site_id)."""
    return default_site_id(load_sites(list(sites)), market)


def voucher_rows(paths: list[Path] | tuple[Path, ...] = ()) -> list[dict[str, Any]]:
    """The compute vouchers (``subsidies:`` of the price data) a plan can claim with ``--voucher``: fraction
    (``upper_bound``: the policy's ceiling), cap, what spend and which providers it covers (``eligibility``
    ``unknown``: none named, never applied unless claimed), source and date."""
    from trainsizer.cost.prices import load_prices

    return [v.model_dump() for v in load_prices("CNY", list(paths) or None).subsidies]


def rows(kind: str) -> list[dict[str, Any]]:
    return {"models": model_rows, "gpus": gpu_rows, "links": link_rows, "sites": site_rows,
            "vouchers": voucher_rows}[kind]()


def accelerators_and_links(catalogs: list[Path] | tuple[Path, ...] = ()) -> Catalog:
    """The GPU and link catalog (shipped, with the user's files over it)."""
    return load_catalog(list(catalogs))


def sites(paths: list[Path] | tuple[Path, ...] = ()) -> dict[str, Site]:
    return load_sites(list(paths))


def _price_row(section: str, item: str, row: SourcedRow | Subsidy, value: float | None, unit: str,
               currency: str | None, machine: OfferMachine | None = None) -> PriceRow:
    """One row of the listing; ``machine``: what a rented instance has."""
    from trainsizer.provenance import stale_figure

    market = "cn" if section == "subsidies" else _MARKET_OF.get(currency or "")  # a voucher is a region's
    return {"section": section, "item": item, "price": value, "currency": currency, "unit": unit,
            "kind": getattr(row, "kind", None), "confidence": row.confidence, "market": market,
            "source": row.source, "relay": row.relay, "derived_from": getattr(row, "derived_from", None),
            "as_of": row.as_of, "read_on": row.read_on, "stale": stale_figure(row.stale, row.as_of),
            "machine": machine.model_dump(exclude_unset=True) if machine else None}


def _rental_item(row: RentalRow) -> str:
    """"<gpu> from <provider>", and ", <instance type>" where the row's machine names it."""
    name = row.machine.instance if row.machine else None
    return f"{row.gpu} from {row.provider}" + (f", {name}" if name else "")


def price_rows(market: str | None = None, stale_only: bool = False,
               paths: list[Path] | tuple[Path, ...] = ()) -> list[PriceRow]:
    """The price rows a plan relies on (rental offers, servers, cards, vouchers, exchange rate, components,
    running costs), each with its source and the figure's date, for ``trainsizer catalog prices``: those of
    ``market`` (and the market-neutral ones) and, with ``stale_only``, only figures over 18 months old."""
    from trainsizer.cost.prices import load_prices
    from trainsizer.hardware.market import parse_market

    market = None if market is None else parse_market(market, "--market").value
    file = load_prices("CNY", list(paths)).file
    rows = [_price_row("fx", e.pair, e, e.rate, "rate", None) for e in file.fx]
    rows += [_price_row("rental", _rental_item(e), e, e.price_per_gpu_hour, "GPU-hour", e.currency, e.machine)
             for e in file.rental]
    rows += [_price_row("servers", f"{e.gpus} x {e.gpu}", e, e.price, "server", e.currency) for e in file.servers]
    rows += [_price_row("gpu_cards", e.gpu, e, e.price, "card", e.currency) for e in file.gpu_cards]
    rows += [_price_row("subsidies", e.id, e, e.fraction, "fraction", e.currency) for e in file.subsidies]
    rows += [_price_row("components", k, e, e.price, e.unit or "", e.currency) for k, e in file.components.items()]
    rows += [_price_row("opex", k, e, e.value, "", e.currency) for k, e in file.opex.items()]
    if market is not None:
        rows = [r for r in rows if r["market"] in (market, None) or r["section"] in ("components", "opex")]
    return [r for r in rows if r["stale"]] if stale_only else rows
