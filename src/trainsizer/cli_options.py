"""The command-line options several commands share (one definition, one help text; those a plan request also
holds come from its fields, trainsizer.request_flags)."""

from __future__ import annotations

from typing import Annotated

import typer

from trainsizer.request_flags import request_option

CatalogOpt = request_option("catalogs")
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]
LangOpt = request_option("lang")
CalibrationOpt = request_option("calibration")
PricesOpt = request_option("prices")
FrameworkOpt = Annotated[str | None, typer.Option("--framework", help="The framework that runs the job, e.g. "
                                                  "llama-factory, hf-trainer+deepspeed@0.14, torchtune, megatron-lm: "
                                                  "its profile fills the internals keys the scenario leaves out "
                                                  "(default: training.framework, else assumed for the method).")]
