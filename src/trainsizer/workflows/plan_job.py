"""From a job and constraints to ranked, priced recommendations: the one pipeline behind
``trainsizer plan``, ``trainsizer report``, the web planner and :func:`trainsizer.api.plan_job`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainsizer.cost.prices import Prices, load_prices
from trainsizer.errors import InputError
from trainsizer.hardware.catalog import Catalog, load_catalog
from trainsizer.i18n import resolve_lang
from trainsizer.models.architecture import Architecture
from trainsizer.models.catalog import resolve_model
from trainsizer.plan.search import Constraints, PlanResult, plan, rank_options
from trainsizer.scenario import Scenario
from trainsizer.system.sites import Site, default_site_id, get_site, load_sites
from trainsizer.workflows.estimate_job import calibrated_params
from trainsizer.workflows.jobs import load_job
from trainsizer.workflows.recommend import recommend_options, timeline, verification_steps

__all__ = ["DEFAULT_MAX_GPUS", "PlanOutcome", "PlanRequest", "load_job", "plan_job", "price_hardware"]

DEFAULT_MAX_GPUS = 1024  # the one default of CLI, report and web: the whole space the planner can search quickly


@dataclass(frozen=True)
class PlanRequest:
    gpus: tuple[str, ...] = ()
    max_gpus: int = DEFAULT_MAX_GPUS
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


@dataclass
class PlanOutcome:
    """The plan as data (``out`` is what ``plan --json`` prints) with the inputs it was computed from."""

    result: PlanResult
    out: dict[str, Any]
    scenario: Scenario
    arch: Architecture
    site: Site
    prices: Prices
    catalog: Catalog


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


def _context(req: PlanRequest) -> tuple[Catalog, Site, Prices]:
    cat = load_catalog(list(req.catalogs))
    for gid in req.gpus:
        cat.accelerator(gid, "--gpu")
    all_sites = load_sites(list(req.sites))
    site = get_site(req.site or default_site_id(all_sites), all_sites)
    money = load_prices(req.currency or ("CNY" if resolve_lang(req.lang) == "zh-CN" else "USD"), list(req.prices))
    return cat, site, money


def plan_job(job: Scenario, req: PlanRequest, job_label: str = "JOB.yaml") -> PlanOutcome:
    """Search, price and rank the layouts of ``job`` under ``req``; recommend one."""
    cat, site, money = _context(req)
    if req.deadline_s and not job.training.tokens:
        raise InputError("--deadline", "needs training.tokens in the job to compute the time to train")
    if req.budget is not None and not req.budget > 0:
        raise InputError("--budget", f"{req.budget}; accepted: a finite positive amount")
    arch = resolve_model(job.model)
    memory_params, perf_params = calibrated_params(req.calibration)
    result = plan(job, arch, Constraints(req.gpus, req.max_gpus, req.gpus_per_node, req.deadline_s, req.top), cat,
                  memory_params, perf_params)
    options = recommend_options(result.options, job, arch, site, money, req.horizon_years, req.utilisation,
                                req.budget, cat)
    result.options = options
    result.rankings = rank_options(options, req.top)
    result.rankings["recommended"] = recommended(options, req.deadline_s is not None)
    if req.budget is not None and not options:
        result.suggestions.append(f"nothing fits the budget of {req.budget:,.0f} {money.currency}: raise it, "
                                  "rent, or relax the GPU count / the model")
    out = result.to_dict()
    out["recommended_because"] = ("the cheapest option that meets the deadline and fits the site" if req.deadline_s
                                  else "the fastest option that fits the site's racks")
    out.update({"site": site.id, "currency": money.currency, "timeline": timeline(),
                "verification": verification_steps(job_label), "prices_used": sorted(set(money.used))})
    return PlanOutcome(result, out, job, arch, site, money, cat)


def price_hardware(job: Scenario, gpu: str, gpus: int, req: PlanRequest) -> dict[str, Any]:
    """The fastest layout of the job on exactly ``gpus`` x ``gpu``, with its servers, site fit and cost."""
    cat, site, money = _context(PlanRequest(**{**req.__dict__, "gpus": (gpu,)}))
    per_node = req.gpus_per_node
    if per_node and gpus > per_node and gpus % per_node:
        raise InputError("--max-gpus", f"{gpus} must be a multiple of gpus_per_node ({per_node}) across servers")
    arch = resolve_model(job.model)
    found = plan(job, arch, Constraints((gpu,), gpus, per_node, None, 1, exact_gpus=gpus), cat)
    if not found.options:
        raise InputError("--max-gpus", f"the job does not fit {gpus} x {gpu} in any layout; try more GPUs, "
                         "a larger GPU or a lighter method (lora, qlora, 8-bit optimizer)")
    options = recommend_options(found.options[:1], job, arch, site, money, req.horizon_years, req.utilisation,
                                None, cat)
    return {"option": options[0], "site": site.id, "currency": money.currency,
            "prices_used": sorted(set(money.used))}
