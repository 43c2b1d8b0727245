"""Server-side rendering: the page, the plan result fragment and its charts (``report.charts`` SVG)."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, Undefined, select_autoescape

from trainsizer.report.charts import fit_status, render_chart
from trainsizer.report.specs import plan_chart_specs, scale_spec
from trainsizer.web.labels import labels

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
}


# CLI flags that messages from the engine name, as the page's form calls them (a label key), or in words
FLAG_LABELS = {"--max-gpus": "max_gpus", "--deadline": "deadline_days", "--site": "site", "--gpu": "gpus_allowed",
               "--gpus-per-node": "gpus_per_node", "--budget": "budget", "--currency": "currency",
               "--horizon": "horizon", "--utilisation": "utilisation"}
FLAG_WORDS = {"--prices": "your own price data", "--sites": "your own site list", "--catalog": "your own GPU catalog",
              "--calibration": "a calibration profile", "--fx": "the exchange rate", "--lang": "the language"}
_ADD_WITH = re.compile(r"(\s*\()?add (?:one|it|them) with --prices(?: FILE)?(?(1)\))")
_WITHOUT = re.compile(r"\bwithout (--[a-z][a-z0-9-]*)")
_FLAG_VALUE = re.compile(r"(--[a-z][a-z0-9-]*)[ =](\d[\w.]*)")
_FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")


def page_text(text: Any, lang: str = "en") -> str:
    """A message of the engine as the page shows it: CLI flags (``--max-gpus 32``, ``without --deadline``,
    ``add one with --prices``) become the form's field names or plain words; other text is unchanged."""
    if _missing(text):
        return ""
    lab = labels(lang)

    def name(flag: str) -> str:
        if flag in FLAG_LABELS:
            return f"“{lab[FLAG_LABELS[flag]]}”"
        return FLAG_WORDS.get(flag, flag.lstrip("-").replace("-", " "))

    out = _ADD_WITH.sub(lambda m: f"{' (' if m.group(1) else ''}the built-in price data has none"
                        f"{')' if m.group(1) else ''}", str(text))
    out = _WITHOUT.sub(lambda m: f"with {name(m.group(1))} left empty", out)
    out = _FLAG_VALUE.sub(lambda m: f"{name(m.group(1))}: {m.group(2)}", out)
    return _FLAG.sub(lambda m: name(m.group(1)), out)


def _missing(value: Any) -> bool:
    return value is None or isinstance(value, Undefined)


def fmt_num(value: Any, digits: int = 0) -> str:
    if _missing(value):
        return "-"
    return f"{float(value):,.{digits}f}"


def fmt_duration(seconds: Any, lang: str = "en") -> str:
    if _missing(seconds):
        return "-"
    s = float(seconds)
    zh = lang == "zh-CN"
    if s < 120:
        return f"{s:.3g} {'秒' if zh else 's'}"
    if s < 7200:
        return f"{s / 60:.1f} {'分钟' if zh else 'min'}"
    if s < 172800:
        return f"{s / 3600:.1f} {'小时' if zh else 'h'}"
    return f"{s / 86400:.1f} {'天' if zh else 'days'}"


def fmt_money(value: Any, currency: str) -> str:
    if _missing(value):
        return "-"
    v = float(value)
    if abs(v) >= 1e6:
        return f"{v / 1e6:,.2f} M {currency}"
    return f"{v:,.0f} {currency}"


def layout_text(option: dict[str, Any]) -> str:
    p, t = option["parallel"], option["training"]
    parts = [f"tp{p['tp']}", f"pp{p['pp']}" + (f"×v{p['virtual_pp']}" if p["virtual_pp"] > 1 else ""),
             f"cp{p['cp']}", f"dp{p['dp']}", f"zero{p['zero']}"]
    if p["distributed_optimizer"]:
        parts.append("dist-opt")
    if p["offload"] != "none":
        parts.append(f"offload {p['offload']}")
    parts += [f"mbs {t['micro_batch_size']}", f"ckpt {t['activation_checkpointing']}"]
    return " · ".join(parts)


@cache
def environment() -> Environment:
    env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(["html"]),
                      auto_reload=False, trim_blocks=True, lstrip_blocks=True)  # templates ship with the package
    env.filters.update(num=fmt_num, duration=fmt_duration, money=fmt_money, layout=layout_text, page=page_text)
    env.globals.update(fit_status=fit_status)
    return env


def chart_svgs(out: dict[str, Any], lang: str, curves: list[Any] | None = None,
               scale_gpu: str | None = None) -> dict[str, str]:
    """The result's charts as SVG: the same specs as the HTML report (:mod:`trainsizer.report.specs`)."""
    specs = plan_chart_specs(out, lang)
    if curves and scale_gpu:
        counts = sorted({pt.gpus for c in curves for pt in c.points})
        series: dict[str, list[float | None]] = {}
        for c in curves:
            by_count = {pt.gpus: pt.tokens_per_s for pt in c.points}
            series[c.label] = [by_count.get(n) for n in counts]
        specs["scale"] = scale_spec(scale_gpu, [float(n) for n in counts], series, lang)
    return {key: render_chart(spec) for key, spec in specs.items()}


def _rows(out: dict[str, Any]) -> list[int]:
    """Option indices for the rankings table: every ranked option, fastest first."""
    picked = {i for key in RANKING_ORDER for i in out["rankings"].get(key, [])}
    return sorted(picked, key=lambda i: out["options"][i]["performance"]["step_time_s"])


def plan_fragment(out: dict[str, Any], lang: str, curves: list[Any] | None = None,
                  scale_gpu: str | None = None) -> str:
    lab = labels(lang)
    options = out["options"]
    rec_idx = out["rankings"].get("recommended", [])
    rec = options[rec_idx[0]] if rec_idx else (options[0] if options else None)
    rows = _rows(out) if options else []
    badges = {i: [key for key in RANKING_ORDER if i in out["rankings"].get(key, [])] for i in rows}
    picks = rows[:2] if not rec_idx else [rec_idx[0]] + [i for i in rows if i != rec_idx[0]][:1]
    charts = chart_svgs(out, lang, curves, scale_gpu)
    return environment().get_template("result.html").render(
        L=lab, lang=lang, out=out, rec=rec, rec_is_recommended=bool(rec_idx), rows=rows, badges=badges,
        picks=picks, charts=charts, currency=out["currency"], scale_gpu=scale_gpu,
        verdicts=[v for c in (curves or []) for v in c.verdicts()])


def index_page(lang: str, model_ids: list[str], gpus: list[dict[str, Any]], sites: list[dict[str, Any]],
               default_site: str) -> str:
    return environment().get_template("index.html").render(
        L=labels(lang), lang=lang, model_ids=model_ids, gpus=gpus, sites=sites, default_site=default_site,
        choices=FORM_CHOICES, default_currency="CNY" if lang == "zh-CN" else "USD")
