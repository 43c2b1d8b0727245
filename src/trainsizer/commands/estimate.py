"""``trainsizer estimate``: one job's per-GPU memory; its options generated from the scenario's fields
(scenario_flags)."""

from pathlib import Path
from typing import Annotated, Any

import typer

from trainsizer.cli_options import CalibrationOpt, CatalogOpt, FrameworkOpt, JsonOpt, LangOpt
from trainsizer.scenario_flags import ESTIMATE_FLAGS, with_scenario_flags


@with_scenario_flags(ESTIMATE_FLAGS)
def estimate(
    scenario: Annotated[Path | None, typer.Argument(help="Scenario YAML (validation/FORMAT.md). "
                                                    "Without it and without flags: the built-in example; flags "
                                                    "alone need --model, --method and --gpu.")] = None,
    scenario_flags: dict[str, Any] | None = None,
    framework: FrameworkOpt = None,
    catalog: CatalogOpt = None,
    calibration: CalibrationOpt = None,
    as_json: JsonOpt = False,
    lang: LangOpt = None,
) -> None:
    """Per-GPU memory of one training job: breakdown, totals against capacity, fit limits, seed rule."""
    from trainsizer.workflows.estimate_job import estimate_job

    result, origin = estimate_job(scenario, scenario_flags or {}, tuple(catalog or ()), calibration, framework)
    if as_json:
        out = result.to_dict()
        out["scenario_source"] = origin
        from trainsizer.i18n import resolve_lang
        from trainsizer.jsonout import dumps_strict
        from trainsizer.report.message_text import as_json as messages_as_json

        typer.echo(dumps_strict(messages_as_json(out, resolve_lang(lang))))
        return
    from trainsizer.report.estimate_text import print_estimate

    print_estimate(result, origin, lang)
    from trainsizer.frameworks.text import framework_lines
    from trainsizer.i18n import resolve_lang

    typer.echo("\n".join(framework_lines(result.framework, resolve_lang(lang))))
