"""What a plan option needs bought: the bill of materials that system sizing hands to costing."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Inventory:
    """What a plan option needs bought (from the system sizing)."""

    gpu: str
    gpus: int
    gpus_per_node: int
    nodes: int
    storage_tb: float
    local_nvme_tb_per_node: float
    nics_per_node: int
    switches: int
    cables: int
    racks: int
    typical_it_kw: float
    fabric: str | None
