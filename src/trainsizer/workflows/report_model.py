"""The report model: the plan, its charts (as data series) and every assumption with its source. The
renderers in :mod:`trainsizer.report` turn it into HTML (inline SVG), Markdown or JSON."""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any

from trainsizer.i18n import resolve_lang
from trainsizer.messages import money, msg
from trainsizer.models.architecture import Architecture
from trainsizer.plan.option import PlanOption
from trainsizer.scenario import Scenario
from trainsizer.workflows.plan_job import PlanOutcome, PlanRequest, plan_job

if TYPE_CHECKING:  # the JSON's types, for annotations
    from trainsizer.workflows.plan_schema import AssumptionJSON, PlanJSON, ReportJSON


def picked(outcome: PlanOutcome) -> int | None:
    """The index of the option a report is about: the recommended one, else the first (None: no option)."""
    options = outcome.result.options
    recommended = outcome.result.rankings.get("recommended") or []
    return recommended[0] if recommended else (0 if options else None)


def assumptions(out: PlanJSON, pick: PlanOption | None) -> list[AssumptionJSON]:
    from trainsizer.datafiles import packaged_yaml
    from trainsizer.hardware.catalog import default_catalog
    from trainsizer.system.sites import default_sites

    rows: list[AssumptionJSON] = []
    cat = default_catalog()
    if pick:
        gpu = cat.accelerator(pick.gpu)
        rows.append({"what": msg("assume.gpu", gpu=gpu.id, gib=gpu.memory_gib, tflops=gpu.dense_tflops.bf16 or 0,
                                 gbps=gpu.memory_bandwidth_gbps, watts=gpu.tdp_w),
                     "source": gpu.source, "as_of": gpu.as_of})
        for link_id in (pick.scenario.hardware.intra_node, pick.inter_node):
            if link_id:
                link = cat.link(link_id)
                rows.append({"what": msg("assume.link", link=link.id, gbps=link.per_direction_gbps),
                             "source": link.source, "as_of": link.as_of})
    site = default_sites().get(out["site"])
    if site:
        rows.append({"what": msg("assume.site", site=site.id, kw=site.rack_power_kw, cooling=site.cooling, pue=site.pue,
                                 price=money(site.electricity_price, site.currency)), "source": site.source,
                     "as_of": site.as_of})
    for package, name, code in (("trainsizer.estimate", "memory_model.yaml", "assume.memory_model"),
                                ("trainsizer.estimate", "performance_model.yaml", "assume.step_model"),
                                ("trainsizer.system", "sizing.yaml", "assume.system_sizing"),
                                ("trainsizer.plan", "planner.yaml", "assume.planner")):
        data = packaged_yaml(package, name)
        for section, body in data.items():
            if isinstance(body, dict) and body.get("source"):
                rows.append({"what": msg(code, section=section), "source": str(body["source"]),
                             "as_of": str(data.get("as_of", ""))})
    av = pick.pricing.availability if pick and pick.pricing else None
    if pick and av:
        for acq, entry in (("rent", av.rent), ("buy", av.buy)):
            if entry.source:
                rows.append({"what": msg(f"price.availability_{acq}", gpu=pick.gpu, market=av.market),
                             "source": entry.source, "as_of": entry.as_of})
    timed = (out.get("recommendation") or {}).get("time_value") or {}
    if timed.get("assumed") and timed.get("per_hour"):
        rows.append({"what": msg("plan.time_value_assumed", money=money(timed["per_hour"], timed["currency"])),
                     "source": str(timed.get("source") or ""),
                     "as_of": str(timed.get("as_of") or "")})
    for used in out.get("prices_used", []):
        rows.append({"what": used["item"], "source": used["source"]
                     + (f" · {used['relay']}" if used.get("relay") else ""), "as_of": used["as_of"]})
    return rows


def _scaling_chart(pick: PlanOption | None, job: Scenario, arch: Architecture,
                   max_gpus: int, max_oom_risk: float) -> dict[str, dict[str, Any]]:
    """The one chart the plan output has no data for: the pick's throughput vs GPU count per link (it needs
    more planner runs), each count at its fastest layout within the plan's ``max_oom_risk``. Memory, cost and Pareto
    are drawn from the plan itself (report/specs.py)."""
    from trainsizer.plan.scale import scale

    if not pick:
        return {}
    curves = scale(job, arch, pick.gpu, min(max_gpus, 64), max_oom_risk=max_oom_risk)
    # one network per scale-up link keeps the chart readable: the first (fastest) fabric
    seen: set[tuple[str, bool]] = set()
    kept = []
    for c in curves:
        key = (c.intra_node, c.data_parallel_only)
        if key not in seen:
            seen.add(key)
            kept.append(c)
    if not kept:
        return {}
    return {"scaling": {"kind": "line", "title": f"Throughput vs GPU count: {pick.gpu}",
                        "x": [pt.gpus for pt in kept[0].points],
                        "series": {c.label: [pt.tokens_per_s for pt in c.points] for c in kept},
                        "x_label": "GPUs", "y_label": "tokens/s", "log_x": True}}


def build_report(job: Scenario, req: PlanRequest, job_label: str = "JOB.yaml") -> ReportJSON:
    """The report model of a job's plan under ``req``: the recommendation, its charts and its sources."""
    from trainsizer.models.param_counts import count_params

    lang = resolve_lang(req.lang)
    planned = plan_job(job, req, job_label)
    out, arch = planned.out, planned.arch
    pick_idx = picked(planned)
    pick = None if pick_idx is None else planned.result.options[pick_idx]
    counts = count_params(arch)
    return {
        "title": f"Training plan: {arch.name or arch.model_type}",
        "generated": datetime.date.today().isoformat(),
        "lang": lang,
        "job": {"model": arch.name or arch.model_type, "params": counts.total, "active_params": counts.active,
                "method": job.training.method, "precision": job.training.precision,
                "optimizer": job.training.optimizer, "seq_len": job.training.seq_len,
                "tokens": job.training.tokens, "source": job_label},
        "plan": out,
        "recommended": None if pick_idx is None else out["options"][pick_idx],
        "charts": _scaling_chart(pick, job, arch, req.max_gpus, req.max_oom_risk),
        "assumptions": assumptions(out, pick),
    }
