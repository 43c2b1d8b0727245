"""Messages: the plan's search, its market and budget notes, and the no-offer line."""

from __future__ import annotations

from trainsizer.i18n import N_, NP_
from trainsizer.message_codes.registry import _c

# compounds: messages read as clauses ("a; b") or as a list ("a, b")
_c("clauses", "{parts}", parts="clauses")
_c("items", "{parts}", parts="items")

# estimate/intervals.py: the 80 % ranges
_c("range.no_evidence_memory", N_("no measured case backs the memory range here ({what}): it is the wide range of all "
                                 "cases"), what="text")
_c("range.no_evidence_speed", N_("no measured case backs the speed range here ({what}): it is the wide range of all "
                                "cases"), what="text")
_c("range.framework_not_stated_memory", N_("no framework named: the memory range is the wider one of runs whose "
                                          "framework is not known (--framework or training.framework narrows it)"))
_c("range.framework_not_stated_speed", N_("no framework named: the speed range is the wider one of runs whose "
                                         "framework is not known (--framework or training.framework narrows it)"))
_c("range.oom_risk", N_("a {pct} chance that memory exceeds the GPU (fits unless memory is {above} above the "
                        "estimate)"), pct="pct", above="pct")
_c("range.misses_deadline", N_("chance of missing the deadline ({days}) {pct}"), days="n_days", pct="pct")
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
_c("plan.no_expert_parallel",
   N_("no expert parallelism searched: {framework} does not run it with method {method}; frameworks that do: "
      "{frameworks} (name one with --framework or training.framework)"), framework="text", method="text",
   frameworks="text")

_c("plan.framework_vendors",
   N_("{framework} trains on accelerators from {vendors} only: {n} GPU types of other vendors left out ({gpus_list})"),
   framework="text", vendors="vendors", n="int", gpus_list="gpus_list")
_c("plan.framework_vendors_others", N_("frameworks that train on them: {frameworks}"), frameworks="items")
_c("plan.framework_on_vendors", N_("{framework} ({vendors})"), framework="text", vendors="vendors")

# workflows/plan_job.py and pricing.py: market, budget, workload, notes of an option
_c("plan.market_excluded",
   N_("{market}: {n} of {total} GPU types left out, they cannot be bought or rented there ({gpus_list})"),
   market="market", n="int", total="int", gpus_list="gpus_list")
_c("plan.market_override", N_("name one with --gpu or override its availability in a --catalog file"))
_c("plan.job_gpu_not_kept",
   N_("the job names {gpu} (hardware.gpu); the plan searched every GPU the market offers: --gpu {id} keeps it to that "
      "one"),
   gpu="gpu", id="text")
_c("plan.nothing_within_budget",
   N_("nothing can be had within the budget of {money}: raise it, or relax the GPU count / the model"), money="money")
_c("plan.all_at_oom_risk",
   N_("every option that can be had risks running out of memory above {limit} (the least: {pct} on {gpus} x {gpu}): "
      "more GPUs, a GPU with more memory, or a higher --max-oom-risk"), limit="pct", pct="pct", gpus="int", gpu="gpu")
# workflows/offer_gap.py: no known offer rents the job by the hour
_c("gap.no_known_offer",
   N_("no known offer rents it by the hour ({hold}); its GPU time alone, {hours} GPU-hours with {setup} of setup on "
      "each GPU, at {provider}'s {price} per GPU-hour, is about {floor}: ask a cloud for a quote on that"),
   hold="clause", hours="num0", setup="duration", provider="text", price="small_money", floor="money")
_c("gap.hold_servers", N_("{n} with {gpus} x {gpu} each and RDMA between them"), n="n_servers", gpus="int", gpu="gpu")
_c("gap.hold_instance", N_("one instance with {gpus} x {gpu}"), gpus="int", gpu="gpu")
_c("gap.lead", N_("Rent {hardware} from a provider who quotes it: about {floor} of GPU time, {time} to train; ask for "
                   "{hold}."), hardware="hardware", floor="money", time="duration", hold="clause")
_c("gap.beside", N_("No known offer rents it by the hour; of the priced ways to have it: {why}"), why="clause")
_c("gap.payback", N_("pays back against that compute only after {runs} runs; its servers have time for {possible} in "
                     "{years} years"), runs="int", possible="int", years="g")
_c("gap.priced_far", N_("No known offer rents it by the hour, and every priced way to have it costs over {factor} "
                        "times that a run (the least: {what}, {cost})."), factor="num0", what="clause", cost="money")
_c("gap.payback_sentence", N_("Buying {payback}."), payback="clause")
_c("gap.hold_ram", N_("at least {gib} GiB of host RAM an instance"), gib="num0")
_c("plan.over_budget", NP_("{n} option left out: every way to get it commits more than the budget of {money}",
                           "{n} options left out: every way to get them commits more than the budget of {money}"),
   n="int", money="money")
_c("plan.least_budget", N_("the least budget that would do: {money} ({hardware}, {acquisition})"), money="money",
   hardware="hardware", acquisition="acquisition")
# workflows/feasible.py: what would make a job without a recommendation feasible (planned again with the change)
_c("plan.shortest_time", N_("the shortest time that works: {time}, {acquisition} {hardware} for {cost} a run"),
   time="duration", acquisition="acquisition", hardware="hardware", cost="money")
_c("plan.smallest_change", N_("the smallest change that works: {change}; then {acquisition} {hardware}, {cost} a run, "
                              "{time} to train"),
   change="clause", acquisition="acquisition", hardware="hardware", cost="money", time="duration")
_c("change.precision_bf16_mixed", N_("precision BF16 mixed"))
_c("change.precision_bf16_true", N_("precision BF16 throughout (no FP32 master weights)"))
_c("change.precision_fp16_mixed", N_("precision FP16 mixed"))
_c("change.precision_fp8_mixed", N_("precision FP8 mixed"))
_c("change.more_gpus", N_("up to {n} GPUs instead of {was}"), n="int", was="int")
_c("change.seq_len", N_("sequence length {n} instead of {was}"), n="int", was="int")
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
