"""Power per server and in total, heat, racks, and whether the plan fits a site.

Server power = GPUs x TDP + host (CPUs, memory, NICs, NVSwitch, fans, PSU losses), fitted to the
DGX H100 / DGX A100 maxima (sizing.yaml). A rack must be provisioned for the servers' maximum;
cooling must remove what they draw. When one server exceeds a rack, the options are: cap GPU
power (throughput ~ cap^0.5 above 60 % of TDP), smaller servers, or another site.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from trainsizer.hardware.catalog import Accelerator
from trainsizer.system.rules import sizing_rules
from trainsizer.system.sites import Site


@dataclass(frozen=True)
class PowerSizing:
    node_kw: float  # nameplate maximum of one server
    total_it_kw: float
    typical_it_kw: float
    facility_kw: float  # typical IT x PUE
    heat_btu_per_h: float

    def to_dict(self) -> dict[str, Any]:
        return {"server_max_kw": round(self.node_kw, 2), "total_it_max_kw": round(self.total_it_kw, 1),
                "typical_it_kw": round(self.typical_it_kw, 1), "facility_kw": round(self.facility_kw, 1),
                "heat_btu_per_h": round(self.heat_btu_per_h)}


@dataclass
class SiteFit:
    site: str
    fits: bool
    servers_per_rack: int
    racks: int
    verdict: str
    remedies: list[str] = field(default_factory=list)
    power_cap_w: float | None = None
    power_cap_throughput: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"site": self.site, "fits": self.fits, "servers_per_rack": self.servers_per_rack,
                "racks": self.racks, "verdict": self.verdict, "remedies": self.remedies,
                "power_cap_w": self.power_cap_w, "power_cap_throughput": self.power_cap_throughput}


def server_kw(gpu: Accelerator, gpus_per_node: int, published_max_kw: float | None = None) -> float:
    if published_max_kw:
        return published_max_kw
    r = sizing_rules()["power"]
    gpu_kw = gpus_per_node * (gpu.tdp_w or 300) / 1000
    sxm = bool(gpu.form_factor and gpu.form_factor.lower().startswith(("sxm", "oam")))
    frac = r["host_per_gpu_kw_fraction_sxm"] if sxm else r["host_per_gpu_kw_fraction_pcie"]
    return gpu_kw + r["host_base_kw"] + frac * gpu_kw


def size_power(gpu: Accelerator, gpus_per_node: int, nodes: int, pue: float,
               published_max_kw: float | None = None) -> PowerSizing:
    r = sizing_rules()["power"]
    node = server_kw(gpu, gpus_per_node, published_max_kw)
    total = node * nodes
    typical = total * r["typical_load_fraction"]
    return PowerSizing(node, total, typical, typical * pue, typical * r["kw_to_btu_per_h"])


def fit_site(site: Site, gpu: Accelerator, gpus_per_node: int, nodes: int, node_kw: float) -> SiteFit:
    r = sizing_rules()["power"]
    usable = min(site.rack_power_kw * r["rack_continuous_load_fraction"], site.cooling_kw_per_rack)
    per_rack = int(usable // node_kw)
    extra_racks = math.ceil(nodes / r["network_rack_per_nodes"]) if nodes > 1 else 0
    if per_rack >= 1:
        racks = math.ceil(nodes / per_rack) + extra_racks
        binding = "power" if site.rack_power_kw * r["rack_continuous_load_fraction"] <= site.cooling_kw_per_rack \
            else "cooling"
        verdict = (f"fits: {per_rack} server(s) of {node_kw:.1f} kW per rack ({usable:g} kW usable of "
                   f"{site.rack_power_kw:g} kW; {binding} binds), "
                   f"{racks} racks incl. {extra_racks} for network/storage")
        return SiteFit(site.id, True, per_rack, racks, verdict)
    # one server does not fit one rack
    gpus_kw = gpus_per_node * (gpu.tdp_w or 300) / 1000
    host_kw = node_kw - gpus_kw
    cap_fraction = (usable - host_kw) / gpus_kw if gpus_kw else 0.0
    remedies = []
    cap_w = throughput = None
    if cap_fraction >= r["min_cap_fraction"]:
        cap_w = round(cap_fraction * (gpu.tdp_w or 300))
        throughput = cap_fraction ** r["cap_throughput_exponent"]
        remedies.append(f"cap each GPU at {cap_w} W (nvidia-smi -pl {cap_w}): one server per rack, "
                        f"about {throughput:.0%} of full throughput")
    else:
        remedies.append(f"power capping cannot bring a {node_kw:.1f} kW server under {usable:g} kW "
                        f"(it would need {max(cap_fraction, 0):.0%} of TDP)")
    if gpus_per_node > 4:
        remedies.append(f"use {gpus_per_node // 2}-GPU servers (about {node_kw / 2 + host_kw / 4:.1f} kW each) "
                        "- loses the 8-GPU NVLink domain")
    remedies.append("host in a higher-density or liquid-cooled site (30-60+ kW per rack)")
    why = ("cooling" if site.cooling_kw_per_rack < site.rack_power_kw * r["rack_continuous_load_fraction"]
           else "power")
    verdict = (f"does NOT fit: one {node_kw:.1f} kW server exceeds the {usable:g} kW usable of a "
               f"{site.rack_power_kw:g} kW rack ({why} limit, 80 % continuous load, {site.cooling} cooling)")
    racks = nodes + extra_racks
    return SiteFit(site.id, False, 0, racks, verdict, remedies, cap_w, throughput)
