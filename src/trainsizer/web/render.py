"""Server-side rendering: the page, the plan result fragment and its charts (``report.charts`` SVG)."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jinja2 import Environment, FileSystemLoader, Undefined, pass_context, select_autoescape

from trainsizer.errors import InputError
from trainsizer.frameworks import assumed, families, load_profile
from trainsizer.i18n import N_, default_currency, tr
from trainsizer.report import option_text, sections
from trainsizer.report import words as w
from trainsizer.report.answer import card
from trainsizer.report.charts import fit_status, render_chart
from trainsizer.report.message_text import face, text
from trainsizer.report.specs import plan_chart_specs, scale_spec
from trainsizer.web.form_words import labelled
from trainsizer.web.labels import labels
from trainsizer.workflows.decide import OBJECTIVES
from trainsizer.workflows.defaults import DEFAULT_OBJECTIVE

if TYPE_CHECKING:  # the plan document's keys; what the answer says of the form
    from trainsizer.web.service import FormSaid
    from trainsizer.workflows.plan_schema import OptionJSON, PlanJSON

HERE = Path(__file__).parent
RANKING_ORDER = ("recommended", "fastest", "fewest_gpus", "best_mfu", "cheapest_to_buy", "pareto_time_vs_gpus")
FORM_CHOICES = {
    "methods": ["full", "lora", "qlora", "freeze"],
    "precisions": ["bf16-mixed", "bf16-true", "fp16-mixed", "fp32", "fp8-mixed"],
    "optimizers": ["adamw", "adamw-8bit", "paged-adamw-8bit", "adafactor", "sgd-momentum", "sgd", "lion"],
    "checkpointing": ["none", "selective", "full"],
    "quantizations": ["nf4", "nf4-dq", "int8", "int4"],
    "node_shapes": [1, 2, 4, 8, 16],
    "currencies": ["USD", "CNY"],
    "lora_targets": ["all-linear"],
}


# CLI flags that messages from the engine name, as the page's form calls them (a label key), or in words
FLAG_LABELS = {"--max-gpus": "max_gpus", "--deadline": "deadline_days", "--site": "site", "--gpu": "gpus_allowed",
               "--gpus-per-node": "gpus_per_node", "--budget": "budget", "--currency": "currency",
               "--horizon": "horizon", "--utilisation": "utilisation", "--time-value": "time_value",
               "--setup": "setup_minutes"}
FLAG_WORDS = {"--prices": N_("your own price data"), "--sites": N_("your own site list"),
              "--catalog": N_("your own GPU catalog"), "--calibration": N_("a calibration profile"),
              "--fx": N_("the exchange rate"), "--lang": N_("the language"),
              "--runs-per-month": N_("the runs per month"), "--market": N_("the market")}
NO_PRICE = N_("the built-in price data has none")
PRICE_HINT = (N_("(add one with --prices)"), N_("(the built-in price data has none)"))  # as a translation ends
LEFT_EMPTY = N_("with {field} left empty")
_ADD_WITH = re.compile(r"(\s*\()?add (?:one|it|them) with --prices(?: FILE)?(?(1)\))")
_WITHOUT = re.compile(r"\bwithout (--[a-z][a-z0-9-]*)")
_FLAG_VALUE = re.compile(r"(--[a-z][a-z0-9-]*)[ =](\d[\w.]*)")
_FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")
FRAMEWORK_ASSUMED = N_("as the method usually runs: {names}")  # the framework select's blank choice (frameworks/index)
READ_AS = N_("“{given}” read as the preset {preset}")
READ_AS_VARIANT = N_("“{given}” read as the preset {preset}: the {variant} model has the base model's architecture, "
                     "so its memory and speed are the same")
CHANGED = N_("The plan does not keep all you chose: {changes}. The planner searches the micro-batch and the "
             "activation checkpointing for the cheapest layout that fits in memory; the layout above uses its values.")
CHANGED_PART = N_("{field} {given} → {used}")
CHANGED_FIELDS = {"micro_batch_size": "micro_batch", "activation_checkpointing": "checkpointing"}
_CJK = re.compile(r"[\u4e00-\u9fff]")


def page_text(text: Any, lang: str = "en") -> str:
    """An input error (``InputError``, English) as the page shows it: CLI flags (``--max-gpus 32``, ``without
    --deadline``, ``add one with --prices``) become the form's field names or plain words; other text is unchanged.
    The engine's messages need none of this: the page renders them in face("page") (message_pages.PAGE)."""
    if _missing(text):
        return ""
    lab = labels(lang)
    words = lang if _CJK.search(str(text)) else "en"

    def name(flag: str) -> str:
        if flag in FLAG_LABELS:
            return f"“{lab[FLAG_LABELS[flag]]}”"
        return tr(FLAG_WORDS[flag], words) if flag in FLAG_WORDS else flag.lstrip("-").replace("-", " ")

    out = str(text).replace(tr(PRICE_HINT[0], words), tr(PRICE_HINT[1], words)) if words != "en" else str(text)
    out = _ADD_WITH.sub(lambda m: f"{' (' if m.group(1) else ''}{tr(NO_PRICE, words)}"
                        f"{')' if m.group(1) else ''}", out)
    out = _WITHOUT.sub(lambda m: tr(LEFT_EMPTY, words, field=name(m.group(1))), out)
    out = _FLAG_VALUE.sub(lambda m: f"{name(m.group(1))}: {m.group(2)}", out)
    return _FLAG.sub(lambda m: name(m.group(1)), out)


def page_error(exc: InputError, lang: str) -> tuple[str, str, dict[str, list[str]]]:
    """An input error as the page shows it: its field (none for a CLI flag), its message in the page's language and
    words (:func:`page_text`), and for an unknown model the closest presets as choices to click."""
    values = dict(exc.values)
    if isinstance(values.get("accepted"), str) and values["accepted"]:
        values["accepted"] = tr(values["accepted"], lang)
    message = tr(exc.template, lang, **values) if values else tr(exc.template, lang)
    if exc.source:
        message = tr("{message} (in {source})", lang, message=message, source=exc.source)
    field = exc.field or "body"
    extra: dict[str, list[str]] = {}
    if field.endswith("model.preset") and values.get("close"):
        extra["choices"] = str(values["close"]).split(", ")
    return ("" if field.startswith("--") else field), page_text(message, lang), extra


def _missing(value: Any) -> bool:
    return value is None or isinstance(value, Undefined)


def fmt_num(value: Any, digits: int = 0) -> str:
    if _missing(value):
        return "-"
    return f"{float(value):,.{digits}f}"


def fmt_duration(seconds: Any, lang: str = "en") -> str:
    return "-" if _missing(seconds) else w.duration(seconds, lang)


@pass_context
def fmt_money(ctx: Any, value: Any, currency: str) -> str:
    return "-" if _missing(value) else w.money(value, currency, ctx.get("lang", "en"))


@pass_context
def say_filter(ctx: Any, message: Any) -> str:
    """An engine message in the page's language and wording (plan_fragment renders in face("page"))."""
    return text(None if _missing(message) else message, ctx.get("lang", "en"))


@pass_context
def verdict_filter(ctx: Any, option: OptionJSON) -> str:
    return option_text.verdict(option, ctx.get("lang", "en"))


@pass_context
def why_filter(ctx: Any, option: OptionJSON) -> str:
    return option_text.why(option, ctx.get("lang", "en"))


@pass_context
def site_name(ctx: Any, site_id: str) -> str:
    return w.site_name(site_id, ctx.get("lang", "en"))


@pass_context
def link_name(ctx: Any, link_id: str) -> str:
    return w.link_name(link_id, ctx.get("lang", "en"))


@pass_context
def hw_title(ctx: Any, option: OptionJSON) -> str:
    """ "8 × H800 SXM5 80GB in 1 server of 8 GPUs" """
    hw, lang = option["hardware"], ctx.get("lang", "en")
    return tr("{hardware} in {servers}", lang, hardware=w.hardware(hw["gpus"], hw["gpu"], lang),
              servers=option_text.servers_text(option, lang))


@pass_context
def span_filter(ctx: Any, option: OptionJSON, what: str) -> str:
    """ "(26–34 hours)": the option's 80 % range of a figure (report/option_text.span), "" without one."""
    return option_text.span(option, what, ctx.get("currency", ""), ctx.get("lang", "en"))


@pass_context
def layout_text(ctx: Any, option: OptionJSON) -> str:
    return option_text.layout(option, ctx.get("lang", "en"))


_URL = re.compile(r"https?://[^\s'\"()<>]+[^\s'\"()<>.,;:]")
ESTIMATE = N_("estimate")


@pass_context
def source_short(ctx: Any, source: str) -> dict[str, str]:
    """A price source as a Chinese page names it: the site it is from (its address's host) or "estimate", the English
    original only behind a link (``url``; ``title``: the original text)."""
    text, lang = str(source or ""), ctx.get("lang", "en")
    url = m.group(0) if (m := _URL.search(text)) else ""
    inner = url[url.rfind("http"):]  # an archived page: the site it archived
    host = re.sub(r"^www\.", "", inner.split("/")[2]) if len(inner.split("/")) > 2 else ""
    estimate = text.upper().startswith("ESTIMATE")
    name = " · ".join(x for x in (tr(ESTIMATE, lang) if estimate else "", host) if x) or text
    return {"name": name, "url": url, "title": text}


@cache
def environment() -> Environment:
    env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(["html"]),
                      auto_reload=False, trim_blocks=True, lstrip_blocks=True)  # templates ship with the package
    env.filters.update(num=fmt_num, duration=fmt_duration, money=fmt_money, layout=layout_text, span=span_filter,
                       say=say_filter, verdict=verdict_filter, why=why_filter, hw_title=hw_title, gpu_name=w.gpu_name,
                       site_name=site_name, link_name=link_name, source_short=source_short)
    env.globals.update(fit_status=fit_status)
    return env


def chart_svgs(out: PlanJSON, lang: str, curves: list[Any] | None = None,
               scale_gpu: str | None = None) -> dict[str, str]:
    """The result's charts as SVG: the same specs as the HTML report (:mod:`trainsizer.report.specs`)."""
    specs = plan_chart_specs(out, lang)
    if curves and scale_gpu:
        counts = sorted({pt.gpus for c in curves for pt in c.points})
        series: dict[str, list[float | None]] = {}
        for c in curves:
            by_count = {pt.gpus: pt.tokens_per_s for pt in c.points}
            series[text(c.label, lang)] = [by_count.get(n) for n in counts]
        specs["scale"] = scale_spec(scale_gpu, [float(n) for n in counts], series, lang)
    return {key: render_chart(spec) for key, spec in specs.items()}


def _rows(out: PlanJSON) -> list[int]:
    """Option indices for the rankings table: every ranked option, fastest first."""
    picked = {i for key in RANKING_ORDER for i in out["rankings"].get(key, [])}
    picked |= {r["option"] for r in (out.get("recommendation") or {}).get("runner_ups") or []}  # compared first
    return sorted(picked, key=lambda i: out["options"][i]["performance"]["step_time_s"])


def plan_fragment(out: PlanJSON, lang: str, curves: list[Any] | None = None,
                  scale_gpu: str | None = None, read_as: FormSaid | None = None) -> str:
    """The plan as the page's result: every engine message in the page's wording (form fields, not CLI flags);
    ``read_as``: the preset a model name was read as (``service.model_read_as``), said above the answer."""
    with face("page"):
        return _plan_fragment(out, lang, curves, scale_gpu, read_as)


def plan_fragment_head(out: PlanJSON, lang: str, read_as: FormSaid | None = None) -> str:
    """The start of :func:`plan_fragment` up to the end of its answer card (``result_head.html``, which the whole
    fragment includes): what the page can show before the charts and details are made."""
    with face("page"):
        return environment().get_template("result_head.html").render(
            L=labels(lang), lang=lang, out=out, rec=_recommended(out), answer=card(out, lang),
            **_said(read_as, lang))


def _said(said: FormSaid | None, lang: str) -> dict[str, str]:
    """What the card says of the form (``jobs.ui_answer``): ``read_as``, the preset a model name was read as;
    ``changed``, the settings the plan's layout does not keep and why."""
    model, changed = (said.model, said.changed) if said else (None, [])
    read_as = ""
    if model:
        read_as = tr(READ_AS_VARIANT if model.variant else READ_AS, lang, given=model.given,
                     preset=model.preset, variant=model.variant)
    lab = labels(lang)
    words = {"none": lab["ck_none"], "selective": lab["ck_selective"], "full": lab["ck_full"]}
    parts = [tr(CHANGED_PART, lang, field=lab[CHANGED_FIELDS[key]], given=words.get(given, given),
                used=words.get(used, used)) for key, given, used in changed]
    return {"read_as": read_as, "changed": tr(CHANGED, lang, changes=w.listing(parts, lang)) if parts else ""}


def _recommended(out: PlanJSON) -> OptionJSON | None:
    """The recommended option, else the fastest (the first), else None."""
    options, rec_idx = out["options"], out["rankings"].get("recommended", [])
    return options[rec_idx[0]] if rec_idx else (options[0] if options else None)


def _picks(out: PlanJSON, rows: list[int]) -> list[int]:
    """The two options the comparison opens on: the answer and its first runner-up (sized to the job, as the
    ranking shows it), else the answer and the next row, else the first two rows."""
    rec_idx = out["rankings"].get("recommended", [])
    if not rec_idx:
        return rows[:2]
    runner_ups = [r["option"] for r in (out.get("recommendation") or {}).get("runner_ups") or [] if r["option"] in rows]
    return [rec_idx[0]] + (runner_ups or [i for i in rows if i != rec_idx[0]])[:1]


def _plan_fragment(out: PlanJSON, lang: str, curves: list[Any] | None,
                   scale_gpu: str | None, read_as: FormSaid | None = None) -> str:
    lab = labels(lang)
    options = out["options"]
    rec_idx = out["rankings"].get("recommended", [])
    rec = _recommended(out)
    rows = _rows(out) if options else []
    badges = {i: [key for key in RANKING_ORDER if i in out["rankings"].get(key, [])] for i in rows}
    picks = _picks(out, rows)
    charts = chart_svgs(out, lang, curves, scale_gpu)
    detail = dict(zip(("bom", "site", "cost"), sections.detail(out, rec, lang), strict=True)) if rec else {}
    gap = sections.quoted(out)
    return environment().get_template("result.html").render(
        L=lab, lang=lang, out=out, rec=rec, rec_is_recommended=bool(rec_idx), rows=rows, badges=badges,
        picks=picks, charts=charts, currency=out["currency"], scale_gpu=scale_gpu, answer=card(out, lang),
        detail=detail, quote_verdict=text(gap["message"], lang) if gap else None,
        **_said(read_as, lang),
        verdicts=[v for c in (curves or []) for v in c.verdicts()])


def index_page(lang: str, model_ids: list[str], gpus: list[dict[str, Any]], sites: list[dict[str, Any]],
               default_site: str, vouchers: list[dict[str, Any]] | None = None,
               currency_sites: dict[str, str] | None = None) -> str:
    """The form: the CLI's plan choices with its defaults (objective, runs per month, voucher, time value), and the
    training frameworks with a profile (``trainsizer.frameworks``), each by its own name; ``currency_sites``: the
    site the form moves to when the user picks each currency before choosing a site (app.js)."""
    lab = labels(lang)
    objectives = [(o, lab[f"objective_{o}"]) for o in OBJECTIVES]
    return environment().get_template("index.html").render(
        L=lab, lang=lang, model_ids=model_ids, gpus=gpus, sites=sites, default_site=default_site,
        currency_sites=currency_sites or {}, choices=labelled(FORM_CHOICES, lang),
        default_currency=default_currency(lang),
        objectives=objectives, default_objective=DEFAULT_OBJECTIVE,
        frameworks=[(f, load_profile(f).name) for f in families()],
        framework_assumed=tr(FRAMEWORK_ASSUMED, lang, names=w.listing(
            sorted({load_profile(assumed(m)).name for m in FORM_CHOICES["methods"]}), lang)),
        vouchers=[(v["id"], w.voucher_name(v["id"], lang)) for v in vouchers or []])
