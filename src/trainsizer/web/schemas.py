"""Request models of the web API: the scenario's own pydantic models, bounded for a public port.

The job is a scenario without ``parallel`` and ``hardware`` (the planner chooses them). A model is a
catalog preset or an inline architecture (a pasted ``config.json``); ``hf_config`` paths are not
accepted over HTTP, so the server never reads a file a request names.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from trainsizer.scenario import HardwareSpec, InlineGpu, ParallelSpec, TrainingSpec
from trainsizer.scenario_data import DataShape
from trainsizer.workflows.defaults import (
    DEFAULT_HORIZON_YEARS,
    DEFAULT_MAX_GPUS,
    DEFAULT_MAX_OOM_RISK,
    DEFAULT_OBJECTIVE,
    DEFAULT_TOP,
)
from trainsizer.workflows.quotes import Quote

MAX_GPU_IDS = 16
MAX_QUOTES = 20
MAX_PLAN_GPUS = 1024
MAX_SCALE_GPUS = 64
MAX_QUOTE_GPUS = 1024
MAX_LAYERS = 256  # the deepest published models have ~130; per-layer work makes deeper ones a denial of service
LAYER_KEYS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers")
Id = Field(min_length=1, max_length=80)
Currency = Literal["CNY", "USD"]
NodeShape = Literal[1, 2, 4, 8, 16]

EXAMPLE_TRAINING = {"method": "lora", "precision": "bf16-true", "micro_batch_size": 1, "seq_len": 2048,
                    "global_batch_size": 16, "activation_checkpointing": "full", "tokens": 1.0e8,
                    "lora": {"rank": 16, "targets": "all-linear"}}
EXAMPLE_JOB = {"model": {"preset": "qwen2.5-1.5b"}, "training": EXAMPLE_TRAINING}


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ModelIn(_Request):
    """A catalog preset, or the keys of a Hugging Face config.json (inline architecture)."""

    preset: str | None = Field(None, min_length=1, max_length=80, examples=["qwen2.5-7b"])
    architecture: dict[str, Any] | None = Field(None, max_length=400,
                                                description="Hugging Face config.json keys (model_type, "
                                                "hidden_size, num_hidden_layers, ...)")

    @field_validator("architecture")
    @classmethod
    def _bounded(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        for key in LAYER_KEYS:
            layers = (value or {}).get(key)
            if isinstance(layers, int) and layers > MAX_LAYERS:
                raise ValueError(f"{key}: {layers} layers; accepted here: at most {MAX_LAYERS}")
        return value

    @model_validator(mode="after")
    def _exactly_one(self) -> ModelIn:
        if (self.preset is None) == (self.architecture is None):
            raise ValueError("give exactly one of preset, architecture")
        return self


class JobIn(_Request):
    """What to train: the model and the training block of a scenario (validation/FORMAT.md)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [EXAMPLE_JOB]})
    model: ModelIn
    training: TrainingSpec
    data: DataShape | None = None  # the data shape (validation/FORMAT.md, "Extensions"): mean and max tokens


class PlanConstraintsIn(_Request):
    gpus: list[str] = Field(default_factory=list, max_length=MAX_GPU_IDS,
                            description="Allowed GPU ids; empty = the whole catalog")
    max_gpus: int = Field(DEFAULT_MAX_GPUS, ge=1, le=MAX_PLAN_GPUS)
    deadline_days: float | None = Field(None, gt=0, le=3650, description="Needs training.tokens")
    gpus_per_node: NodeShape | None = None
    site: str | None = Field(None, min_length=1, max_length=80)
    budget: float | None = Field(None, gt=0, le=1e13, description="In the currency: the most to commit (capex "
                                 "of bought servers, or a rental's minimum contract)")
    currency: Currency = "USD"
    horizon_years: float = Field(DEFAULT_HORIZON_YEARS, gt=0, le=15)
    utilisation: float | None = Field(None, gt=0, le=1, description="Of bought GPUs; none: the job runs once")
    runs_per_month: float | None = Field(None, gt=0, le=1000, description="Runs like this one a month on bought "
                                         "hardware")
    market: Literal["cn", "global"] | None = Field(None, description="Default: cn for CNY or a Chinese site")
    objective: Literal["cheapest", "fastest", "fewest-gpus"] = DEFAULT_OBJECTIVE
    top: int = Field(DEFAULT_TOP, ge=1, le=50, description="Options per ranking")
    setup_minutes: float | None = Field(None, ge=0, le=10_000, description="Minutes from a rented instance's start "
                                        "to the first step, billed on every GPU; empty: derived from the model's size")
    max_oom_risk: float = Field(DEFAULT_MAX_OOM_RISK, ge=0, le=1, description="The most a recommended layout may "
                                "risk running out of GPU memory (its chance from the estimate's 80 % range).")
    time_value: float | None = Field(None, ge=0, le=1e7, description="What an hour of the run is worth, in the "
                                     "currency, added to its cost to rank options; none: one engineer's loaded "
                                     "pay (assumed, workflows/time_value.yaml); 0: the cheapest run")
    all_options: bool = Field(False, description="Every option searched, not only those within a few times the "
                                                 "answer's cost or GPU count")
    voucher: str | None = Field(None, min_length=1, max_length=80, description="A compute voucher claimed on "
                                "rentals (`trainsizer catalog vouchers`); none: no voucher")


class PlanIn(_Request):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"job": EXAMPLE_JOB, "constraints": {"gpus": ["rtx-4090-24gb"], "max_gpus": 8}}]})
    job: JobIn
    constraints: PlanConstraintsIn = Field(default_factory=PlanConstraintsIn)


class UiPlanIn(PlanIn):
    """The page's request: a plan, and optionally the scaling curve of the recommended GPU."""

    scale: bool = False


class ScaleIn(_Request):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"job": EXAMPLE_JOB, "gpu": "rtx-4090-24gb", "max_gpus": 8}]})
    job: JobIn
    gpu: str = Id
    max_gpus: int = Field(8, ge=1, le=MAX_SCALE_GPUS)
    gpus_per_node: NodeShape | None = None


class CostIn(_Request):
    """One option's hardware, sized and priced for the job (its fastest layout on that hardware)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"job": EXAMPLE_JOB, "gpu": "rtx-4090-24gb", "gpus": 4, "gpus_per_node": 4}]})
    job: JobIn
    gpu: str = Id
    gpus: int = Field(1, ge=1, le=MAX_PLAN_GPUS)
    gpus_per_node: NodeShape | None = None
    site: str | None = Field(None, min_length=1, max_length=80)
    currency: Currency = "USD"
    horizon_years: float = Field(3.0, gt=0, le=15)
    utilisation: float = Field(0.7, gt=0, le=1)


class QuotesIn(_Request):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"quotes": [{"name": "8x RTX 4090, hourly", "gpu": "rtx-4090-24gb", "gpus_per_server": 8, "price": 1.98,
                     "unit": "gpu-hour", "currency": "CNY", "billing": "per-second", "topology": "pcie"}],
         "currency": "CNY"}]})
    quotes: list[Quote] = Field(min_length=1, max_length=MAX_QUOTES)
    job: JobIn | None = None
    currency: Currency = "USD"


class InlineGpuIn(InlineGpu):
    """An inline GPU with plausible bounds (a public port must not feed 1e300 TFLOPS to the model)."""

    memory_gib: float = Field(gt=0.1, le=100_000)
    bf16_tflops: float | None = Field(None, ge=0.1, le=1e5)
    fp16_tflops: float | None = Field(None, ge=0.1, le=1e5)
    fp8_tflops: float | None = Field(None, ge=0.1, le=1e5)
    fp32_tflops: float | None = Field(None, ge=0.1, le=1e5)
    hbm_gbps: float | None = Field(None, ge=1, le=1e6)
    tdp_w: float | None = Field(None, ge=1, le=1e5)


class HardwareIn(HardwareSpec):
    gpu: str | InlineGpuIn = Field(examples=["rtx-4090-24gb"])


class ParallelIn(ParallelSpec):
    gpus: int = Field(gt=0, le=100_000)


class EstimateIn(_Request):
    """A scenario as in validation/FORMAT.md (a preset or inline architecture as the model)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {**EXAMPLE_JOB, "parallel": {"gpus": 1}, "hardware": {"gpu": "rtx-4090-24gb"}}]})
    model: ModelIn
    training: TrainingSpec
    parallel: ParallelIn
    hardware: HardwareIn
