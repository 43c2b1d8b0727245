"""``trainsizer data-shape``: tokens per sample of a dataset, as a scenario's data: block."""

from pathlib import Path
from typing import Annotated

import typer

from trainsizer.cli_options import JsonOpt, LangOpt


def data_shape(
    dataset: Annotated[Path, typer.Argument(help="A JSONL dataset: one sample per line (text, messages, "
                                            "conversations or instruction/input/output).")],
    model: Annotated[str | None, typer.Option("--model", help="A model preset or Hugging Face id: its tokenizer "
                                              "counts the tokens.")] = None,
    tokenizer: Annotated[str | None, typer.Option("--tokenizer", help="A folder with the tokenizer's files "
                                                  "(instead of --model's).")] = None,
    field: Annotated[str | None, typer.Option("--field", help="The key that holds each sample: text, messages, ... "
                                              "(default: the first found).")] = None,
    chars_per_token: Annotated[float | None, typer.Option("--chars-per-token", help="No tokenizer: count "
                                                          "characters / N (an approximation, said so).")] = None,
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="Read the first N samples only.")] = None,
    bins: Annotated[int, typer.Option("--bins", help="Histogram bins (1 to 4,096).")] = 32,
    packing: Annotated[bool, typer.Option("--packing", help="The block says packing: true.")] = False,
    as_yaml: Annotated[bool, typer.Option("--yaml", help="Print only the scenario's data: block.")] = False,
    as_json: JsonOpt = False,
    lang: LangOpt = None,
) -> None:
    """Tokens per sample of a dataset, with the model's tokenizer: the data: block for a scenario."""
    from trainsizer.i18n import resolve_lang
    from trainsizer.report.data_shape_text import data_block_yaml, data_shape_lines
    from trainsizer.workflows.data_shape import data_shape as count_lengths

    stats = count_lengths(dataset, model, tokenizer, field, chars_per_token, limit, bins)
    if as_json:
        from trainsizer.jsonout import dumps_strict

        typer.echo(dumps_strict({**stats.to_dict(), "data": stats.data_block(packing)}))
    elif as_yaml:
        typer.echo(data_block_yaml(stats.data_block(packing)))
    else:
        typer.echo("\n".join(data_shape_lines(stats, str(dataset), resolve_lang(lang), packing)))
