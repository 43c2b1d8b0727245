"""``trainsizer quotes``: rental offers compared per delivered PFLOP and per training run."""

from pathlib import Path
from typing import Annotated

import typer

from trainsizer.cli_options import CatalogOpt, JsonOpt, LangOpt


def quotes_cmd(
    quotes: Annotated[Path, typer.Argument(help="Quotes YAML (examples/quotes.yaml; docs/guide-planning.md).")],
    job: Annotated[Path | None, typer.Option("--job", help="Job YAML: compare per training run.")] = None,
    currency: Annotated[str | None, typer.Option(help="CNY | USD")] = None,
    prices: Annotated[list[Path] | None, typer.Option("--prices")] = None,
    catalog: CatalogOpt = None,
    as_json: JsonOpt = False,
    lang: LangOpt = None,
) -> None:
    """Compare rental offers on cost per delivered PFLOP and per training run, with risk flags."""
    from trainsizer.workflows.catalogs import accelerators_and_links
    from trainsizer.workflows.jobs import load_job
    from trainsizer.workflows.quotes import compare_offers, load_quotes

    offers = load_quotes(quotes)
    scenario = load_job(job, [offers[0].gpu]) if job is not None else None
    data = compare_offers(offers, currency, scenario, accelerators_and_links(tuple(catalog or ())),
                          tuple(prices or ()), lang, source=str(quotes))
    if as_json:
        from trainsizer.jsonout import dumps_strict
        from trainsizer.report.message_text import as_json as messages_as_json

        typer.echo(dumps_strict(messages_as_json(data)))
        return
    from trainsizer.report.text import print_quotes

    print_quotes(data, lang)
