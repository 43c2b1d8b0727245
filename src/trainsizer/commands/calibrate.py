"""``trainsizer calibrate``: a calibration profile fitted to measured cases."""

from pathlib import Path
from typing import Annotated

import typer

from trainsizer.cli_options import JsonOpt, LangOpt


def calibrate_cmd(
    cases: Annotated[list[Path], typer.Argument(help="Measured cases (probe output or published; FORMAT.md).")],
    out: Annotated[Path, typer.Option("--out", help="Calibration profile to write (YAML).")] = Path(
        "calibration.yaml"),
    holdout: Annotated[int, typer.Option(help="Every n-th case is left out of the fit to measure the gain.")] = 3,
    overwrite: Annotated[bool, typer.Option("--overwrite")] = False,
    as_json: JsonOpt = False,
    lang: LangOpt = None,
) -> None:
    """Fit efficiency and memory-overhead parameters to measured cases; write a calibration profile."""
    from trainsizer.evidence.calibrate import calibrate, write_profile
    from trainsizer.evidence.validate import load_cases
    from trainsizer.outputs import check_output_path

    check_output_path(out, "--out", overwrite=overwrite)
    all_cases = [c for path in cases for c in load_cases(path)]
    result = calibrate(all_cases, holdout)
    write_profile(result, out, overwrite=True)
    if as_json:
        from trainsizer.jsonout import dumps_strict

        typer.echo(dumps_strict({"profile": str(out), "summary": result.summary}))
        return
    from trainsizer.report.text import calibration_lines

    for line in calibration_lines(result.summary, str(out), lang):
        typer.echo(line)
