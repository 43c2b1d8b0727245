"""What the catalogs hold, as rows for ``trainsizer catalog`` and the web's catalog endpoints and forms."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from trainsizer.hardware.catalog import load_catalog
from trainsizer.models.catalog import model_ids, preset_architecture, preset_entry
from trainsizer.models.param_counts import count_params
from trainsizer.system.sites import default_site_id, load_sites

KINDS = ("models", "gpus", "links", "sites")
_MARKET_OF = {"CNY": "cn", "USD": "global"}  # a row quoted in CNY is a Chinese seller's (cost/per_run.py)


@cache
def _model_rows() -> tuple[dict[str, Any], ...]:
    rows = []
    for mid in model_ids():
        counts = count_params(preset_architecture(mid))
        entry = preset_entry(mid)
        rows.append({"id": mid, "name": entry.get("name", mid), "params": counts.total,
                     "active_params": counts.active, "published_params": entry.get("published_params"),
                     "source": entry.get("source")})
    return tuple(rows)


def model_rows() -> list[dict[str, Any]]:
    """Model presets with their exact parameter counts."""
    return [dict(r) for r in _model_rows()]


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
    from trainsizer.cost.prices import load_prices

    data = load_prices("CNY").data
    return {section: {str(e["id"]): str(e["name"]) for e in data.get(section, []) if e.get("id") and e.get("name")}
            for section in ("servers", "subsidies")}


def link_rows(catalogs: list[Path] | tuple[Path, ...] = ()) -> list[dict[str, Any]]:
    return [link.model_dump() for link in load_catalog(list(catalogs)).links.values()]


def site_rows(sites: list[Path] | tuple[Path, ...] = ()) -> list[dict[str, Any]]:
    return [s.model_dump() for s in load_sites(list(sites)).values()]


def default_site(sites: list[Path] | tuple[Path, ...] = ()) -> str:
    return default_site_id(load_sites(list(sites)))


def voucher_rows(paths: list[Path] | tuple[Path, ...] = ()) -> list[dict[str, Any]]:
    """The compute vouchers (``subsidies:`` of the price data) a plan can claim with ``--voucher``: fraction
    (``upper_bound``: the policy's ceiling), cap, what spend and which providers it covers (``eligibility``
    ``unknown``: none named, never applied unless claimed), source and date."""
    from trainsizer.cost.prices import load_prices
    from trainsizer.cost.subsidy import load_subsidies

    return [v.model_dump() for v in load_subsidies(load_prices("CNY", list(paths) or None))]


def rows(kind: str) -> list[dict[str, Any]]:
    return {"models": model_rows, "gpus": gpu_rows, "links": link_rows, "sites": site_rows,
            "vouchers": voucher_rows}[kind]()


def accelerators_and_links(catalogs: list[Path] | tuple[Path, ...] = ()) -> Any:
    """The GPU and link catalog (shipped, with the user's files over it)."""
    return load_catalog(list(catalogs))


def sites(paths: list[Path] | tuple[Path, ...] = ()) -> dict[str, Any]:
    return load_sites(list(paths))


def _price_row(section: str, item: str, e: dict[str, Any], value: Any, unit: str) -> dict[str, Any]:
    from trainsizer.provenance import is_stale

    cur = e.get("currency")
    market = "cn" if section == "subsidies" and e.get("region") else _MARKET_OF.get(cur or "")
    return {"section": section, "item": item, "price": value, "currency": cur, "unit": unit,
            "kind": e.get("kind"), "confidence": e.get("confidence"), "market": market,
            "source": e.get("source"), "relay": e.get("relay"), "derived_from": e.get("derived_from"),
            "as_of": e.get("as_of"), "read_on": e.get("read_on"), "stale": is_stale(e),
            "machine": e.get("machine") if section == "rental" else None}  # what a rented instance has


def _instance(e: dict[str, Any]) -> str:
    """", <instance type>" of a rental row whose machine names it, else ""."""
    name = (e.get("machine") or {}).get("instance")
    return f", {name}" if name else ""


def price_rows(market: str | None = None, stale_only: bool = False,
               paths: list[Path] | tuple[Path, ...] = ()) -> list[dict[str, Any]]:
    """The price rows a plan relies on (rental offers, servers, cards, vouchers, exchange rate, components,
    running costs), each with its source and the figure's date, for ``trainsizer catalog prices``: those of
    ``market`` (and the market-neutral ones) and, with ``stale_only``, only figures over 18 months old."""
    from trainsizer.cost.prices import load_prices
    from trainsizer.hardware.market import parse_market

    market = None if market is None else parse_market(market, "--market").value
    data = load_prices("CNY", list(paths)).data
    rows = [_price_row("fx", e["pair"], e, e["rate"], "rate") for e in data.get("fx", [])]
    rows += [_price_row("rental", f"{e['gpu']} from {e['provider']}" + _instance(e), e, e["price_per_gpu_hour"],
                        "GPU-hour") for e in data.get("rental", [])]
    rows += [_price_row("servers", f"{e['gpus']} x {e['gpu']}", e, e["price"], "server")
             for e in data.get("servers", [])]
    rows += [_price_row("gpu_cards", e["gpu"], e, e["price"], "card") for e in data.get("gpu_cards", [])]
    rows += [_price_row("subsidies", e["id"], e, e.get("fraction"), "fraction") for e in data.get("subsidies", [])]
    rows += [_price_row("components", k, e, e["price"], e.get("unit") or "")
             for k, e in data.get("components", {}).items()]
    rows += [_price_row("opex", k, e, e["value"], "") for k, e in data.get("opex", {}).items()]
    if market is not None:
        rows = [r for r in rows if r["market"] in (market, None) or r["section"] in ("components", "opex")]
    return [r for r in rows if r["stale"]] if stale_only else rows
