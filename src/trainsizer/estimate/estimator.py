"""One scenario estimated end to end: memory, fit limits, step time and the seed's rule of thumb, from the
training state, the model and the GPU. The Python API (:mod:`trainsizer.api`) and every face call this."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args

from trainsizer.errors import N_, InputError, in_file
from trainsizer.estimate.data_shape import SampleLengths, memory_scenario, sample_lengths, shaped_performance
from trainsizer.estimate.fit_limits import FitLimits, largest_fitting
from trainsizer.estimate.memory import MemoryEstimate, default_memory_model, estimate_memory
from trainsizer.estimate.model_params import MemoryModel, PerformanceModel
from trainsizer.estimate.pipeline_split import virtual_stage_layers
from trainsizer.estimate.rule_of_thumb import RuleOfThumb, seed_rule_of_thumb
from trainsizer.estimate.step import Performance, estimate_performance
from trainsizer.estimate.training_state import TrainingState, training_state
from trainsizer.hardware.catalog import (
    INTER_NODE_SCOPES,
    INTRA_NODE_SCOPES,
    Accelerator,
    Catalog,
    default_catalog,
    inline_accelerator,
)
from trainsizer.models.architecture import Architecture
from trainsizer.models.catalog import resolve_model
from trainsizer.models.param_counts import ParamCounts, count_params
from trainsizer.scenario import Precision, Scenario, load_scenario, scenario_from_dict
from trainsizer.scenario_pipeline import SPLIT_EXTRA_LAYERS

if TYPE_CHECKING:
    from trainsizer.estimate.estimate_json import EstimateJSON, MemoryIntervalJSON, PerformanceIntervalJSON
    from trainsizer.frameworks import FrameworkUse


@dataclass
class Estimate:
    """A scenario's estimate: its model and GPU, memory, fit limits, speed and training state."""

    scenario: Scenario
    architecture: Architecture
    params: ParamCounts
    gpu: Accelerator
    memory: MemoryEstimate
    limits: FitLimits | None
    performance: Performance | None = None
    state: TrainingState | None = None
    framework: FrameworkUse | None = None  # the framework profile it ran with (trainsizer.frameworks.resolve)
    lengths: SampleLengths | None = None  # what the data shape put in a step (estimate/data_shape.py)

    @cached_property
    def rule_of_thumb(self) -> RuleOfThumb:
        """The seed guide's rule beside the memory estimate; made when read (the planner re-checks a hundred layouts
        and reads only their memory and step time)."""
        peak = self.scenario if self.lengths is None else memory_scenario(self.scenario, self.lengths)
        return seed_rule_of_thumb(peak, self.architecture, self.memory)

    def to_dict(self) -> EstimateJSON:
        tr = self.scenario.training
        memory, performance = self.intervals()
        perf = self.performance.to_dict() if self.performance else None
        out: EstimateJSON = {
            "memory": {**self.memory.to_dict(), "interval": memory},
            "model": {
                "name": self.architecture.name,
                "model_type": self.architecture.model_type,
                "params": self.params.total,
                "active_params": self.params.active,
                "trainable_params": self.state.trainable_params if self.state else None,
            },
            "hardware": {"gpu": self.gpu.id, "gpus": self.scenario.parallel.gpus,
                         "gpus_per_node": self.scenario.gpus_per_node},
            "training": {"method": tr.method, "precision": tr.precision, "optimizer": tr.optimizer,
                         "micro_batch_size": tr.micro_batch_size, "seq_len": tr.seq_len,
                         "global_batch_size": self.scenario.global_batch_size,
                         "grad_accumulation_steps": self.scenario.grad_accumulation_steps},
            "rule_of_thumb": self.rule_of_thumb.to_dict(),
            "performance": {**perf, "interval": performance} if perf and performance else perf,
        }
        if self.limits:
            out["limits"] = self.limits.to_dict()
        if self.framework is not None:
            out["framework"] = self.framework.to_dict()
        if self.lengths is not None:
            out["data_shape"] = self.lengths.to_dict()
        return out

    def intervals(self) -> tuple[MemoryIntervalJSON, PerformanceIntervalJSON | None]:
        """The 80 % ranges of the memory and speed figures (``estimate/intervals.py``): (memory, performance)."""
        from trainsizer.estimate.intervals import memory_interval, performance_interval, scenario_bands

        gpu = self.scenario.hardware.gpu
        mem, speed = scenario_bands(gpu if isinstance(gpu, str) else None, self.scenario.training.method,
                                    self.scenario.parallel.gpus, self.scenario.gpus_per_node,
                                    self.scenario.training.framework, self.architecture.moe is not None)
        return memory_interval(self.memory, mem), (performance_interval(self.performance, speed)
                                                   if self.performance else None)

# a precision that needs a number format in the GPU's tensor cores: the dense rate the catalog must state for it
PRECISION_NEEDS = {"fp8-mixed": "fp8"}
PRECISIONS: tuple[str, ...] = get_args(Precision)


def resolve_gpu(scenario: Scenario, catalog: Catalog | None = None) -> Accelerator:
    gpu = scenario.hardware.gpu
    if isinstance(gpu, str):
        return (catalog or default_catalog()).accelerator(gpu)
    return inline_accelerator(gpu)


def supported_precisions(gpu: Accelerator) -> tuple[str, ...]:
    """The training precisions ``gpu`` runs: fp8-mixed only with fp8 tensor cores (a dense fp8 rate in the
    catalog); the others everywhere (a part without bf16 runs it at its fp16 rate, with a note)."""
    return tuple(p for p in PRECISIONS if p not in PRECISION_NEEDS or gpu.peak_tflops(PRECISION_NEEDS[p]))


def check_precision(scenario: Scenario, gpu: Accelerator, field: str = "training.precision") -> None:
    """The scenario's precision is one its GPU supports; else one InputError naming those it does."""
    precision = scenario.training.precision
    accepted = supported_precisions(gpu)
    if precision not in accepted:
        need = PRECISION_NEEDS[precision]
        inline = not isinstance(scenario.hardware.gpu, str)
        why = f"no {need}_tflops in the inline spec" if inline else f"no {need} tensor cores in the catalog"
        how = f"give hardware.gpu.{need}_tflops" if inline else f"a GPU with {need} tensor cores"
        raise InputError(field, f"{precision!r} is not supported on {gpu.id} ({why}); accepted on it: "
                         f"{', '.join(accepted)}; or {how}")


def check_hardware(scenario: Scenario, catalog: Catalog | None = None) -> Accelerator:
    """A user's scenario against the catalog: its GPU and links exist, each link in its scope (never InfiniBand
    inside a node, never NVLink between nodes), and its precision is one the GPU supports. The GPU."""
    catalog = catalog or default_catalog()
    gpu = resolve_gpu(scenario, catalog)
    _check_links(scenario, catalog)
    check_precision(scenario, gpu)
    return gpu


def _check_links(scenario: Scenario, catalog: Catalog) -> None:
    if scenario.hardware.intra_node:
        catalog.link(scenario.hardware.intra_node, "hardware.intra_node", INTRA_NODE_SCOPES)
    if scenario.hardware.inter_node:
        catalog.link(scenario.hardware.inter_node, "hardware.inter_node", INTER_NODE_SCOPES)


def _check_split(split: str, pp: int, virtual_pp: int, layers: int) -> None:
    """A split that counts the embedding or loss as layers needs the layers and those to divide by pp x virtual_pp
    (Megatron-Core asserts it: estimate/pipeline_split.py)."""
    extra = sum(SPLIT_EXTRA_LAYERS[split])
    try:
        virtual_stage_layers(layers, pp, virtual_pp, split)
    except ValueError:
        raise InputError("parallel.pipeline_split", N_("{split}: the model's {layers} layers and {extra} more do not "
                                                       "divide over pp*virtual_pp = {stages} stages; accepted: even, "
                                                       "or pp*virtual_pp dividing {total}"),
                         split=split, layers=layers, extra=extra, stages=pp * virtual_pp,
                         total=layers + extra) from None


def check_layout(scenario: Scenario, arch: Architecture, catalog: Catalog | None = None) -> None:
    """Layout constraints that need the architecture (heads divisible by tp, pp <= layers, ...)."""
    par = scenario.parallel
    if arch.num_heads % par.tp:
        raise InputError("parallel.tp", N_("{tp} must divide num_attention_heads ({heads})"), tp=par.tp,
                         heads=arch.num_heads)
    if par.tp > 1 and arch.num_kv_heads % par.tp and par.tp % arch.num_kv_heads:
        raise InputError("parallel.tp", N_("{tp} and num_key_value_heads ({heads}) must divide one another"),
                         tp=par.tp, heads=arch.num_kv_heads)
    if par.pp * par.virtual_pp > arch.num_layers + sum(SPLIT_EXTRA_LAYERS[par.pipeline_split]):
        raise InputError("parallel.pp", N_("pp*virtual_pp = {stages} exceeds the model's {layers} layers"),
                         stages=par.pp * par.virtual_pp, layers=arch.num_layers)
    if par.pipeline_split != "even" and par.pp > 1:
        _check_split(par.pipeline_split, par.pp, par.virtual_pp, arch.num_layers)
    if par.ep > 1 and (not arch.moe or arch.moe.num_experts % par.ep):
        experts = arch.moe.num_experts if arch.moe else 0
        if experts:
            raise InputError("parallel.ep", N_("{ep} must divide the model's {experts} experts; accepted: 1 or a "
                                               "divisor of the expert count"), ep=par.ep, experts=experts)
        raise InputError("parallel.ep", N_("{ep} needs an MoE model (this one is dense); accepted: 1 or a divisor of "
                                           "the expert count"), ep=par.ep)
    if scenario.training.seq_len % par.cp:
        raise InputError("parallel.cp", N_("{cp} must divide training.seq_len ({seq_len})"), cp=par.cp,
                         seq_len=scenario.training.seq_len)
    if scenario.hardware.intra_node or scenario.hardware.inter_node:
        _check_links(scenario, catalog or default_catalog())


def clear_caches() -> None:
    """Forget what the estimators keep between calls (per-model layer states and parameter counts, per-layout
    model states and activations, FLOPs per training block, cache keys): a benchmark's cold start, not needed for
    correctness (every cache is keyed by all that its result reads)."""
    from trainsizer.estimate import activations, cache_keys, flops
    from trainsizer.estimate import training_state as ts
    from trainsizer.models import param_counts as params

    ts.clear_caches()
    flops.clear_caches()
    activations.clear_caches()
    cache_keys.clear_caches()
    for cached in (params.count_params, params._layer_linears, params._layer_params):
        cached.cache_clear()


def estimate(scenario: Scenario | dict[str, Any] | str | Path, catalog: Catalog | None = None,
             memory_params: MemoryModel | None = None, with_limits: bool = True,
             performance_params: PerformanceModel | None = None, with_performance: bool = True,
             source: str | None = None) -> Estimate:
    """Estimate a scenario given as a Scenario, a parsed mapping, or a path to a YAML file.

    A user's scenario (a path, a mapping, or a Scenario with the ``source`` it came from: a file, flags, a form) is
    checked against the catalog (:func:`check_hardware`; a problem names the file). A Scenario without a source is
    one the program built (the planner's candidates): a precision its GPU lacks runs at the fallback rate."""
    if isinstance(scenario, str | Path):
        source = source or str(scenario)
        scenario = load_scenario(scenario)
    elif isinstance(scenario, dict):
        source = source or "scenario"
        scenario = scenario_from_dict(scenario)
    try:
        arch = resolve_model(scenario.model)
        check_layout(scenario, arch, catalog)
        gpu = resolve_gpu(scenario, catalog) if source is None else check_hardware(scenario, catalog)
    except InputError as exc:
        raise in_file(exc, source) from None
    lengths = sample_lengths(scenario)  # the data shape: memory at the longest batch, speed at the expected one
    peak = scenario if lengths is None else memory_scenario(scenario, lengths)
    # what is trainable, sharded and quantised: derived once, read by memory, fit limits and step time
    state = training_state(peak, arch, memory_params or default_memory_model())
    memory = estimate_memory(peak, arch, gpu, memory_params, state)
    limits = largest_fitting(peak, arch, gpu, memory_params, state) if with_limits else None
    performance = None
    if with_performance:
        performance = (estimate_performance(scenario, arch, gpu, catalog, performance_params, memory_params,
                                            state=state) if lengths is None else
                       shaped_performance(scenario, lengths, arch, gpu, catalog, performance_params, memory_params))
    return Estimate(scenario, arch, count_params(arch), gpu, memory, limits, performance, state, lengths=lengths)
