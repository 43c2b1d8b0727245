"""The objective the default recommendation minimises, priced cheaply enough for the planner's screen:
what one run costs on its cheapest terms the market offers within the budget, plus the value of the time
it takes (``--time-value``, money per wall-clock hour). The planner ranks every screened layout by it
before it cuts the shortlist, so layouts that meet the deadline and the budget at the lowest objective are
the ones re-checked exactly; :mod:`trainsizer.workflows.pricing` then prices the survivors in full."""

from __future__ import annotations

import numpy as np

from trainsizer.cost.machine import MachineNeed, ram_gib
from trainsizer.cost.per_run import OFFER_MARKET, cheapest_offer, cheapest_on_demand, rental_candidates
from trainsizer.cost.prices import RentalOffer
from trainsizer.cost.subsidy import applies_to
from trainsizer.hardware.catalog import Catalog
from trainsizer.hardware.market import availability
from trainsizer.plan.planner_data import planner_data
from trainsizer.system.host import instance_cores, instance_ram_gib
from trainsizer.workflows.pricing import MoneyTerms


def _bought_host_gib_per_gpu() -> float:
    """Host RAM per GPU a bought server can carry for CPU offload (plan/planner.yaml host_memory: DGX-class)."""
    return planner_data().host_memory.usable_gib_per_gpu


class HostFit:
    """``holds(gpu, gpus_per_server, offloaded_bytes_per_gpu)`` over arrays of layouts (``plan.constraints
    .HostCheck``): True where some way to have
    the GPU in the market holds the layout's host memory: a bought server (sized to it, up to the planner's host
    limit per GPU) or a rental offer whose machine has the RAM (cost.machine; an offer that does not state it
    holds only layouts without CPU offload). ``unstated`` collects the GPUs whose offload layouts were held by no
    way to have them while an offer for them states no host RAM (the plan says so)."""

    def __init__(self, money: MoneyTerms, cat: Catalog, params: int) -> None:
        self.money, self.cat, self.params = money, cat, params
        self.unstated: set[str] = set()

    def holds(self, gpu: str, per_node: np.ndarray, host_bytes: np.ndarray) -> np.ndarray:
        money, acc = self.money, self.cat.accelerator(gpu)
        out = np.zeros(len(host_bytes), dtype=bool)
        if availability(acc, money.market, "buy").obtainable:
            out |= host_bytes <= _bought_host_gib_per_gpu() * 2**30
        silent = False
        if availability(acc, money.market, "rent").obtainable:
            need = instance_ram_gib(self.params, per_node, host_bytes / 2**30)
            shapes = np.array(sorted(set(per_node.tolist())), dtype=per_node.dtype)  # np.unique loads numpy.ma
            for offer in money.prices.rental_offers(gpu):
                if OFFER_MARKET.get(offer.quoted_currency, "global") != money.market:
                    continue
                ram = np.array([ram_gib(offer.machine, int(n)) or -1.0 for n in shapes])
                have = ram[np.searchsorted(shapes, per_node)]
                silent |= bool((have < 0).any())
                out |= np.where(have < 0, host_bytes == 0, need <= have)
        if silent and bool((~out & (host_bytes > 0)).any()):
            self.unstated.add(gpu)
        return out


class ScreenPricing:
    """``run_cost(gpu, gpus, servers, gpus_per_server, hours, offloaded_gib_per_gpu)``: the run's approximate cost
    on that hardware, or None when it cannot be had in the market within the budget (``plan.constraints
    .ScreenPricer``). Renting is priced as the plan prices it (the cheapest offer on its own terms whose machine
    holds the layout's host memory); buying by the servers' price over the runs at the stated workload (a lower
    estimate: storage, network and running costs come on top in the full price).

    What does not change with the run's length is found once per hardware shape (the screen prices ~1,500 layouts
    on a few dozen shapes): the offers that can rent it and the price of its servers. The screen cites no price:
    the options priced in full cite theirs (:func:`trainsizer.workflows.pricing.recommend_options`)."""

    def __init__(self, money: MoneyTerms, cat: Catalog, params: int = 0) -> None:
        self.money, self.cat, self.params = money, cat, params
        self._can: dict[tuple[str, str], bool] = {}
        self._offers: dict[tuple[str, int, int, int, float], list[RentalOffer]] = {}
        self._servers: dict[tuple[str, int], float | None] = {}
        self._hourly: dict[str, RentalOffer | None] = {}

    def _available(self, gpu: str, acquisition: str) -> bool:
        if (gpu, acquisition) not in self._can:
            self._can[(gpu, acquisition)] = availability(self.cat.accelerator(gpu), self.money.market,
                                                         acquisition).obtainable
        return self._can[(gpu, acquisition)]

    def _rental_offers(self, gpu: str, gpus: int, nodes: int, in_server: int, offload_gib: float) -> list[RentalOffer]:
        key = (gpu, gpus, nodes, in_server, offload_gib)
        if key not in self._offers:
            need = MachineNeed(in_server, float(instance_ram_gib(self.params, in_server, offload_gib)),
                               instance_cores(in_server), None, offload_gib > 0)
            self._offers[key] = rental_candidates(self.money.prices, gpu, gpus, self.money.market, nodes, need)[0]
        return self._offers[key]

    def _server_price(self, gpu: str, in_server: int) -> float | None:
        if (gpu, in_server) not in self._servers:
            prices = self.money.prices
            server, card = prices.server(gpu, in_server), prices.card(gpu)
            self._servers[(gpu, in_server)] = (server.amount if server else card.amount * in_server if card
                                               else None)
        return self._servers[(gpu, in_server)]

    def floor_cost(self, gpu: str, gpus: int, hours: float) -> float | None:
        if gpu not in self._hourly:
            self._hourly[gpu] = cheapest_on_demand(self.money.prices, gpu, self.money.market)
        hourly = self._hourly[gpu]
        return None if hourly is None else (hours + self.money.setup.hours) * gpus * hourly.price_per_gpu_hour

    def run_cost(self, gpu: str, gpus: int, servers: int, gpus_per_server: int, hours: float,
                 offloaded_gib_per_gpu: float = 0.0) -> float | None:
        money = self.money
        costs = []
        in_server = min(gpus_per_server, gpus)
        if self._available(gpu, "rent") and (
                candidates := self._rental_offers(gpu, gpus, servers, in_server, offloaded_gib_per_gpu)):
            # the offer cost.per_run.cheapest_rental picks, billed from the instance's start (its setup); its cost
            # is its commitment
            offer, cost = cheapest_offer(candidates, gpus, hours + money.setup.hours, money.budget)
            if money.budget is None or cost <= money.budget:
                voucher = money.voucher if money.voucher and applies_to(money.voucher, offer.provider) \
                    and money.voucher.confirmed else None
                costs.append(cost * (1 - (voucher.fraction if voucher else 0.0)))
        if self._available(gpu, "buy") and offloaded_gib_per_gpu <= _bought_host_gib_per_gpu():
            price = self._server_price(gpu, in_server)
            if price is not None:
                capex = price * max(1, servers) * money.workload.sets(hours)
                if money.budget is None or capex <= money.budget:
                    costs.append(capex / money.workload.runs_over(money.horizon_years, hours))
        return min(costs) if costs else None
