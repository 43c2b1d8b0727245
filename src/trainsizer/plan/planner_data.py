"""``planner.yaml`` as types: the figures the planner applies on top of the estimators, each section with its
source (the file's comments say where each figure comes from)."""

# Annotations stay objects here (no `from __future__ import annotations`): pydantic reads each field's type as
# is, without compiling its text into a ForwardRef first (~0.1 ms a model class, at every command's import).
from functools import cache

from pydantic import BaseModel, ConfigDict, Field

from trainsizer.datafiles import packaged_yaml
from trainsizer.input_checks import Int, IsoDate, Number, checked_once, parse_model

_SECTION = ConfigDict(extra="forbid", frozen=True, defer_build=True)  # built when a file is checked


class HostMemory(BaseModel):
    """Host RAM a training server carries per GPU, and the share of it CPU offload may use."""

    model_config = _SECTION
    gib_per_gpu: Number = Field(gt=0)
    usable_fraction: Number = Field(gt=0, le=1)
    source: str = Field(min_length=1)

    @property
    def usable_gib_per_gpu(self) -> float:
        return self.gib_per_gpu * self.usable_fraction


class DeliveryLeadTime(BaseModel):
    """Order to delivery of new GPU servers, in days (low, high)."""

    model_config = _SECTION
    days: tuple[Int, Int]
    status: str
    source: str = Field(min_length=1)
    as_of: IsoDate


class AdapterMethods(BaseModel):
    """The training methods whose usual stacks shard with data parallelism only."""

    model_config = _SECTION
    methods: tuple[str, ...]
    source: str = Field(min_length=1)
    as_of: IsoDate


class Setup(BaseModel):
    """A rented instance's minutes from start to the first step: start, weights downloaded and loaded."""

    model_config = _SECTION
    start_minutes: Number = Field(ge=0)
    download_mb_per_s: Number = Field(gt=0)
    load_gb_per_s: Number = Field(gt=0)
    bytes_per_param: Number = Field(gt=0)
    status: str
    source: str = Field(min_length=1)
    as_of: IsoDate


class PlannerData(BaseModel):
    """The whole of ``planner.yaml``."""

    model_config = _SECTION
    schema_version: Int
    as_of: IsoDate
    host_memory: HostMemory
    delivery_lead_time: DeliveryLeadTime
    adapter_methods: AdapterMethods
    setup: Setup


@cache
def planner_data() -> PlannerData:
    """``planner.yaml``, checked once and kept in the user's cache folder (``input_checks.checked_once``: keyed on
    the file and the code that checks it), else checked here."""
    done = checked_once("planner", "trainsizer.plan", ["planner.yaml"], __file__, _checked)
    return _checked() if done is None else done


def _checked() -> PlannerData:
    return parse_model(PlannerData, packaged_yaml("trainsizer.plan", "planner.yaml"), "planner.yaml")
