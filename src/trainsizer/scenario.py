"""The scenario: one training job on one hardware layout (``validation/FORMAT.md``). Every key of FORMAT.md is
accepted with exactly its spelling and meaning; unknown keys are rejected with the closest known key. Defaults of the
optional keys are the ones documented in docs/guide-scenarios.md ("Scenario format") and the field descriptions below.
"""

# Annotations stay objects (no `from __future__ import annotations`): pydantic reads each type as is (~0.1 ms a class).
import difflib
from pathlib import Path
from typing import Annotated, Any, Literal, get_args, get_origin

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Strict,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from trainsizer import scenario_sharding as sharding
from trainsizer.datafiles import user_yaml
from trainsizer.errors import N_, InputError, excerpt, in_file, short_input
from trainsizer.scenario_data import DataSettings, DataShape, LengthBin
from trainsizer.scenario_framework import FrameworkSettings
from trainsizer.scenario_kernels import CommSettings, KernelSettings
from trainsizer.scenario_moe import ExpertSettings, expert_grid_fits
from trainsizer.scenario_pipeline import PipelineSettings

Method = Literal["full", "lora", "qlora", "freeze"]
PRETRAINING_NAMES = ("pretrain", "pretraining", "pt", "cpt", "continuedpretraining", "continuedpretrain")
Precision = Literal["fp32", "fp16-mixed", "bf16-mixed", "bf16-true", "fp8-mixed"]
Optimizer = Literal["adamw", "adamw-8bit", "paged-adamw-8bit", "adafactor", "sgd-momentum", "sgd", "lion"]
# selective = Megatron's (the attention core recomputed); selective-op = torchtitan's per-op policy (matmul and
# attention outputs saved, every second matmul and all element-wise work recomputed); every-n-layers = whole layers
# recomputed, one in checkpoint_every_n_layers (torchtitan selective_ac_option=N)
Checkpointing = Literal["none", "selective", "selective-op", "every-n-layers", "full"]
Attention = Literal["flash", "sdpa", "eager"]
Quantization = Literal["nf4", "nf4-dq", "int8", "int4"]
Offload = Literal["none", "optimizer", "optimizer+params"]
Loss = Literal["standard", "chunked", "compute-dtype", "vocab-parallel"]
SequenceLengths = Literal["fixed", "variable"]
# what a quantized base linear keeps of its input for backward (estimate/activations.kept_quantized_inputs)
QuantizedInputs = Literal["saved", "kept", "none"]
# the dtype of the layers a QLoRA run leaves unquantized (estimate/activations.lm_head_cast_bytes)
UnquantizedDtype = Literal["compute", "fp16"]
CheckpointLoading = Literal["sharded", "full"]
AccumulationSync = Literal["reduce", "no-sync"]  # estimate/deferred_sync.py
# what a rank keeps of its zero-3 weight shard under mixed precision (estimate/model_states.py _weights)
ShardedWeights = Literal["compute-copy", "master-only"]
# how a sharded optimizer (zero 1/2) sums the gradients over data parallelism (estimate/dp_sync.data_parallel_sync_s)
ZeroGradSync = Literal["reduce-scatter", "all-reduce"]
GradReduceDtype = Literal["fp32", "compute"]
AttentionMask = Literal["causal", "full"]
Fp8Scope = Literal["linear", "linear+attention"]

MAX_GPUS = 1_000_000
QLORA_DEFAULT_QUANTIZATION = "nf4-dq"  # QLoRA is NF4 with double quantization (Dettmers et al. 2023, arXiv:2305.14314)


def _no_bool(value: Any) -> Any:
    """YAML's true/false are Python bools, which pydantic would take as 1/0."""
    if isinstance(value, bool):
        raise PydanticCustomError("bool_not_number", "input should be a number, not true/false")
    return value


# Counts are strict integers (no true, 2.0 or "2"); numbers are finite (model_config) and never true/false; a
# number may be written 1.0e9 (YAML 1.1 reads that as a string, pydantic parses it). Flags are true or false only.
Int = Annotated[int, Strict()]
Number = Annotated[float, BeforeValidator(_no_bool)]
Flag = Annotated[bool, Strict()]
ZeroStage = Annotated[Literal[0, 1, 2, 3], BeforeValidator(_no_bool)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True, allow_inf_nan=False)


class ModelSpec(_Strict):
    preset: str | None = None
    hf_config: str | None = None
    architecture: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> "ModelSpec":
        given = [k for k in ("preset", "hf_config", "architecture") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of preset, hf_config, architecture"
                             + (f" (got {', '.join(given)})" if given else ""))
        return self


class LoraSpec(_Strict):
    rank: Int = Field(8, gt=0, le=65536)
    alpha: Number = Field(16, gt=0, le=1e6)
    targets: list[str] | Literal["all-linear"] | None = Field(
        None, description="default: peft's default target modules for the model type (q_proj+v_proj for Llama)")
    dropout: Number = Field(0.05, ge=0, lt=1, description="extension: LoRA dropout (peft default 0.05 in most "
                           "recipes); > 0 keeps a dropout mask and the dropped input for backward")

    @field_validator("targets", mode="before")
    @classmethod
    def _targets(cls, v: Any) -> Any:
        if isinstance(v, str) and v != "all-linear":
            return [v]
        if isinstance(v, list) and not v:
            raise ValueError("must name at least one module, or be 'all-linear'")
        return v


class TrainingSpec(_Strict, KernelSettings, FrameworkSettings):  # zero_grad, activation_kernel, autocast, framework
    method: Method
    precision: Precision = "bf16-mixed"
    optimizer: Optimizer = "adamw"
    micro_batch_size: Int = Field(gt=0, le=65536)
    seq_len: Int = Field(gt=0, le=16_777_216)
    global_batch_size: Int | None = Field(None, gt=0, le=100_000_000)
    activation_checkpointing: Checkpointing = "none"
    attention: Attention = "flash"
    lora: LoraSpec | None = None
    quantization: Quantization | None = None
    tokens: Number | None = Field(None, gt=0, le=1e16)
    # extensions (not in FORMAT.md; documented in docs/guide-scenarios.md)
    loss: Loss = Field("standard", description="extension: 'chunked' = chunked/fused cross-entropy that "
                       "never materialises fp32 logits of the whole sequence (torchtune, litgpt, Liger); "
                       "'compute-dtype' = a plain cross-entropy left in bf16/fp16 (a model whose code does not "
                       "upcast its logits, run without autocast, as DeepSpeed runs it); 'vocab-parallel' = "
                       "Megatron-Core's vocab-parallel cross-entropy: one fp32 copy of the logits shifted, "
                       "exponentiated and normalised in place and kept for backward, beside the compute-dtype logits")
    optimizer_in_backward: Flag = Field(False, description="extension: the optimizer steps each parameter "
                                        "during backward and frees its gradient (torchtune optimizer_in_bwd)")
    freeze_trainable_layers: Int = Field(2, gt=0, le=100_000, description="extension: method freeze trains the last N "
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
    compile: Flag = Field(False, description="extension: the model runs under torch.compile (Inductor fuses the "
                          "element-wise work, and AOTAutograd's partitioner recomputes cheap intermediates in "
                          "backward instead of saving them); torchtune compile=True, torchtitan --training.compile")
    sequence_lengths: SequenceLengths = Field("fixed", description="extension: 'fixed' = every micro-batch has "
                                              "seq_len tokens (packed, or padded to seq_len); 'variable' = samples "
                                              "of varied lengths, each batch padded to its longest (dynamic "
                                              "padding), seq_len the longest; the caching allocator then keeps "
                                              "blocks of earlier sizes (reserved memory)")
    quantized_inputs: QuantizedInputs = Field("saved", description="extension (method qlora): what each quantized "
                                              "base linear keeps of its input for backward: 'saved' = a saved "
                                              "tensor, dropped by activation checkpointing; 'kept' = held on the "
                                              "autograd context, which non-reentrant checkpointing cannot drop, so "
                                              "every layer keeps its quantized linears' inputs (bitsandbytes "
                                              "MatMul4Bit before 0.43.2 under use_reentrant=False); 'none' = "
                                              "nothing (bitsandbytes 0.43.2 and later, torchao NF4)")
    unquantized_dtype: UnquantizedDtype = Field("compute", description="extension (method qlora): the dtype of the "
                                                "layers left unquantized (embeddings, norms, LM head): 'compute' = "
                                                "the compute dtype; 'fp16' = float16 beside a bf16 compute dtype "
                                                "(transformers' bitsandbytes loading without a torch_dtype), so "
                                                "autocast's bf16 copy of the LM head's weight is saved for backward")
    document_tokens: Int | None = Field(None, gt=0, le=16_777_216, description="extension: each sequence is packed "
                                        "from documents of about this many tokens (for varied lengths: sum of "
                                        "squares / sum), each attending only to itself, with a kernel that skips "
                                        "the other documents (FlashAttention varlen, flex attention, THD); default: "
                                        "one document per sequence")
    fp8_all_gather: Flag = Field(False, description="extension (precision fp8-mixed): FSDP2 / ZeRO-3 all-gathers the "
                                 "FP8 linear weights, one byte each, instead of 16-bit ones (torchao "
                                 "enable_fsdp_float8_all_gather, torchtitan --float8.enable_fsdp_float8_all_gather)")

    @field_validator("method", mode="before")
    @classmethod
    def _pretraining_is_full(cls, v: Any) -> Any:
        """Pre-training trains every weight: it is method ``full`` (FORMAT.md), said so when named otherwise."""
        if isinstance(v, str) and v.strip().lower().replace("-", "").replace("_", "") in PRETRAINING_NAMES:
            raise ValueError(f"{v!r} is not a method; pre-training (and continued pre-training) is method full; "
                             "accepted: full, lora, qlora, freeze")
        return v

    @model_validator(mode="before")
    @classmethod
    def _qlora_default(cls, data: Any) -> Any:
        """QLoRA without a quantization is NF4 with double quantization, what QLoRA means."""
        if isinstance(data, dict) and data.get("method") == "qlora" and data.get("quantization") is None:
            return {**data, "quantization": QLORA_DEFAULT_QUANTIZATION}
        return data

    @model_validator(mode="after")
    def _method_consistency(self) -> "TrainingSpec":
        if self.method != "qlora" and self.quantization is not None:
            raise ValueError(f"quantization: only method qlora quantizes the base weights (method is {self.method})")
        if self.method not in ("lora", "qlora") and self.lora is not None:
            raise ValueError(f"lora: a lora block needs method lora or qlora (method is {self.method})")
        if self.document_tokens is not None and self.document_tokens > self.seq_len:
            raise ValueError(f"document_tokens: {self.document_tokens} is longer than seq_len ({self.seq_len}); "
                             "accepted: 1 to seq_len")
        if self.fp8_all_gather and self.precision != "fp8-mixed":
            raise ValueError(f"fp8_all_gather: FP8 weight all-gather needs precision fp8-mixed (precision is "
                             f"{self.precision})")
        return self


class ParallelSpec(_Strict, CommSettings, ExpertSettings, PipelineSettings):  # scenario_kernels, _moe, _pipeline
    gpus: Int = Field(gt=0, le=MAX_GPUS)
    tp: Int = Field(1, gt=0, le=1024)
    pp: Int = Field(1, gt=0, le=4096)
    cp: Int = Field(1, gt=0, le=4096)
    virtual_pp: Int = Field(1, gt=0, le=1024)
    sequence_parallel: Flag = False
    zero: ZeroStage = 0
    distributed_optimizer: Flag = False
    offload: Offload = "none"
    ep: Int = Field(1, gt=0, le=4096, description="extension: expert parallelism; MoE experts are split over "
                    "ep ranks of the data-parallel group (Megatron-Core / DeepSpeed-MoE)")
    checkpoint_loading: CheckpointLoading = Field("sharded", description="extension: how the checkpoint reaches "
                                                  "zero-3 weights: 'sharded' = each rank its shard; 'full' = every "
                                                  "rank holds the whole state dict on the GPU beside its shard")
    accumulation_sync: AccumulationSync = Field("reduce", description="extension: zero 2/3 with accumulation: "
                                                "'reduce' = each micro-batch's gradients reduce-scattered to shards; "
                                                "'no-sync' = kept unsharded until the step's last micro-batch (FSDP "
                                                "no_sync: Lightning Fabric's no_backward_sync, litgpt)")
    sharded_weights: ShardedWeights = Field("compute-copy", description="extension: what each rank keeps of its "
                                            "zero-3 shard of trained weights under mixed precision: 'compute-copy' "
                                            "= a bf16/fp16 copy beside the fp32 master shard (DeepSpeed ZeRO-3); "
                                            "'master-only' = the fp32 shard alone, cast to the compute dtype only "
                                            "when a unit is gathered (PyTorch FSDP / FSDP2 MixedPrecisionPolicy, "
                                            "torchtitan)")
    zero_shard_gpus: Int | None = Field(None, gt=0, le=MAX_GPUS, description="extension: how many ranks of the "
                                        "data-parallel (x context-parallel) group share one copy of the ZeRO-sharded "
                                        "states (default: all of them). A smaller group keeps whole copies in each "
                                        "group and sums gradients over all data-parallel ranks: InternLM's hybrid "
                                        "zero `zero1=8` (within the 8 GPUs of a node), DeepSpeed's MiCS / hpZ, "
                                        "FSDP's HYBRID_SHARD")
    zero_grad_sync: ZeroGradSync = Field("reduce-scatter", description="extension: how a sharded optimizer (zero "
                                         "1/2, distributed_optimizer) sums gradients over data parallelism: "
                                         "'reduce-scatter' = each rank receives its shard (DeepSpeed, Megatron); "
                                         "'all-reduce' = every rank all-reduces the whole gradient and keeps its "
                                         "share (InternLM's hybrid zero). A zero_shard_gpus group smaller than dp "
                                         "all-reduces either way")
    grad_reduce_dtype: GradReduceDtype = Field("fp32", description="extension: the dtype a mixed-precision run "
                                               "(bf16/fp16/fp8-mixed) keeps and sums its gradients in over data "
                                               "parallelism: 'fp32' = 4 bytes (PyTorch DDP under autocast, "
                                               "Megatron's accumulate_allreduce_grads_in_fp32); 'compute' = the "
                                               "16-bit compute dtype, 2 bytes (InternLM's NaiveAMPModel with its "
                                               "hybrid zero optimizer, Megatron without fp32 gradient "
                                               "accumulation)")

    @model_validator(mode="after")
    def _divides(self) -> "ParallelSpec":
        model_parallel = self.tp * self.pp * self.cp
        if self.gpus % model_parallel:
            raise ValueError(f"gpus: tp*pp*cp = {self.tp}*{self.pp}*{self.cp} = {model_parallel} "
                             f"must divide gpus ({self.gpus})")
        if (self.ep > 1 or self.etp) and not expert_grid_fits(self.tp, self.cp, self.dp, self.ep, self.expert_tp):
            raise ValueError(f"ep: ep*etp = {self.ep}*{self.expert_tp} must divide tp*cp*dp = "
                             f"{self.tp}*{self.cp}*{self.dp}, etp tp")
        if self.virtual_pp > 1 and self.pp == 1:
            raise ValueError("virtual_pp: interleaving needs pp > 1")
        if self.zero >= 2 and self.pp > 1:
            raise ValueError("zero: stages 2 and 3 cannot be combined with pp > 1 (DeepSpeed); "
                             "use zero 0/1 or distributed_optimizer")
        if self.offload == "optimizer+params" and self.zero != 3:
            raise ValueError("offload: optimizer+params needs zero 3 (FSDP/ZeRO-3 parameter offload)")
        if self.offload == "optimizer" and self.zero == 0 and not self.distributed_optimizer:
            raise ValueError("offload: optimizer offload needs zero 1, 2 or 3 (ZeRO-Offload)")
        if self.zero_shard_gpus is not None:
            if self.zero == 0 and not self.distributed_optimizer:
                raise ValueError("zero_shard_gpus: sharding needs zero 1, 2 or 3 or distributed_optimizer")
            if (self.dp * self.cp) % self.zero_shard_gpus:
                raise ValueError(f"zero_shard_gpus: {self.zero_shard_gpus} must divide the data-parallel x "
                                 f"context-parallel group (dp*cp = {self.dp * self.cp}); accepted: a divisor of it")
        return self

    @property
    def zero_group(self) -> int:
        """Ranks one copy of the ZeRO-sharded states is spread over: ``zero_shard_gpus`` where it divides dp x cp (a
        planner layout may not), else the whole dp x cp group."""
        return sharding.zero_group(self.dp * self.cp, self.zero_shard_gpus)

    @property
    def scatters_gradients(self) -> bool:
        """Whether a sharded optimizer (zero 1/2, distributed_optimizer) reduce-scatters the gradients over dp; else
        every rank all-reduces them (``zero_grad_sync: all-reduce``, or a ``zero_shard_gpus`` group smaller than dp)."""
        return sharding.scatters_gradients(self.zero, self.distributed_optimizer, self.zero_dp_shards, self.dp,
                                           self.zero_grad_sync)

    @property
    def zero_dp_shards(self) -> int:
        """Data-parallel ranks one copy of the sharded optimizer states spans: dp, or ``zero_shard_gpus`` (of
        dp x cp) where it names a smaller group."""
        return sharding.zero_dp_shards(self.zero_group, self.dp, self.cp)

    @property
    def dp(self) -> int:
        """Data-parallel degree: GPUs not used by tensor, pipeline or context parallelism."""
        return self.gpus // (self.tp * self.pp * self.cp)


class InlineGpu(_Strict):
    name: str
    memory_gib: Number = Field(gt=0, le=100_000)
    bf16_tflops: Number | None = Field(None, gt=0, le=1e6)
    fp16_tflops: Number | None = Field(None, gt=0, le=1e6)
    fp8_tflops: Number | None = Field(None, gt=0, le=1e6)
    fp32_tflops: Number | None = Field(None, gt=0, le=1e6)
    hbm_gbps: Number | None = Field(None, gt=0, le=1e6)
    tdp_w: Number | None = Field(None, gt=0, le=100_000)


class HardwareSpec(_Strict):
    gpu: str | InlineGpu
    gpus_per_node: Int | None = Field(None, gt=0, le=1024, description="default: min(gpus, 8)")
    intra_node: str | None = None
    inter_node: str | None = None
    nics_per_node: Int | None = Field(None, gt=0, le=64)


class Scenario(_Strict, DataSettings):  # data: the data shape (scenario_data.py)
    model: ModelSpec
    training: TrainingSpec
    parallel: ParallelSpec
    hardware: HardwareSpec

    @model_validator(mode="after")
    def _layout(self) -> "Scenario":
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


SECTION_MODELS: dict[str, type[BaseModel]] = {
    "": Scenario, "model": ModelSpec, "training": TrainingSpec, "parallel": ParallelSpec,
    "hardware": HardwareSpec, "training.lora": LoraSpec, "hardware.gpu": InlineGpu, "data": DataShape,
    "data.length_histogram": LengthBin}
_SPECIAL_ACCEPTED = {
    "hardware.gpu": "a GPU id (trainsizer catalog gpus) or a mapping with name and memory_gib",
    "training.lora.targets": "module names (a list), or all-linear",
    "model": "a mapping with one of preset, hf_config, architecture",
    "data.length_histogram": "a list of bins, each a mapping of up_to and samples",
}


def flat_types(annotation: Any) -> set[Any]:
    """The plain types inside a (union / Annotated) annotation; a Literal stays whole."""
    if get_origin(annotation) is Literal:
        return {annotation}
    args = get_args(annotation)
    return set().union(*(flat_types(a) for a in args)) if args else {annotation}


def _bound(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() and abs(value) < 1e9 else f"{value:g}"


def accepted(field: str) -> str:
    """What a field accepts, in words, from its type and bounds (e.g. 'an integer from 1 to 65,536')."""
    if field in _SPECIAL_ACCEPTED:
        return _SPECIAL_ACCEPTED[field]
    if field in SECTION_MODELS:
        return f"a mapping of {', '.join(SECTION_MODELS[field].model_fields)}"
    parent, _, key = ".".join(p for p in field.split(".") if not p.isdigit()).rpartition(".")  # a list item's model
    info = SECTION_MODELS.get(parent, Scenario).model_fields.get(key)
    if info is None:
        return "see validation/FORMAT.md"
    types = flat_types(info.annotation)
    literals = [str(v) for t in types if get_origin(t) is Literal for v in get_args(t)]
    if literals:
        return ", ".join(literals)
    kind = "true or false" if bool in types else "an integer" if int in types else "a number" if float in types \
        else "a string" if str in types else "see validation/FORMAT.md"
    low = high = None
    low_open = high_open = False
    for m in info.metadata:
        if getattr(m, "gt", None) is not None:
            low, low_open = m.gt, True
        if getattr(m, "ge", None) is not None:
            low = m.ge
        if getattr(m, "lt", None) is not None:
            high, high_open = m.lt, True
        if getattr(m, "le", None) is not None:
            high = m.le
    if kind == "an integer" and low is not None:
        low, low_open = (low + 1 if low_open else low), False
        return f"an integer from {_bound(low)} to {_bound(high)}" if high is not None else f"an integer >= {low}"
    parts = ([f"{'>' if low_open else '>='} {_bound(low)}"] if low is not None else []) + \
        ([f"{'<' if high_open else '<='} {_bound(high)}"] if high is not None else [])
    return f"{kind} {' and '.join(parts)}" if parts and kind == "a number" else kind


def _first_error_message(exc: ValidationError) -> InputError:
    errors = exc.errors()
    # a misspelt key is also a missing one: name the misspelling first (it carries the 'did you mean'); a union
    # (hardware.gpu: id or inline spec): report the branch that matches the input's shape
    extra = next((e for e in errors if e["type"] == "extra_forbidden"), None)
    inline = next((e for e in errors if "InlineGpu" in [str(p) for p in e["loc"]]), None)
    err = extra or inline or errors[0]
    loc = [str(p) for p in err["loc"] if not (isinstance(p, str) and ("[" in p or p in ("str", "InlineGpu")))]
    # pydantic adds union branch names (e.g. 'InlineGpu', "list[str]") to loc; drop them
    loc = [p for p in loc if p not in ("function-after[_targets(), union[list[str],literal['all-linear']]]",)]
    loc = [excerpt(p) for p in loc if not p.startswith(("function-", "constrained-", "lax-", "strict-"))]
    field = ".".join(loc)
    kind = err["type"]
    given = short_input(err.get("input"))  # an error quotes at most MAX_INPUT_TEXT characters of the file
    if kind == "extra_forbidden":
        parent, key = ".".join(p for p in loc[:-1] if not p.isdigit()), loc[-1]  # a list's item: its model
        known = list(SECTION_MODELS.get(parent, Scenario).model_fields)
        close = difflib.get_close_matches(key, known, n=1)
        if close:
            return InputError(field, N_("unknown key (did you mean '{close}'?); accepted keys: {keys}"),
                              close=close[0], keys=", ".join(known))
        return InputError(field, N_("unknown key; accepted keys: {keys}"), keys=", ".join(known))
    if kind == "missing":
        return InputError(field, N_("is required; accepted: {accepted}"), accepted=accepted(field))
    if kind in ("literal_error", "enum"):
        expected = err.get("ctx", {}).get("expected", "")
        options = [o.strip().strip("'") for o in expected.replace(" or ", ",").split(",") if o.strip()]
        close = difflib.get_close_matches(str(given), options, n=1)
        if close:
            return InputError(field, N_("{value!r} is not accepted (did you mean '{close}'?); accepted: {accepted}"),
                              value=given, close=close[0], accepted=", ".join(options))
        return InputError(field, N_("{value!r} is not accepted; accepted: {accepted}"), value=given,
                          accepted=", ".join(options))
    if kind == "value_error":
        msg = str(err.get("ctx", {}).get("error", err["msg"]))
        if ":" in msg.split(" ")[0]:
            sub, rest = msg.split(":", 1)
            return InputError(".".join([*loc, sub]) if loc else sub, rest.strip())
        return InputError(field or "scenario", msg)
    if not field:
        return InputError("scenario", f"{err['msg'].lower()} (got {given!r})")
    if kind in ("model_type", "dict_type", "model_attributes_type"):
        return InputError(field, N_("input should be a mapping (got {value!r}); accepted: {accepted}"), value=given,
                          accepted=accepted(field))
    if isinstance(given, dict | list):
        given = type(given).__name__.replace("dict", "a mapping").replace("list", "a list")
        return InputError(field, f"{err['msg'].lower()} (got {given}); accepted: {accepted(field)}")
    return InputError(field, f"{err['msg'].lower()} (got {given!r}); accepted: {accepted(field)}")


def scenario_from_dict(data: Any, source: str = "scenario") -> Scenario:
    """Validate a parsed scenario mapping; every problem becomes one InputError (naming the file it came from)."""
    if not isinstance(data, dict):
        raise InputError(source, N_("a scenario must be a YAML mapping with model, training, parallel, hardware"))
    if not TrainingSpec.__pydantic_complete__:
        # The estimators key their caches on the training and parallel blocks' own JSON (model_dump_json), which
        # builds those two models' schemas; built first, the scenario's schema reuses them instead of generating
        # them a second time (~3 ms of a command).
        TrainingSpec.model_rebuild()
        ParallelSpec.model_rebuild()
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as exc:
        raise in_file(_first_error_message(exc), source) from None
    try:  # presets are shipped only, an inline architecture is complete: their mistakes are named with the file
        if scenario.model.preset is not None:
            from trainsizer.models.catalog import preset_entry

            preset_entry(scenario.model.preset)
        elif scenario.model.architecture is not None:
            from trainsizer.models.architecture import architecture_from_config

            architecture_from_config(scenario.model.architecture)
    except InputError as exc:
        raise in_file(exc, source) from None
    return scenario


def relative_to_file(scenario: Scenario, path: str | Path) -> Scenario:
    """The scenario with a relative ``model.hf_config`` read from the folder of the file it came from."""
    if not scenario.model.hf_config or Path(scenario.model.hf_config).is_absolute():
        return scenario
    model = scenario.model.model_copy(update={"hf_config": str(Path(path).parent / scenario.model.hf_config)})
    return scenario.model_copy(update={"model": model})


def load_scenario(path: str | Path) -> Scenario:
    return relative_to_file(scenario_from_dict(user_yaml(path, field="scenario"), source=str(path)), path)
