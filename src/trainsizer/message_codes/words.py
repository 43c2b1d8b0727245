"""Messages: scaling labels, assumptions, the one-sentence recommendation and the estimate's notes."""

from __future__ import annotations

from trainsizer.i18n import N_
from trainsizer.message_codes.registry import _c

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
_c("binding.fastest", N_("speed (nothing that can be had trains faster)"))
_c("binding.fewest-gpus", N_("the GPU count (nothing that can be had runs on fewer GPUs)"))
_c("binding.no_hourly_offer", N_("no known offer rents it by the hour (the layout to ask a quote on)"))
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
_c("mem.experts_unquantized", N_("experts held as parameters, not quantized (bitsandbytes replaces nn.Linear modules "
                                 "only) {b} B/param"), b="g")
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
_c("step.moe_balanced",
   N_("routing priced balanced over the expert-parallel ranks, as benchmarks force it; real routing is slower "
      "(Megatron-MoE-ModelZoo measured Qwen3-235B-A22B at EP 8 on 256 H100 1.09-1.25x slower a step dropless than "
      "force-balanced): set parallel.moe_load_imbalance where yours is known"))
_c("step.moe_dispatch_default",
   N_("tokens priced as reaching their experts by a plain all-to-all, not overlapped with computation (the defaults): "
      "DeepEP or all-to-all overlap can shorten a step a great deal; set parallel.moe_dispatcher and "
      "parallel.moe_a2a_overlap as your framework runs them"))
_c("step.pipeline_uneven",
   N_("the model's {layers} layers do not divide over pp*virtual_pp = {stages} stages: priced as an even split, {per} "
      "layers a stage; Megatron-based frameworks refuse that and need an uneven one (parallel.pipeline_split: "
      "embedding-and-loss where the layers and 2 more divide, as their recipes set it)"), layers="int", stages="int",
   per="num2")
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
