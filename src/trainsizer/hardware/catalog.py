"""The hardware catalog: accelerators and links, shipped as YAML, extended by users' YAML files.

A user file has the same shape as the shipped ones (``accelerators:`` and/or ``links:`` lists):

- an entry with a new ``id`` is added (it must be complete: ``name``, ``memory_gib``, ``source``, ``as_of``);
- an entry whose ``id`` already exists and that has a ``name`` replaces the shipped entry as a whole;
- an entry whose ``id`` already exists and that has NO ``name`` is a patch: its fields are merged into the
  shipped entry (mappings such as ``availability``, ``dense_tflops`` or ``scale_up`` key by key; inside
  ``availability`` each market's ``buy``/``rent`` entry is replaced whole), everything else is kept.
  The smallest useful patch is ``{id: h200-sxm-141gb, availability: {cn: {buy: {...}}}}``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import date
from functools import cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from trainsizer.datafiles import packaged_yaml, user_yaml
from trainsizer.errors import InputError
from trainsizer.hardware.market import Market, Status
from trainsizer.lookup import unknown_id

DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8", "fp4", "int8")


class Rates(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    fp32: float | None = None
    tf32: float | None = None
    bf16: float | None = None
    fp16: float | None = None
    fp8: float | None = None
    fp4: float | None = None
    int8: float | None = None


class ScaleUp(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    link: str | None = None
    bidirectional_gbps_per_gpu: float | None = None
    max_gpus: int | None = None


def _iso_date(value: Any) -> str:
    text = str(value)
    try:
        date.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{text!r} is not an ISO date (YYYY-MM-DD)") from None
    return text


class AvailabilityEntry(BaseModel):
    """Whether a part can be bought new / rented in one market, and why (see hardware/market.py)."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)
    status: Status  # yes | restricted | no | unknown
    reason: str = Field(min_length=1)  # one line
    source: str = Field(min_length=1)
    as_of: str
    confidence: Literal["H", "M", "L"] | None = None

    @field_validator("status", mode="before")
    @classmethod
    def _yaml_booleans(cls, value: Any) -> Any:
        # YAML 1.1 reads a bare yes/no as a boolean
        return {True: "yes", False: "no"}.get(value, value) if isinstance(value, bool) else value

    @field_validator("as_of", mode="before")
    @classmethod
    def _as_of_is_a_date(cls, value: Any) -> str:
        return _iso_date(value)


class MarketAvailability(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)
    buy: AvailabilityEntry | None = None  # bought new
    rent: AvailabilityEntry | None = None  # rented from a cloud or lessor in that market


ServerForm = Literal["pcie-server", "baseboard", "rack-scale-nvl72"]
Cooling = Literal["air", "liquid", "air-or-liquid"]


class Accelerator(BaseModel):
    """One GPU or accelerator. TFLOPS are dense peaks; sparse ones are kept apart."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)
    id: str
    name: str
    vendor: str = "unknown"
    architecture: str | None = None
    memory_gb: float | None = None
    memory_gib: float = Field(gt=0)
    memory_type: str | None = None
    memory_bandwidth_gbps: float | None = None
    dense_tflops: Rates = Field(default_factory=Rates)
    sparse_tflops: Rates = Field(default_factory=Rates)
    fp16_accumulate_tflops: float | None = None
    scale_up: ScaleUp | None = None
    pcie_gen: int | None = None
    p2p: bool | None = None
    tdp_w: float | None = None
    form_factor: str | None = None
    default_intra_node: str | None = None
    # link id of the usual scale-out network for this part (e.g. roce-200 for Ascend: never InfiniBand);
    # None = no vendor constraint (the planner's own choice applies)
    default_inter_node: str | None = None
    # how the part is sold: PCIe cards in a 4/8-card chassis, modules on a baseboard with a scale-up fabric
    # (HGX, OAM UBB, Atlas NPU board), or a whole liquid-cooled NVL72 rack that is one scale-up domain
    server_form: ServerForm | None = None
    gpus_per_node: int | None = Field(None, ge=1, le=1024)  # per server, or per rack-scale system (NVL72: 72)
    cooling: Cooling | None = None  # what the standard system requires (None = not stated by the sources)
    availability: dict[Market, MarketAvailability] = Field(default_factory=dict)
    source: str
    as_of: str
    notes: str | None = None
    field_sources: dict[str, str] | None = None

    def peak_tflops(self, dtype: str) -> float | None:
        return getattr(self.dense_tflops, dtype)


class Link(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)
    id: str
    name: str
    scope: str
    per_direction_gbps: float = Field(gt=0)
    bidirectional_gbps: float | None = None
    line_rate_gbit: float | None = None
    latency_us: float | None = None
    measured_allreduce_busbw_gbps: list[dict[str, Any]] | None = None
    # True in a profile from `trainsizer probe comm`: the estimator uses the measured busbw even for a scale-out
    # link (the shipped NIC entries keep their line-rate fraction; their measured figures are context only).
    prefer_measured: bool = False
    source: str
    as_of: str
    notes: str | None = None
    field_sources: dict[str, str] | None = None


@dataclass(frozen=True)
class Catalog:
    accelerators: Mapping[str, Accelerator] = field(default_factory=dict)
    links: Mapping[str, Link] = field(default_factory=dict)

    def accelerator(self, gpu_id: str, field_name: str = "hardware.gpu") -> Accelerator:
        if gpu_id not in self.accelerators:
            raise unknown_id(field_name, gpu_id, self.accelerators)
        return self.accelerators[gpu_id]

    def link(self, link_id: str, field_name: str = "hardware.intra_node") -> Link:
        if link_id not in self.links:
            raise unknown_id(field_name, link_id, self.links)
        return self.links[link_id]

    def extended(self, data: Any, origin: str) -> Catalog:
        """A new catalog with the entries of ``data`` (a parsed user file) added or replaced."""
        if not isinstance(data, dict) or not ({"accelerators", "links"} & set(data)):
            raise InputError(origin, "a catalog file needs an 'accelerators:' and/or 'links:' list")
        accelerators, links = dict(self.accelerators), dict(self.links)
        for key, model, target in (("accelerators", Accelerator, accelerators), ("links", Link, links)):
            entries = data.get(key) or []
            if not isinstance(entries, list):
                raise InputError(f"{origin}: {key}", "must be a list of entries")
            for i, entry in enumerate(entries):
                where = f"{origin}: {key}[{i}]"
                if isinstance(entry, dict) and "name" not in entry and entry.get("id") in target:
                    entry = _merged(target[entry["id"]].model_dump(exclude_unset=True), entry)
                parsed = _parse(model, entry, where)
                target[parsed.id] = parsed
        return Catalog(accelerators, links)


def _merged(base: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """``patch`` merged into ``base`` (a shipped entry): mappings key by key; in ``availability`` each
    market is merged, its ``buy``/``rent`` entries replaced whole; anything else replaced."""
    out = dict(base)
    for key, value in patch.items():
        old = out.get(key)
        if not (isinstance(value, dict) and isinstance(old, dict)):
            out[key] = value
        elif key == "availability":
            out[key] = {**old, **{m: {**old[m], **v} if isinstance(v, dict) and isinstance(old.get(m), dict) else v
                                  for m, v in value.items()}}
        else:
            out[key] = {**old, **value}
    return out


def _parse(model: type[BaseModel], entry: Any, where: str) -> Any:
    try:
        return model.model_validate(entry)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"])
        raise InputError(f"{where}.{loc}" if loc else where, err["msg"].lower()) from None


class _LazyEntries(Mapping[str, Any]):
    """Catalog entries validated on first use (start-up stays fast; a listing validates them all)."""

    def __init__(self, model: type[BaseModel], raw: list[dict[str, Any]], origin: str):
        self._model, self._origin = model, origin
        self._raw = {entry["id"]: entry for entry in raw}
        self._parsed: dict[str, Any] = {}

    def __getitem__(self, key: str) -> Any:
        if key not in self._parsed:
            self._parsed[key] = _parse(self._model, self._raw[key], self._origin)
        return self._parsed[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)


@cache
def default_catalog() -> Catalog:
    accelerators = packaged_yaml("trainsizer.hardware", "accelerators.yaml")["accelerators"]
    links = packaged_yaml("trainsizer.hardware", "links.yaml")["links"]
    return Catalog(_LazyEntries(Accelerator, accelerators, "accelerators.yaml"),  # type: ignore[arg-type]
                   _LazyEntries(Link, links, "links.yaml"))  # type: ignore[arg-type]


def load_catalog(paths: list[str | Path] | None = None) -> Catalog:
    """The shipped catalog extended by each user file in ``paths``, in order."""
    catalog = default_catalog()
    for path in paths or []:
        catalog = catalog.extended(user_yaml(path, field="catalog"), str(path))
    return catalog


def inline_accelerator(spec: Any) -> Accelerator:
    """An Accelerator from a scenario's inline ``hardware.gpu: {name, memory_gib, ...}``."""
    rates = Rates(bf16=spec.bf16_tflops, fp16=spec.fp16_tflops or spec.bf16_tflops, fp8=spec.fp8_tflops,
                  fp32=spec.fp32_tflops)
    return Accelerator(id=spec.name, name=spec.name, memory_gib=spec.memory_gib,
                       memory_bandwidth_gbps=spec.hbm_gbps, dense_tflops=rates, tdp_w=spec.tdp_w,
                       source="inline spec in the scenario", as_of="n/a")
