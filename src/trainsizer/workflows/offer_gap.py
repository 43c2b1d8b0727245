"""When no known offer rents the job by the hour: what its compute alone would cost at the cheapest on-demand price
the market knows for the GPU (the compute floor), and the machines that would hold it (several servers with RDMA
between them, or an instance with the host RAM its offload needs). The answer then says so in one line instead
of passing off a term contract or a purchase as the cost of one run: where a recommendation is made, the answer leads
with the quote to ask for (:meth:`OfferGap.lead`) and sets the priced option beside it, a purchase with its payback
against the floor (:class:`Payback`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from trainsizer.cost.per_run import offer_market
from trainsizer.cost.prices import Prices
from trainsizer.cost.tco import HOURS_PER_YEAR
from trainsizer.messages import Message, clauses, msg
from trainsizer.messages import money as to_money
from trainsizer.plan.option import PlanOption
from trainsizer.workflows.plan_schema import OfferGapJSON, PaybackJSON, RecommendationJSON

# A run priced at most this many times its compute floor is held by a known offer (assumed: per-second or per-hour
# billing, setup and a cloud's mark-up over the cheapest price stay within it; a term contract or a one-run
# purchase does not).
FLOOR_FACTOR = 3.0
# The layout named is the one of fewest GPUs whose compute plus time value is within this factor of the least
# (assumed: a team asks a cloud for the smallest cluster that does about as well, not the largest a few percent
# better).
SMALLEST_WITHIN = 1.25
ON_DEMAND = ("on-demand",)


@dataclass(frozen=True, slots=True, kw_only=True)
class OfferGap:
    """The compute floor of the job and what would hold it."""

    floor: float  # in the plan's currency
    currency: str
    gpu: str
    gpus: int
    servers: int
    gpus_per_server: int
    gpu_hours: float
    price_per_gpu_hour: float
    provider: str
    host_ram_gib: float | None  # the instance RAM its offload needs (None without offload)

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
        """The run's wall-clock hours on the layout named (its GPU-hours over its GPUs)."""
        return self.gpu_hours / self.gpus

    def lead(self) -> Message:
        """The answer's first line where no known offer rents the job by the hour: what to rent, for about how
        much compute and how long, and what to ask a provider for."""
        return msg("gap.lead", hardware={"gpus": self.gpus, "gpu": self.gpu},
                   floor=to_money(self.floor, self.currency), time=self.hours * 3600, hold=self.holds())

    def message(self) -> Message:
        return msg("gap.no_known_offer", hold=self.holds(), floor=to_money(self.floor, self.currency),
                   hours=self.gpu_hours, provider=self.provider,
                   price=to_money(self.price_per_gpu_hour, self.currency))

    def to_dict(self) -> OfferGapJSON:
        return {"floor": round(self.floor), "currency": self.currency, "gpu": self.gpu, "gpus": self.gpus,
                "servers": self.servers, "gpu_hours": round(self.gpu_hours, 1), "hours": round(self.hours, 2),
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


def _hourly(prices: Prices, gpu: str, market: str) -> tuple[float, str] | None:
    """The cheapest on-demand price per GPU-hour of the GPU in the market, and its provider."""
    offers = [o for o in prices.rental_offers(gpu) if offer_market(o) == market
              and (o.terms is None or o.terms.term in ON_DEMAND)]
    best = min(offers, key=lambda o: o.price_per_gpu_hour, default=None)
    return None if best is None else (best.price_per_gpu_hour, best.provider)


def compute_floor(options: list[PlanOption], prices: Prices, market: str, max_oom_risk: float,
                  time_value: float = 0.0) -> OfferGap | None:
    """The compute of the job at its GPU's cheapest on-demand price, whether or not an offer rents its layout: of the
    layouts that would not run out of memory, the one whose compute plus the value of its time (``time_value`` a
    wall-clock hour, as the answer ranks) is least; None where no option has a run length or a price."""
    gaps: list[tuple[float, OfferGap]] = []
    hourly: dict[str, tuple[float, str] | None] = {}
    for o in options:
        hours = o.performance.gpu_hours
        if hours is None or o.oom_chance > max_oom_risk:
            continue
        if o.gpu not in hourly:
            hourly[o.gpu] = _hourly(prices, o.gpu, market)
        if hourly[o.gpu] is None:
            continue
        price, provider = hourly[o.gpu]
        system = o.pricing.system if o.pricing else None
        ram = system.host.instance_ram_gib if system is not None and o.offload != "none" else None
        gap = OfferGap(floor=hours * price, currency=prices.currency, gpu=o.gpu, gpus=o.gpus, servers=o.nodes,
                       gpus_per_server=min(o.gpus, o.gpus_per_node), gpu_hours=hours, price_per_gpu_hour=price,
                       provider=provider, host_ram_gib=ram)
        gaps.append((gap.floor + time_value * hours / o.gpus, gap))
    if not gaps:
        return None
    least = min(v for v, _ in gaps)  # of those about as good, the smallest cluster: what a team asks a cloud for
    return min((g for v, g in gaps if v <= SMALLEST_WITHIN * least), key=lambda g: (g.gpus, g.floor))


def offer_gap(pick: PlanOption | None, options: list[PlanOption], prices: Prices, market: str,
              max_oom_risk: float, time_value: float = 0.0) -> OfferGap | None:
    """The floor and what would hold the job, where the answer (``pick``: the recommended option) is not a run
    rented by the hour within FLOOR_FACTOR of it (a purchase, a term contract, or no answer); None where it is."""
    floor = compute_floor(options, prices, market, max_oom_risk, time_value)
    if floor is None:
        return None
    cost = pick.run_cost if pick else None
    if cost is not None and cost <= FLOOR_FACTOR * floor.floor:
        return None
    return floor


def lead_with_quote(rec: RecommendationJSON, gap_out: OfferGapJSON, gap: OfferGap, pick: PlanOption) -> None:
    """A recommendation no known offer rents by the hour leads with the quote to ask for: ``rec["why"]`` starts with
    it, the priced pick follows (a purchase with its payback against the floor), and ``gap_out`` (the plan's
    ``offer_gap``) says so (``leads``, ``lead``, ``hold``, ``payback``)."""
    back = payback(pick, gap)
    gap_out.update({"leads": True, "lead": gap.lead(), "hold": gap.holds(),
                    "payback": back.to_dict() if back else None})
    rec["why"] = msg("sentences", parts=[gap.lead(), msg("gap.beside", why=rec["why"]),
                                         *([msg("gap.payback_sentence", payback=back.message())] if back else [])])
