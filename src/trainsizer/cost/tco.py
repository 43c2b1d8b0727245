"""Buy vs rent: itemised capex and opex, rental cost, break-even months and utilisation, a series.

Buy total over a horizon = capex + opex x years - residual value (straight-line depreciation to
the residual of prices.yaml). Rent = price per GPU-hour x GPUs x billed hours, where on-demand
billing charges only used hours (rounded up to the billing granularity per run) and term
contracts charge every hour. Break-even months = capex / (monthly rent - monthly opex);
break-even utilisation = buy cost per year / (rent per GPU-hour x GPUs x 8,760 h).
The seed's rules (first-year TCO 1.6-1.8x hardware; rent when the project ends, buy for more
than two years of steady use) are reported beside.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from trainsizer.cost.price_rows import HOURS_PER_MONTH, HOURS_PER_YEAR, Cited
from trainsizer.cost.prices import Priced, Prices, RentalOffer
from trainsizer.errors import InputError
from trainsizer.messages import Message, clauses, msg
from trainsizer.system.inventory import Inventory
from trainsizer.system.sites import Site

if TYPE_CHECKING:  # the JSON's types, for annotations
    from trainsizer.plan.option_json import BuyCostJSON, HorizonJSON, RentCostJSON

__all__ = ["HOURS_PER_MONTH", "HOURS_PER_YEAR", "BuyCost", "Comparison", "RentCost", "buy_cost", "compare",
           "rent_cost", "rent_on"]


@dataclass
class BuyCost:
    """Owning the servers over the horizon: capex and yearly opex by item, the residual value, notes and the prices
    cited."""

    capex: dict[str, float]
    opex_per_year: dict[str, float]
    residual: float
    horizon_years: float
    notes: list[Message] = field(default_factory=list)
    cited: tuple[Cited, ...] = ()  # the price rows it rests on

    @property
    def capex_total(self) -> float:
        return sum(self.capex.values())

    @property
    def opex_total_per_year(self) -> float:
        return sum(self.opex_per_year.values())

    @property
    def total(self) -> float:
        return self.capex_total + self.opex_total_per_year * self.horizon_years - self.residual

    @property
    def first_year(self) -> float:
        return self.capex_total + self.opex_total_per_year

    def times(self, sets: int) -> BuyCost:
        """The cost of ``sets`` identical sets of these servers (a workload one set cannot run in its month)."""
        if sets == 1:
            return self
        return BuyCost({k: v * sets for k, v in self.capex.items()},
                       {k: v * sets for k, v in self.opex_per_year.items()}, self.residual * sets, self.horizon_years,
                       list(self.notes), self.cited)

    def to_dict(self) -> BuyCostJSON:
        return {"capex": {k: round(v) for k, v in self.capex.items()}, "capex_total": round(self.capex_total),
                "opex_per_year": {k: round(v) for k, v in self.opex_per_year.items()},
                "opex_total_per_year": round(self.opex_total_per_year), "residual": round(self.residual),
                "horizon_years": self.horizon_years, "total": round(self.total),
                "first_year": round(self.first_year), "notes": self.notes}


def buy_cost(inv: Inventory, site: Site, prices: Prices, horizon_years: float, utilisation: float) -> BuyCost:
    if not 0 < utilisation <= 1:
        raise InputError("--utilisation", f"{utilisation}; accepted: a fraction in (0, 1]")
    if not 0 < horizon_years <= 15:
        raise InputError("--horizon", f"{horizon_years} years; accepted: 0 to 15")
    notes: list[Message] = []
    cited: list[Cited] = []

    def used(figure: Priced) -> float:  # a figure the bill rests on, cited with it
        cited.append(figure.cited)
        return figure.amount

    server = prices.server(inv.gpu, inv.gpus_per_node)
    if server:
        server_price = used(server)
        if server.row.gpus != inv.gpus_per_node:
            notes.append(msg("cost.server_price_scaled", n=server.row.gpus, gpu=inv.gpu))
    else:
        card = prices.card(inv.gpu)
        if card is None:
            raise InputError("hardware.gpu", f"no purchase price for {inv.gpu} in prices.yaml; add one with --prices")
        low, high = prices.rule_range("gpu_share_of_server_cost", 0.4, 0.6)
        mid = (low + high) / 2
        server_price = used(card) * inv.gpus_per_node / mid
        notes.append(msg("cost.no_server_price", gpu=inv.gpu, pct=mid))
    capex = {
        "servers": server_price * inv.nodes,
        "shared_storage": _shared_storage(inv, prices, notes, used),
        "local_nvme": inv.local_nvme_tb_per_node * inv.nodes * used(prices.component("nvme_ssd_per_tb")),
        "network": 0.0,
        "racks_and_installation": inv.racks * used(prices.component("rack_and_pdu"))
        + inv.nodes * used(prices.component("installation_per_server")),
    }
    if inv.nodes > 1:
        nic_key, switch_key = _fabric_parts(inv.fabric)
        nic = used(_component(prices, nic_key, notes))
        switch = used(_component(prices, switch_key, notes))
        capex["network"] = (inv.nodes * inv.nics_per_node * nic + inv.switches * switch
                            + inv.cables * 2 * used(prices.component("optical_transceiver_400g")))
    hardware = capex["servers"] + capex["shared_storage"] + capex["local_nvme"] + capex["network"]
    # power drawn: idle servers draw about 30 % of their training power
    load = 0.3 + 0.7 * utilisation
    kw_per_rack = inv.typical_it_kw / max(1, inv.racks)
    opex = {
        "colocation": inv.racks * site.rack_rent(kw_per_rack) * 12,
        # a training load draws round the clock: the TOU bands weighted by their hours (system/sites.py)
        "electricity": inv.typical_it_kw * load * site.pue * HOURS_PER_YEAR * prices.convert(
            site.effective_electricity_price("flat-24h"), site.currency),
        "maintenance": hardware * used(prices.opex("maintenance_fraction_per_year")),
        "staff": used(prices.opex("staff_cost_per_year")) * max(0.25, inv.nodes / 32),
    }
    if site.currency != prices.currency:
        opex["colocation"] = prices.convert(opex["colocation"], site.currency)
    residual_3y = used(prices.opex("residual_value_after_3_years"))
    residual_fraction = max(0.05, 1 - (1 - residual_3y) * horizon_years / 3)
    residual = hardware * residual_fraction
    return BuyCost(capex, opex, residual, horizon_years, notes, tuple(cited))


# Scale-out parts by fabric: InfiniBand gets IB (VPI) adapters and IB switches; RoCE / Ethernet gets Ethernet
# NICs and Ethernet switches (prices.yaml components, each with its source). 400G-class fabrics take the 400G
# parts, the rest the 200G ones (100G and below priced as 200G: an upper bound).
_FALLBACK = {"nic_400gbe": "nic_400g", "nic_200gbe": "nic_200g", "roce_200g_switch_64port": "roce_400g_switch_64port"}


def _fabric_parts(fabric: str | None) -> tuple[str, str]:
    """(NIC component, switch component) for a fabric link id."""
    fabric = fabric or "ib-ndr-400"
    fast = fabric.startswith(("ib-ndr", "ib-xdr")) or "400" in fabric or "800" in fabric
    if fabric.startswith("ib-"):
        return ("nic_400g", "ib_ndr_switch_64port") if fast else ("nic_200g", "ib_hdr_switch_40port")
    return ("nic_400gbe", "roce_400g_switch_64port") if fast else ("nic_200gbe", "roce_200g_switch_64port")


def _component(prices: Prices, key: str, notes: list[Message]) -> Priced:
    """A component price; a user price list without the Ethernet rows falls back to the nearest older row."""
    if not prices.has_component(key) and key in _FALLBACK:
        notes.append(msg("cost.component_fallback", component=key, fallback=_FALLBACK[key]))
        key = _FALLBACK[key]
    return prices.component(key)


def _shared_storage(inv: Inventory, prices: Prices, notes: list[Message], used: Callable[[Priced], float]) -> float:
    """Shared storage: capacity x per-TB price, never below the smallest system that can be bought
    (components.parallel_fs_minimum for multi-server plans, nas_minimum for one server), where the data has it."""
    per_tb = inv.storage_tb * used(prices.component("parallel_fs_per_tb"))
    key = "parallel_fs_minimum" if inv.nodes > 1 else "nas_minimum"
    if not prices.has_component(key):
        return per_tb
    floor = used(prices.component(key))
    if floor > per_tb:
        notes.append(clauses([msg("cost.storage_minimum", tb=inv.storage_tb, storage=key.removesuffix("_minimum")
                                  .replace("_", " ")), msg("cost.storage_priced_at_minimum")]))
        return floor
    return per_tb


@dataclass
class RentCost:
    """Renting the GPUs over the horizon on one offer: its price, billing and term, at the stated utilisation."""

    price_per_gpu_hour: float
    offer: str
    billing: str
    gpus: int
    horizon_years: float
    utilisation: float
    term_contract: bool
    cited: tuple[Cited, ...] = ()  # the offer's row

    @property
    def billed_hours_per_year(self) -> float:
        return HOURS_PER_YEAR if self.term_contract else HOURS_PER_YEAR * self.utilisation

    @property
    def per_year(self) -> float:
        return self.price_per_gpu_hour * self.gpus * self.billed_hours_per_year

    @property
    def total(self) -> float:
        return self.per_year * self.horizon_years

    def to_dict(self) -> RentCostJSON:
        return {"offer": self.offer, "price_per_gpu_hour": round(self.price_per_gpu_hour, 3), "billing": self.billing,
                "term_contract": self.term_contract, "per_year": round(self.per_year), "total": round(self.total)}


def rent_cost(gpu: str, gpus: int, prices: Prices, horizon_years: float, utilisation: float) -> RentCost | None:
    """Renting ``gpus`` cards on the GPU's first offer (well-sourced, then cheapest), None: no offer."""
    offers = prices.rental_offers(gpu)
    return rent_on(offers[0], gpus, horizon_years, utilisation) if offers else None


def rent_on(offer: RentalOffer, gpus: int, horizon_years: float, utilisation: float) -> RentCost:
    """Renting ``gpus`` cards on this ``offer`` over the horizon (a term contract bills every hour)."""
    term = offer.terms.term if offer.terms else "on-demand"
    billing = (offer.terms.billing_granularity if offer.terms else None) or "per-hour"
    return RentCost(offer.price_per_gpu_hour, offer.provider, billing, gpus, horizon_years, utilisation,
                    term not in ("on-demand", "preemptible"), (offer.cite(term),))


@dataclass(frozen=True)
class _Bought:
    """What a comparison's horizon view was priced on: read again only for the figures a reader asks for."""

    inv: Inventory
    site: Site
    prices: Prices
    utilisation: float
    sets: int
    card: Priced | None


@dataclass
class Comparison:
    """Buy against rent over the horizon (the horizon view of an option's cost): break-even, verdict, seed checks."""

    buy: BuyCost
    rent: RentCost | None
    run_hours: float | None
    currency: str
    seed_first_year: tuple[float, float]
    verdict: Message
    break_even_months: float | None
    break_even_utilisation: float | None
    priced_on: _Bought
    cited: tuple[Cited, ...] = ()  # the price rows buying and renting rest on

    # The series, the FX sensitivity and the seed's checks are made when read (the JSON of the options shown): a plan
    # prices a hundred options, most of which it ranks and sizes but never shows.
    @cached_property
    def series(self) -> list[dict[str, float]]:
        """Month by month, what buying and renting have cost so far."""
        buy, rent = self.buy, self.rent
        out = []
        for m in range(0, int(buy.horizon_years * 12) + 1):
            row = {"month": m, "buy": round(buy.capex_total + buy.opex_total_per_year * m / 12)}
            if rent:
                row["rent"] = round(rent.per_year * m / 12)
            out.append(row)
        return out

    @cached_property
    def fx_sensitivity(self) -> dict[str, float]:
        """USD/CNY rate -> the buy total: prices quoted in the other currency move with the rate (the seed: lock
        prices early)."""
        on = self.priced_on
        rate = on.prices.usd_cny
        return {f"{rate * factor:.3f}": round(buy_cost(on.inv, on.site, on.prices.at_rate(rate * factor),
                                                       self.buy.horizon_years, on.utilisation).times(on.sets).total)
                for factor in (0.9, 1.1)}

    @cached_property
    def seed_checks(self) -> list[Message]:
        """The seed's rules of thumb beside the bill: storage's and the GPUs' shares, the first year over the
        hardware."""
        buy, on = self.buy, self.priced_on
        hardware_all = sum(buy.capex[k] for k in ("servers", "shared_storage", "local_nvme", "network"))
        storage = buy.capex["shared_storage"] + buy.capex["local_nvme"]
        share = on.prices.rule_value("storage_share_of_hardware", 0.2)
        out = [clauses([msg("cost.seed_storage_share", pct=storage / hardware_all),
                        msg("cost.seed_storage_rule", pct=share)])]
        if on.card:
            gpu_share = on.card.amount * on.inv.gpus * on.sets / buy.capex["servers"] if buy.capex["servers"] else 0
            out.append(clauses([msg("cost.seed_gpu_share", pct=gpu_share), msg("cost.seed_gpu_rule")]))
        out.append(clauses([msg("cost.seed_first_year", x=buy.first_year / max(buy.capex["servers"], 1)),
                            msg("cost.seed_first_year_rule")]))
        return out

    def to_dict(self) -> HorizonJSON:
        out: HorizonJSON = {
            "currency": self.currency, "buy": self.buy.to_dict(), "fx_sensitivity": self.fx_sensitivity,
            "seed_checks": self.seed_checks,
            "rent": self.rent.to_dict() if self.rent else None,
            "break_even_months": None if self.break_even_months is None else round(self.break_even_months, 1),
            "break_even_utilisation": None if self.break_even_utilisation is None
            else round(self.break_even_utilisation, 3),
            "seed_first_year_range": [round(x) for x in self.seed_first_year],
            "verdict": self.verdict, "series": self.series,
        }
        # one run's cost is not here: the per-run figures (rented on the offer's terms, bought at the stated
        # workload) are cost.per_run's, read by every face from the option's ``per_run`` (one figure per quantity)
        return out


def compare(inv: Inventory, site: Site, prices: Prices, horizon_years: float = 3.0, utilisation: float = 0.7,
            run_hours: float | None = None, sets: int = 1, offer: RentalOffer | None = None,
            rentable: bool = True) -> Comparison:
    """Buy vs rent over the horizon at ``utilisation``; ``sets`` identical sets of the servers when the stated
    workload needs more than one set's month (cost.per_run.Workload.sets). Renting is priced on ``offer`` (the
    option's own rental: the one its run is priced on), else on the GPU's first offer in the price data;
    ``rentable=False``: no rental at all (none in the market)."""
    buy = buy_cost(inv, site, prices, horizon_years, utilisation).times(sets)
    rent = (rent_on(offer, inv.gpus * sets, horizon_years, utilisation) if offer is not None
            else rent_cost(inv.gpu, inv.gpus * sets, prices, horizon_years, utilisation) if rentable else None)
    low, high = prices.rule_range("first_year_tco_factor", 1.6, 1.8)
    hardware = buy.capex["servers"]
    seed = (hardware * low, hardware * high)
    months = util = None
    if rent:
        monthly_gap = rent.per_year / 12 - buy.opex_total_per_year / 12
        months = buy.capex_total / monthly_gap if monthly_gap > 0 else None
        buy_per_year = (buy.capex_total - buy.residual) / horizon_years + buy.opex_total_per_year
        util = buy_per_year / (rent.price_per_gpu_hour * inv.gpus * sets * HOURS_PER_YEAR)
    verdict = _verdict(buy, rent, months, util, horizon_years, utilisation, run_hours)
    card = prices.card(inv.gpu)
    cited = buy.cited + (rent.cited if rent else ()) + ((card.cited,) if card else ())
    return Comparison(buy, rent, run_hours, prices.currency, seed, verdict, months, util,
                      _Bought(inv, site, prices, utilisation, sets, card), cited=cited)


def _verdict(buy: BuyCost, rent: RentCost | None, months: float | None, util: float | None, horizon: float,
             utilisation: float, run_hours: float | None) -> Message:
    if rent is None:
        return msg("cost.buy_no_rental")
    if months is None:
        return msg("cost.rent_cheaper_monthly")
    years = months / 12
    if run_hours is not None and run_hours < 0.25 * HOURS_PER_YEAR and horizon * 12 < months:
        return clauses([msg("cost.rent_job_days", n_days=round(run_hours / 24)),
                        msg("cost.payback_beyond", n_months=round(months), pct=utilisation, years=horizon)])
    if util is not None and utilisation < util:
        return msg("cost.rent_low_utilisation", pct=utilisation, pct2=util)
    if years <= horizon:
        return msg("cost.buy_pays_back", n_months=round(months), pct=utilisation, years=horizon)
    return clauses([msg("cost.rent_payback_beyond", n_months=round(months), years=years, horizon=horizon),
                    msg("cost.break_even", pct=util or 0.0)])
