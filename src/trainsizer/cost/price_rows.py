"""The rows of a price list (``prices.yaml``, or a user's ``--prices`` file of the same shape), each a typed
object with its source and date: what a row is, what it quotes, in which currency, and the citation it gives
the figure it backs (:class:`Cited`). Lookups over a whole list and the conversion between currencies are
:mod:`trainsizer.cost.prices`."""

# Annotations stay objects here (no `from __future__ import annotations`): pydantic reads each field's type as
# is, without compiling its text into a ForwardRef first (~0.1 ms a model class, at every command's import).
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Annotated, Literal, TypedDict

from pydantic import BaseModel, ConfigDict, Field, model_validator

from trainsizer.cost.subsidy import Subsidy
from trainsizer.input_checks import Flag, Int, IsoDate, Number
from trainsizer.messages import Message
from trainsizer.provenance import stale_figure

RentalTerm = Literal["on-demand", "daily", "monthly", "yearly", "multi-year", "preemptible"]
BillingGranularity = Literal["per-second", "per-minute", "per-hour", "per-day", "per-month"]
Inclusion = Literal["rack", "power", "storage", "network", "vat"]

HOURS_PER_YEAR = 8760.0
HOURS_PER_MONTH = 730.0
# Hours a contract of each term binds when the offer states no minimum (assumed: the term's own length).
TERM_HOURS = {"on-demand": 0.0, "preemptible": 0.0, "daily": 24.0, "monthly": HOURS_PER_MONTH,
              "yearly": HOURS_PER_YEAR, "multi-year": 3 * HOURS_PER_YEAR}
GRANULARITY_HOURS = {"per-second": 1 / 3600, "per-minute": 1 / 60, "per-hour": 1.0, "per-day": 24.0,
                     "per-month": HOURS_PER_MONTH}


class CitationJSON(TypedDict):
    """A price or availability row a plan used (``Cited.to_dict``; the plan's ``prices_used``)."""

    item: Message
    source: str
    relay: str | None
    as_of: str


@dataclass(frozen=True)
class Cited:
    """One row a figure rests on: the item it backs (a message), its source, the relay and the figure's date."""

    item: Message
    source: str
    relay: str | None
    as_of: str

    def to_dict(self) -> CitationJSON:
        return {"item": self.item, "source": self.source, "relay": self.relay, "as_of": self.as_of}

    def sort_key(self) -> tuple[str, str, str]:
        return self.source, self.as_of, repr(self.item)


def listed(cited: Iterable[Cited]) -> list[Cited]:
    """Each citation once, in a stable order (by source, date, item): a plan's ``prices_used``."""
    return sorted(set(cited), key=lambda c: c.sort_key())


class _Row(BaseModel):
    # a row of a price list: unknown keys refused (with the closest one), numbers finite and never true/false
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, defer_build=True)  # built on first use


class RentalTerms(_Row):
    """A rental offer's contract terms (``contract:`` of a ``rental`` row in prices.yaml)."""

    term: RentalTerm
    billing_granularity: BillingGranularity | None = None  # None: not found
    # shortest commitment; 0 for on-demand, None: not stated (at most 10 years)
    min_term_hours: Number | None = Field(None, ge=0, le=87_600)
    stopped_time_billed: Flag | None = None  # is a stopped/idle instance still billed? None: not stated
    includes: tuple[Inclusion, ...] = ()  # what the price covers besides the GPU (vat only where stated)
    max_gpus: Int | None = Field(None, ge=1, le=1_000_000)  # most GPUs one order gets (None: not limited, as known)
    multi_node: Flag | None = None  # servers networked for training across nodes (None: not stated)
    source: str | None = None


class OfferMachine(_Row):
    """The machine a rental offer rents (``machine:`` of a ``rental`` row): what one instance can have beside its
    GPUs. Every figure is what the source states; None = not stated (the planner then treats it conservatively:
    cost/machine.py). Per-card clouds allocate host RAM and vCPU per card; whole servers per instance."""

    ram_gb_per_gpu: Number | None = Field(None, gt=0, le=4096)  # host RAM (GB) that comes with each card
    ram_gb_per_instance: Number | None = Field(None, gt=0, le=65536)  # or per whole instance (server)
    vcpus_per_gpu: Number | None = Field(None, gt=0, le=512)
    vcpus_per_instance: Number | None = Field(None, gt=0, le=4096)
    disk_gb: Number | None = Field(None, gt=0, le=1e6)  # most local / data disk one instance can have
    intra_node: Literal["nvlink", "pcie", "hccs"] | None = None  # how the cards inside an instance are linked
    fabric: str | None = None  # the network between instances, where multi-node (e.g. "ib-ndr-400", "roce")
    rdma: Flag | None = None  # RDMA between instances (InfiniBand, RoCE, eRDMA); False: TCP/IP only; None: not stated
    fabric_gbps: Number | None = Field(None, gt=0, le=100_000)  # Gbit/s between instances, per instance (ports summed)
    instance: str | None = None  # the provider's instance type name (e.g. "ecs.gn7e-c16g1.32xlarge")
    source: str
    as_of: IsoDate
    notes: str | None = None


# --- the rows of a price list (prices.yaml, or a user's --prices file of the same shape) --------------------------
Currency = Literal["CNY", "USD"]
Confidence = Literal["H", "M", "L"]
Price = Annotated[Number, Field(gt=0, le=1e10)]  # an amount paid; never 0, negative or unbounded
Amount = Annotated[Number, Field(ge=0, le=1e10)]  # a component or running cost; 0 where it is free
# opex values that are not amounts: their accepted range (fractions of the hardware, a number of years)
OPEX_RANGES = {"maintenance_fraction_per_year": (0.0, 1.0), "residual_value_after_3_years": (0.0, 1.0),
               "depreciation_years": (0.5, 30.0)}


# What a row is (the reader must never take an index, an estimate or an internal charge for a quote):
# list = a provider's published price list; quote = a price a seller or a dated report states for a deal;
# index = a market index or price tracker (not one provider's price); estimate = derived by this project from
# other rows or figures (``derived_from`` says which and how); internal = a non-market charge (never an offer).
Kind = Literal["list", "quote", "index", "estimate", "internal"]


class SourcedRow(_Row):
    """A row of a price list: its figure's source and date, what kind of figure it is and how sure."""

    source: str  # the primary public address: a URL, or repository + file path + commit
    as_of: IsoDate  # the figure's own date (the source's), not the day it was read
    read_on: IsoDate | None = None  # the day the source was read, where it differs from as_of
    relay: str | None = None  # the public page that relayed the figure, where it was not read at the source
    derived_from: str | None = None  # for a derived figure: the rows/figures it comes from and the rule
    kind: Kind | None = None
    confidence: Confidence | None = None
    stale: Flag = False
    notes: str | None = None

    @property
    def out_of_date(self) -> bool:
        """Marked stale in the data, or its figure over ``provenance.STALE_MONTHS`` old."""
        return stale_figure(self.stale, self.as_of)

    def cite(self, item: Message) -> Cited:
        """This row cited for ``item`` (what its figure backs)."""
        return Cited(item, self.source, self.relay or None, self.as_of)


class FxRow(SourcedRow):
    pair: Literal["USD/CNY"]
    rate: Number = Field(ge=1, le=20)  # a plausible USD/CNY rate, as --fx


class ServerRow(SourcedRow):
    id: str | None = None
    name: str | None = None  # what a reader sees instead of the id
    gpu: str
    gpus: Int = Field(ge=1, le=1024)
    price: Price
    currency: Currency = "CNY"
    includes: str | None = None
    max_power_kw: Number | None = Field(None, gt=0, le=1000)


class CardRow(SourcedRow):
    gpu: str
    price: Price
    currency: Currency = "CNY"


class Quoted(_Row):
    """A rental figure as its source states it, for checking the per-GPU-hour conversion: ``price`` per ``unit``
    for ``gpus`` GPUs (a server or a card), over ``hours`` per period; a per-PFLOPS price (``unit: P-year``) with
    the source's own PFLOPS per card (``p_per_card``)."""

    price: Price
    unit: Literal["card-hour", "card-month", "card-year", "server-hour", "server-month", "server-year", "P-year"]
    gpus: Int = Field(1, ge=1, le=1024)
    hours: Number | None = Field(None, gt=0, le=10_000)  # hours in one period; None: 730 a month, 8,760 a year
    p_per_card: Number | None = Field(None, gt=0, le=100)  # P-year only: the source's PFLOPS per card

    def per_gpu_hour(self) -> float:
        period = self.unit.split("-")[1]
        hours = self.hours or {"hour": 1.0, "month": 730.0, "year": 8760.0}[period]
        if self.unit == "P-year":
            if self.p_per_card is None:
                raise ValueError("quoted.p_per_card: required for a per-P price (the source's PFLOPS per card)")
            return self.price * self.p_per_card / hours
        return self.price / self.gpus / hours


class RentalRow(SourcedRow):
    provider: str
    gpu: str
    # null: the offer and its machine are public but the price is not ("ask for a quote"); never priced (rentals,
    # rental_offers skip it), only listed (trainsizer catalog prices)
    price_per_gpu_hour: Number | None = Field(gt=0, le=1e5)
    currency: Currency = "CNY"
    billing: str | None = None
    term: str | None = None
    contract: RentalTerms | None = None
    quoted: Quoted | None = None  # the figure as the source states it (checked against price_per_gpu_hour)
    machine: OfferMachine | None = None  # the machine it rents (None: nothing stated)

    @property
    def is_offer(self) -> bool:
        """A row that can be rented at a public price: an internal charge never is, nor a row whose price is on
        request (null ``price_per_gpu_hour``: listed by ``trainsizer catalog prices``, never priced)."""
        return self.kind != "internal" and self.price_per_gpu_hour is not None

    @property
    def weak(self) -> bool:
        """A low-confidence, derived, internal or preemptible (spot) figure: ranked after the well-sourced
        commercial offers of its GPU."""
        text = f"{self.notes or ''} {self.provider}".lower()
        return (self.confidence == "L" or self.kind in ("estimate", "internal")
                or any(w in text for w in ("preempt", "spot", "internal")))


class ComponentRow(SourcedRow):
    price: Amount
    currency: Currency = "CNY"
    unit: str | None = None


class OpexRow(SourcedRow):
    value: Amount
    currency: Currency | None = None  # None: not an amount (a fraction, years)


class RuleRow(SourcedRow):
    low: Number | None = Field(None, ge=0, le=1e3)
    high: Number | None = Field(None, ge=0, le=1e3)
    value: Number | None = Field(None, ge=0, le=1e3)
    quote: str | None = None


class PriceFile(_Row):
    """A whole price list; every section optional (a user's file overrides or adds rows)."""

    schema_version: Int | None = None
    reviewed: IsoDate | None = None
    fx: list[FxRow] = []
    servers: list[ServerRow] = []
    gpu_cards: list[CardRow] = []
    rental: list[RentalRow] = []
    components: dict[str, ComponentRow] = {}
    opex: dict[str, OpexRow] = {}
    subsidies: list[Subsidy] = []  # compute vouchers (cost/subsidy.py)
    rules_of_thumb: dict[str, RuleRow] = {}

    def over(self, base: "PriceFile") -> "PriceFile":
        """This (a user's) list over ``base``: its rows first in each list (they win lookups), its keys over the
        base's in each mapping, its own ``schema_version``/``reviewed`` where it states them."""
        update: dict[str, object] = {}
        for name in self.model_fields_set:
            mine, theirs = getattr(self, name), getattr(base, name)
            update[name] = (mine + theirs if isinstance(mine, list) else {**theirs, **mine} if isinstance(mine, dict)
                            else mine)
        return base.model_copy(update=update)

    @model_validator(mode="after")
    def _opex_in_range(self) -> "PriceFile":
        for key, (low, high) in OPEX_RANGES.items():
            row = self.opex.get(key)
            if row is not None and not low <= row.value <= high:
                raise ValueError(f"opex.{key}.value: {row.value:g}; accepted: {low:g} to {high:g}")
        return self


