"""Scale-out network: NICs per node, InfiniBand or RoCE with the reason, leaf/spine counts.

Rail-optimised two-level fat tree (NVIDIA DGX SuperPOD reference architecture): NIC i of every
node goes to the leaf switches of rail i; each leaf uses half its ports down and half up to the
spines. A 32-node H100 scalable unit with 64-port switches gives 8 leaves and 4 spines.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from trainsizer.system.rules import sizing_rules


@dataclass(frozen=True)
class NetworkSizing:
    fabric: str | None  # link id, None for one server
    reason: str
    nics_per_node: int
    leaf_switches: int
    spine_switches: int
    cables: int

    def to_dict(self) -> dict[str, Any]:
        return {"fabric": self.fabric, "reason": self.reason, "nics_per_node": self.nics_per_node,
                "leaf_switches": self.leaf_switches, "spine_switches": self.spine_switches, "cables": self.cables}


def size_network(nodes: int, gpus_per_node: int, gpus: int, chosen: str | None, sxm_class: bool) -> NetworkSizing:
    r = sizing_rules()["network"]
    if nodes <= 1:
        return NetworkSizing(None, "one server: no scale-out fabric (front-end network only)", 0, 0, 0, 0)
    nics = gpus_per_node if (sxm_class and gpus_per_node >= r["rail_optimised_min_gpus_per_node"]) \
        else r["pcie_server_nics"]
    fabric = chosen or "ib-ndr-400"
    if gpus >= r["ib_above_gpus"]:
        reason = (f"{gpus} GPUs: InfiniBand (adaptive routing, SHARP); the seed guide finds RoCE strained "
                  f"beyond ~100 GPUs")
        if fabric.startswith("roce"):
            fabric = fabric.replace("roce", "ib-ndr") if "400" in fabric else "ib-hdr-200"
            reason += f"; {chosen} replaced"
    elif fabric.startswith("roce"):
        reason = f"{gpus} GPUs: RoCE is adequate below ~100 GPUs and cheaper than InfiniBand"
    else:
        reason = f"{gpus} GPUs: {fabric} (RoCE would also do at this size)"
    radix = r["leaf_radix"].get(fabric, 64)
    ports = nodes * nics
    if ports <= radix:
        leaves, spines, cables = 1, 0, ports  # one switch takes every rail
    else:
        down = radix // 2  # non-blocking: half the leaf ports down, half up
        leaves = math.ceil(ports / down)
        uplinks = math.ceil(ports / leaves)
        spines = math.ceil(leaves * uplinks / radix)
        cables = ports + leaves * uplinks
    return NetworkSizing(fabric, reason, nics, leaves, spines, cables)
