"""Messages: the answer card's adjustments, cited prices, the value of time and the horizon view."""

from __future__ import annotations

from trainsizer.i18n import N_
from trainsizer.message_codes.registry import _c

# workflows/decide.py: the adjustments behind the answer's figures, each on the answer card
_c("adjust.voucher_possible", N_("voucher {voucher}: if approved, {saved} off this run (at most {pct} of the rental); "
                                "not counted in the price"), voucher="voucher", saved="money", pct="pct")
_c("adjust.voucher", N_("voucher {voucher}: {saved} off this run, at most {pct} of the rental"), voucher="voucher",
   saved="money", pct="pct")
_c("adjust.voucher_cap_year", N_("capped at {cap} a year per user"), cap="money")
_c("adjust.voucher_cap_total", N_("capped at {cap} for the whole grant"), cap="money")
_c("adjust.voucher_upper_bound", N_("the fraction is a ceiling: treat the saving as an upper bound"))
_c("adjust.voucher_not_applied", N_("voucher {voucher} not applied: {reason}"), voucher="voucher", reason="clause")
_c("adjust.setup", N_("{time} from the instance's start to the first step, billed on all {n} GPUs: about {money}"),
   time="duration", n="int", money="money")
_c("adjust.setup_assumed", N_("{time} from the instance's start to the first step (assumed: start, weights downloaded "
                              "and loaded; --setup sets it), billed on all {n} GPUs: about {money}"),
   time="duration", n="int", money="money")
_c("adjust.ownership_on_one_run",
   N_("the whole {years}-year cost of owning it falls on this one run: --runs-per-month shares it"), years="g")
_c("adjust.tight_fit", N_("tight fit: {pct} of GPU memory used, above {limit}; measure the peak before the run"),
   pct="pct", limit="pct")
_c("adjust.oom_risk", N_("a {pct} chance of running out of memory at {used} of GPU memory (the memory model's "
                         "errors on published runs); measure the peak before the run"), pct="pct", used="pct")
_c("adjust.time_value", N_("time valued at {money} an hour of the run (your --time-value)"), money="money")
_c("adjust.bought_at", N_("bought at {workload}: the servers busy {pct} of their month"), workload="clause",
   pct="pct")
_c("adjust.bought_busy_runs", N_("bought at {workload}: the servers busy {pct} of their month, about {n} runs like "
                                 "this one a month"), workload="clause", pct="pct", n="num0")

# cost/prices.py, cost/tco.py, workflows/report_model.py: what each cited price or availability row backs
_c("price.rental_offer", N_("rental offer: {gpu} from {provider} ({term})"), gpu="gpu", provider="text", term="term")
_c("price.server", N_("server price: {server}"), server="server")
_c("price.card", N_("card price: {gpu}"), gpu="gpu")
_c("price.component", N_("component price: {component}"), component="component")
_c("price.opex", N_("operating cost: {opex}"), opex="opex")
_c("price.availability_rent", N_("availability to rent: {gpu} in the {market}"), gpu="gpu", market="market")
_c("price.availability_buy", N_("availability to buy: {gpu} in the {market}"), gpu="gpu", market="market")

# workflows/decide.py: the value of the time to train
_c("plan.time_value_assumed",
   N_("time valued at {money} an hour of the run (one engineer's loaded pay, assumed): the answer weighs it "
      "against the cost"), money="money")
_c("plan.time_value_flag", N_("--time-value sets it, 0 ranks by cost alone"))

# cost/tco.py: the horizon view, seed checks, notes
_c("cost.buy_no_rental", N_("buy: no rental offer for this GPU in the price data (add one with --prices)"))
_c("cost.rent_cheaper_monthly", N_("rent: renting costs less per month than owning would (power, space, "
                                   "maintenance)"))
_c("cost.rent_job_days", N_("rent: the job needs {n_days}"), n_days="n_days")
_c("cost.payback_beyond",
   N_("buying pays back only after {n_months} at {pct} utilisation, beyond the {years}-year horizon"),
   n_months="n_months", pct="pct", years="g")
_c("cost.rent_low_utilisation",
   N_("rent: at {pct} utilisation owning costs more than renting (break-even utilisation {pct2})"),
   pct="pct", pct2="pct")
_c("cost.buy_pays_back",
   N_("buy: pays back in {n_months} at {pct} utilisation, within the {years}-year horizon (seed: buy for more "
      "than two years of steady use)"), n_months="n_months", pct="pct", years="g")
_c("cost.rent_payback_beyond",
   N_("rent: buying pays back only after {n_months} ({years} years), beyond the {horizon}-year horizon"),
   n_months="n_months", years="num1", horizon="g")
_c("cost.break_even", N_("break-even utilisation {pct}"), pct="pct")
_c("cost.seed_storage_share", N_("storage is {pct} of hardware spend here"), pct="pct1")
_c("cost.seed_storage_rule",
   N_("the seed's rule of thumb is ~{pct} (teams that also buy a parallel file system for many jobs)"), pct="pct")
_c("cost.seed_gpu_share", N_("GPUs are {pct} of the server price here"), pct="pct")
_c("cost.seed_gpu_rule", N_("the seed says 40-60 %"))
_c("cost.seed_first_year", N_("first-year cost {x}x the server price"), x="num2")
_c("cost.seed_first_year_rule", N_("the seed budgets 1.6-1.8x"))
_c("cost.server_price_scaled", N_("server price scaled from a {n}-GPU {gpu} server"), n="int", gpu="gpu")
_c("cost.no_server_price", N_("no server price for {gpu}: GPU cards at {pct} of the server (seed rule)"), gpu="gpu",
   pct="pct")
_c("cost.storage_minimum", N_("shared storage: {tb} TB is below the smallest {storage} minimum configuration"),
   tb="num1", storage="storage")
_c("cost.storage_priced_at_minimum", N_("priced at that configuration"))
_c("cost.component_fallback", N_("no {component} price: priced as {fallback}"), component="component",
   fallback="component")
