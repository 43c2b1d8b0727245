"""Rankings of recommended options, as ``trainsizer plan`` computes them (after sizing and pricing)."""

from __future__ import annotations

from typing import Any

from trainsizer.plan.search import _pareto


def total_cost(option: dict[str, Any]) -> float:
    cost = option.get("cost")
    if not cost:
        return float("inf")
    rent = cost["rent"]["total"] if cost.get("rent") else float("inf")
    return min(cost["buy"]["total"], rent)


def recommended(options: list[dict[str, Any]], has_deadline: bool) -> list[int]:
    """Among the options that fit the site and have prices: the cheapest when a deadline is given
    (every option left meets it), else the fastest."""
    ok = [i for i, o in enumerate(options) if o.get("cost") and (o["system"].get("site_fit") or {}).get("fits", True)]
    if not ok:
        return []
    if has_deadline:
        return [min(ok, key=lambda i: total_cost(options[i]))]
    return [min(ok, key=lambda i: options[i]["performance"]["step_time_s"])]


def rerank(options: list[dict[str, Any]], top: int) -> dict[str, list[int]]:
    if not options:
        return {}
    idx = list(range(len(options)))
    rankings = {
        "fastest": sorted(idx, key=lambda i: options[i]["performance"]["step_time_s"]),
        "fewest_gpus": sorted(idx, key=lambda i: (options[i]["hardware"]["gpus"],
                                                  options[i]["performance"]["step_time_s"])),
        "best_mfu": sorted(idx, key=lambda i: -options[i]["performance"]["mfu"]),
        "cheapest_to_buy": sorted((i for i in idx if options[i].get("cost")),
                                  key=lambda i: options[i]["cost"]["buy"]["total"]),
        "pareto_time_vs_gpus": _pareto(options),
    }
    return {k: v[:top] for k, v in rankings.items()}
