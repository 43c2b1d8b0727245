"""The scenario: one training job on one hardware layout (``shared/validation/FORMAT.md``).

Every key of FORMAT.md is accepted with exactly its spelling and meaning; unknown keys are
rejected with the closest known key. Defaults of the optional keys are the ones documented in
the README (section "Scenario defaults") and in the field descriptions below.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from trainsizer.datafiles import user_yaml
from trainsizer.errors import InputError

Method = Literal["full", "lora", "qlora", "freeze"]
Precision = Literal["fp32", "fp16-mixed", "bf16-mixed", "bf16-true", "fp8-mixed"]
Optimizer = Literal["adamw", "adamw-8bit", "paged-adamw-8bit", "adafactor", "sgd-momentum", "sgd", "lion"]
# selective = Megatron's (the attention core recomputed); selective-op = torchtitan's per-op policy (matmul and
# attention outputs saved, every second matmul and all element-wise work recomputed); every-n-layers = whole layers
# recomputed, one in checkpoint_every_n_layers (torchtitan selective_ac_option=N)
Checkpointing = Literal["none", "selective", "selective-op", "every-n-layers", "full"]
Attention = Literal["flash", "sdpa", "eager"]
Quantization = Literal["nf4", "nf4-dq", "int8", "int4"]
Offload = Literal["none", "optimizer", "optimizer+params"]
Loss = Literal["standard", "chunked"]
AttentionMask = Literal["causal", "full"]
Fp8Scope = Literal["linear", "linear+attention"]

MAX_GPUS = 1_000_000


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class ModelSpec(_Strict):
    preset: str | None = None
    hf_config: str | None = None
    architecture: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> ModelSpec:
        given = [k for k in ("preset", "hf_config", "architecture") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of preset, hf_config, architecture"
                             + (f" (got {', '.join(given)})" if given else ""))
        return self


class LoraSpec(_Strict):
    rank: int = Field(8, gt=0, le=65536)
    alpha: float = Field(16, gt=0)
    targets: list[str] | Literal["all-linear"] | None = Field(
        None, description="default: peft's default target modules for the model type (q_proj+v_proj for Llama)")
    dropout: float = Field(0.05, ge=0, lt=1, description="extension: LoRA dropout (peft default 0.05 in most "
                           "recipes); > 0 keeps a dropout mask and the dropped input for backward")

    @field_validator("targets", mode="before")
    @classmethod
    def _targets(cls, v: Any) -> Any:
        if isinstance(v, str) and v != "all-linear":
            return [v]
        if isinstance(v, list) and not v:
            raise ValueError("must name at least one module, or be 'all-linear'")
        return v


class TrainingSpec(_Strict):
    method: Method
    precision: Precision = "bf16-mixed"
    optimizer: Optimizer = "adamw"
    micro_batch_size: int = Field(gt=0, le=65536)
    seq_len: int = Field(gt=0, le=16_777_216)
    global_batch_size: int | None = Field(None, gt=0, le=100_000_000)
    activation_checkpointing: Checkpointing = "none"
    attention: Attention = "flash"
    lora: LoraSpec | None = None
    quantization: Quantization | None = None
    tokens: float | None = Field(None, gt=0, le=1e16)
    # extensions (not in FORMAT.md; documented in the README)
    loss: Loss = Field("standard", description="extension: 'chunked' = chunked/fused cross-entropy that "
                       "never materialises fp32 logits of the whole sequence (torchtune, litgpt, Liger)")
    optimizer_in_backward: bool = Field(False, description="extension: the optimizer steps each parameter "
                                        "during backward and frees its gradient (torchtune optimizer_in_bwd)")
    freeze_trainable_layers: int = Field(2, gt=0, description="extension: method freeze trains the last N "
                                         "layers (LLaMA-Factory's freeze_trainable_layers default)")
    # extensions for the step-time mechanisms (issue 12)
    checkpoint_every_n_layers: int = Field(2, gt=0, le=1024, description="extension: with activation_checkpointing "
                                           "every-n-layers, one layer in N is recomputed whole (torchtitan default 2)")
    attention_mask: AttentionMask | None = Field(None, description="extension: 'causal' (decoders; FlashAttention "
                                                 "and SDPA skip the masked half) or 'full' (encoders); default: "
                                                 "from the model (causal when it has an LM head)")
    fp8_scope: Fp8Scope = Field("linear", description="extension: with fp8-mixed, which GEMMs run in FP8: 'linear' "
                                "(Transformer Engine, torchao Float8Linear: attention stays bf16) or "
                                "'linear+attention' (TE fp8_dpa)")

    @model_validator(mode="after")
    def _method_consistency(self) -> TrainingSpec:
        if self.method == "qlora" and self.quantization is None:
            raise ValueError("quantization: method qlora needs a quantization; accepted: nf4, nf4-dq, int8, int4")
        if self.method != "qlora" and self.quantization is not None:
            raise ValueError(f"quantization: only method qlora quantizes the base weights (method is {self.method})")
        if self.method not in ("lora", "qlora") and self.lora is not None:
            raise ValueError(f"lora: a lora block needs method lora or qlora (method is {self.method})")
        return self


class ParallelSpec(_Strict):
    gpus: int = Field(gt=0, le=MAX_GPUS)
    tp: int = Field(1, gt=0, le=1024)
    pp: int = Field(1, gt=0, le=4096)
    cp: int = Field(1, gt=0, le=4096)
    virtual_pp: int = Field(1, gt=0, le=1024)
    sequence_parallel: bool = False
    zero: Literal[0, 1, 2, 3] = 0
    distributed_optimizer: bool = False
    offload: Offload = "none"
    ep: int = Field(1, gt=0, le=4096, description="extension: expert parallelism; MoE experts are split over "
                    "ep ranks of the data-parallel group (Megatron-Core / DeepSpeed-MoE)")

    @model_validator(mode="after")
    def _divides(self) -> ParallelSpec:
        model_parallel = self.tp * self.pp * self.cp
        if self.gpus % model_parallel:
            raise ValueError(f"gpus: tp*pp*cp = {self.tp}*{self.pp}*{self.cp} = {model_parallel} "
                             f"must divide gpus ({self.gpus})")
        if self.ep > 1 and self.dp % self.ep:
            raise ValueError(f"ep: {self.ep} must divide the data-parallel degree ({self.dp})")
        if self.virtual_pp > 1 and self.pp == 1:
            raise ValueError("virtual_pp: interleaving needs pp > 1")
        if self.zero >= 2 and self.pp > 1:
            raise ValueError("zero: stages 2 and 3 cannot be combined with pp > 1 (DeepSpeed); "
                             "use zero 0/1 or distributed_optimizer")
        if self.offload == "optimizer+params" and self.zero != 3:
            raise ValueError("offload: optimizer+params needs zero 3 (FSDP/ZeRO-3 parameter offload)")
        if self.offload == "optimizer" and self.zero == 0 and not self.distributed_optimizer:
            raise ValueError("offload: optimizer offload needs zero 1, 2 or 3 (ZeRO-Offload)")
        return self

    @property
    def dp(self) -> int:
        """Data-parallel degree: GPUs not used by tensor, pipeline or context parallelism."""
        return self.gpus // (self.tp * self.pp * self.cp)


class InlineGpu(_Strict):
    name: str
    memory_gib: float = Field(gt=0, le=100_000)
    bf16_tflops: float | None = Field(None, gt=0)
    fp16_tflops: float | None = Field(None, gt=0)
    fp8_tflops: float | None = Field(None, gt=0)
    fp32_tflops: float | None = Field(None, gt=0)
    hbm_gbps: float | None = Field(None, gt=0)
    tdp_w: float | None = Field(None, gt=0)


class HardwareSpec(_Strict):
    gpu: str | InlineGpu
    gpus_per_node: int | None = Field(None, gt=0, le=1024, description="default: min(gpus, 8)")
    intra_node: str | None = None
    inter_node: str | None = None
    nics_per_node: int | None = Field(None, gt=0, le=64)


class Scenario(_Strict):
    model: ModelSpec
    training: TrainingSpec
    parallel: ParallelSpec
    hardware: HardwareSpec

    @model_validator(mode="after")
    def _layout(self) -> Scenario:
        per_node = self.hardware.gpus_per_node
        if per_node and self.parallel.gpus > per_node and self.parallel.gpus % per_node:
            raise ValueError(f"hardware.gpus_per_node: {per_node} must divide parallel.gpus "
                             f"({self.parallel.gpus}) when the job spans nodes")
        gbs = self.training.global_batch_size
        step = self.training.micro_batch_size * self.parallel.dp
        if gbs is not None and gbs % step:
            raise ValueError(f"training.global_batch_size: {gbs} must be a multiple of micro_batch_size * dp "
                             f"= {self.training.micro_batch_size} * {self.parallel.dp} = {step}")
        return self

    @property
    def gpus_per_node(self) -> int:
        return self.hardware.gpus_per_node or min(self.parallel.gpus, 8)

    @property
    def global_batch_size(self) -> int:
        return self.training.global_batch_size or self.training.micro_batch_size * self.parallel.dp

    @property
    def grad_accumulation_steps(self) -> int:
        return self.global_batch_size // (self.training.micro_batch_size * self.parallel.dp)


def _accepted_keys(model: type[BaseModel]) -> list[str]:
    return list(model.model_fields)


_SECTION_MODELS: dict[str, type[BaseModel]] = {
    "": Scenario, "model": ModelSpec, "training": TrainingSpec, "parallel": ParallelSpec,
    "hardware": HardwareSpec, "training.lora": LoraSpec, "hardware.gpu": InlineGpu,
}


def _first_error_message(exc: ValidationError) -> InputError:
    errors = exc.errors()
    err = errors[0]
    # a union (hardware.gpu: id or inline spec): report the branch that matches the input's shape
    for candidate in errors:
        if "InlineGpu" in [str(p) for p in candidate["loc"]]:
            err = candidate
            break
    loc = [str(p) for p in err["loc"] if not (isinstance(p, str) and ("[" in p or p in ("str", "InlineGpu")))]
    # pydantic adds union branch names (e.g. 'InlineGpu', "list[str]") to loc; drop them
    loc = [p for p in loc if p not in ("function-after[_targets(), union[list[str],literal['all-linear']]]",)]
    field = ".".join(loc)
    kind = err["type"]
    given = err.get("input")
    if kind == "extra_forbidden":
        parent, key = ".".join(loc[:-1]), loc[-1]
        known = _accepted_keys(_SECTION_MODELS.get(parent, Scenario))
        close = difflib.get_close_matches(key, known, n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        return InputError(field, f"unknown key{hint}; accepted keys: {', '.join(known)}")
    if kind == "missing":
        return InputError(field, "is required")
    if kind in ("literal_error", "enum"):
        expected = err.get("ctx", {}).get("expected", "")
        options = [o.strip().strip("'") for o in expected.replace(" or ", ",").split(",") if o.strip()]
        close = difflib.get_close_matches(str(given), options, n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        return InputError(field, f"{given!r} is not accepted{hint}; accepted: {', '.join(options)}")
    if kind == "value_error":
        msg = str(err.get("ctx", {}).get("error", err["msg"]))
        if ":" in msg.split(" ")[0]:
            sub, rest = msg.split(":", 1)
            return InputError(".".join([*loc, sub]) if loc else sub, rest.strip())
        return InputError(field or "scenario", msg)
    return InputError(field or "scenario", f"{err['msg'].lower()} (got {given!r})")


def scenario_from_dict(data: Any, source: str = "scenario") -> Scenario:
    """Validate a parsed scenario mapping; every problem becomes one InputError."""
    if not isinstance(data, dict):
        raise InputError(source, "a scenario must be a YAML mapping with model, training, parallel, hardware")
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        raise _first_error_message(exc) from None


def relative_to_file(scenario: Scenario, path: str | Path) -> Scenario:
    """The scenario with a relative ``model.hf_config`` read from the folder of the file it came from."""
    if not scenario.model.hf_config or Path(scenario.model.hf_config).is_absolute():
        return scenario
    model = scenario.model.model_copy(update={"hf_config": str(Path(path).parent / scenario.model.hf_config)})
    return scenario.model_copy(update={"model": model})


def load_scenario(path: str | Path) -> Scenario:
    return relative_to_file(scenario_from_dict(user_yaml(path, field="scenario"), source=str(path)), path)
