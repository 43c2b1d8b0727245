"""The ``trainsizer`` command line: one small function per command, all numbers from trainsizer.api.

Heavy imports happen inside the commands so that ``trainsizer --help`` starts fast.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from trainsizer.errors import InputError
from trainsizer.probe.burnin.cli import burnin_app
from trainsizer.probe.cli import probe_app

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Size AI training jobs: per-GPU memory, speed, a searched plan of GPUs and layout, "
                       "the servers, site fit and rent-or-buy cost. Bad input exits 2 with one line naming "
                       "the field.")
catalog_app = typer.Typer(add_completion=False, no_args_is_help=True, help="List the catalogs.")
app.add_typer(catalog_app, name="catalog")
app.add_typer(burnin_app, name="burnin")  # `trainsizer burnin [opts] [-- cmd...]`; `trainsizer burnin report RUN.db`
app.add_typer(probe_app, name="probe")  # `trainsizer probe memory|profile|comm`

EXAMPLE = "default.yaml"

CatalogOpt = Annotated[list[Path] | None, typer.Option("--catalog", help="Your own accelerators/links YAML "
                                                       "(adds or overrides entries); repeatable.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]
LangOpt = Annotated[str | None, typer.Option("--lang", help="en | zh-CN (default: from the locale).")]
CalibrationOpt = Annotated[Path | None, typer.Option("--calibration", help="A profile from `trainsizer calibrate`: "
                                                     "its fitted parameters replace the shipped ones.")]


def _set(data: dict[str, Any], dotted: str, value: Any) -> None:
    if value is None:
        return
    section, key = dotted.split(".", 1)
    target = data.setdefault(section, {})
    if not isinstance(target, dict):
        raise InputError(section, "must be a mapping")
    if "." in key:
        sub, leaf = key.split(".", 1)
        target = target.setdefault(sub, {})
        key = leaf
    target[key] = value


def _scenario_data(path: Path | None, flags: dict[str, Any]) -> tuple[dict[str, Any], str]:
    from trainsizer.datafiles import packaged_yaml, user_yaml

    given = {k: v for k, v in flags.items() if v is not None}
    if path is not None:
        data = user_yaml(path, field="scenario")
        if not isinstance(data, dict):
            raise InputError("scenario", f"{path} must be a YAML mapping with model, training, parallel, hardware")
        origin = str(path)
    elif not given:
        data = json.loads(json.dumps(packaged_yaml("trainsizer.examples", EXAMPLE)))
        origin = f"built-in example ({EXAMPLE})"
    else:
        data = {"training": {"micro_batch_size": 1, "seq_len": 2048}, "parallel": {"gpus": 1}}
        origin = "command-line flags"
    model = given.pop("model", None)
    if model is not None:
        data["model"] = {"hf_config": model} if str(model).endswith(".json") else {"preset": model}
    for dotted, value in given.items():
        _set(data, dotted, value)
    return data, origin


@app.command()
def estimate(
    scenario: Annotated[Path | None, typer.Argument(help="Scenario YAML (shared/validation/FORMAT.md). "
                                                    "Without it and without flags: the built-in example.")] = None,
    model: Annotated[str | None, typer.Option(help="Model preset id, or a Hugging Face config.json path.")] = None,
    method: Annotated[str | None, typer.Option(help="full | lora | qlora | freeze")] = None,
    precision: Annotated[str | None, typer.Option(help="fp32 | fp16-mixed | bf16-mixed | bf16-true | "
                                                  "fp8-mixed")] = None,
    optimizer: Annotated[str | None, typer.Option(help="adamw | adamw-8bit | paged-adamw-8bit | adafactor | "
                                                  "sgd-momentum | sgd | lion")] = None,
    micro_batch_size: Annotated[int | None, typer.Option("--micro-batch-size", "--mbs")] = None,
    seq_len: Annotated[int | None, typer.Option("--seq-len")] = None,
    global_batch_size: Annotated[int | None, typer.Option("--global-batch-size")] = None,
    checkpointing: Annotated[str | None, typer.Option("--checkpointing", help="none | selective | full")] = None,
    attention: Annotated[str | None, typer.Option(help="flash | sdpa | eager")] = None,
    lora_rank: Annotated[int | None, typer.Option("--lora-rank")] = None,
    lora_alpha: Annotated[float | None, typer.Option("--lora-alpha")] = None,
    lora_targets: Annotated[str | None, typer.Option("--lora-targets", help="Comma-separated module names, "
                                                     "or all-linear.")] = None,
    quantization: Annotated[str | None, typer.Option(help="nf4 | nf4-dq | int8 | int4 (qlora)")] = None,
    loss: Annotated[str | None, typer.Option(help="standard | chunked cross-entropy")] = None,
    gpus: Annotated[int | None, typer.Option(help="Total GPUs.")] = None,
    tp: Annotated[int | None, typer.Option()] = None,
    pp: Annotated[int | None, typer.Option()] = None,
    cp: Annotated[int | None, typer.Option()] = None,
    virtual_pp: Annotated[int | None, typer.Option("--virtual-pp")] = None,
    sequence_parallel: Annotated[bool | None, typer.Option("--sequence-parallel/--no-sequence-parallel")] = None,
    zero: Annotated[int | None, typer.Option(help="ZeRO stage 0-3 (FSDP full shard = 3).")] = None,
    offload: Annotated[str | None, typer.Option(help="none | optimizer | optimizer+params")] = None,
    distributed_optimizer: Annotated[bool | None, typer.Option("--distributed-optimizer/--no-distributed-optimizer",
                                                               help="Megatron's distributed optimizer.")] = None,
    ep: Annotated[int | None, typer.Option(help="Expert parallelism (MoE).")] = None,
    optimizer_in_backward: Annotated[bool | None, typer.Option("--optimizer-in-backward/--no-optimizer-in-backward")
                                     ] = None,
    tokens: Annotated[float | None, typer.Option(help="Total training tokens.")] = None,
    gpu: Annotated[str | None, typer.Option(help="GPU catalog id, e.g. rtx-4090-24gb.")] = None,
    gpus_per_node: Annotated[int | None, typer.Option("--gpus-per-node")] = None,
    intra_node: Annotated[str | None, typer.Option("--intra-node", help="Link id inside a node, e.g. nvlink4.")] = None,
    inter_node: Annotated[str | None, typer.Option("--inter-node", help="Link id between nodes, e.g. ib-ndr-400.")
                          ] = None,
    catalog: CatalogOpt = None,
    calibration: CalibrationOpt = None,
    as_json: JsonOpt = False,
    lang: LangOpt = None,
) -> None:
    """Per-GPU memory of one training job: breakdown, totals against capacity, fit limits, seed rule."""
    from trainsizer.api import estimate as run_estimate
    from trainsizer.hardware.catalog import load_catalog
    from trainsizer.scenario import relative_to_file, scenario_from_dict

    targets: Any = lora_targets
    if lora_targets and lora_targets != "all-linear":
        targets = [t.strip() for t in lora_targets.split(",") if t.strip()]
    flags = {
        "model": model, "training.method": method, "training.precision": precision,
        "training.optimizer": optimizer, "training.micro_batch_size": micro_batch_size,
        "training.seq_len": seq_len, "training.global_batch_size": global_batch_size,
        "training.activation_checkpointing": checkpointing, "training.attention": attention,
        "training.lora.rank": lora_rank, "training.lora.alpha": lora_alpha, "training.lora.targets": targets,
        "training.quantization": quantization, "training.loss": loss, "parallel.gpus": gpus,
        "parallel.tp": tp, "parallel.pp": pp, "parallel.cp": cp, "parallel.virtual_pp": virtual_pp,
        "parallel.sequence_parallel": sequence_parallel, "parallel.zero": zero, "parallel.offload": offload,
        "hardware.gpu": gpu, "hardware.gpus_per_node": gpus_per_node, "hardware.intra_node": intra_node,
        "hardware.inter_node": inter_node, "parallel.distributed_optimizer": distributed_optimizer,
        "parallel.ep": ep, "training.optimizer_in_backward": optimizer_in_backward, "training.tokens": tokens,
    }
    data, origin = _scenario_data(scenario, flags)
    parsed = scenario_from_dict(data, source=origin)
    if scenario is not None:
        parsed = relative_to_file(parsed, scenario)
    cat = load_catalog(list(catalog or []))
    memory_params = perf_params = None
    if calibration is not None:  # numpy and the fitter load only when a profile is used
        from trainsizer.calibrate import load_calibration

        memory_params, perf_params = load_calibration(calibration)
    result = run_estimate(parsed, catalog=cat, memory_params=memory_params, performance_params=perf_params)
    if as_json:
        out = result.to_dict()
        out["scenario_source"] = origin
        from trainsizer.jsonout import dumps_strict

        typer.echo(dumps_strict(out))
        return
    from trainsizer.report.text import print_estimate

    print_estimate(result, origin, lang)


@app.command()
def validate(
    cases: Annotated[list[Path], typer.Argument(help="Case files (shared/validation/FORMAT.md, 'Case file').")],
    calibration: CalibrationOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Replay measured cases: predicted vs measured, per-case error, median and p90."""
    from trainsizer.calibrate import load_calibration
    from trainsizer.validate import load_cases, summarize, validate_cases

    memory_params, perf_params = load_calibration(calibration)
    results = []
    for path in cases:
        results += validate_cases(load_cases(path), memory_params, perf_params)
    memory = [r for r in results if r.error is not None]
    fitted = [r for r in memory if not r.excluded_from_fit]
    summary = {"all": summarize(memory).to_dict(), "fitted": summarize(fitted).to_dict(),
               "excluded": summarize([r for r in memory if r.excluded_from_fit]).to_dict(),
               "skipped": len(results) - len(memory)}
    if as_json:
        from trainsizer.jsonout import dumps_strict

        typer.echo(dumps_strict({"cases": [r.to_dict() for r in results], "summary": summary}))
        return
    from trainsizer.report.text import print_validation

    print_validation(results, summary)


@app.command("plan")
def plan_cmd(
    job: Annotated[Path, typer.Argument(help="Job YAML: a scenario whose parallel and hardware may be left out.")],
    gpu: Annotated[list[str] | None, typer.Option("--gpu", help="Allowed GPU id (repeatable); default: all.")] = None,
    max_gpus: Annotated[int, typer.Option("--max-gpus", help="Largest GPU count to consider.")] = 1024,
    deadline: Annotated[str | None, typer.Option(help="Time to train at most, e.g. 7d, 36h (needs tokens).")] = None,
    gpus_per_node: Annotated[int | None, typer.Option("--gpus-per-node")] = None,
    top: Annotated[int, typer.Option(help="Options to show per ranking.")] = 10,
    site: Annotated[str | None, typer.Option(help="Site id (trainsizer catalog sites); default: a modern "
                                             "colocation room.")] = None,
    budget: Annotated[float | None, typer.Option(help="Most to spend (buy capex or rent over the horizon), "
                                                 "in --currency.")] = None,
    currency: Annotated[str | None, typer.Option(help="CNY | USD (default: CNY for a Chinese locale).")] = None,
    horizon: Annotated[float, typer.Option(help="Years the hardware is used (rent vs buy).")] = 3.0,
    utilisation: Annotated[float, typer.Option(help="Fraction of the time the GPUs are busy.")] = 0.7,
    prices: Annotated[list[Path] | None, typer.Option("--prices", help="Your own quotes/prices YAML.")] = None,
    sites: Annotated[list[Path] | None, typer.Option("--sites", help="Your own sites YAML.")] = None,
    catalog: CatalogOpt = None,
    calibration: CalibrationOpt = None,
    as_json: JsonOpt = False,
    lang: LangOpt = None,
) -> None:
    """Search GPU type x count x node shape x layout; rank what fits with its servers, site fit and cost."""
    from trainsizer.plan.pipeline import PlanRequest, load_job, parse_duration, run_plan
    from trainsizer.validation import count_in_range, finite_positive

    finite_positive(parse_duration(deadline), "--deadline", "a duration > 0 such as 7d, 36h or 90m")
    finite_positive(budget, "--budget", f"a finite amount > 0 in {currency or 'the currency'}")
    count_in_range(top, "--top", 1, 1000)
    req = PlanRequest(tuple(gpu or ()), max_gpus, parse_duration(deadline), gpus_per_node, top, site, budget,
                      currency, horizon, utilisation, tuple(prices or ()), tuple(sites or ()), tuple(catalog or ()),
                      lang, calibration)
    result, out = run_plan(load_job(job, gpu), req, str(job))
    if as_json:
        from trainsizer.jsonout import dumps_strict

        typer.echo(dumps_strict(out))
        return
    from trainsizer.report.text import print_plan

    print_plan(result, lang, out)


@app.command("report")
def report_cmd(
    job: Annotated[Path, typer.Argument(help="Job YAML (parallel and hardware may be left out).")],
    out: Annotated[Path, typer.Option("--out", help="plan.html, plan.md or plan.json (by extension).")] = Path(
        "plan.html"),
    gpu: Annotated[list[str] | None, typer.Option("--gpu", help="Allowed GPU id (repeatable).")] = None,
    max_gpus: Annotated[int, typer.Option("--max-gpus")] = 64,
    deadline: Annotated[str | None, typer.Option(help="e.g. 7d (needs tokens).")] = None,
    site: Annotated[str | None, typer.Option(help="Site id.")] = None,
    budget: Annotated[float | None, typer.Option()] = None,
    currency: Annotated[str | None, typer.Option(help="CNY | USD")] = None,
    horizon: Annotated[float, typer.Option()] = 3.0,
    utilisation: Annotated[float, typer.Option()] = 0.7,
    prices: Annotated[list[Path] | None, typer.Option("--prices")] = None,
    sites: Annotated[list[Path] | None, typer.Option("--sites")] = None,
    lang: LangOpt = None,
    calibration: CalibrationOpt = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing output file.")] = False,
) -> None:
    """A self-contained report (HTML with charts, Markdown or JSON) people can forward."""
    from trainsizer.outputs import check_output_path
    from trainsizer.plan.pipeline import PlanRequest, load_job, parse_duration
    from trainsizer.report.build import build_report, write_report
    from trainsizer.validation import finite_positive

    check_output_path(out, "--out", overwrite=overwrite, suffixes=(".html", ".htm", ".md", ".json"))
    finite_positive(parse_duration(deadline), "--deadline", "a duration > 0 such as 7d, 36h or 90m")
    finite_positive(budget, "--budget", f"a finite amount > 0 in {currency or 'the currency'}")
    req = PlanRequest(tuple(gpu or ()), max_gpus, parse_duration(deadline), None, 5, site, budget, currency,
                      horizon, utilisation, tuple(prices or ()), tuple(sites or ()), (), lang, calibration)
    report = build_report(load_job(job, gpu), req, str(job))
    write_report(report, out)
    typer.echo(f"wrote {out}")


@app.command("quotes")
def quotes_cmd(
    quotes: Annotated[Path, typer.Argument(help="Quotes YAML (see README: Quotes).")],
    job: Annotated[Path | None, typer.Option("--job", help="Job YAML: compare per training run.")] = None,
    currency: Annotated[str | None, typer.Option(help="CNY | USD")] = None,
    prices: Annotated[list[Path] | None, typer.Option("--prices")] = None,
    catalog: CatalogOpt = None,
    as_json: JsonOpt = False,
    lang: LangOpt = None,
) -> None:
    """Compare rental offers on cost per delivered PFLOP and per training run, with risk flags."""
    from trainsizer.cost.prices import load_prices
    from trainsizer.cost.quotes import compare_quotes, load_quotes
    from trainsizer.hardware.catalog import load_catalog
    from trainsizer.models.catalog import resolve_model
    from trainsizer.plan.pipeline import load_job
    from trainsizer.report.i18n import resolve_lang

    cat = load_catalog(list(catalog or []))
    offers = load_quotes(quotes)
    for i, q in enumerate(offers):
        cat.accelerator(q.gpu, f"quotes[{i}].gpu")
    money = load_prices(currency or ("CNY" if resolve_lang(lang) == "zh-CN" else "USD"), list(prices or []))
    scenario = arch = None
    if job is not None:
        scenario = load_job(job, [offers[0].gpu])
        arch = resolve_model(scenario.model)
    results = compare_quotes(offers, money, scenario, arch, cat)
    data = {"currency": money.currency, "quotes": [r.to_dict() for r in results],
            "mfu_basis": "the job's best layout on each offer" if job else "an assumed MFU of 0.35 (no job given)"}
    if as_json:
        from trainsizer.jsonout import dumps_strict

        typer.echo(dumps_strict(data))
        return
    from trainsizer.report.text import print_quotes

    print_quotes(data)


@app.command("scale")
def scale_cmd(
    job: Annotated[Path, typer.Argument(help="Job YAML (parallel and hardware may be left out).")],
    gpu: Annotated[str, typer.Option("--gpu", help="GPU id to scale out.")],
    max_gpus: Annotated[int, typer.Option("--max-gpus")] = 64,
    gpus_per_node: Annotated[int | None, typer.Option("--gpus-per-node")] = None,
    catalog: CatalogOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Throughput and scaling efficiency vs GPU count for each link option."""
    from trainsizer.hardware.catalog import load_catalog
    from trainsizer.models.catalog import resolve_model
    from trainsizer.plan.pipeline import load_job
    from trainsizer.plan.scale import scale

    cat = load_catalog(list(catalog or []))
    cat.accelerator(gpu, "--gpu")
    if max_gpus < 1 or max_gpus > 4096:
        raise InputError("--max-gpus", f"{max_gpus} is out of range; accepted: 1 to 4096")
    scenario = load_job(job, [gpu])
    curves = scale(scenario, resolve_model(scenario.model), gpu, max_gpus, cat, gpus_per_node)
    if as_json:
        from trainsizer.jsonout import dumps_strict

        typer.echo(dumps_strict({"gpu": gpu, "curves": [c.to_dict() for c in curves]}))
        return
    from trainsizer.report.text import print_scale

    print_scale(gpu, curves)


@app.command("serve")
def serve_cmd(
    host: Annotated[str, typer.Option(help="Address to listen on (loopback by default).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8000,
) -> None:
    """The local web planner (pip install -e '.[web]'): forms, plan, charts, JSON API with OpenAPI."""
    if not 1 <= port <= 65535:
        raise InputError("--port", f"{port}; accepted: 1 to 65535")
    try:
        from trainsizer.web.app import serve
    except ImportError as exc:
        raise InputError("serve", f"the web planner needs its extra: pip install -e '.[web]' ({exc.name} missing)") \
            from None
    serve(host, port)


@app.command("calibrate")
def calibrate_cmd(
    cases: Annotated[list[Path], typer.Argument(help="Measured cases (probe output or published; FORMAT.md).")],
    out: Annotated[Path, typer.Option("--out", help="Calibration profile to write (YAML).")] = Path(
        "calibration.yaml"),
    holdout: Annotated[int, typer.Option(help="Every n-th case is left out of the fit to measure the gain.")] = 3,
    overwrite: Annotated[bool, typer.Option("--overwrite")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Fit efficiency and memory-overhead parameters to measured cases; write a calibration profile."""
    from trainsizer.calibrate import calibrate, write_profile
    from trainsizer.outputs import check_output_path
    from trainsizer.validate import load_cases

    check_output_path(out, "--out", overwrite=overwrite)
    all_cases = [c for path in cases for c in load_cases(path)]
    result = calibrate(all_cases, holdout)
    write_profile(result, out, overwrite=True)
    if as_json:
        from trainsizer.jsonout import dumps_strict

        typer.echo(dumps_strict({"profile": str(out), "summary": result.summary}))
        return
    for kind, s in result.summary.items():
        def pct(x: float | None) -> str:
            return "-" if x is None else f"{x:.1%}"
        typer.echo(f"{kind}: fitted on {s['fitted_cases']} cases; held-out median |error| "
                   f"{pct(s['held_out_median_before'])} -> {pct(s['held_out_median_after'])} "
                   f"({s['held_out_cases']} cases)")
    typer.echo(f"wrote {out}; use it with --calibration {out}")


@catalog_app.command("gpus")
def catalog_gpus(catalog: CatalogOpt = None, as_json: JsonOpt = False) -> None:
    """Accelerators: memory, bandwidth, dense peaks, links, TDP."""
    from trainsizer.hardware.catalog import load_catalog

    cat = load_catalog(list(catalog or []))
    if as_json:
        from trainsizer.jsonout import dumps_strict

        typer.echo(dumps_strict([a.model_dump() for a in cat.accelerators.values()]))
        return
    from trainsizer.report.text import print_gpus

    print_gpus(cat)


@catalog_app.command("links")
def catalog_links(catalog: CatalogOpt = None, as_json: JsonOpt = False) -> None:
    """Links: scale-up, PCIe and network, with bandwidth and latency."""
    from trainsizer.hardware.catalog import load_catalog

    cat = load_catalog(list(catalog or []))
    if as_json:
        from trainsizer.jsonout import dumps_strict

        typer.echo(dumps_strict([link.model_dump() for link in cat.links.values()]))
        return
    from trainsizer.report.text import print_links

    print_links(cat)


@catalog_app.command("sites")
def catalog_sites(sites: Annotated[list[Path] | None, typer.Option("--sites")] = None,
                  as_json: JsonOpt = False) -> None:
    """Sites: rack power, cooling, PUE, electricity price, rack rent."""
    from trainsizer.system.sites import load_sites

    all_sites = load_sites(list(sites or []))
    if as_json:
        from trainsizer.jsonout import dumps_strict

        typer.echo(dumps_strict([s.model_dump() for s in all_sites.values()]))
        return
    from trainsizer.report.text import print_sites

    print_sites(all_sites)


@catalog_app.command("models")
def catalog_models(as_json: JsonOpt = False) -> None:
    """Model presets with their exact parameter counts."""
    from trainsizer.models.catalog import model_ids, preset_architecture, preset_entry
    from trainsizer.models.params import count_params

    rows = []
    for mid in model_ids():
        counts = count_params(preset_architecture(mid))
        entry = preset_entry(mid)
        rows.append({"id": mid, "name": entry.get("name", mid), "params": counts.total, "active_params": counts.active,
                     "published_params": entry.get("published_params"), "source": entry.get("source")})
    if as_json:
        from trainsizer.jsonout import dumps_strict

        typer.echo(dumps_strict(rows))
        return
    from trainsizer.report.text import print_models

    print_models(rows)


def main() -> None:
    """Console entry point: user mistakes print one line and exit 2, never a traceback."""
    try:
        app(standalone_mode=False)
    except InputError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except (typer.Exit, SystemExit) as exc:
        code = getattr(exc, "exit_code", getattr(exc, "code", 0))
        sys.exit(code if isinstance(code, int) else 0)
    except typer.Abort:
        typer.echo("aborted", err=True)
        sys.exit(1)
    except Exception as exc:  # click / typer usage errors (typer >= 0.29 ships its own copy of click)
        if hasattr(exc, "show") and isinstance(getattr(exc, "exit_code", None), int):
            exc.show()
            sys.exit(2)
        raise


if __name__ == "__main__":
    main()
