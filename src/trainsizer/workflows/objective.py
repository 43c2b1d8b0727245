"""The objective the default recommendation minimises, priced cheaply enough for the planner's screen:
what one run costs on its cheapest terms the market offers within the budget, plus the value of the time
it takes (``--time-value``, money per wall-clock hour). The planner ranks every screened layout by it
before it cuts the shortlist, so layouts that meet the deadline and the budget at the lowest objective are
the ones re-checked exactly; :mod:`trainsizer.workflows.recommend` then prices the survivors in full."""

from __future__ import annotations

from collections.abc import Callable

from trainsizer.cost.per_run import cheapest_rental
from trainsizer.cost.subsidy import applies_to
from trainsizer.hardware.catalog import Catalog
from trainsizer.hardware.market import availability
from trainsizer.workflows.recommend import MoneyTerms

Rate = Callable[[str, int, int, int, float], float | None]


def screen_rate(money: MoneyTerms, cat: Catalog) -> Rate:
    """``rate(gpu, gpus, nodes, gpus_per_node, hours)``: the run's approximate cost on that hardware, or
    None when it cannot be had in the market within the budget. Renting is priced as the plan prices it
    (the cheapest offer on its own terms); buying by the servers' price over the runs at the stated workload
    (a lower estimate: storage, network and running costs come on top in the full price)."""
    can: dict[tuple[str, str], bool] = {}

    def available(gpu: str, acquisition: str) -> bool:
        if (gpu, acquisition) not in can:
            status = availability(cat.accelerator(gpu), money.market, acquisition).status
            can[(gpu, acquisition)] = status in ("yes", "unknown")
        return can[(gpu, acquisition)]

    def rate(gpu: str, gpus: int, nodes: int, per_node: int, hours: float) -> float | None:
        costs = []
        if available(gpu, "rent"):
            run, _ = cheapest_rental(money.prices, gpu, gpus, hours, money.market, nodes, money.budget)
            if run and (money.budget is None or run.commitment <= money.budget):
                voucher = money.voucher if money.voucher and applies_to(money.voucher, run.offer.provider) else None
                costs.append(run.cost * (1 - (voucher.fraction if voucher else 0.0)))
        if available(gpu, "buy"):
            in_server = min(per_node, gpus)
            server = money.prices.server(gpu, in_server)
            if server is None and (card := money.prices.card(gpu)) is not None:
                server = (card * in_server, {})
            if server is not None:
                capex = server[0] * max(1, nodes) * money.workload.sets(hours)
                if money.budget is None or capex <= money.budget:
                    costs.append(capex / money.workload.runs_over(money.horizon_years, hours))
        return min(costs) if costs else None

    return rate
