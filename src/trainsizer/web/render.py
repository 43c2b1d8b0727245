"""Server-side rendering: the page, the plan result fragment and its charts (``report.charts`` SVG)."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, Undefined, select_autoescape

from trainsizer.report.charts import bar_chart, line_chart, pareto_chart
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
    env.filters.update(num=fmt_num, duration=fmt_duration, money=fmt_money, layout=layout_text)
    return env


def _memory_chart(option: dict[str, Any], lab: dict[str, str]) -> str:
    detail = option["memory"].get("detail_gib") or option["memory"]["components_gib"]
    items = [(k.replace("_", " "), float(v)) for k, v in detail.items() if v]
    return bar_chart(lab["chart_memory"], [k for k, _ in items], [v for _, v in items], "GiB")


def _cost_chart(option: dict[str, Any], lab: dict[str, str], currency: str) -> str | None:
    cost = option.get("cost")
    if not cost or not cost.get("series"):
        return None
    series = cost["series"]
    lines: dict[str, list[float | None]] = {lab["buy"]: [row["buy"] for row in series]}
    if any("rent" in row for row in series):
        lines[lab["rent"]] = [row.get("rent") for row in series]
    return line_chart(lab["chart_cost"], [row["month"] for row in series], lines, lab["month"], currency)


def _pareto_chart(options: list[dict[str, Any]], front: list[int], lab: dict[str, str]) -> str:
    timed = all(o["performance"].get("time_to_train_s") for o in options)
    points = []
    for o in options:
        perf = o["performance"]
        y = perf["time_to_train_s"] / 3600 if timed else perf["step_time_s"]
        points.append((float(o["hardware"]["gpus"]), float(y), o["hardware"]["gpu"]))
    y_label = f"{lab['time_to_train']} ({lab['hours']})" if timed else f"{lab['step_time']} ({lab['seconds']})"
    return pareto_chart(lab["chart_pareto"], points, front, lab["gpus"], y_label)


def scale_chart(curves: list[Any], lab: dict[str, str]) -> str:
    counts = sorted({pt.gpus for c in curves for pt in c.points})
    series: dict[str, list[float | None]] = {}
    for c in curves:
        by_count = {pt.gpus: pt.tokens_per_s for pt in c.points}
        series[c.label] = [by_count.get(n) for n in counts]
    return line_chart(lab["chart_scale"], [float(n) for n in counts], series, lab["gpus"], lab["tokens_per_s"],
                      log_x=True)


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
    charts: dict[str, str | None] = {}
    if rec is not None:
        charts["memory"] = _memory_chart(rec, lab)
        charts["cost"] = _cost_chart(rec, lab, out["currency"])
        charts["pareto"] = _pareto_chart(options, out["rankings"].get("pareto_time_vs_gpus", []), lab)
    if curves:
        charts["scale"] = scale_chart(curves, lab)
    return environment().get_template("result.html").render(
        L=lab, lang=lang, out=out, rec=rec, rec_is_recommended=bool(rec_idx), rows=rows, badges=badges,
        picks=picks, charts=charts, currency=out["currency"], scale_gpu=scale_gpu,
        verdicts=[v for c in (curves or []) for v in c.verdicts()])


def index_page(lang: str, model_ids: list[str], gpus: list[dict[str, Any]], sites: list[dict[str, Any]],
               default_site: str) -> str:
    return environment().get_template("index.html").render(
        L=labels(lang), lang=lang, model_ids=model_ids, gpus=gpus, sites=sites, default_site=default_site,
        choices=FORM_CHOICES, default_currency="CNY" if lang == "zh-CN" else "USD")
