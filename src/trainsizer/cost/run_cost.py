"""What one training run costs, as the plan shows it (an option's ``per_run``, docs/plan-json.md): the run rented on
its cheapest terms (:class:`Rented`), its share of owning the servers (:class:`Bought`), the acquisition that costs
less within the budget and the money it commits (:class:`RunCost`). ``workflows.pricing`` builds these from the
billing of ``cost.per_run``; every reader uses their attributes, and :meth:`RunCost.to_dict` writes the JSON.

The figures are those the plan shows (rounded as its JSON writes them): what the recommendation weighs is what a
reader sees."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from trainsizer.cost.per_run import RentalRun
from trainsizer.messages import Message

if TYPE_CHECKING:  # a higher layer's value type, held and written here (workflows.setup_time)
    from trainsizer.plan.option_json import (
        BuyJSON,
        OfferJSON,
        PerRunJSON,
        RentJSON,
        VoucherJSON,
        VoucherRefusalJSON,
    )
    from trainsizer.workflows.setup_time import SetupTime

RENT = "rent"
BUY = "buy"


@dataclass(frozen=True, slots=True, kw_only=True)
class VoucherClaim:
    """A compute voucher claimed on a rental (cost.subsidy): what it takes off the run (``saved``), or what it would
    take off if its eligibility were confirmed (``possible``: beside the price, never folded into it)."""

    id: str
    saved: int
    fraction: float
    confidence: str
    eligibility: str
    cap: float | None
    cap_period: str
    upper_bound: bool
    possible: bool = False

    def to_dict(self) -> VoucherJSON:
        out: VoucherJSON = {"id": self.id, "saved": self.saved, "fraction": self.fraction,
                               "confidence": self.confidence, "eligibility": self.eligibility, "cap": self.cap,
                               "cap_period": self.cap_period, "upper_bound": self.upper_bound}
        if self.possible:
            out["possible"] = True
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class VoucherRefusal:
    """A voucher the user claimed that the run's provider does not take, and why."""

    id: str
    reason: Message

    def to_dict(self) -> VoucherRefusalJSON:
        return {"id": self.id, "reason": self.reason}


@dataclass(frozen=True, slots=True, kw_only=True)
class Rented:
    """The run on its cheapest rental offer (``run``: the offer, term, billed hours), with its cost and commitment
    as shown (net of a confirmed voucher) and its notes (the contract's, the machine's, the voucher's)."""

    run: RentalRun
    cost: int
    commitment: int
    notes: tuple[Message, ...]
    cost_before_voucher: int | None = None
    voucher: VoucherClaim | None = None
    voucher_not_applied: VoucherRefusal | None = None

    @classmethod
    def of(cls, run: RentalRun) -> Rented:
        return cls(run=run, cost=round(run.cost), commitment=round(run.commitment), notes=run.notes)

    @property
    def provider(self) -> str:
        return self.run.offer.provider

    @property
    def term(self) -> str:
        return self.run.term

    @property
    def billing(self) -> str | None:
        terms = self.run.offer.terms
        return terms.billing_granularity if terms else None

    @property
    def price_per_gpu_hour(self) -> float:
        return round(self.run.offer.price_per_gpu_hour, 3)

    @property
    def billed_hours(self) -> float:
        return round(self.run.billed_hours, 2)

    @property
    def as_of(self) -> str:
        return self.run.offer.as_of

    @property
    def stale(self) -> bool:
        return self.run.offer.stale

    def offer_dict(self) -> OfferJSON:
        """The offer alone (``per_run.rent_offer``: a run without its length is priced per token on it)."""
        return {"provider": self.provider, "term": self.term, "billing": self.billing,
                "price_per_gpu_hour": self.price_per_gpu_hour}

    def to_dict(self) -> RentJSON:
        out: RentJSON = {**self.run.to_dict(), "cost": self.cost, "commitment": self.commitment,
                         "notes": list(self.notes)}
        if self.voucher_not_applied is not None:
            out["voucher_not_applied"] = self.voucher_not_applied.to_dict()
        if self.cost_before_voucher is not None:
            out["cost_before_voucher"] = self.cost_before_voucher
        if self.voucher is not None:
            out["voucher"] = self.voucher.to_dict()
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class Bought:
    """The run's share of owning the servers at the stated workload (``cost``), the capex it commits, the sets of
    servers the workload needs and how busy they stay (None: not stated)."""

    cost: int
    commitment: int
    sets: int
    utilisation: float | None
    note: Message | None = None  # where the workload needs more than one set of servers

    def to_dict(self) -> BuyJSON:
        out: BuyJSON = {"cost": self.cost, "commitment": self.commitment, "sets": self.sets,
                               "utilisation": self.utilisation}
        if self.note is not None:
            out["note"] = self.note
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class RunCost:
    """One run on real terms: rented and bought (each None with its ``*_unavailable`` reason), the acquisition that
    costs less within the budget with its ``cost``, ``commitment``, the value of the run's time (``time_cost``,
    ``setup``) and their sum (``objective``). Without the run's length (``hours`` None: no training.tokens) the run
    is priced per million tokens (``cost_per_million_tokens``) on ``rent_offer`` or the horizon view of owning;
    ``reason`` says why no run is priced."""

    hours: float | None
    currency: str
    workload: Message
    rent: Rented | None = None
    buy: Bought | None = None
    rent_unavailable: Message | None = None
    buy_unavailable: Message | None = None
    over_budget: bool | None = None  # None: no budget stated
    acquisition: str | None = None  # RENT | BUY
    cost: int | None = None
    commitment: int | None = None
    time_cost: int | None = None
    setup: SetupTime | None = None
    objective: float | None = None
    reason: Message | None = None
    rent_offer: Rented | None = None
    cost_per_million_tokens: float | None = None

    @property
    def priced(self) -> bool:
        """An acquisition with a cost: a run's, or a million tokens'."""
        return bool(self.acquisition) and (self.cost is not None or bool(self.cost_per_million_tokens))

    def choice(self, acquisition: str) -> Rented | Bought | None:
        return self.rent if acquisition == RENT else self.buy if acquisition == BUY else None

    def shown_offer(self) -> Rented | None:
        """The rental offer the answer names: the run's, else the per-token one."""
        return self.rent or self.rent_offer

    def to_dict(self) -> PerRunJSON:
        """``per_run`` as docs/plan-json.md writes it (its keys in their documented order)."""
        out: PerRunJSON = {"hours": self.hours, "currency": self.currency, "workload": self.workload,
                               "rent": self.rent.to_dict() if self.rent else None,
                               "buy": self.buy.to_dict() if self.buy else None,
                               "rent_unavailable": self.rent_unavailable, "buy_unavailable": self.buy_unavailable}
        if self.hours is None:  # priced per token
            out["reason"] = self.reason
            if self.rent_offer is not None:
                out["rent_offer"] = self.rent_offer.offer_dict()
            if self.acquisition:
                out.update({"acquisition": self.acquisition, "cost": self.cost,
                            "cost_per_million_tokens": self.cost_per_million_tokens, "commitment": self.commitment})
            return out
        if self.over_budget is not None:
            out["over_budget"] = self.over_budget
        if not self.acquisition:
            out["reason"] = self.reason
            return out
        out.update({"acquisition": self.acquisition, "cost": self.cost, "commitment": self.commitment,
                    "time_cost": self.time_cost})
        if self.setup is not None:
            out["setup"] = self.setup.to_dict()
        out["objective"] = self.objective
        return out
