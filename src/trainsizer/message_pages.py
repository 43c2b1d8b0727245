"""The web page's wording of the engine's messages that name a CLI flag (``message_codes``): the page has form
fields instead (their labels in web/labels.py) and only the built-in price data. A face renders these inside
``report.message_text.face("page")``; tests/test_messages.py checks each names a flag in its CLI wording."""

from __future__ import annotations

from trainsizer.i18n import N_

PAGE: dict[str, str] = {
    "plan.try_more_gpus": N_("more GPUs (“Max GPUs”: {n})"),
    "plan.deadline_binds": N_("the deadline may be what binds: try with “Deadline (days)” left empty to see the "
                              "fastest option's time"),
    "plan.market_override": N_("name one under “GPUs allowed (none selected = all)”"),
    "cost.no_purchase_price": N_("no purchase price for this GPU: the built-in price data has none"),
    "cost.no_rental_offer": N_("no rental offer for {gpu} in the {market}: the built-in price data has none"),
    "cost.no_cluster_lease": N_("no offer for {gpu} in the {market} rents {n_gpus} across {n_servers}: the per-card "
                                "clouds rent single machines (the built-in price data has no cluster lease)"),
    "cost.buy_no_rental": N_("buy: no rental offer for this GPU: the built-in price data has none"),
    "plan.time_value_flag": N_("“Time value per hour” sets it, 0 ranks by cost alone"),
    "plan.offload_ram_unstated": N_("layouts that offload to CPU were not priced on rental offers that state no "
                                    "host RAM ({gpus_list})"),
    "plan.sized_to_job": N_("options over {cost} times the answer's cost and {gpus} times its GPUs left out: {n}"),
    "adjust.time_value": N_("time valued at {money} an hour of the run (your “Time value per hour”)"),
    "cost.workload_once": N_("this one run (fill in “Runs per month” or “Utilisation” if the hardware will stay "
                             "busy)"),
    "adjust.setup_assumed": N_("{time} from the instance's start to the first step (assumed: start, weights downloaded "
                               "and loaded; “Setup minutes” sets it), billed on all {n} GPUs: about {money}"),
    "adjust.ownership_on_one_run": N_("the whole {years}-year cost of owning it falls on this one run: “Runs per "
                                      "month” shares it"),
    "plan.all_at_oom_risk": N_("every option that can be had risks running out of memory above {limit} (the least: "
                               "{pct} on {gpus} x {gpu}): more GPUs or a GPU with more memory"),
}
