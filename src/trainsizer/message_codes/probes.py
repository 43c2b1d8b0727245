"""Messages: probes' progress, rental quotes' risk flags and storage I/O."""

from __future__ import annotations

from trainsizer.i18n import N_
from trainsizer.message_codes.registry import _c

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
_c("quote.does_not_fit", N_("the job does not fit this offer's hardware, or only at a real risk of running out "
                            "of memory"))
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
