"""Scale-out network: NICs per node, InfiniBand or RoCE with the reason, leaf/spine counts.

Rail-optimised two-level fat tree (NVIDIA DGX SuperPOD reference architecture): NIC i of every
node goes to the leaf switches of rail i; each leaf uses half its ports down and half up to the
spines. A 32-node H100 scalable unit with 64-port switches gives 8 leaves and 4 spines.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from trainsizer.messages import Message, clauses, msg
from trainsizer.system.rules import sizing_rules

if TYPE_CHECKING:  # the JSON's types, for annotations
    from trainsizer.plan.option_json import NetworkJSON


@dataclass(frozen=True)
class NetworkSizing:
    """The scale-out network of the servers: fabric, NICs, switches and cables."""

    fabric: str | None  # link id, None for one server
    reason: Message
    nics_per_node: int
    leaf_switches: int
    spine_switches: int
    cables: int

    def to_dict(self) -> NetworkJSON:
        return {"fabric": self.fabric, "reason": self.reason, "nics_per_node": self.nics_per_node,
                "leaf_switches": self.leaf_switches, "spine_switches": self.spine_switches, "cables": self.cables}


def size_network(nodes: int, gpus_per_node: int, gpus: int, chosen: str | None, sxm_class: bool,
                 default_fabric: str) -> NetworkSizing:
    """``chosen``: the plan's fabric (None: none given); ``default_fabric``: the network the part's servers come
    with (``hardware.scale_out.default_scale_out``: roce-200 for Ascend, else the host PCIe generation's
    InfiniBand), used when none is chosen. A part whose own fabric is RoCE never gets InfiniBand: its servers ship
    RoCE ports (Atlas 800T A2 parameter plane, china-market.md section 2b)."""
    r = sizing_rules()["network"]
    if nodes <= 1:
        return NetworkSizing(None, msg("system.net_one_server"), 0, 0, 0, 0)
    nics = gpus_per_node if (sxm_class and gpus_per_node >= r["rail_optimised_min_gpus_per_node"]) \
        else r["pcie_server_nics"]
    roce_only = default_fabric.startswith("roce")
    fabric = chosen or default_fabric
    replaced = None
    if roce_only and not fabric.startswith("roce"):
        replaced = msg("system.net_replaced_by", fabric=str(chosen), fabric2=str(default_fabric))
        fabric = default_fabric
    if roce_only and gpus >= r["ib_above_gpus"]:
        parts = [msg("system.net_own_fabric", n_gpus=gpus, fabric=fabric), msg("system.net_roce_tuning")]
    elif gpus >= r["ib_above_gpus"]:
        parts = [msg("system.net_ib", n_gpus=gpus), msg("system.net_roce_strained")]
        if fabric.startswith("roce"):
            fabric = fabric.replace("roce", "ib-ndr") if "400" in fabric else "ib-hdr-200"
            parts.append(msg("system.net_replaced", fabric=str(chosen)))
    elif fabric.startswith("roce"):
        parts = [msg("system.net_roce_own_fabric", n_gpus=gpus, fabric=fabric) if roce_only
                 else msg("system.net_roce_adequate", n_gpus=gpus)]
    else:
        parts = [msg("system.net_either", n_gpus=gpus, fabric=fabric)]
    reason = clauses([*parts, replaced])
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
