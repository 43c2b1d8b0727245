"""Messages: the rest of the server, the deployment timeline and what a runner-up trades."""

from __future__ import annotations

from trainsizer.i18n import N_
from trainsizer.message_codes.registry import _c

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
_c("timeline.quote_cluster", N_("ask clouds to quote the cluster, sign, and wait for it to be provisioned"))
_c("timeline.quoted", N_("a cluster leased on a quote: the provider's lead time is assumed, ask it with the price"))
_c("verify.first_hour", N_("3. in the first hour, check the rented instance against the offer"))
_c("verify.first_hour_check", N_("GPUs, host RAM, CPU cores and disk as the offer states; the first steps' tokens/s "
                                 "against the estimate; the bill's rate against the offer's price"))
_c("verify.memory", N_("1. measure real peak memory on one GPU"))
_c("verify.profile", N_("2. profile a training step"))
_c("verify.burnin", N_("3. run a 3-5 day small-scale training on the target machine"))
_c("verify.memory_check", N_("torch.cuda.max_memory_allocated and nvidia-smi against the estimate"))
_c("verify.profile_check", N_("when data loading plus gradient sync exceed 20%, storage or network binds"))
_c("verify.burnin_check", N_("throttling, ECC / XID errors, throughput drift, thermals"))
_c("verify.memory_check_with", N_("{peak} and {query} against the estimate"), peak="text", query="text")
_c("verify.memory_check_own", N_("{peak} in your training script after its first steps, and {query}, against the "
                                 "estimate (trainsizer probe memory reads CUDA devices)"), peak="text", query="text")
_c("verify.burnin_check_own", N_("throttling, ECC errors, health alarms, throughput drift, thermals, read with the "
                                 "command above (trainsizer burnin reads NVIDIA's NVML)"))
_c("verify.burnin_check_vendor", N_("throttling, ECC errors, throughput drift, thermals, read with the vendor's own "
                                    "device tool (trainsizer burnin reads NVIDIA's NVML)"))

# workflows/decide.py: what a runner-up trades
_c("trade.per_run", N_("{pct} per run"), pct="signed_pct")
_c("trade.faster", N_("{span} faster"), span="span")
_c("trade.slower", N_("{span} slower"), span="span")
_c("trade.commits", N_("commits {money}"), money="money")
_c("trade.tight_fit", N_("tight fit ({pct} of memory)"), pct="pct")
_c("trade.oom_risk", N_("a {pct} chance of running out of memory"), pct="pct")
_c("trade.ownership_on_one_run", N_("its whole {years}-year cost of owning on this one run"), years="g")
_c("trade.similar", N_("similar"))
