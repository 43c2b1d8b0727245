"""``trainsizer validate``: measured cases replayed against the estimate."""

from pathlib import Path
from typing import Annotated

import typer

from trainsizer.cli_options import CalibrationOpt, JsonOpt, LangOpt


def validate(
    cases: Annotated[list[Path] | None, typer.Argument(
        help="Case files (validation/FORMAT.md, 'Case file'); none: the shipped cases of validation/ and the "
             "accuracy tables of docs/accuracy.md.", show_default=False)] = None,
    calibration: CalibrationOpt = None,
    holdout: Annotated[str | None, typer.Option("--holdout", help="source: leave-one-source-out cross-validation "
                                                "(refit without each publication, predict it); family: "
                                                "leave-one-family-out (each GPU family predicted with none of its "
                                                "cases in the fit); both; none: in-sample only. Default: both "
                                                "without case files, else none.",
                                                show_default=False)] = None,
    view: Annotated[str, typer.Option("--view", help="annotated: each case as written, internals included; "
                                      "user: only what a user states, internals from its framework's profile."
                                      )] = "annotated",
    as_json: JsonOpt = False,
    lang: LangOpt = None,
) -> None:
    """Replay measured cases: predicted vs measured, per-case error, median and p90; with --holdout source
    (or family) the cross-validated error (the figure to quote) and the signed median per GPU family and per
    method. Without case files: the shipped cases, in-sample and held out by source and by family, as the
    tables of docs/accuracy.md."""
    from trainsizer.evidence.validate import validate_files

    results, summary = validate_files(cases or [], calibration, holdout, view)
    if as_json:
        from trainsizer.jsonout import dumps_strict

        typer.echo(dumps_strict({"cases": [r.to_dict() for r in results], "summary": summary}))
        return
    from trainsizer.report.text import print_validation

    print_validation(results, summary, lang, per_case=bool(cases))
