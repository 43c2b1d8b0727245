"""What each endpoint computes: the same library calls as the CLI commands, from request models."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from trainsizer.errors import InputError
from trainsizer.hardware.catalog import Catalog, default_catalog
from trainsizer.models.architecture import Architecture
from trainsizer.scenario import Scenario, scenario_from_dict
from trainsizer.web import schemas as s
from trainsizer.web.errors import FLAG_FIELDS, fields
from trainsizer.web.ranking import recommended, rerank

DEFAULT_GPU = "h100-sxm5-80gb"


def _job_dict(job: s.JobIn) -> dict[str, Any]:
    return {"model": job.model.model_dump(exclude_none=True),
            "training": job.training.model_dump(exclude_unset=True)}


def build_job(job: s.JobIn, gpu: str | None, prefix: str = "job") -> tuple[Scenario, Architecture]:
    """A job as the planner takes it (one GPU, layout left to the search) and its architecture."""
    from trainsizer.models.catalog import resolve_model

    data = {**_job_dict(job), "parallel": {"gpus": 1}, "hardware": {"gpu": gpu or DEFAULT_GPU}}
    with fields(job_prefix=prefix):
        scenario = scenario_from_dict(data, source=prefix)
        return scenario, resolve_model(scenario.model)


def _gpu_ids(ids: list[str], cat: Catalog, field: str) -> tuple[str, ...]:
    for i, gid in enumerate(ids):
        with fields({"--gpu": f"{field}[{i}]", "hardware.gpu": f"{field}[{i}]"}):
            cat.accelerator(gid, "--gpu")
    return tuple(dict.fromkeys(ids))


def _site(site_id: str | None, field: str) -> Any:
    from trainsizer.system.sites import default_site_id, get_site, load_sites

    sites = load_sites()
    with fields({"--site": field}):
        return get_site(site_id or default_site_id(sites), sites)


def estimate(req: s.EstimateIn) -> dict[str, Any]:
    from trainsizer.api import estimate as run_estimate

    data = {"model": req.model.model_dump(exclude_none=True), "training": req.training.model_dump(exclude_unset=True),
            "parallel": req.parallel.model_dump(exclude_unset=True),
            "hardware": req.hardware.model_dump(exclude_unset=True)}
    scenario = scenario_from_dict(data)
    return run_estimate(scenario).to_dict()


@dataclass
class PlanOutcome:
    out: dict[str, Any]
    scenario: Scenario
    arch: Architecture


def plan(req: s.PlanIn) -> PlanOutcome:
    from trainsizer.cost.prices import load_prices
    from trainsizer.plan.recommend import recommend_options, timeline, verification_steps
    from trainsizer.plan.search import Constraints
    from trainsizer.plan.search import plan as run_plan

    c = req.constraints
    cat = default_catalog()
    gpus = _gpu_ids(c.gpus, cat, "constraints.gpus")
    site = _site(c.site, "constraints.site")
    money = load_prices(c.currency)
    scenario, arch = build_job(req.job, gpus[0] if gpus else None)
    seconds = c.deadline_days * 86400 if c.deadline_days else None
    if seconds and not scenario.training.tokens:
        raise InputError("constraints.deadline_days", "needs job.training.tokens to compute the time to train")
    with fields(FLAG_FIELDS, job_prefix="job"):
        result = run_plan(scenario, arch, Constraints(gpus, c.max_gpus, c.gpus_per_node, seconds, c.top), cat)
        options = recommend_options(result.options, scenario, arch, site, money, c.horizon_years, c.utilisation,
                                    c.budget, cat)
    result.options = options
    result.rankings = rerank(options, c.top)
    result.rankings["recommended"] = recommended(options, seconds is not None)
    if c.budget is not None and not options:
        result.suggestions.append(f"nothing fits the budget of {c.budget:,.0f} {money.currency}: raise it, "
                                  "rent, or relax max GPUs / the model")
    out = result.to_dict()
    out["recommended_because"] = ("the cheapest option that meets the deadline and fits the site" if seconds
                                  else "the fastest option that fits the site's racks")
    out.update({"site": site.id, "currency": money.currency, "timeline": timeline(),
                "verification": verification_steps("JOB.yaml"), "prices_used": sorted(set(money.used))})
    return PlanOutcome(out, scenario, arch)


def scale_curves(scenario: Scenario, arch: Architecture, gpu: str, max_gpus: int,
                 gpus_per_node: int | None) -> list[Any]:
    from trainsizer.plan.scale import scale as run_scale

    with fields(FLAG_FIELDS | {"--gpu": "gpu", "--max-gpus": "max_gpus", "--gpus-per-node": "gpus_per_node"},
                job_prefix="job"):
        return run_scale(scenario, arch, gpu, max_gpus, default_catalog(), gpus_per_node)


def scale(req: s.ScaleIn) -> dict[str, Any]:
    with fields({"--gpu": "gpu", "hardware.gpu": "gpu"}):
        default_catalog().accelerator(req.gpu, "gpu")
    scenario, arch = build_job(req.job, req.gpu)
    curves = scale_curves(scenario, arch, req.gpu, req.max_gpus, req.gpus_per_node)
    return {"gpu": req.gpu, "curves": [c.to_dict() for c in curves]}


def cost(req: s.CostIn) -> dict[str, Any]:
    """The fastest layout of the job on exactly this hardware, with its servers, site fit and cost."""
    from trainsizer.cost.prices import load_prices
    from trainsizer.plan.recommend import recommend_options
    from trainsizer.plan.search import Constraints
    from trainsizer.plan.search import plan as run_plan

    cat = default_catalog()
    with fields({"--gpu": "gpu", "hardware.gpu": "gpu"}):
        cat.accelerator(req.gpu, "gpu")
    per_node = req.gpus_per_node
    if per_node and req.gpus > per_node and req.gpus % per_node:
        raise InputError("gpus", f"{req.gpus} must be a multiple of gpus_per_node ({per_node}) across servers")
    site = _site(req.site, "site")
    money = load_prices(req.currency)
    scenario, arch = build_job(req.job, req.gpu)
    flags = {"--max-gpus": "gpus", "--gpus-per-node": "gpus_per_node", "--gpu": "gpu",
             "--utilisation": "utilisation", "--horizon": "horizon_years"}
    with fields(flags, job_prefix="job"):
        cons = Constraints((req.gpu,), req.gpus, per_node, None, 1, exact_gpus=req.gpus)
        found = run_plan(scenario, arch, cons, cat)
        if not found.options:
            raise InputError("gpus", f"the job does not fit {req.gpus} x {req.gpu} in any layout; try more GPUs, "
                             "a larger GPU or a lighter method (lora, qlora, 8-bit optimizer)")
        options = recommend_options(found.options[:1], scenario, arch, site, money, req.horizon_years,
                                    req.utilisation, None, cat)
    return {"option": options[0], "site": site.id, "currency": money.currency,
            "prices_used": sorted(set(money.used))}


def quotes(req: s.QuotesIn) -> dict[str, Any]:
    from trainsizer.cost.prices import load_prices
    from trainsizer.cost.quotes import compare_quotes

    cat = default_catalog()
    for i, q in enumerate(req.quotes):
        where = f"quotes[{i}]"
        with fields({"quotes.gpu": f"{where}.gpu", "hardware.gpu": f"{where}.gpu"}):
            cat.accelerator(q.gpu, f"{where}.gpu")
        if q.inter_node is not None:
            with fields({"hardware.inter_node": f"{where}.inter_node"}):
                cat.link(q.inter_node, f"{where}.inter_node")
        if q.servers * q.gpus_per_server > s.MAX_QUOTE_GPUS:
            raise InputError(f"{where}.servers", f"{q.servers} x {q.gpus_per_server} GPUs; accepted: at most "
                             f"{s.MAX_QUOTE_GPUS} GPUs per quote")
        if req.job is not None and q.gpus_per_server not in (1, 2, 4, 8, 16):
            raise InputError(f"{where}.gpus_per_server", f"{q.gpus_per_server}; accepted with a job: 1, 2, 4, 8, 16")
    money = load_prices(req.currency)
    scenario = arch = None
    if req.job is not None:
        scenario, arch = build_job(req.job, req.quotes[0].gpu)
    with fields(job_prefix="job"):
        results = compare_quotes(list(req.quotes), money, scenario, arch, cat)
    return {"currency": money.currency, "quotes": [r.to_dict() for r in results],
            "mfu_basis": "the job's best layout on each offer" if req.job else "an assumed MFU of 0.35 (no job given)"}


@cache
def _models_catalog() -> tuple[dict[str, Any], ...]:
    from trainsizer.models.catalog import model_ids, preset_architecture, preset_entry
    from trainsizer.models.params import count_params

    rows = []
    for mid in model_ids():
        counts = count_params(preset_architecture(mid))
        entry = preset_entry(mid)
        rows.append({"id": mid, "name": entry.get("name", mid), "params": counts.total,
                     "active_params": counts.active, "published_params": entry.get("published_params"),
                     "source": entry.get("source")})
    return tuple(rows)


def catalog(kind: str) -> list[dict[str, Any]]:
    from trainsizer.system.sites import load_sites

    cat = default_catalog()
    if kind == "models":
        return list(_models_catalog())
    if kind == "gpus":
        return [a.model_dump() for a in cat.accelerators.values()]
    if kind == "links":
        return [link.model_dump() for link in cat.links.values()]
    return [site.model_dump() for site in load_sites().values()]
