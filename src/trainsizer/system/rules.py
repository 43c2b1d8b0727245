"""Loading the sizing constants and rounding to what can be bought."""

from __future__ import annotations

import math
from functools import cache
from typing import TYPE_CHECKING, Any

from trainsizer.datafiles import packaged_yaml

if TYPE_CHECKING:
    from trainsizer.hardware.catalog import Accelerator


@cache
def sizing_rules() -> dict[str, Any]:
    return packaged_yaml("trainsizer.system", "sizing.yaml")


def round_up(value: float, sizes: list[float]) -> float:
    """The smallest standard size that holds ``value`` (beyond the largest: multiples of it)."""
    for size in sizes:
        if value <= size:
            return size
    return math.ceil(value / sizes[-1]) * sizes[-1]


def baseboard_class(gpu: Accelerator) -> bool:
    """Modules on a baseboard with a scale-up fabric (HGX SXM, OAM UBB, Ascend NPU boards) or a rack-scale
    NVL system: one scale-out NIC per GPU (DGX SuperPOD rail-optimised design; Atlas 800T A2: 8 x 200GE
    parameter-plane ports for 8 NPUs) and the host power of an SXM-class server. Decided by the catalog's
    ``server_form``; entries without it fall back to the form-factor prefix (sxm*, oam*)."""
    if gpu.server_form is not None:
        return gpu.server_form in ("baseboard", "rack-scale-nvl72")
    return bool(gpu.form_factor and gpu.form_factor.lower().startswith(("sxm", "oam")))


def rack_scale_system(gpu: Accelerator) -> dict[str, Any] | None:
    """The sizing.yaml ``power.rack_scale`` entry when the part is sold only as whole racks (GB200 NVL72), else None."""
    if gpu.server_form is None:
        return None
    return sizing_rules()["power"].get("rack_scale", {}).get(gpu.server_form)
