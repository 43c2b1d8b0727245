"""The rankings of a plan's options: fastest, fewest GPUs, best MFU, cheapest per run, cheapest to own and the
Pareto front of step time vs GPU count."""

from __future__ import annotations

from trainsizer.plan.option import PlanOption


def rank_options(options: list[PlanOption], top: int | None = None) -> dict[str, list[int]]:
    """Indices into ``options`` per ranking: fastest, fewest GPUs, best MFU, cheapest per run and cheapest to
    own (when the options carry costs) and the Pareto front of step time vs GPU count."""
    if not options:
        return {}
    idx = list(range(len(options)))
    rankings = {
        "fastest": sorted(idx, key=lambda i: options[i].step_time_s),
        "fewest_gpus": sorted(idx, key=lambda i: (options[i].gpus, options[i].step_time_s)),
        "best_mfu": sorted(idx, key=lambda i: -options[i].mfu),
    }
    priced = [i for i in idx if options[i].run_cost is not None]
    if priced:  # what one run costs on its cheapest terms (workflows.pricing)
        rankings["cheapest_per_run"] = sorted(priced, key=lambda i: options[i].run_cost)
    owned = [i for i in idx if options[i].buy_total is not None]
    if owned:
        rankings["cheapest_to_buy"] = sorted(owned, key=lambda i: options[i].buy_total)
    rankings = {k: v[:top] for k, v in rankings.items()} if top else rankings
    rankings["pareto_time_vs_gpus"] = _pareto(options)
    return rankings


def _pareto(options: list[PlanOption]) -> list[int]:
    """Indices of options not beaten on both step time and GPU count (time-to-train vs GPUs)."""
    order = sorted(range(len(options)), key=lambda i: (options[i].gpus, options[i].step_time_s))
    front, best = [], float("inf")
    for i in order:
        t = options[i].step_time_s
        if t < best - 1e-12:
            front.append(i)
            best = t
    return front
