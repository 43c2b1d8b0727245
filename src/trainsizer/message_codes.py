"""Every message the engine can say: its code, its catalog message id (English; the Chinese is in the .po) and
the kind of each argument (``trainsizer.messages.KINDS``). A new message: one line here, then ``python
tools/i18n.py`` and its Chinese in ``locale/zh_CN/LC_MESSAGES/trainsizer.po``; tests/test_messages.py renders
every code in every language."""

from __future__ import annotations

from typing import Any

from trainsizer.i18n import N_, NP_

CODES: dict[str, tuple[str | tuple[str, str], str, dict[str, str]]] = {}


def _c(code: str, msgid: str | tuple[str, str], count: str = "n", **kinds: Any) -> None:
    CODES[code] = (msgid, count, kinds)


# compounds: messages read as clauses ("a; b") or as a list ("a, b")
_c("clauses", "{parts}", parts="clauses")
_c("items", "{parts}", parts="items")

# estimate/intervals.py: the 80 % ranges
_c("range.no_evidence_memory", N_("no measured case backs the memory range here ({what}): it is the wide range of all "
                                 "cases"), what="text")
_c("range.no_evidence_speed", N_("no measured case backs the speed range here ({what}): it is the wide range of all "
                                "cases"), what="text")
_c("range.oom_risk", N_("a {pct} chance that memory exceeds the GPU (fits unless memory is {above} above the "
                        "estimate)"), pct="pct", above="pct")
_c("range.close_call", N_("a close call: {hardware} comes out ahead in {pct} of the plausible outcomes; a one-hour "
                          "trial on both settles it (the profile probe of the verification steps, on each)"),
   hardware="hardware", pct="pct")

# plan/search.py: why an option, what would make the job fit, notes
_c("plan.memory_headroom", N_("memory has {gib} GiB headroom"), gib="num1")
_c("plan.memory_used", N_("memory: {used} of {cap} GiB used"), used="num1", cap="num1")
_c("plan.dominant_step", N_("step time dominated by {step} ({pct})"), step="step", pct="pct")
_c("plan.mfu", N_("MFU {pct}"), pct="pct")
_c("plan.relaxation_fits",
   N_("{clause}: fits on {gpus} x {gpu} (tp={tp}, pp={pp}, zero={zero}, checkpointing {ckpt}), {tps} tokens/s"),
   clause="clause", gpus="int", gpu="gpu", tp="int", pp="int", zero="int", ckpt="text", tps="num0")
_c("plan.try_8bit_optimizer", N_("an 8-bit optimizer (optimizer: adamw-8bit)"))
_c("plan.try_lora", N_("LoRA instead of full fine-tuning (method: lora)"))
_c("plan.try_qlora", N_("QLoRA with NF4 base weights (method: qlora, quantization: nf4)"))
_c("plan.try_more_gpus", N_("more GPUs (--max-gpus {n})"), n="int")
_c("plan.try_larger_gpus", N_("larger GPUs (the whole catalog)"))
_c("plan.try_shorter_sequence", N_("a shorter sequence (seq_len {n})"), n="int")
_c("plan.nothing_fits", N_("nothing in the searched space fits, even with an 8-bit optimizer, LoRA/QLoRA or 8x more "
                           "GPUs: a larger-memory GPU, CPU offload of parameters, or a smaller model is needed"))
_c("plan.fits_not_to_be_had",
   N_("it fits in memory on {gpus} x {gpu}, but no way to have it in this market holds that layout: the GPU "
      "cannot be bought or rented here, or no rental offer's machine states enough host RAM (trainsizer catalog "
      "prices); try another --market or --gpu, or add your own offer in a --catalog file"),
   gpus="int", gpu="gpu")
_c("plan.deadline_binds", N_("the deadline may be what binds: try without --deadline to see the fastest option's time"))
_c("plan.global_batch_assumed", N_("global batch not given: {n} sequences per step assumed for every option"), n="int")

# workflows/plan_job.py and pricing.py: market, budget, workload, notes of an option
_c("plan.market_excluded",
   N_("{market}: {n} of {total} GPU types left out, they cannot be bought or rented there ({gpus_list})"),
   market="market", n="int", total="int", gpus_list="gpus_list")
_c("plan.market_override", N_("name one with --gpu or override its availability in a --catalog file"))
_c("plan.nothing_within_budget",
   N_("nothing can be had within the budget of {money}: raise it, or relax the GPU count / the model"), money="money")
_c("plan.all_at_oom_risk",
   N_("every option that can be had risks running out of memory above {limit} (the least: {pct} on {gpus} x {gpu}): "
      "more GPUs, a GPU with more memory, or a higher --max-oom-risk"), limit="pct", pct="pct", gpus="int", gpu="gpu")
# workflows/offer_gap.py: no known offer rents the job by the hour
_c("gap.no_known_offer",
   N_("no known offer rents it by the hour ({hold}); its compute alone, {hours} GPU-hours at {provider}'s {price} "
      "per GPU-hour, is about {floor}: ask a cloud for a quote on that"),
   hold="clause", hours="num0", provider="text", price="small_money", floor="money")
_c("gap.hold_servers", N_("{n} with {gpus} x {gpu} each and RDMA between them"), n="n_servers", gpus="int", gpu="gpu")
_c("gap.hold_instance", N_("one instance with {gpus} x {gpu}"), gpus="int", gpu="gpu")
_c("gap.hold_ram", N_("at least {gib} GiB of host RAM an instance"), gib="num0")
_c("plan.over_budget", NP_("{n} option left out: every way to get it commits more than the budget of {money}",
                           "{n} options left out: every way to get them commits more than the budget of {money}"),
   n="int", money="money")
_c("plan.least_budget", N_("the least budget that would do: {money} ({hardware}, {acquisition})"), money="money",
   hardware="hardware", acquisition="acquisition")
_c("plan.sized_to_job", N_("options over {cost} times the answer's cost and {gpus} times its GPUs left out: {n} "
                           "(--all shows every option)"), n="int", cost="g", gpus="int")
_c("plan.offload_ram_unstated",
   N_("layouts that offload to CPU were not priced on rental offers that state no host RAM ({gpus_list}): add your "
      "offer's machine (machine: ram_gb_per_gpu) with --prices"), gpus_list="gpus_list")
_c("plan.fabric_twin", N_("same layout over {fabric} costs more; {fabric2} shown"), fabric="link", fabric2="link")
_c("cost.voucher_not_here", N_("{voucher}: this provider is not one of its centres"), voucher="voucher")
_c("cost.no_run_length", N_("no per-run cost: the job states no training.tokens (the run's length)"))
_c("cost.no_purchase_price", N_("no purchase price for this GPU in the price data (add one with --prices)"))
_c("cost.no_purchase_price_short", N_("no purchase price"))
_c("cost.not_rentable", N_("not rentable in the {market}: {reason}"), market="market", status="text", reason="clause")
_c("cost.not_buyable", N_("cannot be bought new in the {market}: {reason}"), market="market", status="text",
   reason="clause")
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
_c("cost.contract_minimum", N_("{term} contract: bills at least {hours} h for a {run} h run"), term="term",
   hours="num0", run="num1")
_c("cost.preemptible", N_("preemptible: the run may be interrupted"))
_c("cost.checkpoint_often", N_("checkpoint often"))
_c("cost.stale_price", N_("price from {year}: check before you sign"), year="text")
_c("cost.voucher_eligibility_unknown",
   N_("{voucher}: eligible providers unknown, check that this provider is in the scheme"), voucher="voucher")

_c("cost.buy_sets",
   N_("bought as {sets} sets of these servers: {n} runs a month of {run} each do not fit in one set's month"),
   sets="int", n="g", run="duration")

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

# system/: host, storage, network, power and site fit
_c("system.host_seed_rule", N_("seed: host RAM >= 2x the parameter bytes (7B -> 64 GB, 70B -> 512 GB)"))
_c("system.host_multi_node", N_("~1 TB per node for multi-node"))
_c("system.storage_seed_rule", N_("seed rule: {tflops} TFLOPS x 32 GB/s per TFLOPS = {gbps} GB/s"), tflops="num0",
   gbps="num0")
_c("system.storage_seed_rule_off",
   N_("dimensionally it ties bytes to FLOPs, and here it is {x} times the {mbps} MB/s the GPUs actually read "
      "(tokens/s x {b} B/token x {k}). Checkpoint bursts ({write} GB/s) size the storage, not the rule."),
   x="e1", mbps="num2", b="g", k="g", write="num1")
_c("system.net_one_server", N_("one server: no scale-out fabric (front-end network only)"))
_c("system.net_roce_adequate", N_("{n_gpus}: RoCE is adequate below ~100 GPUs and cheaper than InfiniBand"),
   n_gpus="n_gpus")
_c("system.net_roce_own_fabric",
   N_("{n_gpus}: RoCE is adequate below ~100 GPUs and cheaper than InfiniBand ({fabric} is this part's own fabric)"),
   n_gpus="n_gpus", fabric="link")
_c("system.net_ib", N_("{n_gpus}: InfiniBand (adaptive routing, SHARP)"), n_gpus="n_gpus")
_c("system.net_roce_strained", N_("the seed guide finds RoCE strained beyond ~100 GPUs"))
_c("system.net_either", N_("{n_gpus}: {fabric} (RoCE would also do at this size)"), n_gpus="n_gpus", fabric="link")
_c("system.net_own_fabric", N_("{n_gpus}: {fabric}, the part's own fabric (no InfiniBand for it)"),
   n_gpus="n_gpus", fabric="link")
_c("system.net_roce_tuning",
   N_("the seed guide finds RoCE strained beyond ~100 GPUs, so plan lossless Ethernet tuning (PFC/ECN, adaptive "
      "routing) as large RoCE clusters do (Meta, Llama 3 on 24K-GPU RoCE)"))
_c("system.net_replaced", N_("{fabric} replaced"), fabric="link")
_c("system.net_replaced_by", N_("{fabric} replaced by {fabric2}: this part's servers ship RoCE, not InfiniBand"),
   fabric="link", fabric2="link")
_c("system.fits_racks",
   N_("fits: {n_servers} of {kw} kW per rack ({usable} kW usable of {rack} kW; {binds} binds), {n_racks} incl. "
      "{extra} for network/storage"),
   n_servers="n_servers", kw="num1", usable="g", rack="g", binds="binds", n_racks="n_racks", extra="int")
_c("system.server_too_hot",
   N_("does NOT fit: one {kw} kW server exceeds the {usable} kW usable of a {rack} kW rack ({binds} limit, "
      "continuous load at most 80%, {cooling} cooling)"),
   kw="num1", usable="g", rack="g", binds="binds", cooling="cooling")
_c("system.remedy_power_cap",
   N_("cap each GPU at {w} W (nvidia-smi -pl {w2}): one server per rack, about {pct} of full throughput"),
   w="int", w2="int", pct="pct")
_c("system.remedy_power_cap_impossible",
   N_("power capping cannot bring a {kw} kW server under {usable} kW (it would need {pct} of TDP)"),
   kw="num1", usable="g", pct="pct")
_c("system.remedy_smaller_servers", N_("use {n}-GPU servers (about {kw} kW each) - loses the 8-GPU NVLink domain"),
   n="int", kw="num1")
_c("system.remedy_denser_site", N_("host in a higher-density or liquid-cooled site (30-60+ kW per rack)"))
_c("system.rack_system", N_("{gpu} ({form}) comes as one {cooling}-cooled rack of {n} GPUs drawing ~{kw} kW"),
   gpu="gpu", form="text", cooling="cooling", n="int", kw="g")
_c("system.fits", N_("fits: {clause}"), clause="clause")
_c("system.does_not_fit", N_("does NOT fit: {clause}"), clause="clause")
_c("system.rack_systems_fit",
   N_("{n_racks} within {usable} kW usable, {n_racks2} incl. {extra} for network/storage"),
   n_racks="n_racks", usable="g", n_racks2="n_racks", extra="int")
_c("system.needs_liquid", N_("it needs liquid cooling and {site} is {cooling}-cooled"), site="site",
   cooling="cooling")
_c("system.rack_too_hot", N_("{kw} kW exceeds the {usable} kW usable of a {rack} kW rack (continuous load at most "
                             "80%)"), kw="g", usable="g", rack="g")
_c("system.remedy_liquid_site", N_("host it in a liquid-cooled site with >= {kw} kW per rack (direct liquid cooling, "
                                   "CDU and facility water)"), kw="num0")
_c("system.remedy_baseboard", N_("or choose 8-GPU baseboard servers (HGX B200/H200) that a 30-60 kW site can take"))

# workflows/next_steps.py: deployment timeline and verification on hardware
_c("timeline.evaluation", N_("evaluation and quotes"))
_c("timeline.delivery", N_("vendor delivery of bought servers"))
_c("timeline.preparation", N_("server preparation (delivery, racking, cabling)"))
_c("timeline.environment", N_("environment (drivers, NCCL, containers, storage mounts)"))
_c("timeline.data", N_("data preparation and acceptance tests"))
_c("timeline.in_stock", N_("machines rented or in stock"))
_c("timeline.with_delivery", N_("bought servers: delivery lead time included"))
_c("timeline.rent_instance", N_("rent the instance and check it against the offer"))
_c("timeline.environment_rented", N_("environment on the rented image (framework, data upload)"))
_c("timeline.rented", N_("a rented instance: no server preparation, delivery or burn-in"))
_c("verify.first_hour", N_("3. in the first hour, check the rented instance against the offer"))
_c("verify.first_hour_check", N_("GPUs, host RAM, CPU cores and disk as the offer states; the first steps' tokens/s "
                                 "against the estimate; the bill's rate against the offer's price"))
_c("verify.memory", N_("1. measure real peak memory on one GPU"))
_c("verify.profile", N_("2. profile a training step"))
_c("verify.burnin", N_("3. run a 3-5 day small-scale training on the target machine"))
_c("verify.memory_check", N_("torch.cuda.max_memory_allocated and nvidia-smi against the estimate"))
_c("verify.profile_check", N_("when data loading plus gradient sync exceed 20%, storage or network binds"))
_c("verify.burnin_check", N_("throttling, ECC / XID errors, throughput drift, thermals"))

# workflows/decide.py: what a runner-up trades
_c("trade.per_run", N_("{pct} per run"), pct="signed_pct")
_c("trade.faster", N_("{span} faster"), span="span")
_c("trade.slower", N_("{span} slower"), span="span")
_c("trade.commits", N_("commits {money}"), money="money")
_c("trade.tight_fit", N_("tight fit ({pct} of memory)"), pct="pct")
_c("trade.ownership_on_one_run", N_("its whole {years}-year cost of owning on this one run"), years="g")
_c("trade.similar", N_("similar"))

# plan/scale.py: the scaling curve's labels and verdicts
_c("scale.slower", N_("{clause}: {n} GPUs are SLOWER than {m} ({a} vs {b} tokens/s; {step} dominates)"),
   clause="clause", n="int", m="int", a="num0", b="num0", step="step")
_c("scale.efficiency_drop",
   N_("{clause}: from {n} GPUs scaling efficiency falls below 50% ({pct}; {step} dominates)"),
   clause="clause", n="int", pct="pct", step="step")
_c("scale.data_parallel_only", N_("{links} (data parallel only)"), links="links")
_c("scale.best_layout", N_("{links} (best layout)"), links="links")

# workflows/report_model.py: what each assumption is
_c("assume.gpu", N_("GPU {gpu}: {gib} GiB, {tflops} TFLOPS bf16 dense, {gbps} GB/s, {watts} W"), gpu="gpu",
   gib="g", tflops="g", gbps="g", watts="g")
_c("assume.link", N_("link {link}: {gbps} GB/s per direction"), link="link", gbps="g")
_c("assume.site", N_("site {site}: {kw} kW/rack, {cooling}, PUE {pue}, {price}/kWh"), site="site", kw="g",
   cooling="cooling", pue="g", price="small_money")
_c("assume.memory_model", N_("memory model: {section}"), section="section")
_c("assume.step_model", N_("step-time model: {section}"), section="section")
_c("assume.system_sizing", N_("system sizing: {section}"), section="section")
_c("assume.planner", N_("planner: {section}"), section="section")
_c("assume.price", N_("price"))

# workflows/decide.py: the recommendation in one sentence (what, for how much, how long, the goal, what bound it)
_c("sentences", "{parts}", parts="sentences")
_c("decide.rent_from", N_("Rent {hardware} from {provider} ({term})"), hardware="hardware", provider="text",
   term="term")
_c("decide.rent", N_("Rent {hardware}"), hardware="hardware")
_c("decide.buy", N_("Buy {hardware}"), hardware="hardware")
_c("decide.cost_per_run", N_("about {cost} a run"), cost="money")
_c("decide.cost_per_token", N_("{price} per million tokens"), price="small_money")
_c("goal.cheapest", N_("the lowest cost per run"))
_c("goal.cheapest_deadline", N_("the lowest cost per run that meets the deadline"))
_c("goal.fastest", N_("the fastest run"))
_c("goal.fastest_deadline", N_("the fastest run that meets the deadline"))
_c("goal.fewest-gpus", N_("the fewest GPUs"))
_c("goal.fewest-gpus_deadline", N_("the fewest GPUs that meet the deadline"))
# the default objective with the run's time valued (workflows.time_value)
_c("goal.cheapest-timed", N_("the lowest cost per run, time valued at {money} an hour"), money="money")
_c("goal.cheapest-timed_deadline",
   N_("the lowest cost per run that meets the deadline, time valued at {money} an hour"), money="money")
_c("binding.time", N_("the time to train (what costs less per run takes longer than the difference is worth)"))
_c("binding.cost", N_("cost (nothing that fits costs less per run)"))
_c("binding.deadline", N_("the deadline (fewer GPUs would miss {days})"), days="n_days")
_c("binding.budget", N_("the budget (a cheaper run needs a longer contract than it allows)"))
_c("binding.memory", N_("memory (fewer GPUs do not hold the job: {used} of {capacity} GiB per GPU)"), used="num0",
   capacity="num0")
_c("binding.headroom", N_("memory headroom (cheaper options fill over {limit} of their GPUs' memory)"), limit="pct")
_c("binding.oom_risk", N_("memory headroom (cheaper layouts run out of memory with a chance of {pct} or more)"),
   pct="pct")
_c("decide.why", N_("{what}: {cost}; {goal}; binding: {binding}."), what="clause", cost="clause", goal="clause",
   binding="clause")
_c("decide.why_with_time", N_("{what}: {cost}, {time} to train; {goal}; binding: {binding}."), what="clause",
   cost="clause", time="duration", goal="clause", binding="clause")
_c("decide.runner_up", N_("Runner-up: {hardware} ({trade})."), hardware="hardware", trade="clause")

# estimate/: where each memory component comes from (estimate table's last column) and the estimate's notes
_c("mem.weights", N_("{precision} weights, {b} B/param"), precision="text", b="g")
_c("mem.weights_quantized", N_("{quantization} base linears {b} B/param incl. quantization constants"),
   quantization="text", b="num3")
_c("mem.weights_unquantized", N_("embeddings, norms, output head {b} B/param"), b="g")
_c("mem.weights_frozen", N_("frozen weights {b} B/param"), b="g")
_c("mem.weights_trainable", N_("trainable layers {b} B/param"), b="g")
_c("mem.fp8_copies", N_("+ fp8 copies of linear weights (Transformer Engine)"))
_c("mem.params_offloaded", N_("offloaded to CPU (ZeRO-3 param offload)"))
_c("mem.sharded_zero3", N_("sharded over dp*cp={group} (ZeRO-3/FSDP)"), group="int")
_c("mem.sharded_master_only", N_("none kept: each of dp*cp={group} ranks keeps only its fp32 master shard and casts a "
                                 "unit when it gathers it (FSDP mixed precision)"), group="int")
_c("mem.lora_adapters", N_("{m} M adapter params, {b} B each"), m="num2", b="g")
_c("mem.on_cpu", N_("on CPU (offload)"))
_c("mem.sharded", N_("sharded over dp*cp={group}"), group="int")
_c("mem.master_weights", N_("fp32 master copy of trainable params"))
_c("mem.optimizer_states", N_("{optimizer} states {b} B/trainable param"), optimizer="text", b="num2")
_c("mem.paged_states", N_("paged (CUDA managed memory, outside the PyTorch allocator)"))
_c("mem.gradients", N_("{m} M trainable params x {b} B"), m="num1", b="g")
_c("mem.grads_sharded", N_("sharded over dp*cp={group} (ZeRO-2/3)"), group="int")
_c("mem.grads_streamed", N_("streamed to CPU for the offloaded optimizer step"))
_c("mem.grads_in_backward", N_("optimizer in backward: only the largest tensor group's gradients live at once"))
_c("mem.grads_transient", N_("freed by zero_grad between steps: none before backward, where they replace the "
                             "freed activations"))
_c("mem.grads_unsharded", N_("accumulated unsharded until the step's last micro-batch (FSDP no_sync): {gib} GiB, "
                             "every element of each wrapped unit that trains a parameter"), gib="num2")
_c("mem.ddp_buckets", N_("DDP gradient buckets (a copy of the gradients)"))
_c("mem.zero_bucket", N_("ZeRO reduce bucket"))
_c("mem.zero3_gathered", N_("ZeRO-3/FSDP: {n} gathered layers + one layer's unsharded gradients"), n="int")
_c("mem.dequant_copy", N_("dequantized bf16 copy of the largest linear (forward and backward)"))
_c("mem.full_state_dict", N_("the whole checkpoint loaded on every rank before it is sharded (full state dict)"))
_c("mem.activations", N_("{layers} layers x {tokens} tokens/micro-batch, checkpointing {ckpt}, attention {attention}"),
   layers="int", tokens="num0", ckpt="text", attention="text")
_c("mem.compiled", N_("torch.compile"))
_c("mem.in_flight", N_("{n} micro-batches in flight (1F1B)"), n="int")
_c("mem.interleaving", N_("x{x} interleaving"), x="num2")
_c("mem.no_logits", N_("no output projection to the vocabulary on this stage"))
_c("mem.logits", N_("{tokens} x {vocab} logits, {b} B each ({loss} cross-entropy)"), tokens="num0", vocab="num0",
   b="g", loss="loss")
_c("mem.backward_working_set", N_("activation gradients and recomputed tensors of the layer being back-propagated"))
_c("mem.optimizer_temporaries", N_("foreach optimizer temporaries at step()"))
_c("mem.paged_note", N_("paged optimizer states ({gib} GiB) live in CUDA managed memory: not counted by "
                        "torch.cuda.max_memory_allocated, counted on the device"), gib="num2")
_c("mem.allocator_pressure", N_("near the GPU's memory the allocator flushes its cache and retries instead of "
                                "reserving more: reserved held at the device's free memory, at some cost in speed"))
_c("step.no_fp8", N_("{gpu} has no fp8 tensor cores: fp8-mixed runs at the bf16 rate"), gpu="gpu")
_c("step.no_bf16", N_("{gpu} has no bf16 support: the fp16 rate is used"), gpu="gpu")
_c("step.no_peak", N_("no {dtype} peak in the catalog for {gpu}"), dtype="text", gpu="gpu")
_c("step.mfu_ceiling_held",
   N_("step time held at the MFU ceiling of {architecture} {precision} ({pct}: the best measured in the validation "
      "data plus a margin); the terms alone would claim more"), architecture="text", precision="text", pct="pct")
_c("step.data_loading", N_("data loading is not modelled yet (storage sizing comes with the system model)"))
# estimate/rule_of_thumb.py: the seed guide's rule beside the estimate, and why they differ
_c("rule.full", N_("params x 2 B x 4 (weights 2 + gradients 2 + optimizer 4)"))
_c("rule.lora", N_("params x 2 B (16-bit weights; LoRA states ignored)"))
_c("rule.qlora", N_("params x 0.5 B (4-bit weights; the seed has no QLoRA rule)"))
_c("rule.mixed_adamw", N_("mixed-precision AdamW keeps fp32 master weights and two fp32 moments: 16-18 B/param, "
                          "not 8 (ZeRO paper, section 3.1)"))
_c("rule.fp32_adamw", N_("fp32 training with AdamW needs 16 B/param (4 weights + 4 gradients + 8 moments)"))
_c("rule.zero", N_("the rule divides evenly over GPUs; ZeRO shards only some states (stage {stage})"), stage="int")
_c("rule.activations", N_("the rule leaves activations open: here {gib} GiB (micro-batch {mbs} x {seq} tokens)"),
   gib="num1", mbs="int", seq="int")
_c("rule.overheads", N_("allocator cache, CUDA context and buffers add {gib} GiB"), gib="num1")
_c("rule.optimizer", N_("{optimizer} states differ from the rule's 4 B/param"), optimizer="text")

# probe/: what a long probe is doing (the spinner of probe memory and burnin)
_c("progress.building_model", N_("building the model"))
_c("progress.building_model_layers", N_("building the model ({layers} layers)"), layers="int")
_c("progress.building_fake", N_("building the model on fake tensors"))
_c("progress.building_fake_layers", N_("building the model ({layers} layers) on fake tensors"), layers="int")
_c("progress.step", N_("step {i}/{n} ({layers} layers)"), i="int", n="int", layers="int")
_c("progress.simulated_step", N_("simulated step {i}/{n} ({layers} layers)"), i="int", n="int", layers="int")
_c("progress.reopening", N_("reopening {path}"), path="text")
_c("progress.telemetry", N_("opening the GPU telemetry ({backend})"), backend="text")
_c("progress.load_command", N_("starting the load ({command})"), command="text")
_c("progress.load_builtin", N_("starting the load (bf16 matmuls and copies)"))
_c("progress.creating", N_("creating {path}"), path="text")

# cost/quotes.py: the risk flags of a rental quote
_c("quote.does_not_fit", N_("the job does not fit this offer's hardware"))
_c("quote.hourly_rounding", N_("hourly billing on a {hours} h job: {pct} paid for rounding"), hours="num1",
   pct="pct")
_c("quote.minimum_term", N_("minimum term {months} months for a {days}-day job"), months="g", days="num1")
_c("quote.wants_nvswitch", N_("{topology} topology: the job wants TP={tp}; full NVSwitch would deliver {pct} more"),
   topology="text", tp="int", pct="pct")
_c("quote.tp_slow", N_("{topology} topology: tensor parallelism beyond 2 GPUs is slow (seed: up to ~30 %)"),
   topology="text")
_c("quote.no_storage_bandwidth", N_("no storage bandwidth stated: data loading may bind (ask for GB/s per node)"))
_c("quote.no_replacement_sla", N_("no replacement SLA: a failed GPU can stall the whole job"))
_c("quote.downtime_charged", N_("downtime is charged"))
_c("quote.rent_too_cheap",
   N_("annual rent {rent} is below a third of the purchase price {price}: storage, service or hardware were likely "
      "cut (the seed's one-third rule, read per year: per month it would flag every offer)"), rent="num0",
   price="num0")
_c("progress.comparing", N_("comparing with the estimate"))

# system/storage.py: the random I/O a job needs, beside the seed's rule
_c("system.iops_need",
   N_("~{need} IOPS: small-file reads {data} ({samples} samples/s x {per_file} requests x {k}), checkpoint bursts "
      "{ckpt} ({gbps} GB/s in 1 MiB requests + {ranks} ranks x {files} files); packed token shards need far fewer"),
   need="num0", data="num0", samples="num1", per_file="int", k="g", ckpt="num0", gbps="num1", ranks="int", files="int")
_c("system.iops_drive",
   N_("one enterprise NVMe drive is rated ~{drive} random-read IOPS (Micron 7400/7450, M); the minimum shared "
      "configuration ({drives} drives at an assumed {pct} through the file system) gives ~{delivered}"),
   drive="num0", drives="int", pct="pct", delivered="num0")
_c("system.iops_seed_applies", N_("seed: 'SSD clusters of a million IOPS or more' at the 100B scale ({iops}; "
                                  "applies: {b}B parameters)"), iops="num0", b="num0")
_c("system.iops_seed_not_this_job", N_("seed: 'SSD clusters of a million IOPS or more' at the 100B scale ({iops}; "
                                       "not this job: {b}B parameters)"), iops="num0", b="num0")
_c("quote.basis_job", N_("the job's best layout on each offer"))
_c("quote.basis_assumed", N_("an assumed MFU of {mfu} (no job given)"), mfu="g")
