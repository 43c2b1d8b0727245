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
FrameworkOpt = Annotated[str | None, typer.Option("--framework", help="The framework that runs the job, e.g. "
                                                  "llama-factory, hf-trainer+deepspeed@0.14, torchtune, megatron-lm: "
                                                  "its profile fills the internals keys the scenario leaves out "
                                                  "(default: training.framework, else assumed for the method).")]
