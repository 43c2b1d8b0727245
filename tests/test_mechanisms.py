"""Step-time and memory mechanisms of issue 12: causal attention, FP8 on the linears only, checkpointing policies by
name, NIC shares of strided groups and cross-node all-to-all, 4-bit FSDP gathers."""

from pathlib import Path

import pytest

from trainsizer.api import estimate
from trainsizer.errors import InputError
from trainsizer.estimate.comm import Fabric, all_gather_s
from trainsizer.estimate.flops import step_flops
from trainsizer.estimate.moe import dispatch_combine_s
from trainsizer.estimate.step import step_context
from trainsizer.estimate.step_terms import zero3_mb
from trainsizer.estimate.typed_data import with_value
from trainsizer.hardware.catalog import default_catalog
from trainsizer.models.catalog import resolve_model
from trainsizer.scenario import scenario_from_dict


def scenario(training=None, parallel=None, hardware=None, preset="llama-3.1-8b"):
    return scenario_from_dict({
        "model": {"preset": preset},
        "training": {"method": "full", "micro_batch_size": 1, "seq_len": 8192, **(training or {})},
        "parallel": {"gpus": 8, **(parallel or {})},
        "hardware": {"gpu": "h100-sxm5-80gb", **(hardware or {})}})


def test_causal_attention_executes_and_counts_half_the_score_flops():
    causal, full = scenario(), scenario({"attention_mask": "full"})
    arch = resolve_model(causal.model)
    fc, ff = step_flops(causal, arch), step_flops(full, arch)
    assert fc.attention_per_token == pytest.approx(ff.attention_per_token / 2)
    # model FLOPs (MFU) count the useful half (Megatron-Bridge 2025); the full-attention figures keep the older
    # convention (PaLM, Narayanan et al. 2021) that published TFLOPS used
    square = 3 * fc.attention_forward_per_token  # forward, input-gradient and weight-gradient pass of the scores
    assert fc.model_per_token == pytest.approx(ff.model_per_token - square / 2)
    assert fc.model_full_attention_per_token == ff.model_per_token == ff.model_full_attention_per_token
    assert fc.hardware_per_token < fc.hardware_full_attention_per_token == ff.hardware_full_attention_per_token
    # hardware FLOPs are what the kernels execute: the linears and the attention core as run
    assert fc.linear_per_token + fc.expert_per_token + fc.attention_per_token == pytest.approx(fc.hardware_per_token)
    eager = step_flops(scenario({"attention": "eager"}), arch)  # eager computes the masked scores too
    assert eager.attention_per_token == pytest.approx(ff.attention_per_token * 3 / 3.5)  # no FlashAttention rerun
    assert eager.model_per_token == fc.model_per_token  # the useful work does not depend on the kernel
    assert eager.hardware_per_token == pytest.approx(eager.hardware_full_attention_per_token)
    bert = resolve_model(scenario(preset="bert-large").model)
    flops = step_flops(scenario(preset="bert-large"), bert)  # encoders: full attention by default
    assert flops.attention_per_token > 0 and flops.model_per_token == flops.model_full_attention_per_token


def test_fp8_covers_the_linears_and_attention_stays_bf16():
    sc = scenario({"precision": "fp8-mixed"})
    arch = resolve_model(sc.model)
    gpu = default_catalog().accelerator("h100-sxm5-80gb")
    ctx, _ = step_context(sc, arch, gpu)
    assert ctx.peak_tflops == gpu.peak_tflops("fp8") and ctx.attention_peak_tflops == gpu.peak_tflops("bf16")
    both, _ = step_context(scenario({"precision": "fp8-mixed", "fp8_scope": "linear+attention"}), arch, gpu)
    assert both.attention_peak_tflops == gpu.peak_tflops("fp8")
    slow = estimate(sc, with_limits=False).performance.step_time_s
    fast = estimate(scenario({"precision": "fp8-mixed", "fp8_scope": "linear+attention"}),
                    with_limits=False).performance.step_time_s
    assert fast < slow


def test_checkpointing_policies_order_memory_and_recomputation():
    runs = {p: estimate(scenario({"activation_checkpointing": p, "micro_batch_size": 2}, {"zero": 3}),
                        with_limits=False) for p in ("none", "selective", "selective-op", "every-n-layers", "full")}
    act = {p: r.memory.to_dict()["detail_gib"]["activations"] for p, r in runs.items()}
    assert act["full"] < act["selective-op"] < act["selective"] <= act["none"]
    assert act["full"] < act["every-n-layers"] < act["none"]
    hw = {p: step_flops(r.scenario, r.architecture).hardware_per_token for p, r in runs.items()}
    assert hw["none"] < hw["selective-op"] < hw["full"] and hw["none"] < hw["every-n-layers"] < hw["full"]
    every4 = estimate(scenario({"activation_checkpointing": "every-n-layers", "checkpoint_every_n_layers": 4,
                                "micro_batch_size": 2}, {"zero": 3}), with_limits=False)
    assert act["every-n-layers"] < every4.memory.to_dict()["detail_gib"]["activations"] < act["none"]


def test_strided_groups_share_the_nics_and_all_to_all_crosses_nodes_on_each_gpus_share():
    fab = Fabric(None, None, 400.0, 8 * 47.0, 1e-6, 5e-6, 8)
    gib = 2.0**30
    whole = all_gather_s(gib, 16, fab, stride=1)  # 8 members per node: all NICs
    strided = all_gather_s(gib, 16, fab, stride=8)  # one member per node (tp = 8): its own NIC
    assert strided == pytest.approx(whole * 8, rel=0.05)
    inside, across = dispatch_combine_s(gib, 1, 8, 1, fab), dispatch_combine_s(gib, 1, 16, 1, fab)
    assert across > 4 * inside  # half the tokens leave the node through one NIC per GPU


def test_fsdp_gathers_4bit_bases_as_stored():
    qlora = scenario({"method": "qlora", "quantization": "nf4", "precision": "bf16-true"}, {"zero": 3})
    lora = scenario({"method": "lora", "precision": "bf16-true"}, {"zero": 3})
    arch = resolve_model(qlora.model)
    gpu = default_catalog().accelerator("h100-sxm5-80gb")
    assert zero3_mb(step_context(qlora, arch, gpu)[0]) < 0.4 * zero3_mb(step_context(lora, arch, gpu)[0])


def test_sdpa_on_hopper_runs_flashattention2_slower_than_the_fused_kernels_of_flash():
    from trainsizer.estimate.step import default_performance_model
    from trainsizer.estimate.step_terms import attention_relative

    p = default_performance_model()
    assert attention_relative(p, "hopper", "bf16", "sdpa") < attention_relative(p, "hopper", "bf16", "flash")
    assert attention_relative(p, "ampere", "bf16", "sdpa") == attention_relative(p, "ampere", "bf16", "flash")
    assert attention_relative(p, "hopper", "bf16", "eager") == 1.0
    long = {"seq_len": 32768, "activation_checkpointing": "full"}
    sdpa = estimate(scenario({**long, "attention": "sdpa"}, {"zero": 3}), with_limits=False).performance
    flash = estimate(scenario({**long, "attention": "flash"}, {"zero": 3}), with_limits=False).performance
    assert sdpa.step_time_s > flash.step_time_s * 1.1  # at 32k tokens attention is most of the step


def test_packed_documents_shrink_the_attention_work_to_their_own_blocks():
    whole = scenario({"seq_len": 32768})
    packed = scenario({"seq_len": 32768, "document_tokens": 2048})
    arch = resolve_model(whole.model)
    fw, fp = step_flops(whole, arch), step_flops(packed, arch)
    square = 3 * fw.attention_forward_per_token  # forward, input-gradient and weight-gradient pass of the scores
    # useful work: each 2,048-token document's causal half, 1/16 of the pack's
    assert fp.model_per_token == pytest.approx(fw.model_per_token - square / 2 * (1 - 2048 / 32768))
    assert fp.attention_per_token == pytest.approx(fw.attention_per_token * 2048 / 32768)
    assert fp.model_full_attention_per_token == fw.model_full_attention_per_token  # the published convention
    eager = step_flops(scenario({"seq_len": 32768, "document_tokens": 2048, "attention": "eager"}), arch)
    assert eager.attention_per_token == pytest.approx(
        step_flops(scenario({"seq_len": 32768, "attention": "eager"}), arch).attention_per_token)  # a dense mask
    fast = estimate(packed, with_limits=False).performance.step_time_s
    assert fast < estimate(whole, with_limits=False).performance.step_time_s * 0.8  # attention was most of it


def test_documents_longer_than_the_sequence_are_refused():
    with pytest.raises(InputError, match="document_tokens"):
        scenario({"seq_len": 4096, "document_tokens": 8192})


def test_a_power_limited_card_sustains_its_share_of_the_nominal_peak():
    sxm = estimate(scenario(hardware={"gpu": "a100-sxm4-40gb"}, parallel={"gpus": 1},
                            training={"method": "lora", "seq_len": 2048}), with_limits=False).performance
    pcie = estimate(scenario(hardware={"gpu": "a100-pcie-40gb"}, parallel={"gpus": 1},
                             training={"method": "lora", "seq_len": 2048}), with_limits=False).performance
    fraction = default_catalog().accelerator("a100-pcie-40gb").sustained_fraction
    assert fraction == 0.9 and sxm.peak_tflops == pcie.peak_tflops  # the same nominal peak, MFU against it
    assert pcie.breakdown_s["compute"] == pytest.approx(sxm.breakdown_s["compute"] / fraction)
    assert pcie.mfu < sxm.mfu


def test_torch_compile_keeps_fewer_activations_and_fuses_the_elementwise_work():
    from trainsizer.estimate.memory import default_memory_model
    from trainsizer.estimate.step import default_performance_model

    mp, p = default_memory_model(), default_performance_model()
    kept = mp.activations.compiled_factor
    assert 0 < kept < 1  # fitted below the eager value
    assert p.memory_bound.compiled_elementwise_fraction == 1.0  # assumed: fitting it hurt the cross-validation
    fused = 0.5  # the term itself, at another value
    p = with_value(p, "memory_bound", "compiled_elementwise_fraction", fused)
    single = {"parallel": {"gpus": 1}, "hardware": {"gpu": "a100-sxm4-80gb"}}
    job = {"method": "lora", "seq_len": 4096, "micro_batch_size": 2}
    eager = estimate(scenario(job, **single), with_limits=False, performance_params=p)
    compiled = estimate(scenario({**job, "compile": True}, **single), with_limits=False, performance_params=p)

    def detail(result, name):
        return next(c.bytes for c in result.memory.components if c.name == name)

    assert detail(compiled, "activations") == pytest.approx(detail(eager, "activations") * kept)
    assert detail(compiled, "weights") == detail(eager, "weights")
    e, c = eager.performance.breakdown_s, compiled.performance.breakdown_s
    assert c["elementwise"] == pytest.approx(e["elementwise"] * fused)  # traffic of the eager saved bytes, fused
    assert c["compute"] == pytest.approx(e["compute"])


def test_a_compiled_job_is_bounded_by_compiled_runs_and_an_eager_one_by_eager_runs():
    from trainsizer.estimate.step import default_performance_model
    from trainsizer.estimate.step_terms import COMPILED_KEY, mfu_ceiling

    p = default_performance_model()
    table = p.mfu_ceiling.table
    arch, prec = next((a, q.removesuffix(COMPILED_KEY)) for a, rows in table.items() for q in rows
                      if q.endswith(COMPILED_KEY))
    assert mfu_ceiling(arch, prec, p) == table[arch][prec].mfu
    assert mfu_ceiling(arch, prec, p, compiled=True) == table[arch][prec + COMPILED_KEY].mfu
    assert mfu_ceiling("hopper", "bf16-mixed", p, compiled=True) == table["hopper"]["bf16-mixed"].mfu  # no row
    from trainsizer.evidence.cases import load_cases

    root = Path(__file__).resolve().parents[1]
    files = [root / "validation/published/throughput.yaml", root / "validation/cases/throughput.yaml"]
    compiled = {c.id for f in files for c in load_cases(f)
                if c.scenario["training"].get("compile")}
    assert compiled and set(table[arch][prec + COMPILED_KEY].cases) <= compiled
    eager_evidence = {cid for rows in table.values() for q, row in rows.items() if not q.endswith(COMPILED_KEY)
                      for cid in row.cases}
    assert eager_evidence and not eager_evidence & compiled  # eager plans rest on eager runs only


def _memory_detail(result, name):
    return next((c.bytes for c in result.memory.components if c.name == name), 0.0)


def test_the_loss_holds_standard_bytes_per_logit_whatever_the_compute_dtype():
    """transformers' LlamaForCausalLM upcasts the logits (``logits.float()``, the compute-dtype copy released), copies
    the shifted logits and keeps the log-softmax output: ``logits.standard_bytes`` per element in bf16 and fp32 alike;
    a chunked loss keeps only the compute-dtype logits."""
    from trainsizer.estimate.memory import default_memory_model

    mp = default_memory_model()
    single = {"parallel": {"gpus": 1}, "hardware": {"gpu": "a100-sxm4-80gb"}}
    arch = resolve_model(scenario().model)
    tokens = 2 * 4096
    norm_input = tokens * arch.hidden_size * 4
    for precision in ("bf16-mixed", "fp32"):
        job = {"method": "lora", "seq_len": 4096, "micro_batch_size": 2, "precision": precision}
        got = _memory_detail(estimate(scenario(job, **single), with_limits=False, with_performance=False),
                             "logits_and_loss")
        assert got == pytest.approx(tokens * arch.vocab_size * mp.logits.standard_bytes + norm_input), precision
    # left in the compute dtype (no upcast, no autocast): the logits, their shifted copy and the log-softmax output
    low = estimate(scenario({"method": "lora", "seq_len": 4096, "micro_batch_size": 2, "precision": "bf16-true",
                             "loss": "compute-dtype"}, **single), with_limits=False, with_performance=False)
    assert _memory_detail(low, "logits_and_loss") == pytest.approx(
        tokens * arch.vocab_size * 2 * mp.logits.compute_dtype_copies + norm_input)
    assert mp.logits.compute_dtype_copies * 2 < mp.logits.standard_bytes
    chunked = estimate(scenario({"method": "lora", "seq_len": 4096, "micro_batch_size": 2, "loss": "chunked"},
                                **single), with_limits=False, with_performance=False)
    # the chunked run peaks in backward: its logits are no longer the largest transient
    assert _memory_detail(chunked, "logits_and_loss") < tokens * arch.vocab_size * mp.logits.standard_bytes


def test_liger_kernel_makes_a_standard_loss_chunked_and_leaves_a_stated_kind_alone():
    """Liger's fused linear cross-entropy holds no whole logits: with ``liger_kernel`` a standard loss is priced as
    a chunked one; a loss kind the run states otherwise (compute-dtype) is kept."""
    single = {"parallel": {"gpus": 1}, "hardware": {"gpu": "a100-sxm4-80gb"}}

    def logits(**training):
        job = {"method": "lora", "seq_len": 4096, "micro_batch_size": 2, **training}
        return _memory_detail(estimate(scenario(job, **single), with_limits=False, with_performance=False),
                              "logits_and_loss")

    liger = logits(liger_kernel=True)
    assert liger == pytest.approx(logits(loss="chunked")) and liger < logits()
    kept = {"precision": "bf16-true", "loss": "compute-dtype"}
    assert logits(liger_kernel=True, **kept) == pytest.approx(logits(**kept))


def test_varied_sample_lengths_reserve_an_earlier_set_of_logits_blocks():
    """With samples of varied lengths the allocator keeps the logits blocks sized for an earlier batch beside the
    longest's: reserved memory grows by ``reserved_fraction_variable`` of the logits and loss buffers; allocated
    memory (what is live) does not change."""
    from trainsizer.estimate.memory import default_memory_model, reserved_bytes, varied_bytes

    mp = default_memory_model()
    single = {"parallel": {"gpus": 1}, "hardware": {"gpu": "a100-sxm4-80gb"}}
    job = {"method": "lora", "seq_len": 2048, "micro_batch_size": 1, "activation_checkpointing": "full"}
    fixed = estimate(scenario(job, **single), with_limits=False, with_performance=False).memory
    varied_sc = scenario({**job, "sequence_lengths": "variable"}, **single)
    varied = estimate(varied_sc, with_limits=False, with_performance=False).memory
    logits = _memory_detail(estimate(varied_sc, with_limits=False, with_performance=False), "logits_and_loss")
    assert logits > 0 and varied_bytes(varied_sc, logits) == logits
    assert varied_bytes(scenario(job, **single), logits) == 0.0
    assert varied.allocated_bytes == pytest.approx(fixed.allocated_bytes)
    assert varied.reserved_bytes - fixed.reserved_bytes == pytest.approx(mp.allocator.reserved_fraction_variable
                                                                        * logits)
    # the term itself, at another value, and in the arrays the planner's screen prices
    doubled = with_value(mp, "allocator", "reserved_fraction_variable", 2.0)
    assert reserved_bytes(10.0, 4.0, doubled, varied=3.0) - reserved_bytes(10.0, 4.0, doubled) == pytest.approx(6.0)
    import numpy as np

    arrays = reserved_bytes(np.array([10.0, 10.0]), np.array([4.0, 4.0]), doubled, varied=np.array([0.0, 3.0]))
    assert arrays[1] - arrays[0] == pytest.approx(6.0)


def test_the_planners_screen_prices_varied_lengths_as_the_estimate_does():
    import numpy as np

    from trainsizer.plan.fast import CKPT, Layouts, job_basis, screen_memory

    sc = scenario({"method": "lora", "precision": "bf16-true", "seq_len": 4096, "micro_batch_size": 2,
                   "activation_checkpointing": "full", "sequence_lengths": "variable"},
                  {"gpus": 1}, {"gpu": "a100-sxm4-80gb", "gpus_per_node": 1})
    arch, gpu = resolve_model(sc.model), default_catalog().accelerator("a100-sxm4-80gb")
    one = lambda v, dtype=int: np.array([v], dtype=dtype)  # noqa: E731
    lay = Layouts(gpus=one(1), tp=one(1), pp=one(1), cp=one(1), vpp=one(1), zero=one(0), dist_opt=one(False, bool),
                  sp=one(False, bool), offload=one(0), mbs=one(2), ckpt=one(CKPT.index("full")), gpus_per_node=one(1))
    screened, _host = screen_memory(job_basis(sc, arch), lay, sc, gpu)
    ref = estimate(sc, with_limits=False, with_performance=False).memory
    fixed = estimate(sc.model_copy(update={"training": sc.training.model_copy(update={"sequence_lengths": "fixed"})}),
                     with_limits=False, with_performance=False).memory
    assert ref.device_bytes > fixed.device_bytes
    assert screened[0] == pytest.approx(ref.device_bytes, rel=0.005)


def _litgpt_fsdp(loading: str = "full", zero: int = 3, mbs: int = 1) -> dict:
    return {"model": {"preset": "llama-2-7b"},
            "training": {"method": "lora", "precision": "bf16-true", "micro_batch_size": mbs, "seq_len": 1304,
                         "activation_checkpointing": "full", "lora": {"rank": 8, "targets": ["q_proj", "v_proj"]}},
            "parallel": {"gpus": 2, "zero": zero, "checkpoint_loading": loading},
            "hardware": {"gpu": "a100-sxm4-40gb", "gpus_per_node": 2}}


def test_a_full_state_dict_loaded_on_every_rank_sets_the_peak_of_a_sharded_lora_run():
    """A sharded LoRA run whose every rank holds the whole checkpoint on its GPU while loading: the peak is all the
    weights plus the rank's shard (and adapters), above the training step's, whatever the micro-batch; sharded loading,
    or weights that are not sharded (zero < 3), leave the step's peak."""
    from trainsizer.estimate.memory import checkpoint_load_bytes

    full = estimate(scenario_from_dict(_litgpt_fsdp()), with_limits=False, with_performance=False).memory
    sharded = estimate(scenario_from_dict(_litgpt_fsdp("sharded")), with_limits=False, with_performance=False).memory
    detail = {c.name: c.bytes for c in full.components}
    assert full.phase == "checkpoint load" and sharded.phase != "checkpoint load"
    shard = next(c.bytes for c in sharded.components if c.name == "weights")
    assert detail["full_state_dict"] == pytest.approx(2 * shard)  # the stage's weights unsharded over dp = 2
    assert full.allocated_bytes == pytest.approx(shard + detail["full_state_dict"] + detail.get("lora_adapters", 0))
    assert "optimizer_states" not in detail and "gradients" not in detail  # they come later
    assert full.allocated_bytes > sharded.allocated_bytes and full.reserved_bytes > sharded.reserved_bytes
    bigger = estimate(scenario_from_dict(_litgpt_fsdp(mbs=2)), with_limits=False, with_performance=False).memory
    assert bigger.allocated_bytes == pytest.approx(full.allocated_bytes)  # flat in the micro-batch, as measured
    ddp = scenario_from_dict(_litgpt_fsdp(zero=0))
    assert checkpoint_load_bytes(ddp, 1e9, 1e9) == (0.0, 0.0)
    assert estimate(ddp, with_limits=False, with_performance=False).memory.phase != "checkpoint load"


def test_the_planners_screen_prices_a_full_state_dict_load_as_the_estimate_does():
    import numpy as np

    from trainsizer.plan.fast import CKPT, Layouts, job_basis, screen_memory

    sc = scenario_from_dict(_litgpt_fsdp())
    arch, gpu = resolve_model(sc.model), default_catalog().accelerator("a100-sxm4-40gb")
    two = lambda a, b, dtype=int: np.array([a, b], dtype=dtype)  # noqa: E731
    lay = Layouts(gpus=two(2, 2), tp=two(1, 1), pp=two(1, 1), cp=two(1, 1), vpp=two(1, 1), zero=two(3, 0),
                  dist_opt=two(False, False, bool), sp=two(False, False, bool), offload=two(0, 0), mbs=two(1, 1),
                  ckpt=two(CKPT.index("full"), CKPT.index("full")), gpus_per_node=two(2, 2))
    screened, _host = screen_memory(job_basis(sc, arch), lay, sc, gpu)
    for i, zero in enumerate((3, 0)):
        ref = estimate(scenario_from_dict(_litgpt_fsdp(zero=zero)), with_limits=False, with_performance=False).memory
        assert screened[i] == pytest.approx(ref.device_bytes, rel=0.005), zero


def test_offloaded_4bit_bases_cross_pcie_as_stored_in_the_estimate_and_the_screen():
    """FSDP parameter offload brings each micro-batch's weight shards over PCIe as stored: QLoRA's packed 4-bit codes
    move about a quarter of LoRA's 16-bit bytes (the planner's screen prices it with the same term)."""
    import numpy as np

    from trainsizer.estimate.step_terms import optimizer_and_offload_s, stored_base_bytes

    def offload(method, **extra):
        sc = scenario({"method": method, "precision": "bf16-true", "micro_batch_size": 2, "seq_len": 2048,
                       "global_batch_size": 8, **extra},
                      {"gpus": 2, "zero": 3, "offload": "optimizer+params"},
                      {"gpu": "rtx-4090-24gb", "gpus_per_node": 2}, preset="llama-2-70b")
        arch = resolve_model(sc.model)
        ctx = step_context(sc, arch, default_catalog().accelerator("rtx-4090-24gb"))[0]
        return optimizer_and_offload_s(ctx)[1], stored_base_bytes(ctx)

    (q_s, q_bytes), (l_s, l_bytes) = offload("qlora", quantization="nf4-dq"), offload("lora")
    assert 0.25 <= q_bytes / l_bytes <= 0.3  # codes (0.5 B) + constants over 2 B per parameter
    assert q_s < 0.4 * l_s
    assert np.isclose(q_bytes / l_bytes, q_s / l_s, rtol=0.1)  # the term scales with the bytes moved


def test_kernel_launches_show_only_while_the_gpu_waits_for_them():
    """Launches are asynchronous: a micro-batch takes the longer of its GPU work and the host's time to issue its
    kernels (``per_layer_s`` per layer), so a small model on a fast GPU is launch bound and a large one is not."""
    from trainsizer.estimate.step import default_performance_model
    from trainsizer.estimate.step_terms import launch_exposed_s
    from trainsizer.estimate.typed_data import with_value

    # the floor the shared cases fit (fit.start); refined on every case the shipped value may be 0 (no floor)
    p = with_value(default_performance_model(), "overhead", "per_layer_s", 0.0048)
    floor = p.overhead.per_layer_s * 24
    assert launch_exposed_s(24, 0.0, p) == pytest.approx(floor)
    assert launch_exposed_s(24, floor / 4, p) == pytest.approx(0.75 * floor)
    assert launch_exposed_s(24, 2 * floor, p) == 0.0

    def launch_share(preset, mbs):
        sc = scenario({"micro_batch_size": mbs, "seq_len": 2048}, {"gpus": 1}, preset=preset)
        perf = estimate(sc, performance_params=p, with_limits=False).performance
        return (perf.breakdown_s["launch_overhead"] - p.overhead.per_step_s) / perf.step_time_s  # per_step_s apart

    small, large = launch_share("qwen2.5-0.5b", 1), launch_share("llama-3.1-8b", 1)
    assert small > 0.03 and large < small / 5
    assert launch_share("qwen2.5-0.5b", 8) < small  # more work per launch hides them


def test_a_part_runs_its_gemms_at_its_measured_matmul_share_relative_to_its_familys_reference():
    """estimate/peak.py: an RTX 3090 reaches ~108 % of its nominal bf16 figure in torch.mm where the A100 the Ampere
    efficiency was fitted on reaches ~85 %: its GEMMs run 1.27x faster than the nominal peak alone says, in the
    estimate and in the planner's screen (both price the peak through peak_share); a part without a measure keeps 1."""
    from trainsizer.estimate.peak import peak_share
    from trainsizer.estimate.step import default_performance_model

    p, cat = default_performance_model(), default_catalog()
    rtx3090, a100 = cat.accelerator("rtx-3090-24gb"), cat.accelerator("a100-sxm4-80gb")
    ref = p.compute.matmul_reference["ampere"]
    assert peak_share(a100, p) == pytest.approx(a100.matmul_fraction / ref) == pytest.approx(1.0)
    assert peak_share(rtx3090, p) == pytest.approx(rtx3090.matmul_fraction / ref)
    assert peak_share(rtx3090, p) > 1.2
    unmeasured = rtx3090.model_copy(update={"matmul_fraction": None})
    assert peak_share(unmeasured, p) == 1.0
    sc = scenario({"method": "lora", "precision": "bf16-true", "micro_batch_size": 4, "seq_len": 2048}, {"gpus": 1},
                  {"gpu": "rtx-3090-24gb", "gpus_per_node": 1}, preset="llama-2-7b")
    arch = resolve_model(sc.model)
    measured = step_context(sc, arch, rtx3090)[0]
    nominal = step_context(sc, arch, unmeasured)[0]
    from trainsizer.estimate.step_terms import raw_step

    assert raw_step(nominal).linear_s / raw_step(measured).linear_s == pytest.approx(peak_share(rtx3090, p))


def test_torch_compile_saved_activations_leave_no_allocator_fragmentation():
    """Issue 23: under torch.compile the saved activations add no cached-block overhead to the reserved bytes (fused
    element-wise chains allocate no interleaved temporaries); the estimate and the planner's screen share the term."""
    import numpy as np

    from trainsizer.estimate.memory import compiled_saved_bytes, default_memory_model, reserved_bytes
    from trainsizer.plan.fast import CKPT, Layouts, job_basis, screen_memory

    assert compiled_saved_bytes(False, 5.0) == 0.0 and compiled_saved_bytes(True, 5.0) == 5.0
    mp = default_memory_model()
    dyn = mp.allocator.reserved_fraction_dynamic
    assert reserved_bytes(20.0, 8.0, mp) - reserved_bytes(20.0, 8.0, mp, fused=3.0) == pytest.approx(dyn * 3.0)
    # torchtitan's per-op selective checkpointing keeps the same tensors eager or compiled (the policy's MUST_SAVE
    # ops), so only the allocator term tells the two runs apart
    job = {"precision": "bf16-mixed", "micro_batch_size": 1, "seq_len": 4096,
           "activation_checkpointing": "selective-op"}
    single = ({"gpus": 1}, {"gpu": "h100-sxm5-80gb", "gpus_per_node": 1})
    eager = estimate(scenario(job, *single, preset="llama-3.2-1b"), with_limits=False, with_performance=False).memory
    sc = scenario({**job, "compile": True}, *single, preset="llama-3.2-1b")
    compiled = estimate(sc, with_limits=False, with_performance=False).memory
    saved = next(c.bytes for c in compiled.components if c.name == "activations")
    assert compiled.allocated_bytes == pytest.approx(eager.allocated_bytes)
    assert eager.reserved_bytes - compiled.reserved_bytes == pytest.approx(dyn * saved)
    # the planner's screen (which enumerates none / selective / full) moves a compiled job as the estimate does
    arch, gpu = resolve_model(sc.model), default_catalog().accelerator("h100-sxm5-80gb")
    one = lambda v, dtype=int: np.array([v], dtype=dtype)  # noqa: E731
    lay = Layouts(gpus=one(1), tp=one(1), pp=one(1), cp=one(1), vpp=one(1), zero=one(0), dist_opt=one(False, bool),
                  sp=one(False, bool), offload=one(0), mbs=one(1), ckpt=one(CKPT.index("selective")),
                  gpus_per_node=one(1))
    gaps = []
    for screen_job in ({**job, "activation_checkpointing": "selective", "compile": c} for c in (False, True)):
        s = scenario(screen_job, *single, preset="llama-3.2-1b")
        gaps.append(screen_memory(job_basis(s, arch), lay, s, gpu)[0][0]
                    - estimate(s, with_limits=False, with_performance=False).memory.device_bytes)
    assert gaps[1] == pytest.approx(gaps[0], rel=1e-6)


def _qlora_ckpt(inputs: str, ckpt: str = "full") -> dict:
    return {"model": {"preset": "llama-2-7b"},
            "training": {"method": "qlora", "precision": "bf16-true", "micro_batch_size": 2, "seq_len": 2048,
                         "activation_checkpointing": ckpt, "quantized_inputs": inputs,
                         "lora": {"rank": 8, "targets": ["q_proj", "v_proj"]}},
            "parallel": {"gpus": 1}, "hardware": {"gpu": "a100-sxm4-80gb", "gpus_per_node": 1}}


def test_bitsandbytes_inputs_held_on_the_autograd_context_survive_non_reentrant_checkpointing():
    """bitsandbytes < 0.43.2 keeps each 4-bit linear's input as ``ctx.tensors`` (not a saved tensor), so under
    non-reentrant checkpointing every layer keeps its quantized linears' inputs (attention input, o_proj input, MLP
    input, down-projection input); 'none' (torchao NF4, bitsandbytes >= 0.43.2) keeps none, even without
    checkpointing; the default 'saved' behaves as before."""
    from trainsizer.estimate.activations import kept_quantized_inputs

    mem = {k: estimate(scenario_from_dict(_qlora_ckpt(k)), with_limits=False, with_performance=False).memory
           for k in ("saved", "kept", "none")}
    arch = resolve_model(scenario_from_dict(_qlora_ckpt("kept")).model)
    h, f, layers, tokens = arch.hidden_size, arch.intermediate_size, arch.num_layers, 2 * 2048
    expected = (2 * h + arch.attn_out_dim + f) * 2 * layers * tokens  # bf16 inputs of every layer
    assert mem["kept"].allocated_bytes - mem["saved"].allocated_bytes == pytest.approx(expected, rel=1e-6)
    # under full checkpointing a recomputed layer's inputs are rebuilt one layer at a time: none and saved agree
    # but for the recomputed layer's working set
    assert mem["none"].allocated_bytes <= mem["saved"].allocated_bytes
    sc = scenario_from_dict(_qlora_ckpt("kept"))
    layer = training_state_of(sc).layers[0]
    assert kept_quantized_inputs(sc, arch, layer) == (2 * h * 2, (arch.attn_out_dim + f) * 2)
    assert kept_quantized_inputs(scenario_from_dict(_qlora_ckpt("saved")), arch, layer) == (0.0, 0.0)
    # without checkpointing the inputs are saved anyway (kept = saved); torchao's keeps none
    no_ckpt = {k: estimate(scenario_from_dict(_qlora_ckpt(k, "none")), with_limits=False,
                           with_performance=False).memory for k in ("saved", "kept", "none")}
    assert no_ckpt["kept"].allocated_bytes == pytest.approx(no_ckpt["saved"].allocated_bytes)
    assert no_ckpt["none"].allocated_bytes < no_ckpt["saved"].allocated_bytes


def training_state_of(sc):
    from trainsizer.estimate.memory import default_memory_model
    from trainsizer.estimate.training_state import training_state

    return training_state(sc, resolve_model(sc.model), default_memory_model())


def test_the_planners_screen_prices_inputs_kept_through_checkpointing_as_the_estimate_does():
    import numpy as np

    from trainsizer.plan.fast import CKPT, Layouts, job_basis, screen_memory

    gpu = default_catalog().accelerator("a100-sxm4-80gb")
    one = lambda v, dtype=int: np.array([v], dtype=dtype)  # noqa: E731
    lay = Layouts(gpus=one(1), tp=one(1), pp=one(1), cp=one(1), vpp=one(1), zero=one(0), dist_opt=one(False, bool),
                  sp=one(False, bool), offload=one(0), mbs=one(2), ckpt=one(CKPT.index("full")), gpus_per_node=one(1))
    devices = {}
    for inputs in ("saved", "kept"):
        sc = scenario_from_dict(_qlora_ckpt(inputs))
        screened, _host = screen_memory(job_basis(sc, resolve_model(sc.model)), lay, sc, gpu)
        ref = estimate(sc, with_limits=False, with_performance=False).memory
        assert screened[0] == pytest.approx(ref.device_bytes, rel=0.005), inputs
        devices[inputs] = ref.device_bytes
    assert devices["kept"] > devices["saved"] * 1.1


def test_an_fp16_lm_head_under_bf16_autocast_keeps_a_bf16_copy_of_its_weight_for_backward():
    """transformers loads a bitsandbytes model's unquantized layers in fp16 without a torch_dtype; under bf16
    autocast the LM head's weight is cast to a bf16 copy the matmul saves: vocab x hidden x 2 bytes more, in the
    estimate and in the planner's screen; nothing without the setting or outside QLoRA."""
    import numpy as np

    from trainsizer.estimate.activations import lm_head_cast_bytes
    from trainsizer.plan.fast import CKPT, Layouts, job_basis, screen_memory

    def job(dtype: str, method: str = "qlora") -> dict:
        d = _qlora_ckpt("saved")
        d["training"] = {**d["training"], "unquantized_dtype": dtype, "method": method}
        if method != "qlora":
            d["training"].pop("quantized_inputs")
        return d

    base, cast = (scenario_from_dict(job(k)) for k in ("compute", "fp16"))
    arch = resolve_model(cast.model)
    assert lm_head_cast_bytes(cast, arch) == arch.vocab_size * arch.hidden_size * 2
    assert lm_head_cast_bytes(base, arch) == 0.0
    assert lm_head_cast_bytes(scenario_from_dict(job("fp16", "lora")), arch) == 0.0
    mem = {k: estimate(sc, with_limits=False, with_performance=False).memory for k, sc in (("b", base), ("c", cast))}
    assert mem["c"].allocated_bytes - mem["b"].allocated_bytes == pytest.approx(arch.vocab_size * arch.hidden_size * 2)
    gpu = default_catalog().accelerator("a100-sxm4-80gb")
    one = lambda v, dtype=int: np.array([v], dtype=dtype)  # noqa: E731
    lay = Layouts(gpus=one(1), tp=one(1), pp=one(1), cp=one(1), vpp=one(1), zero=one(0), dist_opt=one(False, bool),
                  sp=one(False, bool), offload=one(0), mbs=one(2), ckpt=one(CKPT.index("full")), gpus_per_node=one(1))
    for key, sc in (("b", base), ("c", cast)):
        screened, _host = screen_memory(job_basis(sc, arch), lay, sc, gpu)
        assert screened[0] == pytest.approx(mem[key].device_bytes, rel=0.005), key


@pytest.mark.parametrize("preset,targets", [("gpt2-124m", ["c_attn"]), ("llama-3.1-8b", ["q_proj", "v_proj"])])
def test_lora_flops_adapt_the_modules_the_memory_estimate_adapts(preset, targets):
    """With no targets named, the adapters' FLOPs follow peft's default modules for the model type, as the trainable
    parameters do (training_state.lora_targets): GPT-2's fused c_attn, not q_proj / v_proj (which it has none of)."""
    arch = resolve_model(scenario(preset=preset).model)

    def lora(**extra):
        return step_flops(scenario({"method": "lora", "lora": {"rank": 16, **extra}}, preset=preset), arch)

    default, named, frozen = lora(), lora(targets=targets), lora(targets=["no_such_module"])
    assert default.model_per_token == pytest.approx(named.model_per_token)
    assert default.model_per_token > frozen.model_per_token
