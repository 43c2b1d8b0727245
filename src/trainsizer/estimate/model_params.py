"""The parameters of the memory and step-time models as typed, frozen objects, loaded once.

Each class mirrors one section of ``memory_model.yaml`` or ``performance_model.yaml`` field for field (the YAML's
comments say what each value is and where it comes from), so an editor follows a parameter from the YAML to the
formula that reads it (``p.activations.implementation_factor``). A misspelt key in either file, or in a calibration
profile laid over them (``estimate/calibration.py``), is one error line naming the file, the key and the closest
valid keys.

Provenance: a field declared with :func:`fitted` is set by the fit (``tools/fit_memory.py``,
``tools/fit_performance.py``, ``trainsizer calibrate``: the free parameters of ``evidence/calibrate.py``); any
other value is assumed, from the ``source`` its section cites. :attr:`MemoryModel.provenance` and
:attr:`PerformanceModel.provenance` hold a :class:`Provenance` per parameter (dotted path), filled at load; a
calibration profile's values are ``fitted`` on the cases the profile lists."""

from __future__ import annotations

import dataclasses
import datetime
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from trainsizer.datafiles import cached_objects, packaged_yaml
from trainsizer.estimate.typed_data import DERIVED, REST, Table, build

PACKAGE = "trainsizer.estimate"
MEMORY_FILE = "memory_model.yaml"
PERFORMANCE_FILE = "performance_model.yaml"
FIT_TOOLS = {MEMORY_FILE: "tools/fit_memory.py on validation/cases/memory.yaml",
             PERFORMANCE_FILE: "tools/fit_performance.py on validation/cases/throughput.yaml"}


@dataclass(frozen=True)
class Provenance:
    """Where one parameter's value comes from."""

    kind: Literal["fitted", "assumed"]
    source: str  # fitted: the fitter and its data; assumed: the source its section cites
    cases: tuple[str, ...] = ()  # fitted: the cases it was fitted on, where they are listed (a profile, a ceiling)
    excluded: tuple[str, ...] = ()  # fitted: the cases the fit left out by id (``fit.exclude``; the MoE runs by rule)


def fitted(default: Any = dataclasses.MISSING, keys: tuple[str, ...] | None = None) -> Any:
    """A field the fit sets (all of it, or of a table only ``keys``)."""
    return field(default=default, metadata={"fitted": keys or True})


def cited(source_field: str, default: Any = dataclasses.MISSING) -> Any:
    """An assumed field whose source is the section's ``source_field`` rather than its ``source``."""
    return field(default=default, metadata={"source_field": source_field})


def _provenance_field() -> Any:
    return field(default_factory=Table, metadata={DERIVED: True}, compare=False, repr=False)


# --- memory_model.yaml ----------------------------------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class Activations:
    """``memory_model.yaml`` ``activations:``: bytes the activation model counts beside the layers' tensors."""

    rmsnorm_saved_bytes: float = cited("source_rmsnorm")
    source_rmsnorm: str
    eager_mask_bytes: float
    quantized_linear_saves_input: bool
    implementation_factor: float = fitted()
    compiled_factor: float = fitted(1.0)
    backward_working_fraction: float = fitted()
    source: str


@dataclass(frozen=True, kw_only=True)
class Logits:
    """``memory_model.yaml`` ``logits:``: the logits' and the loss's buffers."""

    standard_bytes: float
    compute_dtype_copies: float
    chunked_extra_bytes: float
    vocab_parallel_fp32_bytes: float
    source: str


@dataclass(frozen=True, kw_only=True)
class QuantFormat:
    """One quantized weight format: bytes per code and per constant."""

    code_bytes: float
    constant_bytes: float


@dataclass(frozen=True, kw_only=True)
class Quantization:
    """``memory_model.yaml`` ``quantization:``: the quantized weight formats."""

    formats: Table[QuantFormat] = field(metadata={REST: True})  # nf4, nf4-dq, int8, int4: the section's own keys
    source: str


@dataclass(frozen=True, kw_only=True)
class OptimizerMemory:
    """``memory_model.yaml`` ``optimizer:``: the optimizers' states and temporaries."""

    bnb_block: int
    bnb_min_8bit_size: int
    foreach_temp_states: float
    source: str


@dataclass(frozen=True, kw_only=True)
class CommunicationMemory:
    """``memory_model.yaml`` ``communication:``: the gradient buckets and collectives' buffers."""

    ddp_bucket_bytes: int
    ddp_buckets_in_flight: int
    zero_reduce_bucket_elements: int
    zero3_gathered_units: int
    source: str


@dataclass(frozen=True, kw_only=True)
class Allocator:
    """``memory_model.yaml`` ``allocator:``: the PyTorch allocator's reserved share over what is allocated."""

    reserved_fraction_dynamic: float = fitted()
    reserved_fraction_static: float = fitted()
    reserved_fraction_variable: float = cited("source_variable")
    reserved_floor_gib: float
    source: str
    source_variable: str


@dataclass(frozen=True, kw_only=True)
class Device:
    """``memory_model.yaml`` ``device:``: the CUDA context and NCCL's memory per GPU."""

    context_gib_default: float
    context_gib_by_architecture: Table[float]
    nccl_gib: float
    source: str


@dataclass(frozen=True, kw_only=True)
class MemoryFit:
    """``memory_model.yaml`` ``fit:``: the cases the memory fit leaves out and where a refit starts."""

    exclude: Table[str] = field(default_factory=Table)  # case id: why the fit leaves it out
    start: Table[float] = field(default_factory=Table)  # "section.key": the shared cases' fit, where a refit starts


@dataclass(frozen=True, kw_only=True)
class MemoryModel:
    """``memory_model.yaml``: the per-GPU memory estimator's parameters (``estimate/memory.py``)."""

    schema_version: int
    as_of: datetime.date
    activations: Activations
    logits: Logits
    quantization: Quantization
    optimizer: OptimizerMemory
    communication: CommunicationMemory
    allocator: Allocator
    device: Device
    fit: MemoryFit = field(default_factory=MemoryFit)
    provenance: Table[Provenance] = _provenance_field()


# --- performance_model.yaml -----------------------------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class Compute:
    """``performance_model.yaml`` ``compute:``: the GEMMs' and attention's efficiency."""

    max_efficiency: Table[float] = fitted(keys=("volta", "ampere", "ada", "hopper"))
    attention_relative_efficiency: Table[float] = cited("attention_source")
    attention_relative_efficiency_sdpa: Table[float] = cited("attention_source", Table())
    attention_source: str
    # measured maximum achievable matmul efficiency per architecture: the prior of a family with no training case
    mamf_fraction: Table[float] = cited("mamf_source", Table())
    mamf_source: str = ""
    # measured matmul share of the nominal peak of each family's reference parts (estimate/peak.py)
    matmul_reference: Table[float] = cited("matmul_source", Table())
    matmul_source: str = ""
    # each family's reference part (catalog id), whose ridge point the parts' efficiency loss scales by (gemm_rows.py)
    reference_part: Table[str] = cited("matmul_source", Table())
    # measured FP8 matmul efficiency over the BF16 one on each family's reference part (gemm_rows.gemm_ceiling)
    fp8_matmul_relative: Table[float] = cited("mamf_source", Table())
    max_efficiency_fp32: float = fitted()
    half_tokens: float = fitted()
    half_width: float = fitted()
    # routed experts' grouped GEMM: its operand traffic over the least it needs, against the part's ridge point
    # (estimate/moe.py grouped_gemm_saturation); assumed (the roofline's least, once each)
    expert_traffic: float
    source: str


@dataclass(frozen=True, kw_only=True)
class MemoryBound:
    """``performance_model.yaml`` ``memory_bound:``: the memory-bound work's traffic."""

    elementwise_bytes_per_saved_byte: float = fitted()
    compiled_elementwise_fraction: float = 1.0
    optimizer_bytes_per_param: Table[Table[float]]  # optimizer: {mixed, fp32, bf16-true}
    dequant_bytes_per_param_per_pass: float
    hbm_efficiency: float
    source: str
    # formats whose training path dequantises in unfused PyTorch ops (estimate/dequantization.py)
    dequant_unfused_bytes_per_param: Table[float] = cited("dequant_unfused_source", Table())
    dequant_unfused_source: str = ""
    # an activation run as separate PyTorch ops (estimate/activation_ops.py): {forward, backward} x {16-bit, autocast,
    # fp32} HBM bytes per intermediate element beyond a fused kernel's
    unfused_activation_extra_bytes: Table[Table[float]] = cited("unfused_activation_source", Table())
    unfused_activation_source: str = ""


@dataclass(frozen=True, kw_only=True)
class Overlap:
    """``performance_model.yaml`` ``communication.overlap:``: the share of each collective hidden behind compute."""

    dp: float
    zero3: float
    cp: float
    pp_p2p: float
    moe: float


@dataclass(frozen=True, kw_only=True)
class RoceAtScale:
    """``performance_model.yaml`` ``communication.roce_at_scale:``: RoCE's bus bandwidth at scale."""

    gpus_threshold: int
    busbw_factor: float
    source: str


@dataclass(frozen=True, kw_only=True)
class DeepEP:
    """``performance_model.yaml`` ``communication.deepep:`` / ``hybridep:``: a token dispatcher's all-to-all rates."""

    nvlink_fraction: float  # logical NVLink rate over the line rate per direction
    rdma_nodes: tuple[int, ...]  # node counts measured
    rdma_fraction: tuple[float, ...]  # logical RDMA rate over NCCL's per-NIC bus bandwidth, per node count
    sms: int | None = None  # SMs the framework gives the kernels (None: rates measured as run, no SM bound)
    sm_gbps: Table[float] | None = None  # logical NVLink GB/s one SM moves, by architecture
    source: str

    def nvlink_cap_gbps(self, architecture: str) -> float:
        """The NVLink rate the kernels' SMs can move on ``architecture``: ``sms`` x its per-SM rate; unbounded
        where either is not known."""
        per_sm = (self.sm_gbps or {}).get(architecture, 0.0)
        return self.sms * per_sm if self.sms and per_sm else float("inf")


@dataclass(frozen=True, kw_only=True)
class Communication:
    """``performance_model.yaml`` ``communication:``: the collectives' achieved bandwidth by link."""

    busbw_fraction: Table[float]  # by link kind: scale-up, pcie, ib, roce, eth, default
    pcie_without_p2p_fraction: float
    pcie_without_p2p_shared_host_gbps: float
    nccl_step_latency_us: float
    overlap: Overlap
    deepep: DeepEP
    hybridep: DeepEP
    roce_at_scale: RoceAtScale
    source: str


@dataclass(frozen=True, kw_only=True)
class Overhead:
    """``performance_model.yaml`` ``overhead:``: the step's fixed costs."""

    per_step_s: float = fitted()
    per_layer_s: float = fitted()
    moe_sync_issue_s: float = fitted()
    cpu_adam_params_per_s: float
    source: str


@dataclass(frozen=True, kw_only=True)
class MfuRow:
    """One MFU ceiling (``tools/mfu_ceilings.py``): measured on ``cases``, or assumed for the ``reason``."""

    mfu: float
    measured: float | None = None
    cases: tuple[str, ...] = ()
    runs: int | None = None
    basis: str | None = None
    status: str | None = None
    reason: str | None = None


@dataclass(frozen=True, kw_only=True)
class MfuCeilings:
    """``performance_model.yaml`` ``mfu_ceiling:``: the MFU ceilings by architecture and precision."""

    margin: float
    min_cases: int
    table: Table[Table[MfuRow]]  # architecture: precision (``+compile`` for compiled runs): ceiling
    fallback: MfuRow


@dataclass(frozen=True, kw_only=True)
class MetricDefinition:
    """How a case's measured metric is compared with the estimate."""

    id_prefix: str
    metric: str
    compare_with: str
    reason: str


@dataclass(frozen=True, kw_only=True)
class PerformanceFit:
    """``performance_model.yaml`` ``fit:``: the metrics, the cases the fit leaves out and where a refit starts."""

    metric_definitions: tuple[MetricDefinition, ...] = ()
    exclude: Table[str] = field(default_factory=Table)
    exclude_moe: str = ""  # why every mixture-of-experts speed run is left out (evidence/cases.fit_exclusions)
    start: Table[float] = field(default_factory=Table)  # "section.key": the shared cases' fit, where a refit starts


@dataclass(frozen=True, kw_only=True)
class PerformanceModel:
    """``performance_model.yaml``: the step-time model's parameters (``estimate/step_terms.py``)."""

    schema_version: int
    as_of: datetime.date
    compute: Compute
    memory_bound: MemoryBound
    communication: Communication
    overhead: Overhead
    mfu_ceiling: MfuCeilings | None = None
    fit: PerformanceFit = field(default_factory=PerformanceFit)
    provenance: Table[Provenance] = _provenance_field()


# --- provenance and loading -----------------------------------------------------------------------------------------

def _section_provenance(section: Any, prefix: str, fit: Provenance, out: dict[str, Provenance],
                        parent_source: str = "") -> None:
    """The provenance of each parameter of one section (a table's entries each), into ``out``."""
    source = str(getattr(section, "source", "") or parent_source)
    for f in dataclasses.fields(section):
        value = getattr(section, f.name)
        if "source" in f.name or f.metadata.get(DERIVED):
            continue
        dotted = prefix if f.metadata.get(REST) else f"{prefix}.{f.name}"
        if dataclasses.is_dataclass(value):
            _section_provenance(value, dotted, fit, out, source)
            continue
        assumed = Provenance("assumed", str(getattr(section, f.metadata.get("source_field", "source"), "") or source))
        marked = f.metadata.get("fitted")
        if isinstance(value, Table):
            for key in value:
                fit_key = marked is True or (isinstance(marked, tuple) and key in marked)
                out[f"{dotted}.{key}"] = fit if fit_key else assumed
        else:
            out[dotted] = fit if marked else assumed


def _ceiling_provenance(ceilings: MfuCeilings, out: dict[str, Provenance]) -> None:
    rows = [(f"mfu_ceiling.table.{a}.{q}", row) for a, by in ceilings.table.items() for q, row in by.items()]
    for dotted, row in [*rows, ("mfu_ceiling.fallback", ceilings.fallback)]:
        tool = "tools/mfu_ceilings.py"
        out[dotted] = (Provenance("assumed", f"{tool}: {row.reason}") if row.status == "assumed" else
                       Provenance("fitted", f"{tool}: {row.basis or 'measured'}", row.cases))


def provenance_of(model: MemoryModel | PerformanceModel, name: str) -> Table[Provenance]:
    """Every parameter's provenance in a model loaded from the file ``name``."""
    fit = Provenance("fitted", FIT_TOOLS.get(name, name), (), tuple(model.fit.exclude))
    out: dict[str, Provenance] = {}
    for f in dataclasses.fields(model):
        section = getattr(model, f.name)
        if f.name in ("fit", "provenance") or not dataclasses.is_dataclass(section):
            continue
        if isinstance(section, MfuCeilings):
            _ceiling_provenance(section, out)
        else:
            _section_provenance(section, f.name, fit, out)
    return Table(out)


def load_model(cls: type[Any], data: Any, where: str, name: str) -> Any:
    """A model class built from parsed YAML (``where`` names the file in errors), its provenance filled."""
    model = build(cls, data, f"{where}:")
    return dataclasses.replace(model, provenance=provenance_of(model, name))


def _shipped_path(name: str) -> str:
    return str(resources.files(PACKAGE).joinpath(name))


@cache
def memory_model() -> MemoryModel:
    """The shipped ``memory_model.yaml``, typed (loaded once)."""
    return _shipped(MemoryModel, MEMORY_FILE)


@cache
def performance_model() -> PerformanceModel:
    """The shipped ``performance_model.yaml``, typed (loaded once)."""
    return _shipped(PerformanceModel, PERFORMANCE_FILE)


def _shipped(cls: type[Any], name: str) -> Any:
    """The shipped model file ``name`` as ``cls``, built once and kept in the user's cache folder
    (``datafiles.cached_objects``: keyed on the file and the code that builds it), else built here."""

    def built() -> Any:
        return load_model(cls, packaged_yaml(PACKAGE, name), _shipped_path(name), name)

    here = resources.files(PACKAGE)
    sources = [here / name, here / "model_params.py", here / "typed_data.py"]
    if not all(isinstance(p, Path) and p.is_file() for p in sources):
        return built()  # a zipped install: nothing to key a cache on
    done = cached_objects(f"model-{name.removesuffix('.yaml')}", sources, built)  # type: ignore[arg-type]
    return built() if done is None else done
