"""The hardware catalog: accelerators and links, shipped as YAML, extended by users' YAML files.

A user file has the same shape as the shipped ones (``accelerators:`` and/or ``links:`` lists):

- an entry with a new ``id`` is added (it must be complete: ``name``, ``memory_gib``, ``source``, ``as_of``);
- an entry whose ``id`` already exists and that has a ``name`` replaces the shipped entry as a whole;
- an entry whose ``id`` already exists and that has NO ``name`` is a patch: its fields are merged into the
  shipped entry (mappings such as ``availability``, ``dense_tflops`` or ``scale_up`` key by key; inside
  ``availability`` each market's ``buy``/``rent`` entry is replaced whole), everything else is kept.
  The smallest useful patch is ``{id: h200-sxm-141gb, availability: {cn: {buy: {...}}}}``.
"""

# Annotations stay objects here (no `from __future__ import annotations`): pydantic reads each field's type as
# is, without compiling its text into a ForwardRef first (~0.1 ms a model class, at every command's import).
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Generic, Literal, TypeVar, get_args

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer, ValidatorFunctionWrapHandler, field_validator

from trainsizer.datafiles import packaged_yaml, user_yaml
from trainsizer.errors import InputError
from trainsizer.input_checks import Flag, Int, IsoDate, Number, checked_once, known_keys, parse_model
from trainsizer.lookup import unknown_id

DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8", "fp4", "int8")
LinkScope = Literal["scale-up", "pcie", "scale-out"]
# the scopes a scenario's links may have: inside a node (NVLink, HCCS, xGMI, PCIe), between nodes (IB, RoCE, Ethernet)
INTRA_NODE_SCOPES: tuple[str, ...] = ("scale-up", "pcie")
INTER_NODE_SCOPES: tuple[str, ...] = ("scale-out",)
# the top-level keys of a catalog file (a link profile from `trainsizer probe comm` adds backend, measured_on,
# replaces; the shipped accelerators.yaml has availability_statements): only accelerators and links are read
FILE_KEYS = ("schema_version", "accelerators", "links", "availability_statements", "backend", "measured_on",
             "replaces")


# Markets and availability statuses: closed sets (what each means: hardware/market.py)
class Market(StrEnum):
    CN = "cn"  # mainland China: US export rules for China (country group D:5) and Chinese clouds/lessors
    GLOBAL = "global"  # everywhere else that is not under a US arms embargo


class Acquisition(StrEnum):
    BUY = "buy"  # bought new (a used or grey-market purchase does not count)
    RENT = "rent"  # rented per hour / month / year from a cloud or lessor in that market


class Status(StrEnum):
    YES = "yes"
    RESTRICTED = "restricted"
    NO = "no"
    UNKNOWN = "unknown"


# The kinds of reason a part can or cannot be had for (an availability entry's ``reason_code``), each said by the
# message ``availability.<code>``: what a reader is told; the entry's ``reason`` is its own sentence (quoted data)
ReasonCode = Literal[
    "sold_new", "sold_as_racks", "china_market_part", "below_export_limits", "domestic_part",  # can be had
    "export_licence",  # only under a US export licence
    "export_banned", "end_of_life", "china_market_only", "domestic_market_only", "no_public_sku",  # cannot be bought
    "rental_offers", "no_rental_offer", "no_known_offer",  # rented or not
    "not_established"]  # the sources found do not settle it
REASON_CODES: tuple[str, ...] = get_args(ReasonCode)

MARKETS: tuple[str, ...] = tuple(m.value for m in Market)
ACQUISITIONS: tuple[str, ...] = tuple(a.value for a in Acquisition)
STATUSES: tuple[str, ...] = tuple(s.value for s in Status)

Tflops = Annotated[Number, Field(gt=0, le=1e6)]  # a dense or sparse peak; absent (null) when the part has none
Bandwidth = Annotated[Number, Field(gt=0, le=1e6)]  # GB/s


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True, allow_inf_nan=False)


class Rates(_Entry):
    fp32: Tflops | None = None
    tf32: Tflops | None = None
    bf16: Tflops | None = None
    fp16: Tflops | None = None
    fp8: Tflops | None = None
    fp4: Tflops | None = None
    int8: Tflops | None = None


class ScaleUp(_Entry):
    link: str | None = None
    bidirectional_gbps_per_gpu: Bandwidth | None = None
    max_gpus: Int | None = Field(None, ge=1, le=1_000_000)


class AvailabilityEntry(_Entry):
    """Whether a part can be bought new / rented in one market, and why (see hardware/market.py)."""

    status: Status  # yes | restricted | no | unknown
    reason_code: ReasonCode | None = None  # the kind of reason, what a reader is told (None: a user's entry)
    reason: str = Field(min_length=1)  # one line: the entry's own sentence, quoted as data
    source: str = Field(min_length=1)  # a public address (URL, or repository + path + commit)
    as_of: IsoDate  # the date of the fact
    read_on: IsoDate | None = None  # the day the source was read, where it differs
    relay: str | None = None  # the public page that relayed it, where it was not read at the source
    kind: Literal["estimate"] | None = None  # inferred by this project (derived_from says from what)
    derived_from: str | None = None
    confidence: Literal["H", "M", "L"] | None = None

    @field_validator("status", mode="before")
    @classmethod
    def _yaml_booleans(cls, value: Any) -> Any:
        # YAML 1.1 reads a bare yes/no as a boolean
        return {True: "yes", False: "no"}.get(value, value) if isinstance(value, bool) else value


class MarketAvailability(_Entry):
    buy: AvailabilityEntry | None = None  # bought new
    rent: AvailabilityEntry | None = None  # rented from a cloud or lessor in that market


ServerForm = Literal["pcie-server", "baseboard", "rack-scale-nvl72"]
Cooling = Literal["air", "liquid", "air-or-liquid"]


class Accelerator(_Entry):
    """One GPU or accelerator. TFLOPS are dense peaks; sparse ones are kept apart."""

    id: str
    name: str
    vendor: str = "unknown"
    architecture: str | None = None
    memory_gb: Number | None = Field(None, gt=0, le=100_000)
    memory_gib: Number = Field(gt=0, le=100_000)
    memory_type: str | None = None
    memory_bandwidth_gbps: Bandwidth | None = None
    dense_tflops: Rates = Field(default_factory=Rates)
    sparse_tflops: Rates = Field(default_factory=Rates)
    fp16_accumulate_tflops: Tflops | None = None
    scale_up: ScaleUp | None = None
    pcie_gen: Int | None = Field(None, ge=1, le=9)
    p2p: Flag | None = None
    tdp_w: Number | None = Field(None, gt=0, le=100_000)
    # the share of the nominal peak a power-limited card sustains in training (None: all of it)
    sustained_fraction: Number | None = Field(None, gt=0, le=1)
    # measured bf16 matmul TFLOPS (best torch.mm of square sizes) over the nominal dense peak (None: not measured);
    # above 1 where the part boosts past the clock its nominal figure assumes
    matmul_fraction: Number | None = Field(None, gt=0, le=1.5)
    form_factor: str | None = None
    default_intra_node: str | None = None
    # link id of the usual scale-out network for this part (e.g. roce-200 for Ascend: never InfiniBand);
    # None = no vendor constraint (the planner's own choice applies)
    default_inter_node: str | None = None
    # how the part is sold: PCIe cards in a 4/8-card chassis, modules on a baseboard with a scale-up fabric
    # (HGX, OAM UBB, Atlas NPU board), or a whole liquid-cooled NVL72 rack that is one scale-up domain
    server_form: ServerForm | None = None
    gpus_per_node: Int | None = Field(None, ge=1, le=1024)  # per server, or per rack-scale system (NVL72: 72)
    cooling: Cooling | None = None  # what the standard system requires (None = not stated by the sources)
    availability: dict[Market, MarketAvailability] = Field(default_factory=dict)
    source: str
    as_of: IsoDate | Literal["n/a"]  # n/a: an inline spec in a scenario (no source to date)
    notes: str | None = None
    field_sources: dict[str, str] | None = None

    def peak_tflops(self, dtype: str) -> float | None:
        return getattr(self.dense_tflops, dtype)


class BusbwPoint(_Entry):
    """One published or measured all-reduce bus bandwidth of a link (nccl-tests, or `trainsizer probe comm`)."""

    setup: str | None = None
    busbw_gbps: Bandwidth
    source: str | None = None
    # the NCCL algorithm where the source names it: 'nvls' (NVLink SHARP: the switch reduces, so an all-reduce's busbw
    # is not the wire's; NCCL's default all-reduce on Hopper and Blackwell NVSwitch nodes) or 'ring'
    algorithm: Literal["ring", "nvls"] | None = None


def _as_dicts(raw: Any, points: list[BusbwPoint] | None) -> list[dict[str, Any]] | None:
    """The validated points as the mappings they were given as (a number given as text becomes a number)."""
    if points is None:
        return None
    return [{**given, "busbw_gbps": given["busbw_gbps"] if type(given["busbw_gbps"]) in (int, float) else
             point.busbw_gbps} if isinstance(given, dict) else point.model_dump(exclude_unset=True)
            for given, point in zip(raw, points, strict=True)]


# validated point by point, kept as plain mappings (the estimator and the probes read them as such)
BusbwPoints = Annotated[list[BusbwPoint] | None, PlainSerializer(lambda v: v)]


class Link(_Entry):
    id: str
    name: str
    scope: LinkScope  # scale-up (NVLink, HCCS, xGMI) | pcie | scale-out (InfiniBand, RoCE, Ethernet)
    per_direction_gbps: Bandwidth
    bidirectional_gbps: Bandwidth | None = None
    line_rate_gbit: Number | None = Field(None, gt=0, le=1e6)
    latency_us: Number | None = Field(None, ge=0, le=1e6)
    measured_allreduce_busbw_gbps: BusbwPoints = None
    # True in a profile from `trainsizer probe comm`: the estimator uses the measured busbw even for a scale-out
    # link (the shipped NIC entries keep their line-rate fraction; their measured figures are context only).
    prefer_measured: Flag = False
    source: str
    as_of: IsoDate
    notes: str | None = None
    field_sources: dict[str, str] | None = None

    @field_validator("measured_allreduce_busbw_gbps", mode="wrap")
    @classmethod
    def _plain(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> list[dict[str, Any]] | None:
        return _as_dicts(value, handler(value))


@dataclass(frozen=True)
class Catalog:
    """The GPUs and links the estimators and the planner know, by id (shipped, with the user's files over them)."""

    accelerators: Mapping[str, Accelerator] = field(default_factory=dict)
    links: Mapping[str, Link] = field(default_factory=dict)

    def accelerator(self, gpu_id: str, field_name: str = "hardware.gpu") -> Accelerator:
        if gpu_id not in self.accelerators:
            raise unknown_id(field_name, gpu_id, self.accelerators)
        return self.accelerators[gpu_id]

    def link(self, link_id: str, field_name: str = "hardware.intra_node",
             scopes: tuple[str, ...] | None = None) -> Link:
        """The link ``link_id``; with ``scopes``, it must be one of them (an InfiniBand link is never inside a node,
        NVLink never between nodes): else one InputError naming ``field_name`` and the links of those scopes."""
        if link_id not in self.links:
            raise unknown_id(field_name, link_id, self.links)
        link = self.links[link_id]
        if scopes and link.scope not in scopes:
            where = "between nodes" if "scale-out" in scopes else "inside a node"
            fitting = [k for k, v in self.links.items() if v.scope in scopes]
            close = [k for k in fitting if k.split("-")[0] == link_id.split("-")[0]][:4] or fitting[:4]
            raise InputError(field_name, f"{link_id!r} is a {link.scope} link, not one {where}; accepted: a "
                             f"{' or '.join(scopes)} link, e.g. {', '.join(close)} (trainsizer catalog links)")
        return link

    def extended(self, data: Any, origin: str) -> "Catalog":
        """A new catalog with the entries of ``data`` (a parsed user file) added or replaced."""
        if not isinstance(data, dict) or not ({"accelerators", "links"} & set(data)):
            raise InputError(origin, "a catalog file needs an 'accelerators:' and/or 'links:' list")
        known_keys(data, FILE_KEYS, f"{origin}:")
        accelerators, links = dict(self.accelerators), dict(self.links)
        added: list[tuple[str, Accelerator]] = []
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
                if isinstance(parsed, Accelerator):
                    added.append((where, parsed))
        catalog = Catalog(accelerators, links)
        for where, gpu in added:
            _check_links_of(gpu, catalog, where)
        return catalog


def _check_links_of(gpu: Accelerator, catalog: Catalog, where: str) -> None:
    """The links a user's GPU entry names exist and sit in their scope (its usual link inside a node is not
    InfiniBand; its network between nodes is not NVLink)."""
    if gpu.default_intra_node:
        catalog.link(gpu.default_intra_node, f"{where}.default_intra_node", INTRA_NODE_SCOPES)
    if gpu.default_inter_node:
        catalog.link(gpu.default_inter_node, f"{where}.default_inter_node", INTER_NODE_SCOPES)
    if gpu.scale_up and gpu.scale_up.link:
        catalog.link(gpu.scale_up.link, f"{where}.scale_up.link", INTRA_NODE_SCOPES)


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


E = TypeVar("E", bound=BaseModel)


def _parse(model: type[E], entry: Any, where: str) -> E:
    return parse_model(model, entry, where)


class _LazyEntries(Mapping[str, E], Generic[E]):
    """Catalog entries validated on first use (start-up stays fast; a listing validates them all)."""

    def __init__(self, model: type[E], raw: list[dict[str, Any]], origin: str):  # raw: the YAML's entries
        self._model, self._origin = model, origin
        self._raw = {entry["id"]: entry for entry in raw}
        self._parsed: dict[str, E] = {}

    def __getitem__(self, key: str) -> E:
        if key not in self._parsed:
            self._parsed[key] = _parse(self._model, self._raw[key], self._origin)
        return self._parsed[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)


@cache
def default_catalog() -> Catalog:
    """The shipped catalog: its entries checked once and kept in the user's cache folder (``cached_objects``:
    keyed on the data files and the code that checks them), else checked as they are used."""
    def checked() -> tuple[dict[str, Accelerator], dict[str, Link]]:
        lazy = _lazy_catalog()
        return dict(lazy.accelerators.items()), dict(lazy.links.items())

    done = checked_once("catalog", "trainsizer.hardware", ["accelerators.yaml", "links.yaml"], __file__, checked)
    return _lazy_catalog() if done is None else Catalog(*done)


def _lazy_catalog() -> Catalog:
    """The shipped catalog with each entry checked on first use (start-up stays fast)."""
    accelerators = packaged_yaml("trainsizer.hardware", "accelerators.yaml")["accelerators"]
    links = packaged_yaml("trainsizer.hardware", "links.yaml")["links"]
    return Catalog(_LazyEntries(Accelerator, accelerators, "accelerators.yaml"),
                   _LazyEntries(Link, links, "links.yaml"))


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
