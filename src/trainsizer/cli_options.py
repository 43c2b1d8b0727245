"""The command-line options several commands share (one definition, one help text)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

CatalogOpt = Annotated[list[Path] | None, typer.Option("--catalog", help="Your own accelerators/links YAML "
                                                       "(adds or overrides entries); repeatable.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]
LangOpt = Annotated[str | None, typer.Option("--lang", help="en | zh-CN (default: from the locale).")]
CalibrationOpt = Annotated[Path | None, typer.Option("--calibration", help="A profile from `trainsizer calibrate`: "
                                                     "its fitted parameters replace the shipped ones.")]
PricesOpt = Annotated[list[Path] | None, typer.Option("--prices", help="Your own quotes/prices YAML.")]
