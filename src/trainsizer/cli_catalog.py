"""``trainsizer catalog gpus | links | sites | models | prices | vouchers``: the catalogs, as tables in the
reader's language (``--lang``) or as JSON. Loaded on first use (cli_groups.LAZY_SUBAPPS)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from trainsizer.cli_options import CatalogOpt, JsonOpt, LangOpt, PricesOpt
from trainsizer.i18n import resolve_lang


def _show(json_rows: Callable[[], Any], printer: str, data: Any, as_json: bool, lang: str | None) -> None:
    """A catalog as JSON (``json_rows()``) or as the table ``report.catalog_text.<printer>`` prints in the reader's
    language."""
    if as_json:
        from trainsizer.jsonout import dumps_strict

        typer.echo(dumps_strict(json_rows()))
        return
    from trainsizer.report import catalog_text

    getattr(catalog_text, printer)(data, resolve_lang(lang))


catalog_app = typer.Typer(add_completion=False, no_args_is_help=True, help="List the catalogs.")


@catalog_app.command("gpus")
def catalog_gpus(catalog: CatalogOpt = None, as_json: JsonOpt = False, lang: LangOpt = None) -> None:
    """Accelerators: memory, bandwidth, dense peaks, links, TDP."""
    from trainsizer.workflows.catalogs import accelerators_and_links

    cat = accelerators_and_links(tuple(catalog or ()))
    _show(lambda: [a.model_dump() for a in cat.accelerators.values()], "print_gpus", cat, as_json, lang)


@catalog_app.command("links")
def catalog_links(catalog: CatalogOpt = None, as_json: JsonOpt = False, lang: LangOpt = None) -> None:
    """Links: scale-up, PCIe and network, with bandwidth and latency."""
    from trainsizer.workflows.catalogs import accelerators_and_links

    cat = accelerators_and_links(tuple(catalog or ()))
    _show(lambda: [link.model_dump() for link in cat.links.values()], "print_links", cat, as_json, lang)


@catalog_app.command("sites")
def catalog_sites(sites: Annotated[list[Path] | None, typer.Option("--sites")] = None,
                  as_json: JsonOpt = False, lang: LangOpt = None) -> None:
    """Sites: rack power, cooling, PUE, electricity price, rack rent."""
    from trainsizer.workflows.catalogs import sites as load_sites

    all_sites = load_sites(tuple(sites or ()))
    _show(lambda: [s.model_dump() for s in all_sites.values()], "print_sites", all_sites, as_json, lang)


@catalog_app.command("models")
def catalog_models(as_json: JsonOpt = False, lang: LangOpt = None) -> None:
    """Model presets with their exact parameter counts."""
    from trainsizer.workflows.catalogs import model_rows

    rows = model_rows()
    _show(lambda: rows, "print_models", rows, as_json, lang)


@catalog_app.command("prices")
def catalog_prices(market: Annotated[str | None, typer.Option(help="cn or global: that market's rows.")] = None,
                   stale: Annotated[bool, typer.Option("--stale", help="Only figures over 18 months old.")] = False,
                   prices: PricesOpt = None, as_json: JsonOpt = False, lang: LangOpt = None) -> None:
    """Prices a plan relies on (offers, servers, cards, vouchers, components), with source and date."""
    from trainsizer.workflows.catalogs import price_rows

    rows = price_rows(market, stale, tuple(prices or ()))
    _show(lambda: rows, "print_prices", rows, as_json, lang)


@catalog_app.command("vouchers")
def catalog_vouchers(prices: PricesOpt = None, as_json: JsonOpt = False, lang: LangOpt = None) -> None:
    """Compute vouchers --voucher can claim: the share of the spend (a ceiling or a fixed share), the cap, what
    spend and which providers it covers, with source and date."""
    from trainsizer.workflows.catalogs import voucher_rows

    rows = voucher_rows(tuple(prices or ()))
    _show(lambda: rows, "print_vouchers", rows, as_json, lang)
