"""The price list in use: the shipped ``prices.yaml`` (each figure with source and as_of) with the user's own
files of the same shape over it (``--prices FILE``), converted to one currency.

The list holds typed rows (:mod:`trainsizer.cost.price_rows`). A lookup returns the figure in the list's currency
with the row it rests on (:class:`Priced`: its ``cited`` is the citation); nothing is recorded on the list, so the
caller that uses a figure is the one that cites it. Rental offers are read one way: :meth:`Prices.rental_offers`.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass, replace
from functools import cache, cached_property
from pathlib import Path
from typing import Any

from trainsizer.cost.price_rows import (
    GRANULARITY_HOURS,
    TERM_HOURS,
    Cited,
    OfferMachine,
    PriceFile,
    Quoted,
    RentalRow,
    RentalTerms,
    ServerRow,
    SourcedRow,
    listed,
)
from trainsizer.cost.subsidy import Subsidy
from trainsizer.currency import CURRENCIES
from trainsizer.datafiles import packaged_yaml, user_yaml
from trainsizer.errors import N_, InputError
from trainsizer.input_checks import checked_once, parse_model
from trainsizer.lookup import unknown_id
from trainsizer.messages import Message, msg

__all__ = ["Cited", "OfferMachine", "PriceFile", "Priced", "Prices", "Quoted", "RentalOffer", "RentalTerms",
           "ServerPrice", "check_price_file", "listed", "load_prices"]


@dataclass(frozen=True)
class Priced:
    """A figure of the price list in the list's currency, the row it comes from and what that row backs."""

    amount: float
    row: SourcedRow
    item: Message

    @cached_property
    def cited(self) -> Cited:
        return self.row.cite(self.item)


@dataclass(frozen=True)
class ServerPrice(Priced):
    """The price of a server of the GPUs asked for, from the list's row for that GPU (scaled where the row's
    server holds another number of GPUs)."""

    row: ServerRow


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

    @classmethod
    def of(cls, row: RentalRow, quoted: float, price: float, currency: str) -> RentalOffer:
        """The row offered at ``quoted`` per GPU-hour in its own currency, ``price`` in ``currency``."""
        return cls(row.provider, row.gpu, price, currency, row.contract, quoted, row.currency,
                   row.confidence, row.source, row.as_of, row.out_of_date, row.notes, row.kind, row.read_on,
                   row.relay, row.machine)

    @property
    def term(self) -> str:
        """The contract's term; without terms, preemptible where the notes say so, else on-demand."""
        if self.terms:
            return self.terms.term
        return "preemptible" if "preempt" in (self.notes or "").lower() else "on-demand"

    def billed(self, run_hours: float) -> tuple[str, float, float | None]:
        """(term, billed hours, the contract's minimum where it bills more than the run) for a run of
        ``run_hours``: the run rounded up to the billing granularity, never less than the minimum term (the term's
        own length where the offer states none), a term contract in whole periods."""
        term, terms = self.term, self.terms
        step = GRANULARITY_HOURS.get(terms.billing_granularity if terms and terms.billing_granularity
                                     else "per-hour", 1.0)
        minimum = terms.min_term_hours if terms and terms.min_term_hours is not None else TERM_HOURS.get(term, 0.0)
        billed = math.ceil(run_hours / step - 1e-9) * step
        if minimum > billed:
            return term, minimum, minimum
        if minimum and term not in ("on-demand", "preemptible"):
            billed = math.ceil(run_hours / minimum - 1e-9) * minimum  # whole contract periods
        return term, billed, None

    def cite(self, term: str) -> Cited:
        """The offer's row cited for renting on it on ``term``."""
        item = msg("price.rental_offer", gpu=self.gpu or "?", provider=self.provider, term=term)
        return Cited(item, self.source, self.relay or None, self.as_of)


@dataclass(frozen=True)
class Prices:
    """A price list (typed rows) read in ``currency``, at the list's USD/CNY rate or ``fx_override``."""

    file: PriceFile
    currency: str = "CNY"
    fx_override: float | None = None  # USD/CNY rate to use instead of the data's

    @property
    def usd_cny(self) -> float:
        if self.fx_override:
            return self.fx_override
        for row in self.file.fx:
            if row.pair == "USD/CNY":
                return row.rate
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

    def server(self, gpu: str, gpus: int) -> ServerPrice | None:
        """Price of one ``gpus``-GPU server with that GPU: the row of that size, else the GPU's first row scaled."""
        return self._looked_up("server", gpu, gpus)

    def _server(self, gpu: str, gpus: int) -> ServerPrice | None:
        same_gpu = [s for s in self.file.servers if s.gpu == gpu]
        row = next((s for s in same_gpu if s.gpus == gpus), same_gpu[0] if same_gpu else None)
        if row is None:
            return None
        price = self.convert(row.price, row.currency) * gpus / row.gpus
        return ServerPrice(price, row, msg("price.server", server={"id": row.id, "gpus": row.gpus, "gpu": gpu}))

    def card(self, gpu: str) -> Priced | None:
        return self._looked_up("card", gpu)

    def _card(self, gpu: str) -> Priced | None:
        row = next((c for c in self.file.gpu_cards if c.gpu == gpu), None)
        return None if row is None else Priced(self.convert(row.price, row.currency), row, msg("price.card", gpu=gpu))

    def has_component(self, key: str) -> bool:
        return key in self.file.components

    def component(self, key: str) -> Priced:
        return self._looked_up("component", key)

    def _component(self, key: str) -> Priced:
        row = self.file.components.get(key)
        if row is None:
            raise InputError(f"prices.components.{key}", "missing from the price data")
        return Priced(self.convert(row.price, row.currency), row, msg("price.component", component=key))

    def opex(self, key: str) -> Priced:
        """A running cost (converted) or a fraction or number of years (as it is)."""
        return self._looked_up("opex", key)

    def _opex(self, key: str) -> Priced:
        row = self.file.opex.get(key)
        if row is None:
            raise InputError(f"prices.opex.{key}", "missing from the price data")
        value = self.convert(row.value, row.currency) if row.currency else row.value
        return Priced(value, row, msg("price.opex", opex=key))

    def _looked_up(self, kind: str, *key: Any) -> Any:
        """A figure looked up once per list (a plan prices a hundred options on the same few rows; the list, its
        currency and rate are frozen, and a Priced is too); a missing row raises each time it is asked for."""
        memo = self._memo
        if (kind, *key) not in memo:
            memo[(kind, *key)] = getattr(self, f"_{kind}")(*key)
        return memo[(kind, *key)]

    @cached_property
    def _memo(self) -> dict[tuple[Any, ...], Any]:
        return {}

    def at_rate(self, usd_cny: float) -> Prices:
        """This list read at another USD/CNY rate (the FX sensitivity of a purchase), made once per rate."""
        memo = self._memo
        if ("rate", usd_cny) not in memo:
            memo[("rate", usd_cny)] = replace(self, fx_override=usd_cny)
        return memo[("rate", usd_cny)]

    def rule_range(self, key: str, low: float, high: float) -> tuple[float, float]:
        """A rule of thumb's range, each end ``low``/``high`` where the list does not state it."""
        row = self.file.rules_of_thumb.get(key)
        if row is None:
            return low, high
        return (low if row.low is None else row.low), (high if row.high is None else row.high)

    def rule_value(self, key: str, default: float) -> float:
        row = self.file.rules_of_thumb.get(key)
        return default if row is None or row.value is None else row.value

    @property
    def subsidies(self) -> list[Subsidy]:
        """The compute vouchers of the list (``subsidies:``), each in its own currency."""
        return list(self.file.subsidies)

    def in_currency(self, subsidy: Subsidy) -> Subsidy:
        """The subsidy with its cap converted to this list's currency at the list's rate."""
        if subsidy.currency == self.currency:
            return subsidy
        cap = None if subsidy.cap_per_year is None else self.convert(subsidy.cap_per_year, subsidy.currency)
        return subsidy.model_copy(update={"cap_per_year": cap, "currency": self.currency})

    def rental_offers(self, gpu: str) -> list[RentalOffer]:
        """Every rental offer for ``gpu`` (rows with a public price, never an internal charge), well-sourced
        commercial on-demand or term offers before low-confidence, preemptible or internal ones, each group
        cheapest first (in the list's currency)."""
        return list(self._offers.get(gpu, ()))

    @cached_property
    def _offers(self) -> dict[str, tuple[RentalOffer, ...]]:
        # each GPU's offers, built once per list (the planner's screen asks for them once per screened layout)
        priced = [(self.convert(quoted, r.currency), quoted, r) for r in self.file.rental
                  if r.is_offer and (quoted := r.price_per_gpu_hour) is not None]
        by_gpu: dict[str, list[RentalOffer]] = {}
        for price, quoted, row in sorted(priced, key=lambda p: (p[2].weak, p[0])):
            by_gpu.setdefault(row.gpu, []).append(RentalOffer.of(row, quoted, price, self.currency))
        return {gpu: tuple(offers) for gpu, offers in by_gpu.items()}


def check_price_file(data: Any, origin: str, gpu_ids: Collection[str] | None = None) -> PriceFile:
    """A parsed price list (a user's --prices file) checked row by row; one InputError names the file and the
    field. With ``gpu_ids`` (the catalog in use) every row's GPU must be one of them: a misspelt id would
    otherwise never match a plan's GPU and the price would be silently ignored."""
    if not isinstance(data, dict):
        raise InputError(origin, "a prices file is a mapping like prices.yaml (fx, servers, gpu_cards, rental, "
                                 "components, opex, subsidies, rules_of_thumb)")
    file = parse_model(PriceFile, data, f"{origin}:")
    if gpu_ids is not None:
        sections: dict[str, list[Any]] = {"servers": file.servers, "gpu_cards": file.gpu_cards, "rental": file.rental}
        for section, rows in sections.items():
            for i, row in enumerate(rows):
                if row.gpu not in gpu_ids:
                    raise unknown_id(f"{origin}: {section}[{i}].gpu", row.gpu, gpu_ids)
    return file


@cache
def _default_data() -> Any:
    return packaged_yaml("trainsizer.cost", "prices.yaml")


@cache
def shipped_price_file() -> PriceFile:
    """The shipped price list, checked; kept in the user's cache folder like the catalog
    (``datafiles.cached_objects``: keyed on prices.yaml and the code of its rows): a plan reads offers of every
    GPU, and building the schemas and checking every row at each start takes milliseconds."""
    done = checked_once("price-file", "trainsizer.cost", ["prices.yaml", "price_rows.py", "subsidy.py"], __file__,
                        lambda: PriceFile.model_validate(_default_data()))
    return done if isinstance(done, PriceFile) else check_price_file(_default_data(), "prices.yaml")


def load_prices(currency: str = "CNY", paths: list[str | Path] | None = None, fx: float | None = None,
                gpu_ids: Collection[str] | None = None) -> Prices:
    """The shipped price list with the user's files over it (each checked; with ``gpu_ids``, their rows must name
    GPUs of that catalog), prices in ``currency``."""
    if currency not in CURRENCIES:
        raise InputError("--currency", N_("{value!r}; accepted: {accepted}"), value=currency,
                         accepted=", ".join(CURRENCIES))
    if fx is not None and not 1 <= fx <= 20:
        raise InputError("--fx", N_("{value} is not a plausible USD/CNY rate (1 to 20)"), value=fx)
    file = shipped_price_file()
    for path in paths or []:
        file = check_price_file(user_yaml(path, field="prices"), str(path), gpu_ids).over(file)
    return Prices(file, currency, fx)
