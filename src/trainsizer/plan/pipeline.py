"""From a job and constraints to ranked, priced recommendations: the one pipeline behind
``trainsizer plan``, ``trainsizer report`` and the web planner."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainsizer.datafiles import user_yaml
from trainsizer.errors import InputError
from trainsizer.plan.search import PlanResult, rank_options
from trainsizer.scenario import Scenario, scenario_from_dict


def job_from_dict(data: Any, gpu_ids: list[str] | tuple[str, ...] | None = None, source: str = "job") -> Scenario:
    """A job: a scenario whose parallel and hardware blocks may be left out (the planner fills them)."""
    if not isinstance(data, dict):
        raise InputError("job", f"{source} must be a YAML mapping with model and training")
    data = {**data}
    parallel = dict(data.get("parallel") or {})
    data["hardware"] = data.get("hardware") or {"gpu": (list(gpu_ids or []) or ["h100-sxm5-80gb"])[0]}
    for key in ("tp", "pp", "cp", "virtual_pp", "zero", "offload", "sequence_parallel", "distributed_optimizer"):
        parallel.pop(key, None)  # the planner chooses these
    parallel["gpus"] = 1
    data["parallel"] = parallel
    return scenario_from_dict(data, source=source)


def load_job(path: str | Path, gpu_ids: list[str] | tuple[str, ...] | None = None) -> Scenario:
    return job_from_dict(user_yaml(path, field="job"), gpu_ids, str(path))


def parse_duration(text: str | None) -> float | None:
    """'36h', '7d', '90m', '3600s' or plain seconds -> seconds."""
    if text is None:
        return None
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
    t = str(text).strip().lower()
    try:
        value = float(t[:-1]) * units[t[-1]] if t and t[-1] in units else float(t)
    except ValueError:
        raise InputError("--deadline", f"{text!r}; accepted: a number with s, m, h, d or w (e.g. 7d, 36h)") from None
    if value <= 0:
        raise InputError("--deadline", "must be positive")
    return value


@dataclass(frozen=True)
class PlanRequest:
    gpus: tuple[str, ...] = ()
    max_gpus: int = 1024
    deadline_s: float | None = None
    gpus_per_node: int | None = None
    top: int = 10
    site: str | None = None
    budget: float | None = None
    currency: str | None = None
    horizon_years: float = 3.0
    utilisation: float = 0.7
    prices: tuple[Path, ...] = ()
    sites: tuple[Path, ...] = ()
    catalogs: tuple[Path, ...] = ()
    lang: str | None = None
    calibration: Path | None = None


def total_cost(option: dict[str, Any]) -> float:
    cost = option.get("cost")
    if not cost:
        return float("inf")
    rent = cost["rent"]["total"] if cost.get("rent") else float("inf")
    return min(cost["buy"]["total"], rent)


def recommended(options: list[dict[str, Any]], has_deadline: bool) -> list[int]:
    """Among the options that fit the site and have prices: the cheapest that meets the deadline when one
    is given, else the fastest."""
    ok = [i for i, o in enumerate(options) if o.get("cost") and (o["system"].get("site_fit") or {}).get("fits", True)]
    if not ok:
        return []
    if has_deadline:
        return [min(ok, key=lambda i: total_cost(options[i]))]
    return [min(ok, key=lambda i: options[i]["performance"]["step_time_s"])]


def run_plan(job: Scenario, req: PlanRequest, job_label: str = "JOB.yaml") -> tuple[PlanResult, dict[str, Any]]:
    from trainsizer.cost.prices import load_prices
    from trainsizer.hardware.catalog import load_catalog
    from trainsizer.models.catalog import resolve_model
    from trainsizer.plan.recommend import recommend_options, timeline, verification_steps
    from trainsizer.plan.search import Constraints, plan
    from trainsizer.report.i18n import resolve_lang
    from trainsizer.system.sites import default_site_id, get_site, load_sites

    cat = load_catalog(list(req.catalogs))
    for gid in req.gpus:
        cat.accelerator(gid, "--gpu")
    all_sites = load_sites(list(req.sites))
    site = get_site(req.site or default_site_id(all_sites), all_sites)
    money = load_prices(req.currency or ("CNY" if resolve_lang(req.lang) == "zh-CN" else "USD"), list(req.prices))
    if req.deadline_s and not job.training.tokens:
        raise InputError("--deadline", "needs training.tokens in the job to compute the time to train")
    if req.budget is not None and req.budget <= 0:
        raise InputError("--budget", "must be positive")
    from trainsizer.calibrate import load_calibration

    arch = resolve_model(job.model)
    memory_params, perf_params = load_calibration(req.calibration)
    result = plan(job, arch, Constraints(req.gpus, req.max_gpus, req.gpus_per_node, req.deadline_s, req.top), cat,
                  memory_params, perf_params)
    options = recommend_options(result.options, job, arch, site, money, req.horizon_years, req.utilisation,
                                req.budget, cat)
    result.options = options
    result.rankings = rank_options(options, req.top)
    result.rankings["recommended"] = recommended(options, req.deadline_s is not None)
    if req.budget is not None and not options:
        result.suggestions.append(f"nothing fits the budget of {req.budget:,.0f} {money.currency}: raise it, "
                                  "rent, or relax --max-gpus / the model")
    out = result.to_dict()
    out["recommended_because"] = ("the cheapest option that meets the deadline and fits the site" if req.deadline_s
                                  else "the fastest option that fits the site's racks")
    out.update({"site": site.id, "currency": money.currency, "timeline": timeline(),
                "verification": verification_steps(job_label), "prices_used": sorted(set(money.used))})
    return result, out
