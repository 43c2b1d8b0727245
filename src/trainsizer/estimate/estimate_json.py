"""An estimate as its JSON writes it (``Estimate.to_dict``; ``trainsizer estimate --json``), spelled as types
(TypedDicts: the dicts the estimate's parts return, their keys named). Keys marked ``NotRequired`` are written only
where they apply. The plan's options carry the same memory and performance figures (``plan/option_json.py``)."""

# no ``from __future__ import annotations``: TypedDict reads NotRequired from evaluated annotations only

from typing import NotRequired, TypedDict

from trainsizer.frameworks.profiles import FrameworkJSON
from trainsizer.messages import Message

Interval = list[float]  # [low, high] of an 80 % range


class MemoryIntervalJSON(TypedDict):
    """``intervals.memory_interval``: the 80 % range of each memory figure and the chance of running out."""

    level: float
    allocated_gib: Interval
    reserved_gib: Interval
    device_gib: Interval
    p_exceeds_capacity: float
    fits_unless_above: float | None
    at_risk: bool
    cases: int
    no_evidence: list[str]
    notes: list[Message]


class PerformanceIntervalJSON(TypedDict):
    """``intervals.performance_interval``: the 80 % range of each time and speed figure."""

    level: float
    step_time_s: Interval
    time_to_train_s: NotRequired[Interval]
    gpu_hours: NotRequired[Interval]
    tokens_per_s: Interval
    tokens_per_s_per_gpu: Interval
    tflops_per_gpu: Interval
    mfu: Interval
    cases: int
    no_evidence: list[str]
    notes: list[Message]


class MemoryJSON(TypedDict):
    """``memory.MemoryEstimate.to_dict`` (with its range in an estimate's JSON)."""

    allocated_gib: float
    reserved_gib: float
    device_gib: float
    capacity_gib: float
    fits: bool
    components_gib: dict[str, float]
    detail_gib: dict[str, float]
    explain: dict[str, Message]
    peak_phase: str
    notes: list[Message]
    interval: NotRequired[MemoryIntervalJSON]


class PerformanceJSON(TypedDict):
    """``step.Performance.to_dict`` (with its range in an estimate's JSON)."""

    step_time_s: float
    tokens_per_s: float
    tokens_per_s_per_gpu: float
    tflops_per_gpu: float
    hardware_tflops_per_gpu: float
    tflops_per_gpu_full_attention: float
    mfu: float
    hfu: float
    peak_tflops: float
    compute_efficiency: float
    breakdown_s: dict[str, float]
    dominant: str
    notes: list[Message]
    time_to_train_s: NotRequired[float | None]
    gpu_hours: NotRequired[float | None]
    interval: NotRequired[PerformanceIntervalJSON]


class RuleOfThumbJSON(TypedDict):
    """``rule_of_thumb.RuleOfThumb.to_dict``: the seed guide's rule against the estimate."""

    formula: Message
    total_gb: float
    per_gpu_gib: float
    estimate_gib: float
    error: float
    reasons: list[Message]


class EstimateModelJSON(TypedDict):
    name: str
    model_type: str
    params: int
    active_params: int
    trainable_params: int | None


class EstimateHardwareJSON(TypedDict):
    gpu: str
    gpus: int
    gpus_per_node: int


class EstimateTrainingJSON(TypedDict):
    method: str
    precision: str
    optimizer: str
    micro_batch_size: int
    seq_len: int
    global_batch_size: int
    grad_accumulation_steps: int


class FitLimitsJSON(TypedDict):
    max_micro_batch_size: int
    max_seq_len: int


class DataShapeJSON(TypedDict):
    """``data_shape.SampleLengths.to_dict``: what the data shape put in a step."""

    memory_seq_len: int
    step_seq_len: int
    tokens_per_sequence: float
    document_tokens: int | None
    padded_to_each_batch: bool
    assumed_spread: bool


class EstimateJSON(TypedDict):
    """``estimator.Estimate.to_dict``."""

    memory: MemoryJSON
    model: EstimateModelJSON
    hardware: EstimateHardwareJSON
    training: EstimateTrainingJSON
    rule_of_thumb: RuleOfThumbJSON
    performance: PerformanceJSON | None
    limits: NotRequired[FitLimitsJSON]
    framework: NotRequired[FrameworkJSON]
    data_shape: NotRequired[DataShapeJSON]
    scenario_source: NotRequired[str]  # the CLI adds where the scenario came from
