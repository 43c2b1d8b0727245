"""When no known offer rents the job by the hour: what its compute alone would cost at the cheapest on-demand price
the market knows for the GPU (the compute floor), and the machines that would hold it (several servers with RDMA
between them, or an instance with the host RAM its offload needs). The answer then says so in one line instead
of passing off a term contract or a purchase as the cost of one run: where a recommendation is made, the answer leads
with the quote to ask for (:meth:`OfferGap.lead`) and sets the priced option beside it, a purchase with its payback
against the floor (:class:`Payback`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from trainsizer.cost.per_run import cheapest_on_demand
from trainsizer.cost.prices import Prices, RentalOffer
from trainsizer.cost.tco import HOURS_PER_YEAR
from trainsizer.messages import Message, clauses, msg
from trainsizer.messages import money as to_money
from trainsizer.plan.option import PlanOption
from trainsizer.plan.option_range import Interval
from trainsizer.workflows.decide import RUNNER_UP_SPAN, action, runner_up_of, time_value_adjustment, trade_against
from trainsizer.workflows.robust import cost_range
from trainsizer.workflows.setup_time import SetupTime
from trainsizer.workflows.time_value import TimeValue

if TYPE_CHECKING:  # the JSON's types, for annotations
    from trainsizer.plan.option_json import OfferJSON
    from trainsizer.workflows.plan_schema import OfferGapJSON, PaybackJSON, RecommendationJSON, RunnerUpJSON

# A run priced at most this many times its compute floor is held by a known offer (assumed: per-second or per-hour
# billing, setup and a cloud's mark-up over the cheapest price stay within it; a term contract or a one-run
# purchase does not).
FLOOR_FACTOR = 3.0
# The layout named is the one of fewest GPUs whose compute plus time value is within this factor of the least
# (assumed: a team asks a cloud for the smallest cluster that does about as well, not the largest a few percent
# better).
SMALLEST_WITHIN = 1.25
# A priced way to have the job that costs more than this many times the quote's floor a run is not set beside it
# as an answer, only said to be that far (assumed: a purchase or a term contract at ten times the GPU time of the
# run is what no team would choose for it).
FAR_FACTOR = 10.0
QUOTE = "quote"  # recommendation.acquisition: rent by asking a cloud to quote the layout


@dataclass(frozen=True, slots=True, kw_only=True)
class OfferGap:
    """The compute floor of the job and what would hold it."""

    floor: float  # in the plan's currency
    currency: str
    gpu: str
    gpus: int
    servers: int
    gpus_per_server: int
    gpu_hours: float  # billed: the training's and the setup's on every GPU
    setup_hours: float  # wall-clock, from the instances' start to the first step (workflows.setup_time)
    reference: RentalOffer  # the GPU's cheapest on-demand offer in the market: the price the floor is worked out at
    host_ram_gib: float | None  # the instance RAM its offload needs (None without offload)
    option: PlanOption | None = field(default=None, compare=False, repr=False)  # the layout quoted

    @property
    def price_per_gpu_hour(self) -> float:
        return self.reference.price_per_gpu_hour

    @property
    def provider(self) -> str:
        return self.reference.provider

    def reference_offer(self) -> OfferJSON:
        """``recommendation.offer`` of a quoted answer: the offer whose price the floor is worked out at, marked
        ``reference`` (its listing rents the GPU by the hour, not the layout quoted: a cloud is asked to quote that)."""
        o = self.reference
        billing = o.terms.billing_granularity if o.terms else None
        return {"provider": o.provider, "term": o.term, "billing": billing,
                "price_per_gpu_hour": round(o.price_per_gpu_hour, 3), "as_of": o.as_of, "stale": o.stale,
                "reference": True}

    def holds(self) -> Message:
        """What would hold the layout: its servers with RDMA between them, its host RAM."""
        parts = []
        if self.servers > 1:
            parts.append(msg("gap.hold_servers", n=self.servers, gpus=self.gpus_per_server, gpu=self.gpu))
        else:
            parts.append(msg("gap.hold_instance", gpus=self.gpus_per_server, gpu=self.gpu))
        if self.host_ram_gib:
            parts.append(msg("gap.hold_ram", gib=self.host_ram_gib))
        return clauses(parts)

    @property
    def hours(self) -> float:
        """The run's wall-clock hours of training on the layout named (its GPU-hours over its GPUs, less setup)."""
        return self.gpu_hours / self.gpus - self.setup_hours

    def lead(self) -> Message:
        """The answer's first line where no known offer rents the job by the hour: what to rent, for about how
        much compute and how long, and what to ask a provider for."""
        return msg("gap.lead", hardware={"gpus": self.gpus, "gpu": self.gpu},
                   floor=to_money(self.floor, self.currency), time=self.hours * 3600, hold=self.holds())

    def message(self) -> Message:
        return msg("gap.no_known_offer", hold=self.holds(), floor=to_money(self.floor, self.currency),
                   hours=self.gpu_hours, setup=self.setup_hours * 3600, provider=self.provider,
                   price=to_money(self.price_per_gpu_hour, self.currency))

    def floor_range(self) -> Interval | None:
        """The 80 % range of the floor: the quoted layout's hours move it as they move its time to train (None
        without the layout)."""
        return None if self.option is None else cost_range(self.option, self.floor)

    def to_dict(self) -> OfferGapJSON:
        span = self.floor_range()
        return {"floor": round(self.floor), "floor_range": None if span is None else list(span),
                "currency": self.currency, "gpu": self.gpu, "gpus": self.gpus,
                "servers": self.servers, "gpu_hours": round(self.gpu_hours, 1), "hours": round(self.hours, 2),
                "setup_hours": round(self.setup_hours, 2),
                "price_per_gpu_hour": round(self.price_per_gpu_hour, 3), "provider": self.provider,
                "host_ram_gib": None if self.host_ram_gib is None else round(self.host_ram_gib, 1),
                "message": self.message()}


@dataclass(frozen=True, slots=True, kw_only=True)
class Payback:
    """A purchase set beside the quote: the runs at the compute floor its whole cost of owning over the horizon
    would pay for (buying costs less per run only beyond them: fewer if the quote is above the floor, more if
    busier servers draw more power), and the runs of its length its servers have time for over the horizon."""

    runs: int
    runs_possible: int
    years: float

    def message(self) -> Message:
        return msg("gap.payback", runs=self.runs, possible=self.runs_possible, years=self.years)

    def to_dict(self) -> PaybackJSON:
        return {"runs": self.runs, "runs_possible": self.runs_possible, "horizon_years": self.years,
                "message": self.message()}


def payback(pick: PlanOption, gap: OfferGap) -> Payback | None:
    """The payback of a bought ``pick`` against the compute floor (None where it is not bought or has no run
    length): its cost of owning (capex + opex over the horizon - residual, ``cost.tco.BuyCost.total``, for the
    sets of servers the workload needs) over the floor of one run."""
    cost, seconds = pick.pricing.cost if pick.pricing else None, pick.time_to_train_s
    if pick.acquisition != "buy" or not cost or not seconds or gap.floor <= 0:
        return None
    years, sets = cost.buy.horizon_years, (pick.per_run.buy.sets if pick.per_run and pick.per_run.buy else 1)
    possible = math.floor(years * HOURS_PER_YEAR * sets / (seconds / 3600))
    return Payback(runs=math.ceil(cost.buy.total / gap.floor), runs_possible=possible, years=years)


def compute_floor(options: list[PlanOption], prices: Prices, market: str, max_oom_risk: float,
                  time_value: float = 0.0, setup_hours: float = 0.0, budget: float | None = None) -> OfferGap | None:
    """The GPU time of the job (its training and ``setup_hours`` on every GPU, billed as a rental bills them) at its
    GPU's cheapest on-demand price, whether or not an offer rents its layout: of the layouts that would not run out
    of memory, the fewest GPUs whose cost plus the value of its time (``time_value`` a wall-clock hour, as the answer
    ranks) is within SMALLEST_WITHIN of the least, within ``budget``; None where no option has a run length or a
    price."""
    gaps: list[tuple[float, OfferGap]] = []
    hourly: dict[str, RentalOffer | None] = {}
    for o in options:
        hours = o.performance.gpu_hours
        if hours is None or o.oom_chance > max_oom_risk:
            continue
        if o.gpu not in hourly:
            hourly[o.gpu] = cheapest_on_demand(prices, o.gpu, market)
        reference = hourly[o.gpu]
        if reference is None:
            continue
        price = reference.price_per_gpu_hour
        system = o.pricing.system if o.pricing else None
        ram = system.host.instance_ram_gib if system is not None and o.offload != "none" else None
        billed = hours + setup_hours * o.gpus
        gap = OfferGap(floor=billed * price, currency=prices.currency, gpu=o.gpu, gpus=o.gpus, servers=o.nodes,
                       gpus_per_server=min(o.gpus, o.gpus_per_node), gpu_hours=billed, setup_hours=setup_hours,
                       reference=reference, host_ram_gib=ram, option=o)
        if budget is None or gap.floor <= budget:
            gaps.append((gap.floor + time_value * (hours / o.gpus + setup_hours), gap))
    if not gaps:
        return None
    least = min(v for v, _ in gaps)  # of those about as good, the smallest cluster: what a team asks a cloud for
    return min((g for v, g in gaps if v <= SMALLEST_WITHIN * least), key=lambda g: (g.gpus, g.floor))


def offer_gap(pick: PlanOption | None, options: list[PlanOption], prices: Prices, market: str,
              max_oom_risk: float, time_value: float = 0.0, setup_hours: float = 0.0,
              budget: float | None = None, objective: str = "cheapest") -> OfferGap | None:
    """The floor and what would hold the job, where the answer (``pick``: the recommended option) is not a run
    rented by the hour within FLOOR_FACTOR of it (a purchase, a term contract, or no answer); None where it is.
    The floor is the cheapest of every layout's on the cheapest objective or without an answer; on another objective
    it is the pick's own layout's (the objective chose the layout: its cost is weighed against its own GPU time)."""
    layouts = options if pick is None or objective == "cheapest" else [pick]
    floor = compute_floor(layouts, prices, market, max_oom_risk, time_value, setup_hours, budget)
    if floor is None:
        return None
    cost = pick.run_cost if pick else None
    if cost is not None and cost <= FLOOR_FACTOR * floor.floor:
        return None
    return floor


def quoted(rec: RecommendationJSON, gap_out: OfferGapJSON, gap: OfferGap, options: list[PlanOption], index: int,
           tokens: float | None, setup: SetupTime, time: TimeValue | None) -> RecommendationJSON:  # long: one answer
    """The answer where no known offer rents the job by the hour: the layout to ask a cloud to quote
    (``acquisition`` "quote", ``option`` its index in the plan's options), priced at its GPU time (the floor, setup
    billed); ``priced`` is the answer the priced options alone give (``rec``, made for ``pick``). Its why leads with
    the quote; the priced pick follows where it costs at most FAR_FACTOR times the floor a run, else only how far
    the least priced way to have it is (no answer costing many times the GPU time of the run is named as one); a
    purchase with its payback against the floor. Runner-ups are the priced options within RUNNER_UP_SPAN of it; the
    confidence is the caller's (``plan_job``).
    ``gap_out`` (the plan's ``offer_gap``) says it leads (``leads``, ``lead``, ``hold``, ``payback``)."""
    pick = options[rec["option"]]
    back = payback(pick, gap)
    gap_out.update({"leads": True, "lead": gap.lead(), "hold": gap.holds(),
                    "payback": back.to_dict() if back else None})
    cost, days, currency = pick.run_cost, gap.hours / 24, rec["currency"]
    gap_out["priced_far"] = far = cost is not None and cost > FAR_FACTOR * gap.floor
    if far:
        beside = msg("gap.priced_far", factor=int(cost / gap.floor), what=action(pick),
                     cost=to_money(cost, currency))
    else:
        beside = msg("gap.beside", why=rec["why"])
    why = msg("sentences", parts=[gap.lead(), beside,
                                  *([msg("gap.payback_sentence", payback=back.message())] if back else [])])
    runners: list[RunnerUpJSON] = []
    for i in (rec["option"], *(r["option"] for r in rec["runner_ups"])):
        o = options[i]
        if o.run_cost is not None and o.run_cost <= RUNNER_UP_SPAN * gap.floor:  # beyond, it is no alternative
            runners.append(runner_up_of(i, o, trade_against(gap.floor, days, o, currency)))
    adjust = [msg("adjust.setup_assumed" if setup.assumed else "adjust.setup", time=setup.shown_minutes * 60,
                  n=gap.gpus, money=to_money(setup.hours * gap.gpus * gap.price_per_gpu_hour, currency))]
    adjust += [m for m in (time_value_adjustment(time),) if m is not None]
    return {**rec, "option": index, "acquisition": QUOTE, "offer": gap.reference_offer(), "gpu": gap.gpu,
            "gpus": gap.gpus, "servers": gap.servers, "per_run": round(gap.floor), "commitment": round(gap.floor),
            "cost_per_million_tokens": gap.floor / tokens * 1e6 if tokens else None,
            "time_to_train_days": round(days, 2), "site_applies": False,
            "binding": {"code": "no_hourly_offer", "deadline_days": rec["binding"]["deadline_days"]},
            "why": why, "runner_ups": runners,
            "adjustments": adjust, "priced": rec}
