"""``trainsizer scale``: throughput and scaling efficiency against the GPU count."""

from pathlib import Path
from typing import Annotated

import typer

from trainsizer.cli_options import CatalogOpt, JsonOpt, LangOpt


def scale_cmd(
    job: Annotated[Path, typer.Argument(help="Job YAML (parallel and hardware may be left out).")],
    gpu: Annotated[str, typer.Option("--gpu", help="GPU id to scale out.")],
    max_gpus: Annotated[int, typer.Option("--max-gpus")] = 64,
    gpus_per_node: Annotated[int | None, typer.Option("--gpus-per-node")] = None,
    catalog: CatalogOpt = None,
    as_json: JsonOpt = False,
    lang: LangOpt = None,
) -> None:
    """Throughput and scaling efficiency vs GPU count for each link option."""
    from trainsizer.workflows.jobs import load_job
    from trainsizer.workflows.scale_job import scale_job

    curves = scale_job(load_job(job, [gpu]), gpu, max_gpus, gpus_per_node, tuple(catalog or ()))
    if as_json:
        from trainsizer.i18n import resolve_lang
        from trainsizer.jsonout import dumps_strict
        from trainsizer.report.message_text import as_json as messages_as_json

        data = {"gpu": gpu, "curves": [c.to_dict() for c in curves]}
        typer.echo(dumps_strict(messages_as_json(data, resolve_lang(lang))))
        return
    from trainsizer.report.text import print_scale

    print_scale(gpu, curves, lang)
