"""Power per server and in total, heat, racks, and whether the plan fits a site.

Server power = GPUs x TDP + host (CPUs, memory, NICs, NVSwitch, fans, PSU losses), fitted to the
DGX H100 / DGX A100 maxima (sizing.yaml). A rack must be provisioned for the servers' maximum;
cooling must remove what they draw. When one server exceeds a rack, the options are: cap GPU
power (throughput ~ cap^0.5 above 60 % of TDP), smaller servers, or another site.

Rack-scale parts (GB200 NVL72, ``server_form: rack-scale-nvl72``) are bought as whole racks: the rack is
the unit of power and site fit, at its published rack power (sizing.yaml ``power.rack_scale``), and it
needs liquid cooling; a share of the rack's power is booked per planned server.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from trainsizer.hardware.catalog import Accelerator
from trainsizer.messages import Message, clauses, msg
from trainsizer.system.rules import RackScaleSystem, baseboard_class, rack_scale_system, sizing_rules
from trainsizer.system.sites import Site

if TYPE_CHECKING:  # the JSON's types, for annotations
    from trainsizer.plan.option_json import PowerJSON, SiteFitJSON


@dataclass(frozen=True)
class PowerSizing:
    """The servers' power: nameplate and typical IT load, facility load and heat."""

    node_kw: float  # nameplate maximum of one server
    total_it_kw: float
    typical_it_kw: float
    facility_kw: float  # typical IT x PUE
    heat_btu_per_h: float

    def to_dict(self) -> PowerJSON:
        return {"server_max_kw": round(self.node_kw, 2), "total_it_max_kw": round(self.total_it_kw, 1),
                "typical_it_kw": round(self.typical_it_kw, 1), "facility_kw": round(self.facility_kw, 1),
                "heat_btu_per_h": round(self.heat_btu_per_h)}


@dataclass
class SiteFit:
    """Whether the servers fit the site (power and racks), the remedies where they do not."""

    site: str
    fits: bool
    servers_per_rack: int
    racks: int
    verdict: Message
    remedies: list[Message] = field(default_factory=list)
    power_cap_w: float | None = None
    power_cap_throughput: float | None = None

    def to_dict(self) -> SiteFitJSON:
        return {"site": self.site, "fits": self.fits, "servers_per_rack": self.servers_per_rack,
                "racks": self.racks, "verdict": self.verdict, "remedies": self.remedies,
                "power_cap_w": self.power_cap_w, "power_cap_throughput": self.power_cap_throughput}


def server_kw(gpu: Accelerator, gpus_per_node: int, published_max_kw: float | None = None) -> float:
    if published_max_kw:
        return published_max_kw
    rack = rack_scale_system(gpu)
    if rack:  # a share of the published rack power (GB200 NVL72: ~120 kW for 72 GPUs)
        return rack.rack_kw * gpus_per_node / rack.gpus_per_rack
    r = sizing_rules()["power"]
    gpu_kw = gpus_per_node * (gpu.tdp_w or 300) / 1000
    frac = r["host_per_gpu_kw_fraction_sxm"] if baseboard_class(gpu) else r["host_per_gpu_kw_fraction_pcie"]
    return gpu_kw + r["host_base_kw"] + frac * gpu_kw


def size_power(gpu: Accelerator, gpus_per_node: int, nodes: int, pue: float,
               published_max_kw: float | None = None) -> PowerSizing:
    r = sizing_rules()["power"]
    node = server_kw(gpu, gpus_per_node, published_max_kw)
    total = node * nodes
    rack = rack_scale_system(gpu)
    if rack and not published_max_kw:  # whole racks are installed and powered, used or not
        total = rack.rack_kw * math.ceil(gpus_per_node * nodes / rack.gpus_per_rack)
    typical = total * r["typical_load_fraction"]
    return PowerSizing(node, total, typical, typical * pue, typical * r["kw_to_btu_per_h"])


def fit_site(site: Site, gpu: Accelerator, gpus_per_node: int, nodes: int, node_kw: float) -> SiteFit:
    r = sizing_rules()["power"]
    rack = rack_scale_system(gpu)
    if rack:
        return _fit_rack_scale(site, gpu, rack, gpus_per_node, nodes)
    usable = min(site.rack_power_kw * r["rack_continuous_load_fraction"], site.cooling_kw_per_rack)
    per_rack = int(usable // node_kw)
    extra_racks = math.ceil(nodes / r["network_rack_per_nodes"]) if nodes > 1 else 0
    if per_rack >= 1:
        racks = math.ceil(nodes / per_rack) + extra_racks
        binding = "power" if site.rack_power_kw * r["rack_continuous_load_fraction"] <= site.cooling_kw_per_rack \
            else "cooling"
        verdict = msg("system.fits_racks", n_servers=per_rack, kw=node_kw, usable=usable, rack=site.rack_power_kw,
                      binds=binding, n_racks=racks, extra=extra_racks)
        return SiteFit(site.id, True, per_rack, racks, verdict)
    # one server does not fit one rack
    gpus_kw = gpus_per_node * (gpu.tdp_w or 300) / 1000
    host_kw = node_kw - gpus_kw
    cap_fraction = (usable - host_kw) / gpus_kw if gpus_kw else 0.0
    remedies: list[Message] = []
    cap_w = throughput = None
    if cap_fraction >= r["min_cap_fraction"]:
        cap_w = round(cap_fraction * (gpu.tdp_w or 300))
        throughput = cap_fraction ** r["cap_throughput_exponent"]
        remedies.append(msg("system.remedy_power_cap", w=cap_w, w2=cap_w, pct=throughput))
    else:
        remedies.append(msg("system.remedy_power_cap_impossible", kw=node_kw, usable=usable,
                            pct=max(cap_fraction, 0)))
    if gpus_per_node > 4:
        remedies.append(msg("system.remedy_smaller_servers", n=gpus_per_node // 2, kw=node_kw / 2 + host_kw / 4))
    remedies.append(msg("system.remedy_denser_site"))
    why = ("cooling" if site.cooling_kw_per_rack < site.rack_power_kw * r["rack_continuous_load_fraction"]
           else "power")
    verdict = msg("system.server_too_hot", kw=node_kw, usable=usable, rack=site.rack_power_kw, binds=why,
                  cooling=site.cooling)
    racks = nodes + extra_racks
    return SiteFit(site.id, False, 0, racks, verdict, remedies, cap_w, throughput)


def _fit_rack_scale(site: Site, gpu: Accelerator, rack: RackScaleSystem, gpus_per_node: int, nodes: int) -> SiteFit:
    """A rack-scale system is one rack of ``gpus_per_rack`` GPUs at its published power that needs ``cooling``."""
    r = sizing_rules()["power"]
    per_rack, rack_kw, cooling = rack.gpus_per_rack, rack.rack_kw, rack.cooling
    systems = math.ceil(gpus_per_node * nodes / per_rack)
    # network/storage racks as for servers: one per network_rack_per_nodes 8-GPU servers' worth of GPUs
    extra_racks = math.ceil(systems * per_rack / (8 * r["network_rack_per_nodes"])) if systems > 1 else 0
    usable = min(site.rack_power_kw * r["rack_continuous_load_fraction"], site.cooling_kw_per_rack)
    what = msg("system.rack_system", gpu=gpu.id, form=str(gpu.server_form), cooling=cooling, n=per_rack, kw=rack_kw)
    reasons = []
    if cooling == "liquid" and site.cooling != "liquid":
        reasons.append(msg("system.needs_liquid", site=site.id, cooling=site.cooling))
    if rack_kw > usable:
        reasons.append(msg("system.rack_too_hot", kw=rack_kw, usable=usable, rack=site.rack_power_kw))
    racks = systems + extra_racks
    if not reasons:
        verdict = clauses([msg("system.fits", clause=what),
                           msg("system.rack_systems_fit", n_racks=systems, usable=usable, n_racks2=racks,
                               extra=extra_racks)])
        return SiteFit(site.id, True, per_rack // max(1, gpus_per_node), racks, verdict)
    need_kw = rack_kw / r["rack_continuous_load_fraction"]
    remedies = [msg("system.remedy_liquid_site", kw=need_kw), msg("system.remedy_baseboard")]
    verdict = clauses([msg("system.does_not_fit", clause=what), *reasons])
    return SiteFit(site.id, False, 0, racks, verdict, remedies)
