"""What parallel layouts a framework release runs (a profile's ``parallelism``): tensor, pipeline and context
parallelism, which sharding of the training states (ZeRO stages, Megatron's distributed optimizer), what it offloads
to the host and whose accelerators it trains on, each read from the release's source. An estimate under a named
framework refuses a layout its profile says the release does not run; the planner searches only the layouts it runs.
A fact a profile leaves out restricts nothing (not read: the layout is not refused)."""

# Annotations stay objects here (no `from __future__ import annotations`): pydantic reads each field's type as
# is, without compiling its text into a ForwardRef first (~0.1 ms a model class, at every command's import).
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from trainsizer.scenario import ParallelSpec

Vendor = Literal["nvidia", "amd", "huawei", "hygon", "moorethreads"]
OffloadKind = Literal["optimizer", "optimizer+params"]


class _Cited(BaseModel):
    """A fact read from a source: the line it is read from (``quote``), or, for what a release lacks, what was
    searched and not found there (``looked``)."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)
    source: str = Field(min_length=1)
    quote: str | None = Field(None, min_length=1)
    looked: str | None = Field(None, min_length=1)

    @model_validator(mode="after")
    def _read(self) -> "_Cited":
        if self.quote is None and self.looked is None:
            raise ValueError("quote (the source line) or looked (what was searched and not found) is needed")
        return self


class Runs(_Cited):
    """Whether the release runs one kind of model parallelism."""

    runs: bool


class Sharding(_Cited):
    """The ZeRO stages the release shards the training states with (0: none; DeepSpeed ZeRO 1-3; FSDP FULL_SHARD = 3,
    SHARD_GRAD_OP = 2), and whether it runs Megatron's distributed optimizer (optimizer states and fp32 master
    weights sharded over the data-parallel ranks, beside tensor and pipeline parallelism)."""

    stages: list[Literal[0, 1, 2, 3]] = Field(min_length=1)
    distributed_optimizer: bool = False


class Offload(_Cited):
    """What the release can keep in host memory instead of the GPU's, as ``parallel.offload`` says it (empty:
    nothing)."""

    runs: list[OffloadKind]


class Vendors(_Cited):
    """Whose accelerators the release trains on (the catalog's ``vendor``)."""

    runs: list[Vendor] = Field(min_length=1)


class Parallelism(BaseModel):
    """A profile's ``parallelism``: each fact optional (left out: not read, nothing refused)."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)
    tensor: Runs | None = None
    pipeline: Runs | None = None
    context: Runs | None = None
    sharding: Sharding | None = None
    offload: Offload | None = None
    vendors: Vendors | None = None

    def runs_axis(self, axis: Literal["tensor", "pipeline", "context"]) -> bool:
        """Whether the release runs ``axis`` (True where the profile does not say)."""
        fact = getattr(self, axis)
        return fact is None or fact.runs

    def zero_stages(self) -> tuple[int, ...]:
        return (0, 1, 2, 3) if self.sharding is None else tuple(self.sharding.stages)

    def distributed_optimizer(self) -> bool:
        return self.sharding is None or self.sharding.distributed_optimizer

    def offloads(self, offload: str) -> bool:
        """Whether the release runs ``parallel.offload`` ``offload`` ("none" always)."""
        return offload == "none" or self.offload is None or offload in self.offload.runs

    def runs_vendor(self, vendor: str) -> bool:
        return self.vendors is None or vendor in self.vendors.runs


@dataclass(frozen=True, slots=True)
class Refusal:
    """A layout field the release does not run: the field, its value, and what the release accepts instead."""

    field: str
    value: str
    accepted: str


def refusal(parallelism: Parallelism, par: ParallelSpec, vendor: str | None) -> Refusal | None:
    """The first field of ``par`` (and the accelerator's ``vendor``) that the release does not run, else None."""
    for axis, key in (("tensor", "tp"), ("pipeline", "pp"), ("context", "cp")):
        if getattr(par, key) > 1 and not parallelism.runs_axis(axis):
            return Refusal(f"parallel.{key}", str(getattr(par, key)), "1")
    stages = parallelism.zero_stages()
    if par.zero not in stages:
        return Refusal("parallel.zero", str(par.zero), ", ".join(map(str, stages)))
    if par.distributed_optimizer and not parallelism.distributed_optimizer():
        return Refusal("parallel.distributed_optimizer", "true", "false")
    if not parallelism.offloads(par.offload):
        accepted = [o for o in ("none", "optimizer", "optimizer+params") if parallelism.offloads(o)]
        return Refusal("parallel.offload", par.offload, ", ".join(accepted))
    if vendor is not None and not parallelism.runs_vendor(vendor):
        assert parallelism.vendors is not None
        return Refusal("hardware.gpu", vendor, ", ".join(parallelism.vendors.runs))
    return None


# the fact of a profile's ``parallelism`` each refused field is read from
_FACT = {"parallel.tp": "tensor", "parallel.pp": "pipeline", "parallel.cp": "context", "parallel.zero": "sharding",
         "parallel.distributed_optimizer": "sharding", "parallel.offload": "offload", "hardware.gpu": "vendors"}


def admits(parallelism: Parallelism, par: ParallelSpec, vendor: str | None, field: str) -> bool:
    """Whether a release's profile states that it runs what ``field`` of ``par`` (or the ``vendor``) asks: a
    framework to name instead of one that does not (a profile silent on it is not named)."""
    return getattr(parallelism, _FACT[field]) is not None and refusal(parallelism, par, vendor) is None
