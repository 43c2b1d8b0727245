"""The report model: the plan, its charts (as data series) and every assumption with its source. The
renderers in :mod:`trainsizer.report` turn it into HTML (inline SVG), Markdown or JSON."""

from __future__ import annotations

import datetime
from typing import Any

from trainsizer.i18n import resolve_lang
from trainsizer.scenario import Scenario
from trainsizer.workflows.plan_job import PlanRequest, plan_job


def assumptions(out: dict[str, Any], pick: dict[str, Any] | None) -> list[dict[str, str]]:
    from trainsizer.cost.prices import split_cited
    from trainsizer.datafiles import packaged_yaml
    from trainsizer.hardware.catalog import default_catalog
    from trainsizer.system.sites import default_sites

    rows: list[dict[str, str]] = []
    cat = default_catalog()
    if pick:
        gpu = cat.accelerator(pick["hardware"]["gpu"])
        rows.append({"what": f"GPU {gpu.id}: {gpu.memory_gib:g} GiB, {gpu.dense_tflops.bf16} TFLOPS bf16 dense, "
                             f"{gpu.memory_bandwidth_gbps:g} GB/s, {gpu.tdp_w:g} W",
                     "source": gpu.source, "as_of": gpu.as_of})
        for key in ("intra_node", "inter_node"):
            link_id = pick["hardware"].get(key)
            if link_id:
                link = cat.link(link_id)
                rows.append({"what": f"link {link.id}: {link.per_direction_gbps:g} GB/s per direction",
                             "source": link.source, "as_of": link.as_of})
    site = default_sites().get(out["site"])
    if site:
        rows.append({"what": f"site {site.id}: {site.rack_power_kw:g} kW/rack, {site.cooling}, PUE {site.pue:g}, "
                             f"{site.electricity_price:g} {site.currency}/kWh", "source": site.source,
                     "as_of": site.as_of})
    for package, name, label in (("trainsizer.estimate", "memory_model.yaml", "memory model"),
                                 ("trainsizer.estimate", "performance_model.yaml", "step-time model"),
                                 ("trainsizer.system", "sizing.yaml", "system sizing"),
                                 ("trainsizer.plan", "planner.yaml", "planner")):
        data = packaged_yaml(package, name)
        for section, body in data.items():
            if isinstance(body, dict) and body.get("source"):
                rows.append({"what": f"{label}: {section}", "source": str(body["source"]),
                             "as_of": str(data.get("as_of", ""))})
    if pick and pick.get("availability"):
        av = pick["availability"]
        for acq in ("rent", "buy"):
            entry = av.get(acq) or {}
            if entry.get("source"):
                rows.append({"what": f"availability to {acq}: {pick['hardware']['gpu']} in the {av['market']}",
                             "source": entry["source"], "as_of": entry.get("as_of", "")})
    timed = (out.get("recommendation") or {}).get("time_value") or {}
    if timed.get("assumed") and timed.get("per_hour"):
        rows.append({"what": f"time valued at {timed['per_hour']:,.0f} {timed['currency']} an hour of the run (one "
                             "engineer's loaded pay, assumed): the answer weighs it against the cost",
                     "source": str(timed.get("source") or ""),
                     "as_of": str(timed.get("as_of") or "")})
    for used in out.get("prices_used", []):
        item, source, as_of = split_cited(used)
        rows.append({"what": item, "source": source, "as_of": as_of})
    return rows


def _scaling_chart(pick: dict[str, Any] | None, job: Scenario, arch: Any, max_gpus: int) -> dict[str, dict[str, Any]]:
    """The one chart the plan output has no data for: the pick's throughput vs GPU count per link (it needs
    more planner runs). Memory, cost and Pareto are drawn from the plan itself (report/specs.py)."""
    from trainsizer.plan.scale import scale

    if not pick:
        return {}
    curves = scale(job, arch, pick["hardware"]["gpu"], min(max_gpus, 64))
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
    return {"scaling": {"kind": "line", "title": f"Throughput vs GPU count: {pick['hardware']['gpu']}",
                        "x": [pt.gpus for pt in kept[0].points],
                        "series": {c.label: [pt.tokens_per_s for pt in c.points] for c in kept},
                        "x_label": "GPUs", "y_label": "tokens/s", "log_x": True}}


def build_report(job: Scenario, req: PlanRequest, job_label: str = "JOB.yaml") -> dict[str, Any]:
    """The report model of a job's plan under ``req``: the recommendation, its charts and its sources."""
    from trainsizer.models.params import count_params

    lang = resolve_lang(req.lang)
    planned = plan_job(job, req, job_label)
    out, arch = planned.out, planned.arch
    options = out["options"]
    pick_idx = (out["rankings"].get("recommended") or [None])[0]
    pick = options[pick_idx] if pick_idx is not None else (options[0] if options else None)
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
        "recommended": pick,
        "charts": _scaling_chart(pick, job, arch, req.max_gpus),
        "assumptions": assumptions(out, pick),
    }
