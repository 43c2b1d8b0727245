"""Messages: markets, an option's verdict, one run's price and a rental machine against a layout."""

from __future__ import annotations

from trainsizer.i18n import N_, NP_
from trainsizer.message_codes.registry import _c

# hardware/market.py: why a part can or cannot be had in a market, by the kind the catalog states (accelerators.yaml
# reason_code; the entry's own sentence is quoted data, `detail`)
for _code, _msgid in {
    "sold_new": N_("sold new through the vendor's resellers"),
    "sold_as_racks": N_("sold only as whole rack-scale systems"),
    "china_market_part": N_("made for the Chinese market to pass the US export limits"),
    "below_export_limits": N_("below the US export limits, no licence needed"),
    "domestic_part": N_("a Chinese domestic part, sold in China"),
    "export_licence": N_("needs a US export licence (expect delay, extra cost and the risk of not getting it)"),
    "export_banned": N_("not approved for export to China"),
    "end_of_life": N_("no longer made, only remaining or used stock"),
    "china_market_only": N_("a China-market part, not sold or rented outside China"),
    "domestic_market_only": N_("a Chinese domestic part with no channel found outside China"),
    "no_public_sku": N_("not sold as a public product"),
    "rental_offers": N_("rental offers in the price data"),
    "no_rental_offer": N_("no rental offer found on the price lists surveyed"),
    "no_known_offer": N_("no dated public rental offer in the price data (ask providers for a quote)"),
    "not_established": N_("not established from the sources found"),
    "stated": N_("as your catalog file states"),
    "no_data": N_("no availability data for this part in this market (add it in a --catalog file)"),
}.items():
    _c(f"availability.{_code}", _msgid)
_c("cost.rent_instead", N_("does not fit the site (see site fit); rent it instead"))
_c("cost.over_budget", N_("commitment {money} is over the budget of {money2}"), money="money", money2="money")
_c("cost.workload_once", N_("this one run (say --runs-per-month or --utilisation if the hardware will stay busy)"))
_c("cost.workload_runs", NP_("{n} run a month", "{n} runs a month"), n="g")
_c("cost.workload_utilisation", N_("{pct} utilisation"), pct="pct")
_c("site.rented", N_("rented: runs in the provider's data centre, your site's racks do not apply"))
_c("site.verdict", N_("site: {verdict}"), verdict="clause")
# an option's verdict (workflows/pricing.py)
_c("verdict.per_token", N_("{acquisition}: {price} per million tokens"), acquisition="acquisition",
   price="small_money")
_c("verdict.rent", N_("rent: {cost} a run from {provider} ({term}, {hours} billed)"), cost="money",
   provider="text", term="term", hours="hours")
_c("verdict.buying_would_cost", N_("buying would cost {cost} a run at {workload}"), cost="money",
   workload="clause")
_c("verdict.buying_not", N_("buying: {reason}"), reason="clause")
_c("verdict.buy", N_("buy: {cost} a run at {workload}, {commitment} up front"), cost="money", workload="clause",
   commitment="money")
_c("verdict.renting_would_cost", N_("renting would cost {cost} a run"), cost="money")
_c("verdict.no_cost", N_("no per-run cost: {reasons}. Over the horizon: {verdict}"), reasons="clauses",
   verdict="clause")

# cost/per_run.py
_c("cost.no_rental_offer", N_("no rental offer for {gpu} in the {market} in the price data (add one with --prices)"),
   gpu="gpu", market="market")
# cost/machine.py: a rental offer's machine against what a layout needs on it
_c("machine.does_not_hold", N_("{provider}'s machine does not hold this layout: {parts}"), provider="text",
   parts="clause")
_c("machine.short_ram", N_("it needs {need} GiB of host RAM per server, {n} cards there have {have} GiB"),
   need="num0", have="num0", n="int")
_c("machine.short_cores", N_("it needs {need} CPU cores per server, {n} cards there have {have}"), need="int",
   have="num0", n="int")
_c("machine.short_disk", N_("it needs {need} GB of local disk, the instance has at most {have} GB"), need="num0",
   have="num0")
_c("machine.ram_unknown_offload",
   N_("the offer does not state its host RAM, and this layout offloads to CPU ({need} GiB of host RAM per server)"),
   need="num0")
_c("machine.ram_unstated",
   N_("{provider} does not state the host RAM of its instances: this layout needs about {need} GiB on {n} cards; "
      "check it on the instance (free -g) before the run"), provider="text", need="num0", n="int")
_c("cost.no_offer_holds", N_("no offer for {gpu} in the {market} has a machine that holds this layout: {reason}"),
   gpu="gpu", market="market", reason="clause")
_c("cost.no_cluster_lease",
   N_("no offer for {gpu} in the {market} rents {n_gpus} across {n_servers}: the per-card clouds rent single "
      "machines (add a cluster lease with --prices)"), gpu="gpu", market="market", n_gpus="n_gpus",
   n_servers="n_servers")
_c("cost.contract_minimum", N_("{term}: bills at least {hours} h for a {run} h run"), term="term",
   hours="num0", run="num1")
_c("cost.preemptible", N_("preemptible: the run may be interrupted"))
_c("cost.checkpoint_often", N_("checkpoint often"))
_c("cost.stale_price", N_("price from {year}: check before you sign"), year="text")
_c("cost.voucher_eligibility_unknown",
   N_("{voucher}: eligible providers unknown, check that this provider is in the scheme"), voucher="voucher")

_c("cost.buy_sets",
   N_("bought as {sets} sets of these servers: {n} runs a month of {run} each do not fit in one set's month"),
   sets="int", n="g", run="duration")
