"""What one training run costs, on real contract terms, and what the user must commit to get it.

Renting: every offer for the GPU in the user's market is priced for the run on its own terms — billed
hours are the run rounded up to the offer's billing granularity, and never less than the offer's minimum
term (a monthly contract bills a month even for a two-day run); preemptible capacity is used only when
nothing else is offered. The cheapest offer wins; its commitment is what the contract obliges the user to
pay (the minimum term, or the run itself when billed on demand).

Buying: the run's share of owning the servers (capex + opex over the horizon − residual value) at the
workload the user states: ``runs_per_month`` runs of this length, or a ``utilisation`` of the hardware;
with neither the job is taken to run once, so buying carries the whole cost of ownership. Its commitment
is the capex. Chinese clouds bill per second from power-on in the common case (``china-market.md``);
the offers' own terms are data in ``prices.yaml`` (``contract:``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from trainsizer.cost.machine import MachineNeed, shortfall, unchecked
from trainsizer.cost.price_rows import Cited
from trainsizer.cost.prices import Prices, RentalOffer
from trainsizer.cost.tco import HOURS_PER_MONTH, HOURS_PER_YEAR, BuyCost
from trainsizer.messages import Message, clauses, msg

if TYPE_CHECKING:  # the JSON's types, for annotations
    from trainsizer.plan.option_json import OfferMachineJSON, RentJSON

OFFER_MARKET = {"CNY": "cn", "USD": "global"}  # an offer quoted in CNY is a Chinese provider's


@dataclass(frozen=True)
class Workload:
    """How busy bought hardware stays: ``runs_per_month`` runs like this one, or a ``utilisation``."""

    runs_per_month: float | None = None
    utilisation: float | None = None

    def runs_over(self, horizon_years: float, run_hours: float) -> float:
        if self.runs_per_month:
            return max(1.0, self.runs_per_month * 12 * horizon_years)
        if self.utilisation:
            return max(1.0, self.utilisation * HOURS_PER_YEAR * horizon_years / max(run_hours, 1e-9))
        return 1.0

    def sets(self, run_hours: float | None) -> int:
        """How many sets of the servers the stated runs need: ``runs_per_month`` runs of ``run_hours`` must fit
        in a set's month (HOURS_PER_MONTH of wall-clock time); a stated utilisation is one set's."""
        if not self.runs_per_month or not run_hours:
            return 1
        return max(1, math.ceil(self.runs_per_month * run_hours / HOURS_PER_MONTH - 1e-9))

    def busy(self, run_hours: float | None) -> float | None:
        """The fraction of the time the bought servers are busy at this workload (None when not stated)."""
        if self.utilisation:
            return self.utilisation
        if self.runs_per_month and run_hours:
            return min(1.0, self.runs_per_month * run_hours / (HOURS_PER_MONTH * self.sets(run_hours)))
        return None

    def describe(self) -> Message:
        if self.runs_per_month:
            return msg("cost.workload_runs", n=self.runs_per_month)
        if self.utilisation:
            return msg("cost.workload_utilisation", pct=self.utilisation)
        return msg("cost.workload_once")


@dataclass(frozen=True)
class RentalRun:
    """One run on one rental offer."""

    offer: RentalOffer
    term: str
    billed_hours: float
    cost: float
    commitment: float
    notes: tuple[Message, ...] = ()

    @property
    def cited(self) -> Cited:
        """The offer's row, cited for renting on it on this run's term."""
        return self.offer.cite(self.term)

    def to_dict(self) -> RentJSON:
        """The run as an option's ``per_run.rent`` writes it (a voucher's claim is cost.run_cost.Rented's)."""
        t = self.offer.terms
        return {"provider": self.offer.provider, "term": self.term,
                "billing": t.billing_granularity if t else None, "min_term_hours": t.min_term_hours if t else None,
                "price_per_gpu_hour": round(self.offer.price_per_gpu_hour, 3),
                "billed_hours": round(self.billed_hours, 2),
                "cost": round(self.cost), "commitment": round(self.commitment), "confidence": self.offer.confidence,
                "source": self.offer.source, "as_of": self.offer.as_of, "stale": self.offer.stale,
                "notes": list(self.notes),
                "machine": _stated(self.offer.machine) if self.offer.machine else None}


def _stated(machine: Any) -> OfferMachineJSON:
    """What the offer's machine states: ``model_dump(exclude_none=True, exclude={"notes"})`` of its plain fields,
    read directly (dumping builds the model's serializer: ~2 ms of a plan)."""
    return {name: value for name in type(machine).model_fields if name != "notes"
            and (value := getattr(machine, name)) is not None}


def price_offer(offer: RentalOffer, gpus: int, run_hours: float) -> RentalRun:
    """The run billed on this offer's terms."""
    term, billed, minimum = offer.billed(run_hours)
    notes: list[Message] = []
    if minimum is not None:
        notes.append(msg("cost.contract_minimum", term=term, hours=minimum, run=run_hours))
    if term == "preemptible":
        notes.append(clauses([msg("cost.preemptible"), msg("cost.checkpoint_often")]))
    if offer.stale:
        notes.append(msg("cost.stale_price", year=str(offer.as_of)[:4]))
    cost = offer.price_per_gpu_hour * gpus * billed
    return RentalRun(offer, term, billed, cost, cost, tuple(notes))


def covers(offer: RentalOffer, gpus: int, nodes: int) -> bool:
    """Whether one order of the offer gives ``gpus`` GPUs on ``nodes`` networked servers. Several servers only
    where the offer says it rents them networked (``multi_node: true``) and states how many GPUs one order gets
    (``max_gpus``): an offer silent on either is one server, never an assumed cluster of any size."""
    t = offer.terms
    if nodes > 1:
        return t is not None and t.multi_node is True and t.max_gpus is not None and gpus <= t.max_gpus
    return t is None or t.max_gpus is None or gpus <= t.max_gpus


def offer_market(offer: RentalOffer) -> str:
    """The market an offer serves (by the currency it is quoted in)."""
    return OFFER_MARKET.get(offer.quoted_currency, "global")


ON_DEMAND = ("on-demand",)


def cheapest_on_demand(prices: Prices, gpu: str, market: str) -> RentalOffer | None:
    """The GPU's cheapest on-demand offer in the market (None without one): the price a run's compute floor is
    worked out at (``workflows.offer_gap``)."""
    offers = [o for o in prices.rental_offers(gpu) if offer_market(o) == market
              and (o.terms is None or o.terms.term in ON_DEMAND)]
    return min(offers, key=lambda o: o.price_per_gpu_hour, default=None)


def rental_candidates(prices: Prices, gpu: str, gpus: int, market: str, nodes: int = 1,
                      need: MachineNeed | None = None) -> tuple[list[RentalOffer], Message | None]:
    """The offers that could rent ``gpus`` x ``gpu`` on ``nodes`` servers in ``market`` (whose machine holds the
    ``need``), whatever the run's length; none, with the reason, when no offer can."""
    offers = [o for o in prices.rental_offers(gpu) if offer_market(o) == market]
    if not offers:
        return [], msg("cost.no_rental_offer", gpu=gpu, market=market)
    offers = [o for o in offers if covers(o, gpus, nodes)]
    if not offers:
        return [], msg("cost.no_cluster_lease", gpu=gpu, market=market, n_gpus=gpus, n_servers=nodes)
    if need is not None:
        short = {id(o): shortfall(o, need) for o in offers}
        held = [o for o in offers if short[id(o)] is None]
        if not held:
            return [], msg("cost.no_offer_holds", gpu=gpu, market=market, reason=short[id(offers[0])])
        offers = held
    return offers, None


def cheapest_offer(offers: list[RentalOffer], gpus: int, run_hours: float,
                   budget: float | None = None) -> tuple[RentalOffer, float]:
    """(offer, cost) of the cheapest run on ``offers`` (not empty; :func:`rental_candidates`), each billed as
    :func:`price_offer` bills it (a run's cost is also its commitment). With a ``budget``, offers whose commitment
    exceeds it are passed over while one within it exists (a yearly lease does not hide the on-demand offer that
    fits the budget); preemptible ones only when nothing else is offered."""
    runs = [(o, term, o.price_per_gpu_hour * gpus * billed)
            for o in offers for term, billed, _ in (o.billed(run_hours),)]
    if budget is not None:
        runs = [r for r in runs if r[2] <= budget] or runs
    firm = [r for r in runs if r[1] != "preemptible"]
    offer, _, cost = min(firm or runs, key=lambda r: r[2])
    return offer, cost


def cheapest_rental(prices: Prices, gpu: str, gpus: int, run_hours: float, market: str,
                    nodes: int = 1, budget: float | None = None,
                    need: MachineNeed | None = None) -> tuple[RentalRun | None, Message | None]:
    """The cheapest way to rent ``gpus`` x ``gpu`` on ``nodes`` servers for this run in ``market``, or None
    with the reason. With a ``need`` (host RAM, cores, disk per server), only offers whose machine holds it
    (cost.machine). With a ``budget``, offers whose commitment exceeds it are passed over while one within
    it exists (:func:`cheapest_offer`)."""
    offers, reason = rental_candidates(prices, gpu, gpus, market, nodes, need)
    if not offers:
        return None, reason
    best = price_offer(cheapest_offer(offers, gpus, run_hours, budget)[0], gpus, run_hours)
    caveat = unchecked(best.offer, need) if need is not None else None
    if caveat is not None:
        best = replace(best, notes=(*best.notes, caveat))
    return best, None


def buy_share(buy: BuyCost, run_hours: float, workload: Workload) -> float:
    """This run's share of owning the hardware over the horizon."""
    return buy.total / workload.runs_over(buy.horizon_years, run_hours)
