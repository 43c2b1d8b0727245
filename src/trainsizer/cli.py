"""The ``trainsizer`` command line: one small function per command, every number from trainsizer.workflows.

Heavy imports happen inside the commands so that ``trainsizer --help`` starts fast.
"""


import gc
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from trainsizer.cli_groups import LazyGroup
from trainsizer.cli_options import CalibrationOpt, CatalogOpt, FrameworkOpt, JsonOpt, LangOpt
from trainsizer.errors import N_, InputError
from trainsizer.request_flags import plan_request, with_plan_flags
from trainsizer.scenario_flags import ESTIMATE_FLAGS, with_scenario_flags

GC_THRESHOLD = 100_000  # allocations between the collector's young-generation passes in the executable (console)
app = typer.Typer(cls=LazyGroup, add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Size AI training jobs: per-GPU memory, speed, a searched plan of GPUs and layout, "
                       "the servers, site fit and rent-or-buy cost. Bad input exits 2 with one line naming "
                       "the field.")
# `trainsizer burnin`, `trainsizer probe` and `trainsizer catalog` are added lazily (cli_groups.LAZY_SUBAPPS)



@app.command()
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


@app.command()
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


@app.command("plan")
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
    planned = plan_job(load_job(job, plan_values["gpus"], framework), req, str(job))
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


@app.command("report")
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


@app.command("quotes")
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


@app.command("scale")
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


@app.command("serve")
def serve_cmd(
    host: Annotated[str, typer.Option(help="Address to listen on (loopback by default).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8000,
    workers: Annotated[int | None, typer.Option(help="Worker processes computing plans (default: one per "
                                                "core; 0: in the server process).")] = None,
    queue_limit: Annotated[int | None, typer.Option("--queue-limit", help="Requests that may wait for a worker "
                                                    "(default: 64, 8 per worker past 8); more are 503.")] = None,
) -> None:
    r"""The local web planner (pip install -e '.\[web]'): forms, plan, charts, JSON API with OpenAPI."""
    if not 1 <= port <= 65535:
        raise InputError("--port", N_("{value}; accepted: {low} to {high}"), value=port, low=1, high=65535)
    if workers is not None and not 0 <= workers <= 256:
        raise InputError("--workers", N_("{value}; accepted: {low} to {high}"), value=workers, low=0, high=256)
    if queue_limit is not None and not 0 <= queue_limit <= 10_000:
        raise InputError("--queue-limit", N_("{value}; accepted: {low} to {high}"), value=queue_limit, low=0,
                         high=10000)
    try:
        from trainsizer.web.app import serve
    except ImportError as exc:
        raise InputError("serve", f"the web planner needs its extra: pip install -e '.[web]' ({exc.name} missing)") \
            from None
    serve(host, port, workers, queue_limit)


@app.command("calibrate")
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


@app.command("data-shape")
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


def main() -> None:
    """Console entry point: user mistakes print one line and exit 2, never a traceback."""
    # trainsizer uses no pydantic plugin; finding none costs an entry-point scan of every installed package
    # (~25 ms of a 0.3 s command). PYDANTIC_DISABLE_PLUGINS: https://docs.pydantic.dev/latest/concepts/plugins/
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "1")
    try:
        app(standalone_mode=False)
    except InputError as exc:
        from trainsizer.i18n import lang_of_argv
        from trainsizer.report.error_text import error_text

        typer.echo(error_text(exc, lang_of_argv(sys.argv[1:])), err=True)
        sys.exit(2)
    except (typer.Exit, SystemExit) as exc:
        code = getattr(exc, "exit_code", getattr(exc, "code", 0))
        sys.exit(code if isinstance(code, int) else 0)
    except typer.Abort:
        typer.echo("aborted", err=True)
        sys.exit(1)
    except Exception as exc:  # click / typer usage errors (typer >= 0.29 ships its own copy of click)
        if hasattr(exc, "format_message") and isinstance(getattr(exc, "exit_code", None), int):
            # one line, like every other user mistake: the option and what is wrong (no usage block)
            param = getattr(exc, "param", None)
            name = (param.opts[0] if getattr(param, "opts", None) else getattr(param, "name", "")) if param else ""
            message = " ".join(exc.format_message().split())
            typer.echo(f"error: {name + ': ' if name and name not in message else ''}{message}", err=True)
            sys.exit(2)
        raise


def console() -> None:
    """The ``trainsizer`` executable: :func:`main`, then an exit without Python's last garbage collection."""
    # A command is a short process that builds many long-lived objects (modules, catalogs, schemas): the cyclic
    # collector's default first threshold (700 allocations) traverses them over and over while they are made
    # (~30 ms of a 0.5 s plan). A larger one still collects cycles in long commands (burn-in, validate).
    # https://docs.python.org/3/library/gc.html#gc.set_threshold
    gc.set_threshold(GC_THRESHOLD, *gc.get_threshold()[1:])
    # numpy's OpenBLAS starts one busy thread per core at import; the planner makes no BLAS call worth threads,
    # and on a 2-core machine they take the other core for ~60 ms. Set before numpy loads; the user's value wins.
    # https://github.com/OpenMathLib/OpenBLAS#setting-the-number-of-threads-using-environment-variables
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        main()
    finally:
        # The process ends here. At shutdown Python would still traverse every object the imports created for a
        # final collection (~40 ms of a 0.3 s command); gc.freeze() moves them out of the collector's reach, so
        # exit frees them by reference count only. Streams are still flushed and atexit handlers still run.
        # (Not in main(): tests and the Python API call main() in a process that goes on.)
        gc.freeze()


if __name__ == "__main__":
    console()
