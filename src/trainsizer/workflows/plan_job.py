"""From a job and constraints to ranked, priced recommendations: the one pipeline behind
``trainsizer plan``, ``trainsizer report``, the web planner and :func:`trainsizer.api.plan_job`."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from trainsizer.cost.per_run import Workload
from trainsizer.cost.prices import Prices, listed, load_prices
from trainsizer.cost.run_cost import RENT
from trainsizer.cost.subsidy import Subsidy
from trainsizer.errors import N_, InputError, in_file
from trainsizer.estimate.calibration import calibrated_params
from trainsizer.estimate.estimator import check_precision
from trainsizer.hardware.catalog import Catalog, load_catalog
from trainsizer.hardware.market import availability, default_market, parse_market
from trainsizer.i18n import default_currency, resolve_lang
from trainsizer.lookup import unknown_id
from trainsizer.messages import Message, clauses, msg
from trainsizer.messages import money as to_money
from trainsizer.models.architecture import Architecture
from trainsizer.models.catalog import resolve_model
from trainsizer.models.param_counts import count_params
from trainsizer.plan.option import PlanOption
from trainsizer.plan.ranking import rank_options
from trainsizer.plan.search import Constraints, PlanResult, fastest_within, plan
from trainsizer.scenario import Scenario
from trainsizer.system.sites import Site, default_site_id, get_site, load_sites, with_electricity_price
from trainsizer.workflows.decide import (
    SPAN_COST,
    SPAN_GPUS,
    choose,
    distinct,
    objective_value,
    parse_objective,
    recommendation,
    sized_to_job,
)
from trainsizer.workflows.defaults import (
    DEFAULT_MAX_GPUS,
)
from trainsizer.workflows.framework_gpus import framework_gpus
from trainsizer.workflows.jobs import load_job, stated_gpu
from trainsizer.workflows.next_steps import timeline, verification_steps
from trainsizer.workflows.offer_gap import QUOTE, OfferGap, offer_gap, quoted
from trainsizer.workflows.plan_request import PlanRequest
from trainsizer.workflows.pricing import MoneyTerms, merge_fabric_twins, recommend_options
from trainsizer.workflows.robust import (
    Confidence,
    close_call,
    confidence,
    deadline_risk,
    settle_command,
    with_ranges,
)
from trainsizer.workflows.screen_pricing import HostFit, ScreenPricing
from trainsizer.workflows.setup_time import NONE as NO_SETUP
from trainsizer.workflows.setup_time import setup_time
from trainsizer.workflows.time_value import TimeValue, time_value

if TYPE_CHECKING:  # the JSON's types, for annotations
    from trainsizer.workflows.plan_schema import (
        ConfidenceJSON,
        ExcludedGpuJSON,
        HardwareCostJSON,
        MarketJSON,
        NextStepsJSON,
        OfferGapJSON,
        PlanJSON,
        RecommendationJSON,
    )

__all__ = ["DEFAULT_MAX_GPUS", "PlanOutcome", "PlanRequest", "load_job", "plan_job", "price_hardware"]



@dataclass
class PlanOutcome:
    """The plan as data (``out`` is what ``plan --json`` prints) with the inputs it was computed from."""

    result: PlanResult
    out: PlanJSON
    scenario: Scenario
    arch: Architecture
    site: Site
    prices: Prices
    catalog: Catalog


def _context(req: PlanRequest) -> tuple[Catalog, Site, Prices]:
    cat = load_catalog(list(req.catalogs))
    for gid in req.gpus:
        cat.accelerator(gid, "--gpu")
    all_sites = load_sites(list(req.sites))
    money = load_prices(req.currency or default_currency(req.lang), list(req.prices),
                        gpu_ids=cat.accelerators)  # checks the currency first
    # no site named: one in the market the plan is in (a US hall for the global market, a Chengdu hall for China)
    site = get_site(req.site or default_site_id(all_sites, _market(req, money, None)), all_sites)
    if req.electricity_price is not None:
        site = with_electricity_price(site, req.electricity_price)
    return cat, site, money


def _voucher(req: PlanRequest, money: Prices) -> Subsidy | None:
    """The subsidy the user claims on rentals (``--voucher ID``), in the price list's currency."""
    if req.voucher is None:
        return None
    known = {s.id: s for s in money.subsidies}
    if req.voucher not in known:
        raise InputError("--voucher", f"{req.voucher!r}; accepted: {', '.join(known) or 'none in the price data'}")
    return money.in_currency(known[req.voucher])


def _market(req: PlanRequest, money: Prices, site: Site | None) -> str:
    """The market the user named, else the default from the currency, the site they chose (the shipped
    default site says nothing about the user; None before a site is picked) and the locale."""
    if req.market:
        return parse_market(req.market, "--market").value
    return default_market(money.currency, site if req.site else None, resolve_lang(req.lang)).value


def _market_gpus(cat: Catalog, req: PlanRequest, market: str) -> tuple[tuple[str, ...], MarketJSON]:
    """The GPU types a team in ``market`` can buy or rent (all of the catalog unless ``--gpu`` names some:
    those are kept, and options on them say what stands in the way), and one line on what was left out."""
    if req.gpus:
        return req.gpus, {"market": market, "excluded": [], "note": None}
    kept: list[str] = []
    excluded: list[ExcludedGpuJSON] = []
    for gid, acc in cat.accelerators.items():
        buy, rent = availability(acc, market, "buy"), availability(acc, market, "rent")
        if buy.obtainable or rent.obtainable:
            kept.append(gid)
        else:
            excluded.append({"gpu": gid, "buy": buy.status, "rent": rent.status, "reason": buy.reason,
                             "detail": buy.detail})
    note = None
    if excluded:
        names = [e["gpu"] for e in excluded[:6]] + (["..."] if len(excluded) > 6 else [])
        note = clauses([msg("plan.market_excluded", market=market, n=len(excluded), total=len(cat.accelerators),
                            gpus_list=names), msg("plan.market_override")])
    return tuple(kept), {"market": market, "excluded": excluded, "note": note}


def _job_gpu_note(job: Scenario, req: PlanRequest) -> Message | None:
    """The GPU the job names, where the plan searched every GPU instead (no --gpu): how to keep to it."""
    named = stated_gpu(job)
    return msg("plan.job_gpu_not_kept", gpu=named, id=named) if named and not req.gpus else None


def _time_note(time: TimeValue) -> Message | None:
    """The assumed value of the run's time, said where it shapes the answer (the default, not the user's)."""
    if not time.assumed or time.per_hour <= 0:
        return None
    return clauses([msg("plan.time_value_assumed", money=to_money(time.per_hour, time.currency)),
                    msg("plan.time_value_flag")])


def _check_request(job: Scenario, req: PlanRequest, cat: Catalog, job_label: str) -> None:
    """The request against the job, each mistake one line naming its flag (or the job's field)."""
    if (named := stated_gpu(job)) is not None and named not in cat.accelerators:  # the job's GPU: an id it knows
        raise in_file(unknown_id("hardware.gpu", named, cat.accelerators), job_label)
    for gid in req.gpus:  # a GPU the user names must run the job's precision (fp8 needs fp8 tensor cores)
        try:
            check_precision(job, cat.accelerator(gid, "--gpu"))
        except InputError as exc:
            if exc.field == "--gpu":  # an unknown id: the flag alone is wrong
                raise
            raise in_file(exc, job_label) from None  # the job file's precision against the flag's GPU
    if req.deadline_s and not job.training.tokens:
        raise InputError("--deadline", N_("needs training.tokens in the job to compute the time to train"))
    if req.budget is not None and not req.budget > 0:
        raise InputError("--budget", N_("{value}; accepted: a finite positive amount"), value=req.budget)
    if req.setup_minutes is not None and not 0 <= req.setup_minutes <= 10_000:
        raise InputError("--setup", N_("{value}; accepted: minutes from 0 to 10000"), value=req.setup_minutes)
    if not 0 <= req.max_oom_risk <= 1:
        raise InputError("--max-oom-risk", N_("{value}; accepted: a fraction from 0 to 1"), value=req.max_oom_risk)


def _terms(job: Scenario, req: PlanRequest, site: Site, money: Prices, market: str, params: int) -> MoneyTerms:
    """How the user pays: site, prices, market, horizon, workload, budget, voucher, time value and setup (a run
    without a length, no training.tokens, is priced per token: no run to set up)."""
    setup = setup_time(params, req.setup_minutes) if job.training.tokens else NO_SETUP
    return MoneyTerms(site, money, market, req.horizon_years, Workload(req.runs_per_month, req.utilisation),
                      req.budget, _voucher(req, money), time_value(req.time_value, money.currency), setup)


def plan_job(job: Scenario, req: PlanRequest, job_label: str = "JOB.yaml", options_when_read: bool = False
             ) -> PlanOutcome:
    """Search, price and rank the layouts of ``job`` under ``req``; recommend one, or say what would make one: the
    shortest time that works, the smallest change where memory binds (``workflows.feasible``: planned again).
    ``options_when_read``: ``out["options"]`` writes each option's JSON when it is read (``plan.constraints.
    OptionDicts``: the terminal table, which prints a few), else it is the list of every option's."""
    outcome = _plan_once(job, req, job_label, options_when_read)
    if outcome.out["recommendation"] is None:
        from trainsizer.workflows.feasible import ways_to_feasible, with_ways  # planned again only here

        ways = ways_to_feasible(job, req, outcome, lambda j, r: _plan_once(j, r, job_label),
                                parse_objective(req.objective))
        outcome.out["suggestions"] = with_ways(ways, outcome.out["suggestions"])
    return outcome


def _plan_once(job: Scenario, req: PlanRequest, job_label: str, options_when_read: bool = False) -> PlanOutcome:
    """One plan of ``job`` under ``req``: searched, priced, ranked, a recommendation made where one can be."""
    cat, site, money = _context(req)
    _check_request(job, req, cat, job_label)
    objective = parse_objective(req.objective)
    market = _market(req, money, site)
    gpus, market_info = _market_gpus(cat, req, market)
    gpus, vendor_note = framework_gpus(job, cat, gpus, named=bool(req.gpus))
    arch = resolve_model(job.model)
    memory_params, perf_params = calibrated_params(req.calibration)
    params = count_params(arch).total
    terms = _terms(job, req, site, money, market, params)
    held = HostFit(terms, cat, params)
    result = plan(job, arch, Constraints(gpus, req.max_gpus, req.gpus_per_node, req.deadline_s, req.top,
                                         pricer=ScreenPricing(terms, cat, params), time_value=terms.time.per_hour,
                                         host=held, max_oom_risk=req.max_oom_risk),
                  cat, memory_params, perf_params)
    priced = recommend_options(result.options, job, arch, terms, cat, req.max_oom_risk)  # each cites its prices
    options, notes = priced.options, priced.notes
    # a layout at risk weighed as such; one above the risk limit never recommended
    options = distinct(with_ranges(merge_fabric_twins(options)), objective, req.max_oom_risk)
    every_option = options
    order = choose(options, objective, req.max_oom_risk)
    if not req.all_options:
        options, order, hidden = sized_to_job(options, order, objective)
        if hidden:
            notes.append(msg("plan.sized_to_job", n=hidden, cost=SPAN_COST, gpus=SPAN_GPUS))
    result.options = options
    # the assumed time value is said once: among the recommendation's adjustments (decide.adjustments) when there
    # is one, else here
    result.notes += [n for n in (market_info["note"], vendor_note, _job_gpu_note(job, req), *notes,
                                 None if order else _time_note(terms.time)) if n]
    result.rankings = rank_options(options, req.top)
    result.rankings["recommended"] = order[:1]
    if held.unstated and (not order or options[order[0]].acquisition != "rent"):
        result.notes.append(msg("plan.offload_ram_unstated", gpus_list=sorted(held.unstated)[:6]))
    if not order:
        result.suggestions += _why_no_answer(options, req, money.currency)
    rec = recommendation(options, order, objective, result.late, req.deadline_s, None, money.currency, terms.time,
                         req.max_oom_risk)
    _add_confidence(rec, options, order, objective, req, job_label)
    gap = offer_gap(options[order[0]] if rec else None, every_option, money, market, req.max_oom_risk,
                    terms.time.per_hour, terms.setup.hours, req.budget, objective)
    gap_json = gap.to_dict() if gap else None
    acquisition = options[order[0]].acquisition if rec else None
    if gap and not rec:
        result.suggestions.append(gap.message())
    elif gap and gap_json is not None and rec is not None and gap.option is not None and objective == "cheapest":
        # no known offer rents it by the hour, on the cheapest objective: the answer is the layout to ask a quote on
        rec = _quoted_answer(rec, gap, gap_json, result, order, objective, req, terms, job)
        acquisition = QUOTE
    _add_deadline_risk(rec, options, req.deadline_s)
    out = result.to_dict(options_when_read)
    out.update({"recommendation": rec, "offer_gap": gap_json, "recommended_because": rec["why"] if rec else None})
    out.update({"site": site.id, "currency": money.currency, "market": market_info,
                **_next_steps(rec, acquisition, cat, job_label),
                "prices_used": [c.to_dict() for c in listed(priced.cited)]})
    return PlanOutcome(result, out, job, arch, site, money, cat)


def _why_no_answer(options: list[PlanOption], req: PlanRequest, currency: str) -> list[Message]:
    """What a plan without a recommendation suggests: the budget held it back, or every option that can be had
    risks running out of memory above --max-oom-risk (the least of them named)."""
    out = [msg("plan.nothing_within_budget", money=to_money(req.budget, currency))] if req.budget is not None else []
    if risky := [o for o in options if o.acquisition]:
        least = min(risky, key=lambda o: o.oom_chance)
        out.append(msg("plan.all_at_oom_risk", limit=req.max_oom_risk, pct=least.oom_chance, gpus=least.gpus,
                       gpu=least.gpu))
    return out


def _next_steps(rec: RecommendationJSON | None, acquisition: str | None, cat: Catalog,
                job_label: str) -> NextStepsJSON:
    """The deployment timeline and the verification steps of the answer, with the tools of its GPU's vendor."""
    vendor = cat.accelerators[rec["gpu"]].vendor if rec and rec["gpu"] in cat.accelerators else "nvidia"
    return {"timeline": timeline(acquisition),
            "verification": verification_steps(job_label, RENT if acquisition == QUOTE else acquisition, vendor)}


def _add_confidence(rec: RecommendationJSON | None, options: list[PlanOption], order: list[int], objective: str,
                    req: PlanRequest, job_label: str) -> None:
    """``recommendation.confidence`` across the model's error (``robust.py``); a close call says what settles it."""
    if not rec:
        return
    values = [objective_value(o, objective) if i in order else 0.0 for i, o in enumerate(options)]
    conf = _sampled(options, order, values, objective, req.deadline_s, req.budget)
    close = close_call(conf, options)
    if conf and close is not None:
        conf = replace(conf, settle_with=settle_command(job_label))
        rec["why"] = msg("sentences", parts=[rec["why"], close])
    rec["confidence"] = conf.to_dict() if conf else None


def _add_deadline_risk(rec: RecommendationJSON | None, options: list[PlanOption], deadline_s: float | None) -> None:
    """``recommendation.deadline_risk``: with a deadline, the chance the answer's run misses it (``robust.py``)."""
    if rec is not None and (risk := deadline_risk(options[rec["option"]], deadline_s)):
        rec["deadline_risk"] = risk


def _quoted_answer(rec: RecommendationJSON, gap: OfferGap, gap_json: OfferGapJSON, result: PlanResult,
                   order: list[int], objective: str, req: PlanRequest, terms: MoneyTerms,
                   job: Scenario) -> RecommendationJSON:
    """The answer where no known offer rents the job by the hour: the quoted layout (added to the options where the
    search kept it only among every option), its confidence, and the plan's ``recommended`` ranking pointing at it."""
    options = result.options
    index = next((i for i, o in enumerate(options) if o is gap.option), len(options))
    if index == len(options) and gap.option is not None:
        options.append(gap.option)
    quote = quoted(rec, gap_json, gap, options, index, job.training.tokens, terms.setup, terms.time)
    floor_value = gap.floor + terms.time.per_hour * (gap.hours + gap.setup_hours)
    quote["confidence"] = _quote_confidence(options, index, order, objective, req, floor_value)
    result.rankings["recommended"] = [index]
    return quote


def _quote_confidence(options: list[PlanOption], index: int, order: list[int], objective: str, req: PlanRequest,
                      floor_value: float) -> ConfidenceJSON | None:
    """How often the quoted layout (``options[index]``, valued at its floor plus its time on the cheapest objective)
    stays best against the priced options across the model's error, never above its chance of running."""
    values = [objective_value(o, objective) if i in order else 0.0 for i, o in enumerate(options)]
    values[index] = floor_value if objective == "cheapest" else objective_value(options[index], objective)
    conf = _sampled(options, [index, *(i for i in order if i != index)], values, objective, req.deadline_s, None)
    return conf.to_dict() if conf else None


def _sampled(options: list[PlanOption], ranked: list[int], values: list[float], objective: str,
             deadline_s: float | None, budget: float | None) -> Confidence | None:
    """How often ``ranked[0]`` stays the choice across the model's error (``robust.confidence``), never above its
    chance of running: it holds in no outcome where it runs out of memory."""
    conf = confidence(options, ranked, values, deadline_s, budget, scales=objective != "fewest-gpus")
    if conf is None:
        return None
    runs = round(1.0 - options[ranked[0]].oom_chance, 4)
    return replace(conf, runs=runs, share=min(conf.share, runs))


def price_hardware(job: Scenario, gpu: str, gpus: int, req: PlanRequest) -> HardwareCostJSON:
    """The fastest layout of the job on exactly ``gpus`` x ``gpu`` within the request's chance of running out of
    memory (``req.max_oom_risk``; the fastest at any risk where none is), with its servers, site fit and cost."""
    cat, site, money = _context(replace(req, gpus=(gpu,)))
    per_node = req.gpus_per_node
    if per_node and gpus > per_node and gpus % per_node:
        raise InputError("--max-gpus", f"{gpus} must be a multiple of gpus_per_node ({per_node}) across servers")
    arch = resolve_model(job.model)
    found = plan(job, arch, Constraints((gpu,), gpus, per_node, None, 1, exact_gpus=gpus,
                                        max_oom_risk=req.max_oom_risk), cat)
    if not found.options:
        raise InputError("--max-gpus", f"the job does not fit {gpus} x {gpu} in any layout; try more GPUs, "
                         "a larger GPU or a lighter method (lora, qlora, 8-bit optimizer)")
    market = _market(req, money, site)
    terms = MoneyTerms(site, money, market, req.horizon_years, Workload(req.runs_per_month, req.utilisation))
    fastest = fastest_within(found.options, req.max_oom_risk) or found.options[0]
    priced = recommend_options([fastest], job, arch, terms, cat)
    return {"option": priced.options[0].to_dict(), "site": site.id, "currency": money.currency,
            "prices_used": [c.to_dict() for c in listed(priced.cited)]}
