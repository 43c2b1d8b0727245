"""``trainsizer catalog gpus | links | sites | models | prices | vouchers``: the catalogs, as tables in the
reader's language (``--lang``) or as JSON. Loaded on first use (cli_groups.LAZY_SUBAPPS)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from trainsizer.cli_options import CatalogOpt, JsonOpt, LangOpt, PricesOpt
from trainsizer.i18n import resolve_lang

catalog_app = typer.Typer(add_completion=False, no_args_is_help=True, help="List the catalogs.")


@catalog_app.command("gpus")
def catalog_gpus(catalog: CatalogOpt = None, as_json: JsonOpt = False, lang: LangOpt = None) -> None:
    """Accelerators: memory, bandwidth, dense peaks, links, TDP."""
    from trainsizer.workflows.catalogs import accelerators_and_links

    cat = accelerators_and_links(tuple(catalog or ()))
    if as_json:
        from trainsizer.jsonout import dumps_strict

        typer.echo(dumps_strict([a.model_dump() for a in cat.accelerators.values()]))
        return
    from trainsizer.report.catalog_text import print_gpus

    print_gpus(cat, resolve_lang(lang))


@catalog_app.command("links")
def catalog_links(catalog: CatalogOpt = None, as_json: JsonOpt = False, lang: LangOpt = None) -> None:
    """Links: scale-up, PCIe and network, with bandwidth and latency."""
    from trainsizer.workflows.catalogs import accelerators_and_links

    cat = accelerators_and_links(tuple(catalog or ()))
    if as_json:
        from trainsizer.jsonout import dumps_strict

        typer.echo(dumps_strict([link.model_dump() for link in cat.links.values()]))
        return
    from trainsizer.report.catalog_text import print_links

    print_links(cat, resolve_lang(lang))


@catalog_app.command("sites")
def catalog_sites(sites: Annotated[list[Path] | None, typer.Option("--sites")] = None,
                  as_json: JsonOpt = False, lang: LangOpt = None) -> None:
    """Sites: rack power, cooling, PUE, electricity price, rack rent."""
    from trainsizer.workflows.catalogs import sites as load_sites

    all_sites = load_sites(tuple(sites or ()))
    if as_json:
        from trainsizer.jsonout import dumps_strict

        typer.echo(dumps_strict([s.model_dump() for s in all_sites.values()]))
        return
    from trainsizer.report.catalog_text import print_sites

    print_sites(all_sites, resolve_lang(lang))


@catalog_app.command("models")
def catalog_models(as_json: JsonOpt = False, lang: LangOpt = None) -> None:
    """Model presets with their exact parameter counts."""
    from trainsizer.workflows.catalogs import model_rows

    rows = model_rows()
    if as_json:
        from trainsizer.jsonout import dumps_strict

        typer.echo(dumps_strict(rows))
        return
    from trainsizer.report.catalog_text import print_models

    print_models(rows, resolve_lang(lang))


@catalog_app.command("prices")
def catalog_prices(market: Annotated[str | None, typer.Option(help="cn or global: that market's rows.")] = None,
                   stale: Annotated[bool, typer.Option("--stale", help="Only figures over 18 months old.")] = False,
                   prices: PricesOpt = None, as_json: JsonOpt = False, lang: LangOpt = None) -> None:
    """Prices a plan relies on (offers, servers, cards, vouchers, components), with source and date."""
    from trainsizer.workflows.catalogs import price_rows

    rows = price_rows(market, stale, tuple(prices or ()))
    if as_json:
        from trainsizer.jsonout import dumps_strict

        typer.echo(dumps_strict(rows))
        return
    from trainsizer.report.catalog_text import print_prices

    print_prices(rows, resolve_lang(lang))


@catalog_app.command("vouchers")
def catalog_vouchers(prices: PricesOpt = None, as_json: JsonOpt = False, lang: LangOpt = None) -> None:
    """Compute vouchers --voucher can claim: the share of the spend (a ceiling or a fixed share), the cap, what
    spend and which providers it covers, with source and date."""
    from trainsizer.workflows.catalogs import voucher_rows

    rows = voucher_rows(tuple(prices or ()))
    if as_json:
        from trainsizer.jsonout import dumps_strict

        typer.echo(dumps_strict(rows))
        return
    from trainsizer.report.catalog_text import print_vouchers

    print_vouchers(rows, resolve_lang(lang))
