"""``trainsizer plan`` and ``trainsizer report``: the searched plan of a job, on the terminal or as a file; their
options generated from the plan request's fields (request_flags)."""

from pathlib import Path
from typing import Annotated, Any

import typer

from trainsizer.cli_options import FrameworkOpt, JsonOpt
from trainsizer.errors import InputError
from trainsizer.request_flags import plan_request, with_plan_flags

# The options of plan and report, in their --help order: the command's own (by parameter name) and the plan
# request's fields (generated from workflows/plan_request.py: names, help, type and default; request_flags.py).
PLAN_OPTIONS = ("job", "gpus", "max_gpus", "deadline_s", "gpus_per_node", "top", "site", "budget", "currency",
                "horizon_years", "utilisation", "runs_per_month", "market", "objective", "electricity_price", "voucher",
                "time_value", "max_oom_risk", "setup_minutes", "all_options", "framework", "all_rankings", "prices",
                "sites", "catalogs", "calibration", "as_json", "lang")
REPORT_OPTIONS = ("job", "out", "gpus", "max_gpus", "deadline_s", "site", "budget", "currency", "horizon_years",
                  "utilisation", "runs_per_month", "market", "objective", "electricity_price", "voucher", "time_value",
                  "max_oom_risk", "setup_minutes", "all_options", "prices", "sites", "lang", "calibration", "overwrite")
REPORT_TOP = 5  # options per ranking in a report


@with_plan_flags(PLAN_OPTIONS)
def plan_cmd(
    job: Annotated[Path, typer.Argument(help="Job YAML: a scenario whose parallel and hardware may be left out.")],
    plan_values: dict[str, Any],
    framework: FrameworkOpt = None,
    all_rankings: Annotated[bool, typer.Option("--all-rankings", help="Print every ranking (fastest, fewest GPUs, "
                                               "best MFU, cheapest per run and to own, Pareto), not only the "
                                               "objective's.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """The answer first: what to rent or buy for this job in your market, per-run cost, commitment and why;
    then every option searched (GPU type x count x node shape x layout) with servers, site fit and cost."""
    from trainsizer.workflows.jobs import load_job
    from trainsizer.workflows.plan_job import plan_job

    req = plan_request(plan_values)
    # the table prints a few options: each option's JSON is written when read (the JSON prints every one)
    planned = plan_job(load_job(job, plan_values["gpus"], framework), req, str(job), options_when_read=not as_json)
    result, out = planned.result, planned.out
    if as_json:
        from trainsizer.i18n import resolve_lang
        from trainsizer.jsonout import dumps_strict
        from trainsizer.report.message_text import as_json as messages_as_json
        from trainsizer.workflows.plan_json import plan_json

        # compact: what a script reads (docs/plan-json.md); the answer outside the first screen is the table's
        typer.echo(dumps_strict(messages_as_json(plan_json(out, req.all_options), resolve_lang(req.lang)),
                                indent=None))
        return
    from trainsizer.report.text import print_plan

    print_plan(result, req.lang, out, all_rankings)


@with_plan_flags(REPORT_OPTIONS)
def report_cmd(
    job: Annotated[Path, typer.Argument(help="Job YAML (parallel and hardware may be left out).")],
    plan_values: dict[str, Any],
    out: Annotated[Path, typer.Option("--out", help="plan.html, plan.md, plan.json, or the bill of materials and "
                                      "cost as plan.xlsx or plan.csv (by extension).")] = Path("plan.html"),
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing output file.")] = False,
) -> None:
    """A self-contained report (HTML with charts, Markdown or JSON) people can forward, or its bill of
    materials and cost as a spreadsheet (.xlsx, .csv)."""
    from trainsizer.outputs import check_output_path
    from trainsizer.report.export import xlsx_available
    from trainsizer.report.write import SUFFIXES, write_report
    from trainsizer.workflows.jobs import load_job
    from trainsizer.workflows.report_model import build_report

    check_output_path(out, "--out", overwrite=overwrite, suffixes=SUFFIXES)
    if out.suffix.lower() == ".xlsx" and not xlsx_available():
        raise InputError("--out", "writing .xlsx needs openpyxl: pip install 'trainsizer[xlsx]'")
    req = plan_request(plan_values, top=REPORT_TOP)
    report = build_report(load_job(job, plan_values["gpus"]), req, job.name)  # the file's name: no absolute path
    write_report(report, out)
    typer.echo(f"wrote {out}")
