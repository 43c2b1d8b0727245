"""The planner: search GPU type x count x node shape x layout, keep what fits, say why. Enumeration is vectorised
(numpy meshgrid over the layout axes, ``plan.fast`` screens memory and step time for every candidate at once); the
best candidates of each GPU type and count are then re-evaluated by the reference estimators, so every reported
number is the same as ``trainsizer estimate`` would print for that layout."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from trainsizer.errors import InputError
from trainsizer.estimate.cache_keys import one_copy
from trainsizer.estimate.data_shape import peak_scenario
from trainsizer.estimate.memory import default_memory_model
from trainsizer.estimate.model_params import MemoryModel, PerformanceModel
from trainsizer.estimate.ranges import RISK, Band, band, framework_regime
from trainsizer.estimate.regimes import regime
from trainsizer.estimate.step import default_performance_model
from trainsizer.frameworks import parallelism_of, runs_method
from trainsizer.hardware.catalog import Accelerator, Catalog, default_catalog
from trainsizer.hardware.scale_out import scale_out_networks
from trainsizer.messages import Message, clauses, msg
from trainsizer.models.architecture import Architecture
from trainsizer.plan import constraints as limits
from trainsizer.plan.constraints import Constraints, PlanResult
from trainsizer.plan.data_screen import step_job
from trainsizer.plan.fast import JobBasis, ScreenedMemory, job_basis, memory_screen
from trainsizer.plan.layouts import (
    CKPT,
    Layouts,
    expert_parallel_note,
    framework_runs,
    sharding_as_run,
    with_searched_axes,
)
from trainsizer.plan.option import PlanOption
from trainsizer.plan.planner_data import planner_data
from trainsizer.plan.screen_times import NodeShapeScreen, ShapeTimes, node_shape_screen, screen_times
from trainsizer.plan.shortlist import ScreenedLayout, choose_exact
from trainsizer.scenario import Scenario

OFFLOAD = ("none", "optimizer", "optimizer+params")
DEFAULT_GLOBAL_BATCH = {"full": 512, "freeze": 64, "lora": 64, "qlora": 64}
SHORTLIST_PER_CELL = 4
# relative: the screen's step time is the estimate's to float rounding, its memory to a few parts in a million
# (tests/test_screen_agreement.py holds every re-checked layout to 1e-9 and 1e-5): a layout screened slower than an
# exact option by more than STEP_AGREEMENT is slower exactly too; one screened at more than the memory at which an
# option is at risk of running out of memory by more than MEMORY_AGREEMENT is at risk exactly too
STEP_AGREEMENT = 1e-6
MEMORY_AGREEMENT = 1e-3
MIN_RISK = 1e-9  # the least chance of running out of memory a limit is held to (0 has no finite memory bound)

def _inter_links(gpu: Accelerator, constraints: Constraints | None = None) -> tuple[str, ...]:
    """The scale-out networks to try: the user's, else those the part's servers are sold with (Ascend ships RoCE,
    never InfiniBand; others InfiniBand and RoCE of the host's PCIe generation, hardware/scale_out.py)."""
    if constraints and constraints.inter_node:
        return (constraints.inter_node,)
    return scale_out_networks(gpu)


def _node_shapes(gpu: Accelerator, constraints: Constraints) -> tuple[int, ...]:
    """GPUs per node (scale-up domain) to try: the user's, else the part's own (GB200 NVL72: 72 in one NVLink
    domain; Ascend 910C: 16 per server), else 8 for modules on a baseboard and 4 or 8 PCIe cards."""
    if constraints.gpus_per_node:
        return (constraints.gpus_per_node,)
    if gpu.gpus_per_node:
        return (gpu.gpus_per_node,)
    if gpu.form_factor and gpu.form_factor.lower().startswith(("sxm", "oam")) or (
            gpu.scale_up and (gpu.scale_up.max_gpus or 0) >= 8):
        return (8,)
    return (4, 8)  # PCIe servers: 4- and 8-card chassis


def _counts(max_gpus: int, per_node: int = 8) -> list[int]:
    """GPU counts to try: powers of two inside one node, then whole nodes doubling (72, 144, ... for NVL72)."""
    counts, n = set(), 1
    while n <= min(max_gpus, per_node):
        counts.add(n)
        n *= 2
    n = per_node
    while n <= max_gpus:
        counts.add(n)
        n *= 2
    return sorted(counts)


def enumerate_layouts(job: Scenario, arch: Architecture, gpu: Accelerator, constraints: Constraints,
                      gpus_per_node: int, global_batch: int) -> Layouts:
    """Every layout of the search space for one GPU type and node shape that divides and is legal."""
    counts = [constraints.exact_gpus] if constraints.exact_gpus else _counts(constraints.max_gpus, gpus_per_node)
    counts = [n for n in counts if n <= gpus_per_node or n % gpus_per_node == 0]
    tps = [t for t in (1, 2, 4, 8) if t <= gpus_per_node and arch.num_heads % t == 0
           and (arch.num_kv_heads % t == 0 or t % arch.num_kv_heads == 0)]
    pps = [p for p in (1, 2, 4, 8, 16, 32, 64) if p <= arch.num_layers]
    cps = [1, 2, 4, 8] if job.training.seq_len >= 16384 else [1]
    if constraints.data_parallel_only or job.training.method in planner_data().adapter_methods.methods:
        tps, pps, cps = [1], [1], [1]
    runs = parallelism_of(job.training.framework, job.training.method)  # what a named framework runs (else all)
    if runs is not None:
        tps, pps, cps = (axis if runs.runs_axis(name) else [1]
                         for axis, name in ((tps, "tensor"), (pps, "pipeline"), (cps, "context")))
    # the model-split axes first, each legal one crossed with the per-GPU choices (same order as one 9-axis grid)
    outer = np.meshgrid(np.array(counts), np.array(tps), np.array(pps), np.array(cps), np.array([1, 2]),
                        indexing="ij")
    g, tp, pp, cp, vpp = (a.ravel() for a in outer)
    model_par = tp * pp * cp
    # what the frameworks accept (Megatron-LM arguments.py / schedules, DeepSpeed, torchtitan):
    # pipeline stages (and interleaved chunks) split the layers evenly, or where they do not divide, with the
    # embedding and the loss counted as one layer each (Megatron-Core's account_for_*_in_pipeline_split, as its
    # recipes split Qwen3-235B-A22B and Llama 3.1 405B: estimate/pipeline_split.py); interleaving needs pp > 1 and a
    # number of micro-batches divisible by pp; ZeRO-2/3 do not combine with pipeline parallelism (DeepSpeed; FSDP +
    # PP is not modelled); tensor parallelism stays inside a node (tps above) and divides the heads
    ok = (g % model_par == 0)
    even = arch.num_layers % (pp * vpp) == 0
    split = ~even & (pp > 1) & ((arch.num_layers + 2) % (pp * vpp) == 0)
    ok &= even | split
    ok &= (vpp == 1) | (pp > 1)
    # context parallelism splits the sequence into 2*cp chunks (load-balanced causal ring, Megatron-Core)
    ok &= (cp == 1) | (job.training.seq_len % (2 * cp) == 0)
    ok &= (tp * cp <= gpus_per_node) | (g <= gpus_per_node)
    keep = np.nonzero(ok)[0]
    inner = np.meshgrid(np.arange(4), np.arange(3), np.array([1, 2, 4, 8]), np.arange(3), indexing="ij")
    g, tp, pp, cp, vpp, split = (np.repeat(a[keep], inner[0].size) for a in (g, tp, pp, cp, vpp, split))
    zero, offload, mbs, ckpt = (np.tile(a.ravel(), len(keep)) for a in inner)
    dp = g // (tp * pp * cp)
    gas = global_batch // np.maximum(mbs * dp, 1)
    ok = (vpp == 1) | (gas % np.maximum(pp, 1) == 0)
    ok &= (zero <= 1) | (pp == 1)
    ok &= (offload == 0) | ((offload == 1) & (zero >= 1)) | ((offload == 2) & (zero == 3))
    ok &= (zero == 0) | (dp > 1) | (offload > 0)  # sharding over one rank is the same layout as zero 0
    ok &= global_batch % np.maximum(mbs * dp, 1) == 0
    ok &= framework_runs(runs, zero, offload, tp, pp)
    sel = np.nonzero(ok)[0]
    zero, dist = sharding_as_run(runs, zero[sel], tp[sel], pp[sel], dp[sel])
    lay = Layouts(g[sel], tp[sel], pp[sel], cp[sel], vpp[sel], zero, dist, tp[sel] > 1, offload[sel], mbs[sel],
                  ckpt[sel], np.full(len(sel), gpus_per_node), split=split[sel])
    return with_searched_axes(lay, arch, job)


def _split_update(job: Scenario, split: bool) -> dict[str, str]:
    """The layout's pipeline split as a parallel-block update: none where it is the job's own (an even split keeps
    the block's keys as the job set them)."""
    value = "embedding-and-loss" if split else "even"
    return {} if value == job.parallel.pipeline_split else {"pipeline_split": value}


def _scenario_for(job: Scenario, gpu: Accelerator, lay: Layouts, i: int, inter: str | None, global_batch: int,
                  intra: str | None = None, blocks: dict[Any, Any] | None = None) -> Scenario:
    training = one_copy(blocks, job.training, {
        "micro_batch_size": int(lay.mbs[i]), "activation_checkpointing": CKPT[int(lay.ckpt[i])],
        "global_batch_size": global_batch})
    gpus = int(lay.gpus[i])
    parallel = one_copy(blocks, job.parallel, {
        "gpus": gpus, "tp": int(lay.tp[i]), "pp": int(lay.pp[i]), "cp": int(lay.cp[i]),
        "virtual_pp": int(lay.vpp[i]), "zero": int(lay.zero[i]), "distributed_optimizer": bool(lay.dist_opt[i]),
        "sequence_parallel": bool(lay.sp[i]), "offload": OFFLOAD[int(lay.offload[i])], "ep": int(lay.ep[i]),
        "zero_shard_gpus": int(lay.zero_shard[i]) or job.parallel.zero_shard_gpus,
        **_split_update(job, bool(lay.split[i]))})
    per_node = int(lay.gpus_per_node[i])
    hardware = one_copy(blocks, job.hardware, {
        "gpu": gpu.id, "gpus_per_node": min(per_node, gpus), "intra_node": intra or gpu.default_intra_node,
        "inter_node": inter if gpus > per_node else None})
    return job.model_copy(update={"training": training, "parallel": parallel, "hardware": hardware})


def _option(result: Any, scenario: Scenario) -> PlanOption:
    perf = result.performance
    mem = result.memory
    headroom = mem.capacity_gib - mem.device_gib
    binding = (msg("plan.memory_used", used=mem.device_gib, cap=mem.capacity_gib)
               if headroom < 0.1 * mem.capacity_gib else msg("plan.memory_headroom", gib=headroom))
    dominant = perf.dominant
    why = clauses([binding, msg("plan.dominant_step", step=dominant, pct=perf.share(dominant)),
                   msg("plan.mfu", pct=perf.mfu)])
    return PlanOption(scenario=scenario, memory=mem, performance=perf, why=why)


def _node_shape_screens(gpu: Accelerator, job: Scenario, arch: Architecture, constraints: Constraints, cat: Catalog,
                        basis: Any, mp: MemoryModel, pp_: PerformanceModel, global_batch: int, host_limit: float,
                        layouts: dict[int, tuple[Layouts, ScreenedMemory | None]]) -> tuple[list[NodeShapeScreen], int]:
    """The node shapes of one GPU type with layouts that fit it, and how many layouts it evaluates. ``layouts``: the
    layouts of each node shape and their memory before the GPU is chosen, made once per plan (they do not depend on
    the GPU)."""
    shapes: list[NodeShapeScreen] = []
    evaluated = 0
    for per_node in _node_shapes(gpu, constraints):
        if per_node not in layouts:
            lay = enumerate_layouts(job, arch, gpu, constraints, per_node, global_batch)
            layouts[per_node] = lay, memory_screen(basis, lay, job, mp) if len(lay) else None
        lay, memory = layouts[per_node]
        if memory is None:
            continue
        evaluated += len(lay)
        shape = node_shape_screen(gpu, per_node, lay, memory, _inter_links(gpu, constraints), cat, constraints, pp_,
                                  host_limit)
        shapes += [shape] if shape else []
    return shapes, evaluated


def risk_limits(constraints: Constraints) -> tuple[float, float]:
    """(safe, eligible): the chances of running out of memory within which the search keeps each cell's fastest
    layout. Safe: RISK, a real risk where an option is shown (or the user's limit, where lower); eligible: the most a
    recommended layout may risk (``constraints.max_oom_risk``, --max-oom-risk; RISK where unstated), so a cell whose
    fastest layouts are at risk still offers its fastest one the answer may be (held within [MIN_RISK, 0.5]: the
    memory band's upper side, ``Band.safe_fraction``)."""
    stated = RISK if constraints.max_oom_risk is None else constraints.max_oom_risk
    eligible = min(max(stated, MIN_RISK), 0.5)
    return min(RISK, eligible), eligible


def _shortlist(gpu: Accelerator, job: Scenario, shapes: list[NodeShapeScreen], shape_times: ShapeTimes,
               risks: tuple[float, float]) -> list[ScreenedLayout]:
    """The fastest few layouts of each (count, network) of one GPU type, and the fastest safe one and the fastest
    eligible one of each (``risks``: :func:`risk_limits`)."""
    shortlist: list[ScreenedLayout] = []
    limits: dict[tuple[int, int], tuple[float, float]] = {}
    for shape, times in zip(shapes, shape_times, strict=True):
        per_node, lay, device, host = shape.per_node, shape.lay, shape.device, shape.host
        for inter, sub, time in zip(shape.networks, shape.subs, times, strict=True):
            # the fields of the shortlisted layouts read as Python numbers once per network, not one by one
            values = (time.tolist(), sub.tolist(), device[sub].tolist(), host[sub].tolist(),
                      lay.gpus_per_node[sub].tolist())
            for count, idx in _cells(lay.gpus[sub], time):
                fastest = idx[np.argsort(time[idx])].tolist()
                if (count, per_node) not in limits:  # each network of the GPU has the same cells
                    limits[count, per_node] = tuple(_safe_bytes(gpu, job, count, per_node, r) for r in risks)
                limit = limits[count, per_node]
                safe, eligible = (next((i for i in fastest if values[2][i] <= bound), None) for bound in limit)
                bounded = [j for j in (safe, eligible) if j is not None]
                for i in dict.fromkeys([*fastest[:SHORTLIST_PER_CELL], *bounded]):
                    shortlist.append(_screened(gpu, lay, count, inter if count > per_node else None, values, i, limit,
                                               cell_safe=i == safe, cell_eligible=i == eligible))
    return shortlist


def _cells(gpus: np.ndarray, time: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """The GPU counts of the layouts screened with a finite step time, fewest first, each with the indices of its
    layouts in their order (one stable sort: np.unique would load numpy.ma, ~8 ms of a command)."""
    finite = np.nonzero(np.isfinite(time))[0]
    if not len(finite):
        return []
    order = finite[np.argsort(gpus[finite], kind="stable")]
    counts = gpus[order]
    starts = [0, *(np.nonzero(counts[1:] != counts[:-1])[0] + 1).tolist()]
    return [(int(counts[a]), order[a:b]) for a, b in zip(starts, [*starts[1:], len(order)], strict=True)]


def _screened(gpu: Accelerator, lay: Layouts, gpus: int, inter: str | None, values: tuple[list[Any], ...], i: int,
              limit: tuple[float, float], cell_safe: bool, cell_eligible: bool) -> ScreenedLayout:
    """The ``i``-th layout screened over one network, of ``gpus`` GPUs: ``values``, the screen's (step time, index
    in ``lay``, device bytes, host bytes, GPUs per node) of each as lists; ``limit``, the device bytes a safe and an
    eligible layout of its cell may be screened at."""
    time, index, device, host, per_node = values[0][i], values[1][i], values[2][i], values[3][i], values[4][i]
    return ScreenedLayout(step_time_s=time, gpu=gpu, layouts=lay, index=index, gpus=gpus, gpus_per_node=per_node,
                          inter_node=inter, device_bytes=device, host_bytes_per_gpu=host, safe=device <= limit[0],
                          cell_safe=cell_safe, eligible=device <= limit[1], cell_eligible=cell_eligible)


def _exact_options(chosen: list[ScreenedLayout], job: Scenario, constraints: Constraints, cat: Catalog,
                   mp: MemoryModel, pp_: PerformanceModel, global_batch: int,
                   late: list[PlanOption] | None = None, fastest_only: bool = False) -> list[PlanOption]:
    """The shortlisted layouts re-checked by the reference estimators; those that fit and meet the deadline
    (those that fit but miss it go to ``late``), fastest first (a tie in the shortlist's order). ``fastest_only``
    (no deadline): only the first of the fastest, the option the full list would sort first, is made into an option
    (what a suggestion reads). Without a deadline, only what ``_best_per_hardware`` can keep is re-checked
    (``_fastest_per_hardware``)."""
    from trainsizer.estimate.estimator import estimate

    blocks: dict[Any, Any] = {}  # _scenario_for's, shared

    def recheck(item: ScreenedLayout) -> tuple[Any, Scenario] | None:
        """The estimate of the layout and its scenario, None where it is not a valid layout or does not fit."""
        sc = _scenario_for(job, item.gpu, item.layouts, item.index, item.inter_node, global_batch,
                           constraints.intra_node, blocks)
        try:
            result = estimate(sc, catalog=cat, memory_params=mp, performance_params=pp_, with_limits=False)
        except InputError:
            return None
        return (result, sc) if result.memory.fits else None

    first: dict[tuple[Any, ...], tuple[int, ScreenedLayout]] = {}
    for pos, item in enumerate(chosen):  # each scenario once, at its first place in the shortlist
        first.setdefault(item.scenario_key(), (pos, item))
    unique = list(first.values())
    if not constraints.deadline_s and fastest_only:  # the sort key below; a tie keeps the first, as the sort does
        found = [(round(r[0].performance.step_time_s, 4), pos, r) for pos, item in unique
                 if (r := recheck(item)) is not None]
        return [_option(*min(found, key=lambda f: f[:2])[2])] if found else []
    if not constraints.deadline_s:
        options = _fastest_per_hardware(unique, recheck, risk_limits(constraints))
    else:
        options = []
        for pos, item in unique:
            if (found := recheck(item)) is None:
                continue
            opt = _option(*found)
            if opt.time_to_train_s and opt.time_to_train_s > constraints.deadline_s:
                if late is not None:
                    late.append(opt)
                continue
            options.append((pos, opt))
    options.sort(key=lambda po: (po[1].step_time_s, po[0]))
    return [opt for _, opt in options]


def _fastest_per_hardware(unique: list[tuple[int, ScreenedLayout]],
                          recheck: Callable[[ScreenedLayout], tuple[Any, Scenario] | None],
                          risks: tuple[float, float] = (RISK, RISK)) -> list[tuple[int, PlanOption]]:
    """Each hardware configuration's layouts re-checked fastest first as screened, only as far as
    ``_best_per_hardware`` may keep them (its fastest option, and when that one is at risk its fastest safe and its
    fastest eligible one, ``risks``: :func:`risk_limits`): a layout screened slower than its fastest option by more
    than STEP_AGREEMENT and at risk beyond the eligible limit by more than MEMORY_AGREEMENT is not re-checked, and
    once a safe option is found, nor is one screened slower than it by more than STEP_AGREEMENT. (position in the
    shortlist, option) of every layout re-checked that fits."""
    groups: dict[tuple[Any, ...], list[tuple[int, ScreenedLayout]]] = {}
    for pos, item in unique:
        groups.setdefault(item.hardware(), []).append((pos, item))
    out = []
    for items in groups.values():
        memory: tuple[Band, float] | None = None  # the configuration's memory range and capacity (GiB)
        first_time = safe_time = float("inf")  # its fastest option's step time, and its fastest safe one's
        for pos, item in sorted(items, key=lambda pi: (pi[1].step_time_s, pi[0])):
            if item.step_time_s > safe_time * (1 + STEP_AGREEMENT):
                break
            # past a tie with the fastest option (which may come first by its place in the shortlist), a layout
            # surely beyond the eligible risk is none of the options kept (device_gib is rounded to 1e-3 GiB)
            if memory is not None and item.step_time_s > first_time * (1 + STEP_AGREEMENT) and memory[0].p_above(
                    item.device_bytes / 2**30 * (1 - MEMORY_AGREEMENT) - 1e-3, memory[1]) > risks[1]:
                continue
            if (found := recheck(item)) is None:
                continue
            opt = _option(*found)
            out.append((pos, opt))
            memory = memory or (_memory_band(opt), opt.capacity_gib)
            first_time = min(first_time, opt.step_time_s)
            if memory[0].p_above(opt.device_gib, opt.capacity_gib) <= risks[0]:  # memory_risk(opt), safe
                safe_time = min(safe_time, opt.step_time_s)
    return out


def _safe_bytes(gpu: Accelerator, job: Scenario, gpus: int, per_node: int, risk: float = RISK) -> float:
    """The most device memory a layout may be estimated at and still run out of memory with a chance of at most
    ``risk`` (its regime's memory range, ``estimate/ranges.py``)."""
    b = band("memory", framework_regime(regime(gpu.id, job.training.method, gpus, per_node), job.training.framework))
    return b.safe_fraction(risk) * gpu.memory_gib * 2**30


def _memory_band(opt: PlanOption) -> Band:
    """The memory range of ``opt``'s regime (its hardware configuration's, for the job's method and framework)."""
    return band("memory", framework_regime(regime(opt.gpu, opt.method, opt.gpus, opt.gpus_per_node),
                                           opt.scenario.training.framework))


def memory_risk(opt: PlanOption) -> float:
    """The option's chance of running out of memory, from its regime's memory range."""
    return _memory_band(opt).p_above(opt.device_gib, opt.capacity_gib)


def _safe(opt: PlanOption) -> bool:
    return memory_risk(opt) <= RISK


def fastest_within(options: list[PlanOption], max_oom_risk: float | None) -> PlanOption | None:
    """The first of ``options`` (fastest first, as the search returns them) whose chance of running out of memory
    is at most ``max_oom_risk`` (any where None): the layout a plan could answer with, for the views that show one
    layout of a hardware option (scaling, quotes, one option priced)."""
    return next((o for o in options if max_oom_risk is None or memory_risk(o) <= max_oom_risk), None)


def _best_per_hardware(options: list[PlanOption], risks: tuple[float, float] = (RISK, RISK)) -> list[PlanOption]:
    """Per hardware configuration (GPU, count, node shape, network): its best layout, and when that one is at
    real risk of running out of memory its fastest safe one and its fastest eligible one too (``risks``:
    :func:`risk_limits`; the recommendation weighs them: ``workflows/decide.objective_value``)."""
    kept: dict[tuple[Any, ...], set[int]] = {}  # hardware -> which limits (0 safe, 1 eligible) a kept layout meets
    out = []
    for opt in options:
        key, risk = opt.hardware(), memory_risk(opt)
        within = {i for i, limit in enumerate(risks) if risk <= limit}
        if key not in kept or within - kept[key]:
            kept[key] = kept.get(key, set()) | within
            out.append(opt)
    return out


def plan(job: Scenario, arch: Architecture, constraints: Constraints, catalog: Catalog | None = None,
         memory_params: MemoryModel | None = None, perf_params: PerformanceModel | None = None,
         with_suggestions: bool = True, *, basis: JobBasis | None = None, fastest_only: bool = False) -> PlanResult:
    """The search. ``basis``: the job's ``fast.job_basis`` when the caller has it (suggestions relax the same job);
    ``fastest_only``: the result's options are only the fastest (what a suggestion reads)."""
    cat = catalog or default_catalog()
    mp = memory_params or default_memory_model()
    pp_ = perf_params or default_performance_model()
    gpu_ids = constraints.gpus or tuple(cat.accelerators)
    gpus = [cat.accelerator(g, "--gpu") for g in gpu_ids]
    global_batch = job.training.global_batch_size or DEFAULT_GLOBAL_BATCH[job.training.method]
    notes = [n for n in (None if job.training.global_batch_size else msg("plan.global_batch_assumed", n=global_batch),
                         expert_parallel_note(job, arch)) if n]
    basis = job_basis(peak_scenario(job), arch, mp) if basis is None else basis  # memory at the longest batch
    host_limit = planner_data().host_memory.usable_gib_per_gpu * 2**30
    evaluated = 0
    shortlist: list[ScreenedLayout] = []
    # the screen steps through the whole global batch the options are held to (the default one when unstated)
    screened_job = job if job.training.global_batch_size else job.model_copy(update={
        "training": job.training.model_copy(update={"global_batch_size": global_batch})})
    step = step_job(screened_job, arch, mp, basis)  # the data shape (plan.data_screen): time at the expected batch
    screened_job = peak_scenario(screened_job)
    layouts: dict[int, tuple[Layouts, ScreenedMemory | None]] = {}
    screens: list[tuple[Accelerator, list[NodeShapeScreen]]] = []
    risks = risk_limits(constraints)
    for gpu in gpus:
        if not gpu.peak_tflops("bf16") and not gpu.peak_tflops("fp16"):
            continue
        shapes, n = _node_shape_screens(gpu, screened_job, arch, constraints, cat, basis, mp, pp_, global_batch,
                                        host_limit, layouts)
        screens += [(gpu, shapes)] if shapes else []
        evaluated += n
    # every GPU type's layouts through the numpy screen, those alike in one pass; the fastest few of each cell
    for (gpu, shapes), times in zip(screens, screen_times(screens, pp_, mp, step), strict=True):
        shortlist += _shortlist(gpu, screened_job, shapes, times, risks)
    late: list[PlanOption] = []
    chosen = choose_exact(shortlist, job, constraints, global_batch)
    options = _best_per_hardware(_exact_options(chosen, job, constraints, cat, mp, pp_, global_batch, late,
                                                fastest_only), risks)
    suggestions, blocked = ([], None) if options or not with_suggestions else suggest(job, arch, constraints, cat,
                                                                                     mp, pp_, basis)
    # unranked: the plan ranks its options once, after they are priced and sized (workflows.plan_job)
    return PlanResult(options, suggestions, {}, evaluated, notes, _best_per_hardware(late, risks), blocked)


def suggest(job: Scenario, arch: Architecture, constraints: Constraints, cat: Catalog, mp: MemoryModel,
            pp_: PerformanceModel, basis: JobBasis | None = None) -> tuple[list[Message], str | None]:
    """What would make something fit: each relaxation tried with the same search and the same machines to be had
    (the fastest option of each is what it says; ``basis``: the job's screen basis, reused by the relaxations that
    keep the job). When the job fits in memory on the allowed GPUs but no way to have them in the market holds it
    (``constraints.host``), that is said instead, with ``"market"`` as the reason: relaxing the job would
    not help. Returns (messages, blocked)."""
    if constraints.host is not None:
        free = plan(job, arch, Constraints(constraints.gpus, constraints.max_gpus, constraints.gpus_per_node, None, 1),
                    cat, mp, pp_, with_suggestions=False, basis=basis, fastest_only=True)
        if free.options:
            fits = free.options[0]
            out = [msg("plan.fits_not_to_be_had", gpus=fits.gpus, gpu=fits.gpu)]
            return out + ([msg("plan.deadline_binds")] if constraints.deadline_s else []), "market"
    tries: list[tuple[Message, Scenario, Constraints]] = []
    tr = job.training
    if tr.optimizer in ("adamw", "adafactor", "lion", "sgd-momentum"):
        tries.append((msg("plan.try_8bit_optimizer"), job.model_copy(
            update={"training": tr.model_copy(update={"optimizer": "adamw-8bit"})}), constraints))
    # a method is tried only where the named framework runs it (frameworks/<family>.yaml methods)
    if tr.method == "full" and runs_method(tr.framework, "lora"):
        tries.append((msg("plan.try_lora"),
                      job.model_copy(update={"training": tr.model_copy(update={"method": "lora"})}), constraints))
    if tr.method in ("full", "lora") and runs_method(tr.framework, "qlora"):
        tries.append((msg("plan.try_qlora"), job.model_copy(update={"training": tr.model_copy(
            update={"method": "qlora", "quantization": "nf4"})}), constraints))
    if constraints.max_gpus < limits.MAX_SUGGESTED_GPUS:
        tries.append((msg("plan.try_more_gpus", n=(more := constraints.max_gpus * limits.MORE_GPUS_FACTOR)), job,
                      Constraints(constraints.gpus, more, constraints.gpus_per_node, None, 1)))
    if constraints.gpus:
        tries.append((msg("plan.try_larger_gpus"), job,
                      Constraints((), constraints.max_gpus, constraints.gpus_per_node, None, 1)))
    if tr.seq_len > limits.SHORTEST_SEQ_LEN:
        tries.append((msg("plan.try_shorter_sequence", n=tr.seq_len // 2), job.model_copy(
            update={"training": tr.model_copy(update={"seq_len": tr.seq_len // 2})}), constraints))
    out = []
    for label, sc, cons in tries:
        res = plan(sc, arch, Constraints(cons.gpus, cons.max_gpus, cons.gpus_per_node, None, 1,
                                         host=constraints.host), cat, mp, pp_,
                   with_suggestions=False, basis=basis if sc is job else None, fastest_only=True)
        if res and res.options:
            best = res.options[0]
            par = best.scenario.parallel
            out.append(msg("plan.relaxation_fits", clause=label, gpus=best.gpus, gpu=best.gpu, tp=par.tp, pp=par.pp,
                           zero=par.zero, ckpt=best.scenario.training.activation_checkpointing,
                           tps=best.tokens_per_s))
    if not out:
        out.append(msg("plan.nothing_fits"))
    if constraints.deadline_s:
        out.append(msg("plan.deadline_binds"))
    return out, None
