"""Prices as data (``prices.yaml``, each with source and as_of), currency conversion, lookups.

Users override any figure with their own quotes file of the same shape (``--prices FILE``).
Rental offers also carry typed contract terms (``contract:``), read by :meth:`Prices.rental_offers` /
:func:`rental_offers`; the older lookups (``rentals``, ``server``, ``card``) are unchanged.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from trainsizer.currency import CURRENCIES
from trainsizer.datafiles import packaged_yaml, user_yaml
from trainsizer.errors import N_, InputError
from trainsizer.input_checks import Flag, Int, IsoDate, Number, checked_once, parse_model
from trainsizer.lookup import unknown_id
from trainsizer.messages import Message, msg
from trainsizer.provenance import is_stale

RentalTerm = Literal["on-demand", "daily", "monthly", "yearly", "multi-year", "preemptible"]
BillingGranularity = Literal["per-second", "per-minute", "per-hour", "per-day", "per-month"]
Inclusion = Literal["rack", "power", "storage", "network", "vat"]


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


class _Sourced(_Row):
    source: str  # the primary public address: a URL, or repository + file path + commit
    as_of: IsoDate  # the figure's own date (the source's), not the day it was read
    read_on: IsoDate | None = None  # the day the source was read, where it differs from as_of
    relay: str | None = None  # the public page that relayed the figure, where it was not read at the source
    derived_from: str | None = None  # for a derived figure: the rows/figures it comes from and the rule
    kind: Kind | None = None
    confidence: Confidence | None = None
    stale: Flag = False
    notes: str | None = None


class FxRow(_Sourced):
    pair: Literal["USD/CNY"]
    rate: Number = Field(ge=1, le=20)  # a plausible USD/CNY rate, as --fx


class ServerRow(_Sourced):
    id: str | None = None
    name: str | None = None  # what a reader sees instead of the id
    gpu: str
    gpus: Int = Field(ge=1, le=1024)
    price: Price
    currency: Currency = "CNY"
    includes: str | None = None
    max_power_kw: Number | None = Field(None, gt=0, le=1000)


class CardRow(_Sourced):
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


class RentalRow(_Sourced):
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


class ComponentRow(_Sourced):
    price: Amount
    currency: Currency = "CNY"
    unit: str | None = None


class OpexRow(_Sourced):
    value: Amount
    currency: Currency | None = None  # None: not an amount (a fraction, years)


class RuleRow(_Sourced):
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
    subsidies: list[dict[str, Any]] = []  # rows checked by cost/subsidy.py (load_subsidies)
    rules_of_thumb: dict[str, RuleRow] = {}

    @model_validator(mode="after")
    def _opex_in_range(self) -> PriceFile:
        for key, (low, high) in OPEX_RANGES.items():
            row = self.opex.get(key)
            if row is not None and not low <= row.value <= high:
                raise ValueError(f"opex.{key}.value: {row.value:g}; accepted: {low:g} to {high:g}")
        return self


def check_price_file(data: Any, origin: str, gpu_ids: Collection[str] | None = None) -> dict[str, Any]:
    """A parsed price list (a user's --prices file) checked row by row; one InputError names the file and the
    field. With ``gpu_ids`` (the catalog in use) every row's GPU must be one of them: a misspelt id would
    otherwise never match a plan's GPU and the price would be silently ignored. The data is returned as it was
    (the lookups read the mappings)."""
    if not isinstance(data, dict):
        raise InputError(origin, "a prices file is a mapping like prices.yaml (fx, servers, gpu_cards, rental, "
                                 "components, opex, subsidies, rules_of_thumb)")
    parse_model(PriceFile, data, f"{origin}:")
    if gpu_ids is not None:
        for section in ("servers", "gpu_cards", "rental"):
            for i, row in enumerate(data.get(section) or []):
                if row["gpu"] not in gpu_ids:
                    raise unknown_id(f"{origin}: {section}[{i}].gpu", row["gpu"], gpu_ids)
    return data


@dataclass(frozen=True)
class RentalOffer:
    """One rental row with its price in the chosen currency and its typed terms (None: no ``contract`` data)."""

    provider: str
    gpu: str | None
    price_per_gpu_hour: float  # in ``currency``
    currency: str
    terms: RentalTerms | None
    quoted_price: float  # as in the data, in ``quoted_currency``
    quoted_currency: str
    confidence: str | None
    source: str
    as_of: str
    stale: bool = False
    notes: str | None = None
    kind: str | None = None
    read_on: str | None = None
    relay: str | None = None
    machine: OfferMachine | None = None  # what one instance has beside its GPUs (None: not stated)


@dataclass(frozen=True)
class Prices:
    data: dict[str, Any]
    currency: str = "CNY"
    fx_override: float | None = None  # USD/CNY rate to use instead of the data's
    used: list[Cited] = field(default_factory=list, compare=False)  # rows consulted, for the report
    # each GPU's parsed offers (the planner's screen asks for them once per screened layout)
    _offers: dict[str, list[RentalOffer]] = field(default_factory=dict, compare=False, repr=False)

    @property
    def usd_cny(self) -> float:
        if self.fx_override:
            return self.fx_override
        for entry in self.data.get("fx", []):
            if entry.get("pair") == "USD/CNY":
                return float(entry["rate"])
        raise InputError("prices.fx", "no USD/CNY rate in the price data")

    def convert(self, amount: float, currency: str) -> float:
        if currency == self.currency:
            return amount
        if (currency, self.currency) == ("USD", "CNY"):
            return amount * self.usd_cny
        if (currency, self.currency) == ("CNY", "USD"):
            return amount / self.usd_cny
        raise InputError("currency", N_("{value!r}; accepted: {accepted}"), value=currency,
                         accepted=", ".join(CURRENCIES))

    def _cite(self, entry: dict[str, Any], item: Message) -> None:
        self.used.append(cite(entry, item))

    def server(self, gpu: str, gpus: int) -> tuple[float, dict[str, Any]] | None:
        """Price of one ``gpus``-GPU server with that GPU, in the chosen currency."""
        exact = [s for s in self.data.get("servers", []) if s["gpu"] == gpu and int(s["gpus"]) == gpus]
        same_gpu = [s for s in self.data.get("servers", []) if s["gpu"] == gpu]
        entry = (exact or same_gpu or [None])[0]
        if entry is None:
            return None
        price = self.convert(float(entry["price"]), entry.get("currency", "CNY")) * gpus / int(entry["gpus"])
        self._cite(entry, msg("price.server", server={"id": entry.get("id"), "gpus": int(entry["gpus"]), "gpu": gpu}))
        return price, entry

    def card(self, gpu: str) -> float | None:
        for entry in self.data.get("gpu_cards", []):
            if entry["gpu"] == gpu:
                self._cite(entry, msg("price.card", gpu=gpu))
                return self.convert(float(entry["price"]), entry.get("currency", "CNY"))
        return None

    def component(self, key: str) -> float:
        entry = self.data.get("components", {}).get(key)
        if not entry:
            raise InputError(f"prices.components.{key}", "missing from the price data")
        self._cite(entry, msg("price.component", component=key))
        return self.convert(float(entry["price"]), entry.get("currency", "CNY"))

    def opex(self, key: str) -> float:
        entry = self.data.get("opex", {}).get(key)
        if not entry:
            raise InputError(f"prices.opex.{key}", "missing from the price data")
        self._cite(entry, msg("price.opex", opex=key))
        value = float(entry["value"])
        return self.convert(value, entry["currency"]) if entry.get("currency") else value

    def rule(self, key: str) -> dict[str, Any]:
        return self.data.get("rules_of_thumb", {}).get(key, {})

    def rentals(self, gpu: str) -> list[tuple[float, dict[str, Any]]]:
        """Offers for a GPU, cheapest first; well-sourced (H/M) commercial on-demand or term offers before
        low-confidence, preemptible or internal ones. An offer without a public price (null: ask for a quote) is
        not one that can be priced: left out."""
        out = []
        for entry in self.data.get("rental", []):
            if entry.get("gpu") == gpu and entry.get("kind") != "internal" and _priced(entry):
                out.append((self.convert(float(entry["price_per_gpu_hour"]), entry.get("currency", "CNY")), entry))
        return sorted(out, key=_rental_rank)

    def rental_offers(self, gpu: str) -> list[RentalOffer]:
        """Every rental offer for ``gpu`` with its contract terms, in the order of :meth:`rentals`
        (well-sourced commercial offers first, then cheapest). Bad ``contract`` data is an InputError."""
        if gpu not in self._offers:
            self._offers[gpu] = self._rental_offers(gpu)
        return list(self._offers[gpu])

    def _rental_offers(self, gpu: str) -> list[RentalOffer]:
        rows = [(i, e) for i, e in enumerate(self.data.get("rental", []))  # an internal charge is never an offer,
                if e.get("gpu") == gpu and e.get("kind") != "internal" and _priced(e)]  # nor one without a price
        offers = []
        shipped = _shipped_offer_terms()
        for i, entry in rows:
            if id(entry) in shipped:  # a shipped row, its terms already checked
                terms, machine = shipped[id(entry)]
            else:
                terms, machine = _offer_terms(entry, i)
            quoted_currency = entry.get("currency", "CNY")
            quoted = float(entry["price_per_gpu_hour"])
            offers.append((self.convert(quoted, quoted_currency), entry, RentalOffer(
                str(entry.get("provider", "?")), entry.get("gpu"), self.convert(quoted, quoted_currency), self.currency,
                terms, quoted, quoted_currency, entry.get("confidence"), str(entry.get("source", "?")),
                str(entry.get("as_of", "?")), is_stale(entry), entry.get("notes"), entry.get("kind"),
                entry.get("read_on"), entry.get("relay"), machine)))
        return [offer for *_, offer in sorted(offers, key=lambda x: _rental_rank((x[0], x[1])))]


@dataclass(frozen=True)
class Cited:
    """One row a figure rests on: the item it backs (a message), its source, the relay and the figure's date."""

    item: Message
    source: str
    relay: str | None
    as_of: str

    def to_dict(self) -> dict[str, Any]:
        return {"item": self.item, "source": self.source, "relay": self.relay, "as_of": self.as_of}

    def sort_key(self) -> tuple[str, str, str]:
        return self.source, self.as_of, repr(self.item)


def cite(entry: dict[str, Any], item: Message) -> Cited:
    """The row ``entry`` cited for ``item``."""
    return Cited(item, str(entry.get("source", "?")), entry.get("relay") or None, str(entry.get("as_of", "?")))


def _priced(entry: dict[str, Any]) -> bool:
    """A rental row with a public price (null price_per_gpu_hour: the price is on request)."""
    return entry.get("price_per_gpu_hour") is not None


def _weak_offer(entry: dict[str, Any]) -> bool:
    text = f"{entry.get('notes', '')} {entry.get('provider', '')}".lower()
    return (entry.get("confidence") == "L" or entry.get("kind") in ("estimate", "internal")
            or any(w in text for w in ("preempt", "spot", "internal")))


def _rental_rank(item: tuple[float, dict[str, Any]]) -> tuple[bool, float]:
    return _weak_offer(item[1]), item[0]


@cache
def _default_data() -> dict[str, Any]:
    return packaged_yaml("trainsizer.cost", "prices.yaml")


def _offer_terms(entry: dict[str, Any], i: int) -> tuple[RentalTerms | None, OfferMachine | None]:
    """A rental row's contract terms and machine, checked (None where the row has none)."""
    terms = machine = None
    if entry.get("contract") is not None:
        terms = parse_model(RentalTerms, entry["contract"], f"prices.rental[{i}].contract")
    if entry.get("machine") is not None:
        machine = parse_model(OfferMachine, entry["machine"], f"prices.rental[{i}].machine")
    return terms, machine


@cache
def _shipped_offer_terms() -> dict[int, tuple[RentalTerms | None, OfferMachine | None]]:
    """The checked terms of every shipped rental row, by the row's identity (the rows of ``_default_data``, which a
    user's price file extends but never copies), kept in the user's cache folder like the catalog
    (``datafiles.cached_objects``: keyed on prices.yaml and the code that checks it): a plan prices offers of
    every GPU, and building the two schemas and checking ~50 rows at each start took ~5 ms. Empty when the cache
    cannot be used: the rows are then checked as they are used."""
    rows = _default_data().get("rental", [])
    done = checked_once("rental-terms", "trainsizer.cost", ["prices.yaml"], __file__,
                        lambda: [_offer_terms(e, i) for i, e in enumerate(rows)])
    if done is None or len(done) != len(rows):
        return {}
    return {id(entry): parsed for entry, parsed in zip(rows, done, strict=True)}


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, list) and isinstance(out.get(key), list):
            out[key] = value + out[key]  # user entries first: they win lookups
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = {**out[key], **value}
        else:
            out[key] = value
    return out


def load_prices(currency: str = "CNY", paths: list[str | Path] | None = None, fx: float | None = None,
                gpu_ids: Collection[str] | None = None) -> Prices:
    """The shipped price list with the user's files over it (each checked; with ``gpu_ids``, their rows must name
    GPUs of that catalog), prices in ``currency``."""
    if currency not in CURRENCIES:
        raise InputError("--currency", N_("{value!r}; accepted: {accepted}"), value=currency,
                         accepted=", ".join(CURRENCIES))
    if fx is not None and not 1 <= fx <= 20:
        raise InputError("--fx", N_("{value} is not a plausible USD/CNY rate (1 to 20)"), value=fx)
    data = _default_data()
    for path in paths or []:
        data = _merge(data, check_price_file(user_yaml(path, field="prices"), str(path), gpu_ids))
    return Prices(data, currency, fx)


def rental_offers(gpu_id: str, currency: str = "CNY", paths: list[str | Path] | None = None,
                  fx: float | None = None) -> list[RentalOffer]:
    """Every rental offer for ``gpu_id`` with its contract terms, prices in ``currency`` (shipped data plus the
    user's ``paths``, as :func:`load_prices`)."""
    return load_prices(currency, paths, fx).rental_offers(gpu_id)
