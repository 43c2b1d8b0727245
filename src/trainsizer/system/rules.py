"""Loading the sizing constants and rounding to what can be bought."""

# Annotations stay objects here (no `from __future__ import annotations`): pydantic reads each field's type as
# is, without compiling its text into a ForwardRef first (~0.1 ms a model class, at every command's import).
import math
from functools import cache
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from trainsizer.datafiles import packaged_yaml
from trainsizer.input_checks import checked_once

if TYPE_CHECKING:
    from trainsizer.hardware.catalog import Accelerator


@cache
def sizing_rules() -> dict[str, Any]:
    return packaged_yaml("trainsizer.system", "sizing.yaml")


class _Rules(BaseModel):
    # the sources and notes beside the figures stay in the file; the schema is built when a figure is checked
    model_config = ConfigDict(frozen=True, extra="ignore", defer_build=True)


class IopsRules(_Rules):
    """sizing.yaml ``storage.iops``: the random-I/O figures (each with its source there)."""

    ios_per_small_file: int
    small_file_read_io_bytes: int
    large_io_bytes: int
    checkpoint_files_per_rank: int
    metadata_ios_per_file: int
    nvme_random_read_iops_per_drive: int
    shared_fs_delivered_fraction: float
    minimum_config_drives: int
    seed_rule_iops: int
    seed_rule_min_params: int


class StorageRules(_Rules):
    """sizing.yaml ``storage``: what the storage sizing reads."""

    tokenised_bytes_per_token_small_vocab: int
    tokenised_bytes_per_token: int
    raw_text_bytes_per_token: int
    checkpoints_kept: int
    checkpoint_interval_s: int
    checkpoint_stall_fraction: float
    capacity_headroom: float
    read_safety_factor: float
    local_nvme_drive_tb: tuple[float, ...]
    seed_rule_gb_per_s_per_tflops: int
    iops: IopsRules


@cache
def storage_rules() -> StorageRules:
    """sizing.yaml's storage figures, checked once and kept in the user's cache folder (``input_checks.checked_once``:
    keyed on the file and the code that checks it), else checked here."""
    done = checked_once("storage-rules", "trainsizer.system", ["sizing.yaml"], __file__, _checked_storage_rules)
    return _checked_storage_rules() if done is None else done


def _checked_storage_rules() -> StorageRules:
    return StorageRules.model_validate(sizing_rules()["storage"])


class RackScaleSystem(_Rules):
    """sizing.yaml ``power.rack_scale.<server_form>``: a part sold only as whole racks (its source there)."""

    gpus_per_rack: int
    rack_kw: float
    cooling: str


def round_up(value: float, sizes: list[float]) -> float:
    """The smallest standard size that holds ``value`` (beyond the largest: multiples of it)."""
    for size in sizes:
        if value <= size:
            return size
    return math.ceil(value / sizes[-1]) * sizes[-1]


def baseboard_class(gpu: "Accelerator") -> bool:
    """Modules on a baseboard with a scale-up fabric (HGX SXM, OAM UBB, Ascend NPU boards) or a rack-scale
    NVL system: one scale-out NIC per GPU (DGX SuperPOD rail-optimised design; Atlas 800T A2: 8 x 200GE
    parameter-plane ports for 8 NPUs) and the host power of an SXM-class server. Decided by the catalog's
    ``server_form``; entries without it fall back to the form-factor prefix (sxm*, oam*)."""
    if gpu.server_form is not None:
        return gpu.server_form in ("baseboard", "rack-scale-nvl72")
    return bool(gpu.form_factor and gpu.form_factor.lower().startswith(("sxm", "oam")))


def rack_scale_system(gpu: "Accelerator") -> RackScaleSystem | None:
    """The sizing.yaml ``power.rack_scale`` entry when the part is sold only as whole racks (GB200 NVL72), else None."""
    return None if gpu.server_form is None else _rack_scale(gpu.server_form)


@cache
def _rack_scale(server_form: str) -> RackScaleSystem | None:
    entry = sizing_rules()["power"].get("rack_scale", {}).get(server_form)
    return None if entry is None else RackScaleSystem.model_validate(entry)
