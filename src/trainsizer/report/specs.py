"""Chart specs (data to draw, :func:`trainsizer.report.charts.render_chart`) from a plan's output, in
English or Chinese: the memory of the recommended option, its cost over time, the Pareto chart of every
option with the recommended one marked, and a scaling curve. The web page and the HTML report both
build their charts here, so they draw the same specs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from trainsizer.i18n import N_, tr
from trainsizer.report.words import gpu_name
from trainsizer.workflows.defaults import TIGHT_FRACTION

if TYPE_CHECKING:  # the plan document's keys (workflows.plan_schema); the specs' keys
    from trainsizer.report.chart_spec import ChartSpec, LineSpec, Mark, MemorySpec, ParetoSpec
    from trainsizer.workflows.plan_schema import MemoryJSON, OptionJSON, PlanJSON

TEXT: dict[str, str] = {
    "memory": N_("Memory per GPU: {gpu}"),
    "cost": N_("Cost over time: buy vs rent ({currency})"),
    "pareto": N_("Time vs GPU count (Pareto front)"),
    "pareto_step": N_("Step time vs GPU count (Pareto front)"),
    "scale": N_("Throughput vs GPU count: {gpu}"),
    "front": N_("Pareto front"),
    "log": N_(" (log scale)"),
    "recommended": N_("recommended: {n} × {gpu}"),
    "fastest": N_("fastest: {n} × {gpu}"),
    "gpus": N_("GPUs"),
    "days": N_("days to train"),
    "hours": N_("hours to train"),
    "seconds": N_("step time (s)"),
    "months": N_("months"),
    "tokens_per_s": N_("tokens/s"),
    "buy": N_("buy (cumulative)"),
    "rent": N_("rent (cumulative)"),
    "total": N_("total on the device"),
    "cache": N_("allocator cache (reserved − allocated)"),
    "context": N_("CUDA context, NCCL (device − reserved)"),
    "capacity": N_("capacity {cap:.1f} GiB"),
    "margin": N_("safety margin: the top {pct:.0%}"),
    "fits": N_("fits: {used:.1f} of {cap:.1f} GiB ({share:.0%})"),
    "tight": N_("tight: {used:.1f} of {cap:.1f} GiB ({share:.0%}, above {limit:.0%})"),
    "no_fit": N_("does not fit: {used:.1f} of {cap:.1f} GiB ({share:.0%})"),
    "range": N_("range (80 %): {lo:.1f}–{hi:.1f} GiB, from the model's errors on published runs"),
    "tight_why": N_("allocator fragmentation and variable-length batches can push the peak past capacity"),
}
PART_NAMES = {  # estimate/memory.py component names
    "weights": N_("weights"),
    "lora_adapters": N_("LoRA adapters"),
    "master_weights": N_("master weights"),
    "optimizer_states": N_("optimizer states"),
    "gradients": N_("gradients"),
    "activations": N_("activations"),
    "logits_and_loss": N_("logits and loss"),
    "backward_working_set": N_("backward working set"),
    "optimizer_step_temporaries": N_("optimizer step temporaries"),
    "buffers": N_("buffers"),
    "full_state_dict": N_("full checkpoint on every rank"),
    "optimizer": N_("optimizer"),
    "other": N_("other"),
}


def _t(key: str, lang: str, **kw: Any) -> str:
    return tr(TEXT[key], lang, **kw)


def pick_index(out: PlanJSON) -> int | None:
    """The option the plan recommends, else the first (fastest) one, else None."""
    rec = out["rankings"].get("recommended") or []
    return rec[0] if rec else (0 if out["options"] else None)


def memory_parts(memory: MemoryJSON, lang: str = "en") -> tuple[list[str], list[float]]:
    """Named parts of the device memory that add up to ``device_gib``: the allocated components, then the
    allocator's cache (reserved - allocated) and the CUDA context and NCCL (device - reserved)."""
    detail = memory.get("detail_gib") or memory["components_gib"]
    parts = [(tr(PART_NAMES[k], lang) if k in PART_NAMES else k.replace("_", " "), float(v))
             for k, v in detail.items() if v]
    allocated = sum(v for _, v in parts)
    device = float(memory["device_gib"])
    rest = device - allocated
    cache = min(max(float(memory.get("reserved_gib", allocated)) - allocated, 0.0), max(rest, 0.0))
    parts += [(_t("cache", lang), cache), (_t("context", lang), rest - cache)]
    parts = [(name, value) for name, value in parts if value]
    return [name for name, _ in parts], [value for _, value in parts]


def memory_spec(option: OptionJSON, lang: str = "en") -> MemorySpec:
    """The recommended option's memory per GPU: parts summing to the headline, capacity and safety margin."""
    mem, hw = option["memory"], option["hardware"]
    used, cap = float(mem["device_gib"]), float(mem["capacity_gib"])
    labels, values = memory_parts(mem, lang)
    from trainsizer.report.charts import fit_status  # the SVG drawing loads only where charts are drawn

    status = fit_status(used, cap, mem.get("fits"))
    kw = {"used": used, "cap": cap, "share": used / cap if cap else 0.0, "limit": TIGHT_FRACTION}
    span = (option.get("range") or {}).get("device_gib")  # the 80 % range (workflows/robust.py), an error bar
    title = _t("memory", lang, gpu=gpu_name(hw["gpu"], lang))
    return {"kind": "memory", "title": title, "labels": labels,
            "values": values, "unit": "GiB", "total": used, "capacity": cap, "status": status,
            "total_range": list(span) if span else None,
            "text": {"total": _t("total", lang), "capacity": _t("capacity", lang, cap=cap),
                     "margin": _t("margin", lang, pct=1 - TIGHT_FRACTION), "status": _t(status, lang, **kw),
                     "reason": _t("tight_why", lang) if status == "tight" else "",
                     "range": _t("range", lang, lo=span[0], hi=span[1]) if span else ""}}


def cost_spec(option: OptionJSON, currency: str, lang: str = "en") -> LineSpec | None:
    cost = option.get("cost")
    if not cost or not cost.get("series"):
        return None
    series = cost["series"]
    lines: dict[str, list[float | None]] = {_t("buy", lang): [row["buy"] for row in series]}
    if cost.get("rent"):
        lines[_t("rent", lang)] = [row.get("rent") for row in series]
    return {"kind": "line", "title": _t("cost", lang, currency=currency), "x": [row["month"] for row in series],
            "series": lines, "x_label": _t("months", lang), "y_label": currency,
            "log_note": _t("log", lang), "marks": _rent_range(option, series)}


def _rent_range(option: OptionJSON, series: list[dict[str, float]]) -> list[Mark]:
    """The rent line's 80 % range at the horizon's end, as an error bar, where the model's error moves it: with the
    workload stated as runs a month, the hours rented scale with the time to train (``cost.per_run.Workload.busy``;
    its cap at a busy set is left aside). With a stated utilisation or one run the line is the prices' alone."""
    pr, span = option.get("per_run") or {}, (option.get("range") or {}).get("time_to_train_s")
    seconds, last = option["performance"].get("time_to_train_s"), series[-1].get("rent")
    workload = pr.get("workload")  # a message (its code says how the workload was stated), or its JSON
    code = workload.get("code") if isinstance(workload, dict) else getattr(workload, "code", None)
    if not span or not seconds or last is None or code != "cost.workload_runs":
        return []
    return [{"x": series[-1]["month"], "y": last, "y_range": [last * span[0] / seconds, last * span[1] / seconds],
             "testid": "cost-range"}]


def pareto_spec(out: PlanJSON, lang: str = "en") -> ParetoSpec | None:
    """Time to train (days, or hours when every option takes under two days; step time without tokens) vs
    GPU count of every option, the Pareto front, and the recommended option marked."""
    options = out["options"]
    if not options:
        return None
    times = [o["performance"].get("time_to_train_s") for o in options]  # None where the job states no tokens
    timed = all(times)
    if timed:
        longest = max(t for t in times if t)
        div, y_key = (86400, "days") if longest >= 2 * 86400 else (3600, "hours")
    else:
        div, y_key = 1, "seconds"
    field = "time_to_train_s" if timed else "step_time_s"
    points = []
    for o in options:
        hw, perf = o["hardware"], o["performance"]
        points.append((float(hw["gpus"]), perf[field] / div, gpu_name(hw["gpu"], lang)))
    idx = pick_index(out)
    label_key = "recommended" if out["rankings"].get("recommended") else "fastest"
    hw = options[idx]["hardware"] if idx is not None else {"gpus": 0, "gpu": ""}
    return {"kind": "pareto", "title": _t("pareto" if timed else "pareto_step", lang), "points": points,
            "front": out["rankings"].get("pareto_time_vs_gpus", []), "x_label": _t("gpus", lang),
            "y_label": _t(y_key, lang), "recommended": idx, "front_label": _t("front", lang),
            "log_note": _t("log", lang),
            "recommended_label": _t(label_key, lang, n=hw["gpus"], gpu=gpu_name(hw["gpu"], lang) if hw["gpu"] else ""),
            "recommended_range": _range(options[idx], field, div) if idx is not None else None}


def _range(option: OptionJSON, field: str, div: float) -> list[float] | None:
    """The option's 80 % range of the charted time, in the chart's unit (``workflows/robust.py``)."""
    span = (option.get("range") or {}).get(field)
    return [span[0] / div, span[1] / div] if span else None


def scale_spec(gpu: str, counts: list[float], series: dict[str, list[float | None]],
               lang: str = "en") -> LineSpec:
    return {"kind": "line", "title": _t("scale", lang, gpu=gpu_name(gpu, lang)), "x": counts, "series": series,
            "x_label": _t("gpus", lang), "y_label": _t("tokens_per_s", lang), "log_note": _t("log", lang)}


def plan_chart_specs(out: PlanJSON, lang: str = "en") -> dict[str, ChartSpec]:
    """Memory, cost and Pareto specs of a plan's output (those it has data for)."""
    idx = pick_index(out)
    if idx is None:
        return {}
    pick = out["options"][idx]
    specs = {"memory": memory_spec(pick, lang), "cost": cost_spec(pick, out["currency"], lang),
             "pareto": pareto_spec(out, lang)}
    return {k: v for k, v in specs.items() if v}
