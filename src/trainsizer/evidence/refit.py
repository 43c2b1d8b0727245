"""Measured cases re-priced under other fitted parameters without re-running the estimators.

A fit (``trainsizer calibrate``, ``validate --holdout source``, ``tools/fit_*.py``) tries thousands
of parameter values. The estimators build each case's terms once here — the parts the fitted
parameters do not touch — and the same functions the estimators price with
(:func:`~trainsizer.estimate.step_terms.combine_step`, :func:`~trainsizer.estimate.step.speed_figures`,
:func:`~trainsizer.estimate.memory.peak_phase`, :func:`~trainsizer.estimate.memory.reserved_bytes`,
:meth:`~trainsizer.estimate.activations.StageActivations.refit`) price them again, for all cases at once.
A test checks that this equals a full estimate at random parameter values.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import cached_property
from typing import Any

import numpy as np

from trainsizer.estimate.activations import StageActivations, activation_factor, stage_activations
from trainsizer.estimate.data_shape import dataset_token_share, peak_scenario, sample_lengths, step_scenario
from trainsizer.estimate.estimator import check_layout, resolve_gpu
from trainsizer.estimate.memory import (
    LOADED_STATES,
    checkpoint_load_bytes,
    compiled_saved_bytes,
    default_memory_model,
    device_overhead_bytes,
    gradients_transient,
    peak_phase,
    reserved_bytes,
    with_checkpoint_load,
)
from trainsizer.estimate.memory_types import GIB
from trainsizer.estimate.model_params import MemoryModel, PerformanceModel
from trainsizer.estimate.model_states import model_states
from trainsizer.estimate.step import default_performance_model, speed_figures, step_context
from trainsizer.estimate.step_terms import RawStep, combine_step, raw_step
from trainsizer.estimate.training_state import training_state
from trainsizer.models.catalog import resolve_model
from trainsizer.scenario import Scenario


@dataclass(frozen=True)
class StageMemoryTerms:
    static: float  # model states kept all step (weights, masters, optimizer states, buffers)
    gradients: float
    activations: StageActivations
    step_temporaries_per_unit: float
    managed: float
    load: float = 0.0  # allocated bytes while a full state dict loads (memory.checkpoint_load_bytes), and its
    load_dynamic: float = 0.0  # transient part


@dataclass(frozen=True)
class MemoryTerms:
    """One memory case: its stages' terms at the shipped parameters."""

    stages: tuple[StageMemoryTerms, ...]
    activation_factor: float  # the factor on the saved bytes the terms were built with (activations.py)
    compiled: bool  # torch.compile (``compiled_factor`` scales its activations too)
    device_overhead: float  # CUDA context and NCCL
    metric: str  # allocated | reserved | device
    capacity: float = float("inf")  # bytes of the GPU's memory (the allocator's cache stays within it)
    variable: bool = False  # samples of varied lengths (memory.varied_bytes)
    transient_gradients: bool = False  # no gradient before the step's backward (memory.gradients_transient)


def memory_terms(scenario: Scenario, metric: str, memory_params: MemoryModel | None = None) -> MemoryTerms:
    mp = memory_params or default_memory_model()
    scenario = peak_scenario(scenario)  # a data shape: the peak at the longest micro-batch, as estimate() reads it
    arch = resolve_model(scenario.model)
    check_layout(scenario, arch)
    gpu = resolve_gpu(scenario)
    st = training_state(scenario, arch, mp)
    stages = []
    for stage in range(scenario.parallel.pp):
        states = model_states(st, stage)
        load = checkpoint_load_bytes(scenario, states.unsharded_weights,
                                     sum(c.bytes for c in states.static if c.name in LOADED_STATES))
        stages.append(StageMemoryTerms(sum(c.bytes for c in states.static), states.gradients.bytes,
                                       stage_activations(scenario, arch, mp, st, stage),
                                       states.step_temporaries_per_unit, states.managed_bytes, *load))
    return MemoryTerms(tuple(stages), activation_factor(scenario.training.compile, mp), scenario.training.compile,
                       device_overhead_bytes(gpu, scenario.parallel.gpus, mp), metric, gpu.memory_gib * GIB,
                       scenario.training.sequence_lengths == "variable", gradients_transient(scenario))


def memory_prediction(t: MemoryTerms, mp: MemoryModel) -> float:
    """GiB of the case's metric on the most loaded stage (the one with the most device memory)."""
    ratio = activation_factor(t.compiled, mp) / t.activation_factor
    frac = mp.activations.backward_working_fraction
    best: tuple[float, float, float] | None = None
    for s in t.stages:
        saved, working = s.activations.refit(ratio, frac)
        last = 0.0 if s.activations.full_checkpointing else s.activations.largest_layer * ratio
        phase, extra, grads = peak_phase(s.gradients, saved, s.activations.logits, working,
                                         mp.optimizer.foreach_temp_states * s.step_temporaries_per_unit,
                                         t.transient_gradients, last)
        allocated = s.static + grads + sum(extra)
        usable = t.capacity - t.device_overhead - s.managed
        step = phase == "optimizer step"
        reserved = reserved_bytes(allocated, 0.0 if step else sum(extra), mp, usable,
                                  s.activations.logits if t.variable else 0.0,
                                  0.0 if step else compiled_saved_bytes(t.compiled, saved), s.gradients - grads)
        allocated, reserved = with_checkpoint_load(allocated, reserved, s.load, s.load_dynamic, mp, usable)
        device = reserved + t.device_overhead + s.managed
        if best is None or device > best[2]:
            best = (allocated, reserved, device)
    assert best is not None
    return dict(zip(("allocated", "reserved", "device"), best, strict=True))[t.metric] / GIB


@dataclass(frozen=True)
class SpeedCase:
    """One speed case: its raw step and what its figures are computed from (per token, all GPUs together)."""

    raw: RawStep
    tokens_per_step: float
    gpus: float
    model_flops_per_token: float
    hardware_flops_per_token: float
    peak_tflops: float
    model_full_attention_per_token: float
    hardware_full_attention_per_token: float
    dataset_share: float = 1.0  # the dataset's tokens over those a step processes (data_shape.dataset_token_share)


@dataclass(frozen=True)
class SpeedTerms:
    """Many speed cases, their step terms stacked as arrays (the fields of :class:`SpeedCase`)."""

    raw: RawStep
    tokens_per_step: np.ndarray
    gpus: np.ndarray
    model_flops_per_token: np.ndarray
    hardware_flops_per_token: np.ndarray
    peak_tflops: np.ndarray
    model_full_attention_per_token: np.ndarray
    hardware_full_attention_per_token: np.ndarray
    dataset_share: np.ndarray
    metrics: tuple[str, ...]  # the Performance attribute each case is compared on

    @cached_property
    def metric_rows(self) -> dict[str, np.ndarray]:
        """Per metric, the rows compared on it."""
        return {m: np.flatnonzero(np.array(self.metrics) == m) for m in dict.fromkeys(self.metrics)}


def speed_case(scenario: Scenario, memory_params: MemoryModel | None = None,
               perf_params: PerformanceModel | None = None) -> SpeedCase:
    """One case's raw step and what its figures are computed from: with a data shape, the step at the expected
    padded length and its documents (``estimate.data_shape.step_scenario``), as ``estimate()`` prices it."""
    lengths = sample_lengths(scenario)
    share = 1.0 if lengths is None else dataset_token_share(lengths)
    scenario = scenario if lengths is None else step_scenario(scenario, lengths)
    arch = resolve_model(scenario.model)
    check_layout(scenario, arch)
    ctx, _ = step_context(scenario, arch, resolve_gpu(scenario), None, perf_params or default_performance_model(),
                          memory_params or default_memory_model())
    fl = ctx.flops
    return SpeedCase(raw_step(ctx), scenario.global_batch_size * scenario.training.seq_len, scenario.parallel.gpus,
                     fl.model_per_token, fl.hardware_per_token, ctx.peak_tflops, fl.model_full_attention_per_token,
                     fl.hardware_full_attention_per_token, share)


def _stack(values: list[Any], annotation: str) -> Any:
    """One column of many cases: text fields (architecture, dtypes, kernel, precision) stay a list."""
    return values if annotation == "str" else np.array(values, dtype=float)


def stack_speed(cases: list[SpeedCase], metrics: list[str]) -> SpeedTerms:
    raw = RawStep(**{f.name: _stack([getattr(c.raw, f.name) for c in cases], f.type) for f in fields(RawStep)})
    columns = {f.name: _stack([getattr(c, f.name) for c in cases], f.type) for f in fields(SpeedCase)
               if f.name != "raw"}
    return SpeedTerms(raw, **columns, metrics=tuple(metrics))


def speed_predictions(t: SpeedTerms, pp: PerformanceModel) -> np.ndarray:
    """Each case's metric under performance parameters ``pp``."""
    step = sum(np.asarray(v, dtype=float) for v in combine_step(t.raw, pp).values())
    figures = speed_figures(step, t.tokens_per_step, t.gpus, t.model_flops_per_token, t.hardware_flops_per_token,
                            t.peak_tflops, t.model_full_attention_per_token, t.hardware_full_attention_per_token)
    # the throughput counts the dataset's tokens, the padding left out (data_shape.shaped_performance)
    figures = {**figures, "tokens_per_s": figures["tokens_per_s"] * t.dataset_share,
               "tokens_per_s_per_gpu": figures["tokens_per_s_per_gpu"] * t.dataset_share}
    out = np.empty(len(t.metrics))
    for metric, rows in t.metric_rows.items():
        out[rows] = np.broadcast_to(np.asarray(figures[metric], dtype=float), out.shape)[rows]
    return out
