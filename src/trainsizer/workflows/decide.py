"""The recommendation: one option a team can act on, with the acquisition, the offer, the cost of a run,
the money to commit and one sentence on why — and the runner-ups with what each trades.

Default objective: the lowest cost per run plus the value of its time (``--time-value``, money per
wall-clock hour; workflows.time_value) that meets the deadline and the budget (the planner has already
dropped options that miss the deadline, do not fit in memory or cannot be had in the market). Among options
within ``NEAR_TIE`` of the best, the faster wins, then fewer GPUs and the simpler layout: no tensor,
pipeline or context parallelism the job does not need.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from trainsizer.cost.run_cost import RENT, Rented, RunCost
from trainsizer.cost.tco import HOURS_PER_MONTH
from trainsizer.errors import InputError
from trainsizer.estimate.regimes import is_moe
from trainsizer.estimate.step import balanced_routing_note
from trainsizer.messages import Message, clauses, listing, money, msg
from trainsizer.plan.option import PlanOption
from trainsizer.workflows.defaults import TIGHT_FRACTION
from trainsizer.workflows.robust import failure_cost
from trainsizer.workflows.time_value import TimeValue

if TYPE_CHECKING:  # the JSON's types, for annotations
    from trainsizer.workflows.plan_schema import BindingJSON, OfferJSON, RecommendationJSON, RunnerUpJSON

OBJECTIVES = ("cheapest", "fastest", "fewest-gpus")
NEAR_TIE = 0.05  # within 5 % of the best the difference is below the model's own error (docs/accuracy.md)
# A tight fit (above TIGHT_FRACTION of the GPU's memory) is recommended only when nothing roomier is within this
# much of it: running out of memory costs more than the difference (assumed).
TIGHT_PENALTY = 0.10
RUNNER_UPS = 3
RUNNER_UP_SPAN = 3.0  # a runner-up costs (or takes) at most this many times the pick: beyond, it is no alternative
# The options shown (without --all): those within SPAN_COST times the pick's objective or SPAN_GPUS times its GPU
# count (assumed: a team weighs alternatives of a similar size; 1,024-GPU rows beside a 28-minute job are noise).
SPAN_COST = 3.0
SPAN_GPUS = 4


def parse_objective(value: str | None) -> str:
    objective = (value or "cheapest").strip().lower()
    if objective not in OBJECTIVES:
        raise InputError("--objective", f"{value!r}; accepted: {', '.join(OBJECTIVES)}")
    return objective


def _value(o: PlanOption, objective: str) -> float:
    if objective == "fastest":
        return o.time_to_train_s or o.step_time_s
    if objective == "fewest-gpus":
        return float(o.gpus)
    pr = o.per_run
    if pr is None:
        raise ValueError("an option is weighed on the cheapest objective only once priced")
    if pr.cost is not None:  # the run's cost plus the value of its time (workflows.pricing)
        return float(pr.objective if pr.objective is not None else pr.cost)
    return float(pr.cost_per_million_tokens or 0.0)


def objective_value(o: PlanOption, objective: str = "cheapest") -> float:
    """What the recommendation minimises for this option: its value on the objective, a tight fit penalised, and
    on the cheapest objective the expected cost of a failed attempt where it may run out of memory
    (``robust.failure_cost``: a short run at real risk loses to a safe layout that costs more)."""
    value = _value(o, objective)
    risk = failure_cost(o, value) if objective == "cheapest" else 0.0
    return value * (1 + TIGHT_PENALTY if tight(o) else 1) + risk


def _layout_complexity(o: PlanOption) -> tuple[int, int, int]:
    return (o.model_split(), o.scenario.parallel.virtual_pp, 0 if o.offload == "none" else 1)


def tight(o: PlanOption) -> bool:
    """A tight fit: above TIGHT_FRACTION of the GPU's memory, or a real chance of running out of it (its 80 %
    range, ``workflows/robust.py``): recommended only when nothing safe is within TIGHT_PENALTY of its cost."""
    return o.device_gib > TIGHT_FRACTION * o.capacity_gib or o.at_risk


def _eligible(o: PlanOption, max_oom_risk: float = 1.0) -> bool:
    """Can be recommended: priced, and its chance of running out of memory at most ``max_oom_risk``."""
    return o.priced and o.oom_chance <= max_oom_risk


def choose(options: list[PlanOption], objective: str, max_oom_risk: float = 1.0) -> list[int]:
    """Indices: the recommended option, then its runner-ups (other GPU types or counts), best first; only options
    whose chance of running out of memory is at most ``max_oom_risk``."""
    pool = [i for i, o in enumerate(options) if _eligible(o, max_oom_risk)]
    if not pool:
        return []
    value = {i: objective_value(options[i], objective) for i in pool}
    best = min(value.values())
    near = [i for i in pool if value[i] <= best * (1 + NEAR_TIE)]
    near = [i for i in near if not tight(options[i])] or near
    # ties go to the faster, then to fewer GPUs and the simpler layout
    quickest = min(options[i].seconds() for i in near)
    near = [i for i in near if options[i].seconds() <= quickest * (1 + NEAR_TIE)]
    pick = min(near, key=lambda i: (options[i].gpus, _layout_complexity(options[i]), value[i]))
    order = [pick]
    ranked = sorted((i for i in pool if value[i] <= RUNNER_UP_SPAN * value[pick]),
                    key=lambda i: (value[i], options[i].gpus))
    types = {options[pick].gpu}
    for i in ranked:  # other GPU types first: what a different purchase trades
        if options[i].gpu not in types and len(order) <= RUNNER_UPS:
            types.add(options[i].gpu)
            order.append(i)
    seen = {(options[i].gpu, options[i].gpus) for i in order}
    for i in ranked:  # then other counts of the same types
        key = (options[i].gpu, options[i].gpus)
        if key not in seen and len(order) <= RUNNER_UPS:
            seen.add(key)
            order.append(i)
    return order


def distinct(options: list[PlanOption], objective: str, max_oom_risk: float = 1.0) -> list[PlanOption]:
    """One option per GPU type and count: the best on the objective (then the faster) of those that can be
    recommended (priced, at most ``max_oom_risk`` of running out of memory), so no two rows show the same hardware
    (4- and 8-card servers of the same cards read alike in every table)."""
    def rank(o: PlanOption) -> tuple[bool, bool, float, float]:
        return (not o.priced, not _eligible(o, max_oom_risk), objective_value(o, objective) if o.priced else 0.0,
                o.seconds())

    best: dict[tuple[Any, ...], PlanOption] = {}
    for o in options:
        key = (o.gpu, o.gpus)
        if key not in best or rank(o) < rank(best[key]):
            best[key] = o
    kept = {id(o) for o in best.values()}
    return [o for o in options if id(o) in kept]


def sized_to_job(options: list[PlanOption], order: list[int],
                 objective: str) -> tuple[list[PlanOption], list[int], int]:
    """The options within SPAN_COST times the pick's objective or SPAN_GPUS times its GPU count (all when nothing
    is picked), the order re-indexed, and how many were left out."""
    if not order:
        return options, order, 0
    pick = options[order[0]]
    limit, gpus = objective_value(pick, objective) * SPAN_COST, pick.gpus * SPAN_GPUS
    keep = [i for i, o in enumerate(options) if i in order or o.gpus <= gpus
            or (o.priced and objective_value(o, objective) <= limit)]
    index = {old: new for new, old in enumerate(keep)}
    return [options[i] for i in keep], [index[i] for i in order], len(options) - len(keep)


def _days(o: PlanOption) -> float | None:
    t = o.time_to_train_s
    return None if t is None else t / 86400


def _binding(pick: PlanOption, options: list[PlanOption], late: list[PlanOption], deadline_s: float | None,
             budget_cheaper: float | None, timed: bool = False, max_oom_risk: float = 1.0) -> BindingJSON:
    """The constraint that decided the pick: a code (deadline, budget, time, headroom, oom_risk, memory, cost) with
    its figures, and the deadline the plan was held to (None without one). Where a cheaper option with room to
    spare lost on the value of time, time decided, whatever tighter options cost less still."""
    cost = pick.run_cost
    days = round(deadline_s / 86400, 4) if deadline_s else None
    if deadline_s and any(o.gpus < pick.gpus for o in late):
        return {"code": "deadline", "deadline_days": days}
    if budget_cheaper is not None and cost is not None and budget_cheaper < cost:
        return {"code": "budget", "deadline_days": days}
    cheaper = [o for o in options if cost is not None and o.priced and o.run_cost is not None and o.run_cost < cost]
    at_risk = [o for o in cheaper if tight(o) or o.oom_chance > max_oom_risk]
    if timed and len(at_risk) < len(cheaper):  # a cheaper run with room lost on its time
        return {"code": "time", "deadline_days": days}
    if any(o.device_gib > TIGHT_FRACTION * o.capacity_gib for o in at_risk):
        return {"code": "headroom", "deadline_days": days, "tight_fraction": TIGHT_FRACTION}
    if at_risk:  # cheaper layouts at real risk of running out of memory (their ranges, robust.py)
        return {"code": "oom_risk", "deadline_days": days, "p_exceeds_capacity": min(o.oom_chance for o in at_risk)}
    fewest = not any(o.gpu == pick.gpu and o.gpus < pick.gpus for o in options + late)
    if fewest and pick.gpus > 1 and pick.device_gib > 0.9 * pick.capacity_gib:
        return {"code": "memory", "deadline_days": days, "device_gib": pick.device_gib,
                "capacity_gib": pick.capacity_gib}
    return {"code": "cost", "deadline_days": days}


def _objective_binding(objective: str, deadline_s: float | None) -> BindingJSON:
    """What decided a pick on the fastest or fewest-GPUs objective: the objective itself (what binds the cheapest
    pick, the cost of the options cheaper than it, does not apply)."""
    return {"code": objective, "deadline_days": round(deadline_s / 86400, 4) if deadline_s else None}


def _binding_message(binding: BindingJSON) -> Message:
    code = binding["code"]
    if code == "deadline":
        return msg("binding.deadline", days=binding["deadline_days"])
    if code == "headroom":
        return msg("binding.headroom", limit=binding["tight_fraction"])
    if code == "oom_risk":
        return msg("binding.oom_risk", pct=binding["p_exceeds_capacity"])
    if code == "memory":
        return msg("binding.memory", used=binding["device_gib"], capacity=binding["capacity_gib"])
    return msg(f"binding.{code}")


def action(pick: PlanOption) -> Message:
    """What to do to have the priced pick: rent it from its offer, or buy it."""
    pr = _run_cost(pick)
    acq, offer = pr.acquisition, pr.shown_offer()
    hardware = {"gpus": pick.gpus, "gpu": pick.gpu}
    return (msg("decide.rent_from", hardware=hardware, provider=offer.provider, term=offer.term)
            if acq == RENT and offer else msg(f"decide.{acq}", hardware=hardware))


def _why(pick: PlanOption, objective: str, binding: BindingJSON, deadline_s: float | None,
         currency: str, time: Any = None) -> Message:
    """What to do, for how much, how long, the goal and what bound the choice, in one sentence."""
    pr = _run_cost(pick)
    what = action(pick)
    cost = (msg("decide.cost_per_run", cost=money(pr.cost, currency)) if pr.cost is not None
            else msg("decide.cost_per_token", price=money(pr.cost_per_million_tokens, currency)))
    suffix = "_deadline" if deadline_s else ""
    goal = (msg(f"goal.cheapest-timed{suffix}", money=money(time.per_hour, time.currency))
            if objective == "cheapest" and time and time.per_hour > 0 else msg(f"goal.{objective}{suffix}"))
    seconds = pick.time_to_train_s
    if seconds is None:
        return msg("decide.why", what=what, cost=cost, goal=goal, binding=_binding_message(binding))
    return msg("decide.why_with_time", what=what, cost=cost, time=seconds, goal=goal,
               binding=_binding_message(binding))


def recommendation(options: list[PlanOption], order: list[int], objective: str, late: list[PlanOption],
                   deadline_s: float | None, budget_cheaper: float | None, currency: str,
                   time: TimeValue | None = None, max_oom_risk: float = 1.0) -> RecommendationJSON | None:
    """The plan's top-level ``recommendation`` object (None when no option can be had)."""
    if not order:
        return None
    pick = options[order[0]]
    pr = _run_cost(pick)
    acq = pr.acquisition
    days = _days(pick)
    binding = (_binding(pick, options, late, deadline_s, budget_cheaper,
                        objective == "cheapest" and bool(time and time.per_hour > 0), max_oom_risk)
               if objective == "cheapest" else _objective_binding(objective, deadline_s))
    why = _why(pick, objective, binding, deadline_s, currency, time)
    runners: list[RunnerUpJSON] = []
    for i in order[1:]:
        o = options[i]
        runners.append(runner_up_of(i, o, _trade(pick, o, currency)))
    if runners:
        first = runners[0]
        runner_up = msg("decide.runner_up", hardware={"gpus": first["gpus"], "gpu": first["gpu"]}, trade=first["trade"])
        why = msg("sentences", parts=[why, runner_up])
    return {"option": order[0], "acquisition": acq, "offer": _offer(pr), "gpu": pick.gpu, "gpus": pick.gpus,
            "servers": pick.nodes, "per_run": pr.cost, "cost_per_million_tokens": pr.cost_per_million_tokens,
            "commitment": pr.commitment, "currency": currency,
            "time_to_train_days": None if days is None else round(days, 2), "objective": objective,
            "site_applies": acq == "buy", "binding": binding, "why": why, "runner_ups": runners,
            "time_value": time.to_dict() if time else None, "adjustments": adjustments(pick, currency, time)}


def _run_cost(pick: PlanOption) -> RunCost:
    """The pick's run (the recommendation is made among priced options only)."""
    if pick.per_run is None:
        raise ValueError("the recommendation is made among priced options only")
    return pick.per_run


def _offer(pr: RunCost) -> OfferJSON | None:
    """``recommendation.offer``: the rental the answer names (a run priced per token names its offer undated)."""
    shown = pr.shown_offer()
    if pr.acquisition != RENT or shown is None:
        return None
    dated = pr.rent is not None
    return {**shown.offer_dict(), "as_of": shown.as_of if dated else None, "stale": shown.stale if dated else None}


def _voucher(rent: Rented, currency: str) -> Message | None:
    """The voucher claimed on the pick's rental: what it took off, its ceiling, its cap and caveats; or why it was
    not applied."""
    if rent.voucher_not_applied:
        refused = rent.voucher_not_applied
        return msg("adjust.voucher_not_applied", voucher=refused.id, reason=refused.reason)
    v = rent.voucher
    if not v:
        return None
    parts = [msg("adjust.voucher_possible" if v.possible else "adjust.voucher", voucher=v.id,
                 saved=money(v.saved, currency), pct=v.fraction)]
    if v.cap is not None:
        parts.append(msg(f"adjust.voucher_cap_{v.cap_period or 'year'}", cap=money(v.cap, currency)))
    if v.upper_bound:
        parts.append(msg("adjust.voucher_upper_bound"))
    if v.eligibility == "unknown":
        parts.append(msg("cost.voucher_eligibility_unknown", voucher=v.id))
    return clauses(parts)


def _bought_at(workload: Message, busy: float, run_hours: float) -> Message:
    """The workload bought hardware is priced at; a stated utilisation also as the runs like this one it means a
    month (32 GPUs kept 90 % busy with four-minute runs are ~10,000 runs a month: the lead sees what was assumed)."""
    if workload.code == "cost.workload_utilisation" and run_hours > 0:
        return msg("adjust.bought_busy_runs", workload=workload, pct=busy, n=busy * HOURS_PER_MONTH / run_hours)
    return msg("adjust.bought_at", workload=workload, pct=busy)


def adjustments(pick: PlanOption, currency: str, time: TimeValue | None = None) -> list[Message]:
    """What adjusted the answer's figures, each said on the answer card: a voucher (with its cap and caveats),
    a contract's minimum term, the workload bought hardware is priced at (and the sets of servers it needs), a
    tight fit, a MoE job's routing priced balanced where no imbalance is stated, and the value of the time (assumed or
    stated). A stale price is on the card's offer line."""
    out: list[Message | None] = []
    if (rent := pick.rented) is not None:
        out.append(_voucher(rent, currency))
        setup = pick.per_run.setup if pick.per_run else None
        if setup is not None:  # billed like the training, on every GPU (workflows.setup_time)
            minutes = setup.shown_minutes
            out.append(msg("adjust.setup_assumed" if setup.assumed else "adjust.setup", time=minutes * 60,
                           n=pick.gpus, money=money(minutes / 60 * pick.gpus * rent.price_per_gpu_hour, currency)))
        out += [n for n in rent.notes if isinstance(n, Message)
                and n.code in ("cost.contract_minimum", "machine.ram_unstated")]
    if (buy := pick.bought) is not None and pick.per_run is not None:
        if buy.utilisation is not None:
            out.append(_bought_at(pick.per_run.workload, buy.utilisation, pick.seconds() / 3600))
        elif pick.ownership_years_on_one_run:  # no workload stated: the one run carries the whole ownership
            out.append(msg("adjust.ownership_on_one_run", years=pick.ownership_years_on_one_run))
        out.append(buy.note)
    if tight(pick):
        used = pick.device_gib / pick.capacity_gib
        risk = pick.range.p_exceeds_capacity if pick.range else None
        out.append(msg("adjust.tight_fit", pct=used, limit=TIGHT_FRACTION) if used > TIGHT_FRACTION or risk is None
                   else msg("adjust.oom_risk", pct=risk, used=used))
    if is_moe(pick.scenario.model):  # the routing the time assumes, unless stated
        out.append(balanced_routing_note(pick.scenario.parallel))
    out.append(time_value_adjustment(time))
    return [m for m in out if m is not None]


def time_value_adjustment(time: TimeValue | None) -> Message | None:
    """The value of the run's time the answer weighed (assumed or stated); None where it weighs none."""
    if time is None or time.per_hour <= 0:
        return None
    amount = money(time.per_hour, time.currency)
    return (clauses([msg("plan.time_value_assumed", money=amount), msg("plan.time_value_flag")])
            if time.assumed else msg("adjust.time_value", money=amount))


def runner_up_of(index: int, o: PlanOption, trade: Message) -> RunnerUpJSON:
    """One of ``recommendation.runner_ups``: the option, its cost a run and days, what it trades."""
    return {"option": index, "gpu": o.gpu, "gpus": o.gpus, "acquisition": o.acquisition, "per_run": o.run_cost,
            "days": None if _days(o) is None else round(_days(o), 2), "trade": trade}


def _trade(pick: PlanOption, other: PlanOption, currency: str) -> Message:
    return trade_against(pick.run_cost, _days(pick), other, currency)


def trade_against(a: float | None, da: float | None, other: PlanOption, currency: str) -> Message:
    """What ``other`` trades against an answer costing ``a`` a run and taking ``da`` days."""
    b = other.run_cost
    parts = []
    if a and b is not None:
        parts.append(msg("trade.per_run", pct=b / a - 1))
    db = _days(other)
    if da is not None and db is not None and abs(db - da) > 0.05 * da:
        parts.append(msg("trade.faster" if db < da else "trade.slower", span=round(abs(db - da), 4)))
    if other.commitment is not None:
        parts.append(msg("trade.commits", money=money(other.commitment, currency)))
    if other.ownership_years_on_one_run:  # why its run costs the servers
        parts.append(msg("trade.ownership_on_one_run", years=other.ownership_years_on_one_run))
    if other.device_gib > TIGHT_FRACTION * other.capacity_gib:
        parts.append(msg("trade.tight_fit", pct=other.device_gib / other.capacity_gib))
    elif tight(other):  # roomy, yet at a real risk of running out of memory (its range: workflows/robust.py)
        parts.append(msg("trade.oom_risk", pct=other.oom_chance))
    return listing(parts) if parts else msg("trade.similar")
