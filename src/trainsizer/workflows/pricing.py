"""Each plan option priced as a team would pay for it: bill of materials, site fit (for hardware it buys and
hosts), what one run costs rented on real contract terms and bought at the stated workload, the money it
must commit and whether the part can be had in its market (the recommendation among them: ``decide.py``;
what to do next: ``next_steps.py``)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from trainsizer.cost.machine import MachineNeed
from trainsizer.cost.per_run import RentalRun, Workload, buy_share, cheapest_rental, offer_market
from trainsizer.cost.price_rows import Cited
from trainsizer.cost.prices import Prices, RentalOffer
from trainsizer.cost.run_cost import BUY, RENT, Bought, Rented, RunCost, VoucherClaim, VoucherRefusal
from trainsizer.cost.subsidy import Subsidy, applies_to, apply_subsidy
from trainsizer.cost.tco import HOURS_PER_YEAR, Comparison, compare
from trainsizer.errors import InputError
from trainsizer.hardware.catalog import Accelerator, Catalog, default_catalog
from trainsizer.hardware.market import availability
from trainsizer.messages import Message, clauses, msg
from trainsizer.messages import money as to_money
from trainsizer.models.architecture import Architecture
from trainsizer.plan.option import Availability, PlanOption, Pricing
from trainsizer.scenario import Scenario
from trainsizer.system.bom import SystemPlan, size_system
from trainsizer.system.sites import Site
from trainsizer.workflows.robust import oom_chance
from trainsizer.workflows.setup_time import NONE as NO_SETUP
from trainsizer.workflows.setup_time import SetupTime
from trainsizer.workflows.time_value import TimeValue


@dataclass(frozen=True)
class MoneyTerms:
    """Where and how the user pays: site (for hardware it buys), prices, market, horizon, workload, budget."""

    site: Site
    prices: Prices
    market: str
    horizon_years: float = 3.0
    workload: Workload = Workload()
    budget: float | None = None
    voucher: Subsidy | None = None  # claimed on eligible rentals (cost.subsidy)
    time: TimeValue = TimeValue(0.0, "CNY", False)  # the value of the run's wall-clock time (the objective)
    setup: SetupTime = NO_SETUP  # start to first step, billed on a rented run's GPUs (workflows.setup_time)

    def utilisation_at(self, run_hours: float | None) -> float:
        """Utilisation for the horizon view of owning (power drawn, break-even, payback): the stated one, else
        the stated runs a month x the run's hours over the servers' month, else 0.7 (assumed: a team's shared
        cluster, the former default)."""
        return self.workload.busy(run_hours) or 0.7


def machine_need(opt: PlanOption, system: SystemPlan) -> MachineNeed:
    """What one rented instance of the option must hold beside its GPUs (system.host, system.storage)."""
    nodes = max(1, system.nodes)
    return MachineNeed(system.gpus_per_node if system.gpus > system.gpus_per_node else system.gpus,
                       system.host.instance_ram_gib, system.host.instance_cores,
                       system.storage.capacity_tb * 1000 / nodes, opt.offload != "none")


def _rental(opt: PlanOption, gpu: Accelerator, money: MoneyTerms,
            need: MachineNeed | None = None) -> tuple[RentalRun | None, Message | None]:
    """The run rented on its cheapest terms in the market (cost.per_run.cheapest_rental), or why it cannot be."""
    rent_ok = availability(gpu, money.market, "rent")
    if not rent_ok.obtainable:
        return None, msg("cost.not_rentable", market=money.market, status=rent_ok.status, reason=rent_ok.reason)
    run_s = opt.time_to_train_s  # a run is billed from the instance's start: its setup, then the training
    return cheapest_rental(money.prices, gpu.id, opt.gpus, run_s / 3600 + money.setup.hours if run_s else 1.0,
                           money.market, opt.nodes, money.budget, need)


def _horizon_offer(gpu: Accelerator, rental: RentalRun | None, money: MoneyTerms) -> tuple[RentalOffer | None, bool]:
    """The offer the horizon view rents on: the option's own rental (the one its run is priced on), else the
    first of the GPU's offers in the market (well-sourced, then cheapest); (None, False) when the market has none."""
    if rental is not None:
        return rental.offer, True
    if not availability(gpu, money.market, "rent").obtainable:
        return None, False
    offer = next((o for o in money.prices.rental_offers(gpu.id) if offer_market(o) == money.market), None)
    return offer, offer is not None


def _bought(gpu: Accelerator, cost: Comparison | None, site_ok: bool, money: MoneyTerms,
            hours: float | None) -> tuple[Bought | None, Message | None]:
    """The run bought at the stated workload (``cost.buy`` is already priced for the sets of servers the workload
    needs: cost.tco.compare), or why it cannot be."""
    buy_ok = availability(gpu, money.market, "buy")
    if not cost:
        return None, msg("cost.no_purchase_price")
    if not buy_ok.obtainable:
        return None, msg("cost.not_buyable", market=money.market, status=buy_ok.status, reason=buy_ok.reason)
    if not site_ok:
        return None, msg("cost.rent_instead")
    sets = money.workload.sets(hours)
    note = (msg("cost.buy_sets", n=money.workload.runs_per_month or 0.0, run=hours * 3600, sets=sets)
            if sets > 1 and hours else None)
    return Bought(cost=round(buy_share(cost.buy, hours or 1.0, money.workload)), commitment=round(cost.buy.capex_total),
                  sets=sets, utilisation=money.workload.busy(hours), note=note), None


def _per_run(opt: PlanOption, gpu: Accelerator, cost: Comparison | None, site_ok: bool, money: MoneyTerms,
             rental: tuple[RentalRun | None, Message | None]) -> RunCost:
    """The run rented on its cheapest terms (``rental``: :func:`_rental`) and bought at the stated workload, each
    with its commitment, or the reason it cannot be had; the acquisition that costs less per run within the budget."""
    run_s = opt.time_to_train_s
    hours = run_s / 3600 if run_s else None
    run, rent_unavailable = rental
    rented = None if run is None else _claim(Rented.of(run), money.voucher) if money.voucher else Rented.of(run)
    bought, buy_unavailable = _bought(gpu, cost, site_ok, money, hours)
    base = RunCost(hours=None if hours is None else round(hours, 2), currency=money.prices.currency,
                   workload=money.workload.describe(), rent=rented, buy=bought, rent_unavailable=rent_unavailable,
                   buy_unavailable=buy_unavailable)
    if hours is None:
        return _per_token(base, opt, cost, money)
    return _chosen(base, hours, money)


def _chosen(base: RunCost, hours: float, money: MoneyTerms) -> RunCost:
    """The acquisition that costs less per run (then commits less) within the budget, with the value of the run's
    time (``--time-value``) beside its cost: the objective; where none is within the budget, why."""
    cur = money.prices.currency
    choices: dict[str, Rented | Bought] = {k: v for k, v in ((RENT, base.rent), (BUY, base.buy)) if v}
    unavailable = {RENT: base.rent_unavailable, BUY: base.buy_unavailable}
    over_budget = None
    if money.budget is not None:
        over = {k: v for k, v in choices.items() if v.commitment > money.budget}
        for k, v in over.items():
            unavailable[k] = msg("cost.over_budget", money=to_money(v.commitment, cur),
                                 money2=to_money(money.budget, cur))
        over_budget = len(over) == len(choices)  # nothing within the budget (unpriced: nothing at all)
        choices = {k: v for k, v in choices.items() if k not in over}
    within = replace(base, rent_unavailable=unavailable[RENT], buy_unavailable=unavailable[BUY],
                     over_budget=over_budget)
    if not choices:
        return replace(within, reason=clauses([r for r in unavailable.values() if r]))
    acq = min(choices, key=lambda k: (choices[k].cost, choices[k].commitment))
    chosen = choices[acq]
    # the objective: the run's cost plus its wall-clock time at the time value (--time-value)
    time_cost = round(money.time.per_hour * (hours + money.setup.hours))
    return replace(within, acquisition=acq, cost=chosen.cost, commitment=chosen.commitment, time_cost=time_cost,
                   setup=money.setup if money.setup.minutes else None, objective=chosen.cost + time_cost)


def _claim(rent: Rented, voucher: Subsidy) -> Rented:
    """A compute voucher on an eligible rental: the run's cost and commitment net of it where its eligibility is
    confirmed, else what it would take off if approved (``possible``); on a provider it does not cover, the reason
    (the answer card says each: workflows.decide.adjustments)."""
    if not applies_to(voucher, rent.provider):
        why = msg("cost.voucher_not_here", voucher=voucher.id)
        return replace(rent, notes=(*rent.notes, why), voucher_not_applied=VoucherRefusal(id=voucher.id, reason=why))
    net, saved = apply_subsidy(rent.cost, voucher)
    claim = VoucherClaim(id=voucher.id, saved=round(saved), fraction=voucher.fraction, confidence=voucher.confidence,
                         eligibility=voucher.eligibility, cap=voucher.cap_per_year, cap_period=voucher.cap_period,
                         upper_bound=voucher.upper_bound, possible=not voucher.confirmed)
    if not voucher.confirmed:  # a possibility beside the price, never folded into it
        return replace(rent, notes=(*rent.notes, msg("cost.voucher_eligibility_unknown", voucher=voucher.id)),
                       voucher=claim)
    return replace(rent, cost_before_voucher=rent.cost, cost=round(net), commitment=round(net), voucher=claim)


def _per_token(base: RunCost, opt: PlanOption, cost: Comparison | None, money: MoneyTerms) -> RunCost:
    """Without the run's length: the cost of a million trained tokens, renting by the hour or owning at the
    horizon view's utilisation; the cheaper is the acquisition."""
    tokens_per_hour = opt.tokens_per_s * 3600
    per_mtok: dict[str, float] = {}
    if base.rent:
        per_mtok[RENT] = base.rent.price_per_gpu_hour * opt.gpus / tokens_per_hour * 1e6
    if base.buy and cost:
        hours = cost.buy.horizon_years * HOURS_PER_YEAR * money.utilisation_at(None)
        per_mtok[BUY] = cost.buy.total / hours / tokens_per_hour * 1e6
    # a run's bill needs its length: the offer alone is kept
    out = replace(base, rent=None, buy=None, rent_offer=base.rent, reason=msg("cost.no_run_length"))
    if not per_mtok:
        return out
    acq = min(per_mtok, key=lambda k: per_mtok[k])
    return replace(out, acquisition=acq, cost_per_million_tokens=round(per_mtok[acq], 4),
                   commitment=round(cost.buy.capex_total) if acq == BUY and cost else None)


def _verdict(pr: RunCost, horizon_verdict: Message) -> Message:
    cur = pr.currency
    if pr.cost is None and pr.cost_per_million_tokens:
        return clauses([msg("verdict.per_token", acquisition=pr.acquisition,
                            price=to_money(pr.cost_per_million_tokens, cur)), pr.reason])
    if pr.acquisition == RENT and pr.rent:
        r = pr.rent
        other = (msg("verdict.buying_would_cost", cost=to_money(pr.buy.cost, cur), workload=pr.workload)
                 if pr.buy else msg("verdict.buying_not", reason=pr.buy_unavailable) if pr.buy_unavailable
                 else None)
        return clauses([msg("verdict.rent", cost=to_money(r.cost, cur), provider=r.provider, term=r.term,
                            hours=r.billed_hours), other])
    if pr.acquisition == BUY and pr.buy:
        other = msg("verdict.renting_would_cost", cost=to_money(pr.rent.cost, cur)) if pr.rent else None
        return clauses([msg("verdict.buy", cost=to_money(pr.buy.cost, cur), workload=pr.workload,
                            commitment=to_money(pr.buy.commitment, cur)), other])
    reasons = [r for r in (pr.rent_unavailable, pr.buy_unavailable) if r] or [pr.reason]
    return msg("verdict.no_cost", reasons=[r for r in reasons if r], verdict=horizon_verdict)


@dataclass(frozen=True)
class PricedOptions:
    """The options priced (those within the budget), notes on the ones dropped, and the price rows every option
    priced rests on (a plan's ``prices_used``, dropped options' included)."""

    options: list[PlanOption]
    notes: list[Message]
    cited: tuple[Cited, ...]


def recommend_options(options: list[PlanOption], job: Scenario, arch: Architecture, money: MoneyTerms,
                      catalog: Catalog | None = None, max_oom_risk: float = 1.0) -> PricedOptions:
    """Attach system sizing, site fit, availability and cost (horizon and per run) to each option; drop the
    options the budget rules out (their commitment); notes say how many and why, and where nothing is left the
    least budget that would have an option that can be recommended (at most ``max_oom_risk`` of running out of
    memory, ``robust.oom_chance``)."""
    cat = catalog or default_catalog()
    out, over_budget, least = [], 0, None
    cited: list[Cited] = []
    for opt in options:
        gpu = cat.accelerator(opt.gpu)
        server = money.prices.server(gpu.id, opt.gpus_per_node)
        published_kw = server.row.max_power_kw if server else None
        cited += [server.cited] if server else []
        system = size_system(opt.scenario, arch, gpu, opt.tokens_per_s, money.site, published_kw)
        run_s = opt.time_to_train_s
        hours = run_s / 3600 if run_s else None
        rental = _rental(opt, gpu, money, machine_need(opt, system))
        offer, rentable = _horizon_offer(gpu, rental[0], money)
        try:
            cost = compare(system.inventory(), money.site, money.prices, money.horizon_years,
                           money.utilisation_at(hours), hours, money.workload.sets(hours), offer, rentable)
        except InputError as exc:
            if exc.field != "hardware.gpu":
                raise
            cost = None
        cited += [*(cost.cited if cost else ()), *([rental[0].cited] if rental[0] else [])]
        # buy prices only where the market sells the part (hardware.market): else no horizon view of owning
        sold = availability(gpu, money.market, "buy").obtainable
        site_ok = not system.site_fit or system.site_fit.fits
        per_run = _per_run(opt, gpu, cost, site_ok, money, rental)
        verdict = _verdict(per_run, cost.verdict if cost and sold else
                           per_run.buy_unavailable or msg("cost.no_purchase_price_short"))
        if per_run.acquisition == RENT and not site_ok:
            verdict = clauses([verdict, msg("site.rented")])
        elif system.site_fit and not site_ok:
            verdict = clauses([verdict, msg("site.verdict", verdict=system.site_fit.verdict)])
        if per_run.over_budget:
            over_budget += 1
            for k in (RENT, BUY):  # the least commitment that would have one the answer may recommend
                c = per_run.choice(k)
                if c and (least is None or c.commitment < least[0]) and oom_chance(opt) <= max_oom_risk:
                    least = (c.commitment, k, opt)
            continue
        available = Availability(market=money.market, buy=availability(gpu, money.market, "buy"),
                                 rent=availability(gpu, money.market, "rent"))
        out.append(opt.with_pricing(Pricing(system=system, availability=available, cost=cost if cost and sold else None,
                                            per_run=per_run, site_applies=per_run.acquisition != RENT,
                                            verdict=verdict)))
    notes = [msg("plan.over_budget", n=over_budget, money=to_money(money.budget or 0, money.prices.currency))
             ] if over_budget else []
    if least and not out:  # nothing within the budget: the least that would have one
        notes.insert(0, msg("plan.least_budget", money=to_money(least[0], money.prices.currency),
                            hardware={"gpus": least[2].gpus, "gpu": least[2].gpu}, acquisition=least[1]))
    return PricedOptions(out, notes, tuple(cited))


def merge_fabric_twins(options: list[PlanOption]) -> list[PlanOption]:
    """Options that differ only in the network between nodes (InfiniBand vs RoCE) shown once: the one that
    costs less per run (then less to own, then the faster), with the other fabric named in its notes."""
    def key(o: PlanOption) -> tuple[Any, ...]:
        tr = o.scenario.training
        return (o.gpu, o.gpus, o.gpus_per_node, o.scenario.hardware.intra_node,
                tuple(sorted(o.parallel_dict().items())), tr.micro_batch_size, tr.activation_checkpointing)

    def price(o: PlanOption) -> tuple[float, float, float]:
        run, own, inf = o.run_cost, o.buy_total, float("inf")
        return (inf if run is None else run, inf if own is None else own, o.step_time_s)

    kept: dict[tuple[Any, ...], PlanOption] = {}
    for o in options:
        k = key(o)
        if k not in kept:
            kept[k] = o
            continue
        keep, drop = sorted((kept[k], o), key=price)
        kept[k] = replace(keep, fabric_twin=msg("plan.fabric_twin", fabric=drop.inter_node, fabric2=keep.inter_node))
    return list(kept.values())
