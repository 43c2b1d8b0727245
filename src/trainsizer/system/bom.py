"""A plan option's bill of materials: servers, host, storage, network, power, racks, site fit."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from trainsizer.estimate.cache_keys import cleared_with_keys, json_key
from trainsizer.estimate.memory import default_memory_model, estimate_memory
from trainsizer.estimate.model_params import MemoryModel
from trainsizer.estimate.model_states import model_states
from trainsizer.estimate.training_state import training_state
from trainsizer.hardware.catalog import Accelerator
from trainsizer.hardware.scale_out import default_scale_out
from trainsizer.models.architecture import Architecture
from trainsizer.models.param_counts import count_params
from trainsizer.scenario import Scenario
from trainsizer.system.host import HostSizing, size_host
from trainsizer.system.inventory import Inventory
from trainsizer.system.network import NetworkSizing, size_network
from trainsizer.system.power import PowerSizing, SiteFit, fit_site, size_power
from trainsizer.system.rules import baseboard_class
from trainsizer.system.sites import Site
from trainsizer.system.storage import StorageSizing, size_storage

if TYPE_CHECKING:  # the JSON's types, for annotations
    from trainsizer.plan.option_json import SystemJSON


@dataclass
class SystemPlan:
    """The servers of an option: their hosts, storage, network, power and fit to the site."""

    gpu: str
    gpus: int
    gpus_per_node: int
    nodes: int
    host: HostSizing
    storage: StorageSizing
    network: NetworkSizing
    power: PowerSizing
    site_fit: SiteFit | None

    def inventory(self) -> Inventory:
        racks = self.site_fit.racks if self.site_fit else math.ceil(self.nodes / 2)
        return Inventory(self.gpu, self.gpus, self.gpus_per_node, self.nodes, self.storage.capacity_tb,
                         self.storage.local_nvme_tb_per_node, self.network.nics_per_node,
                         self.network.leaf_switches + self.network.spine_switches, self.network.cables, racks,
                         self.power.typical_it_kw, self.network.fabric)

    def to_dict(self) -> SystemJSON:
        return {"servers": {"count": self.nodes, "gpu": self.gpu, "gpus_per_server": self.gpus_per_node},
                "host": self.host.to_dict(), "storage": self.storage.to_dict(), "network": self.network.to_dict(),
                "power": self.power.to_dict(), "site_fit": self.site_fit.to_dict() if self.site_fit else None}


def _offloaded_bytes_per_gpu(sc: Scenario, arch: Architecture, gpu: Accelerator, mp: MemoryModel) -> float:
    if sc.parallel.offload == "none":
        return 0.0
    on_gpu = sc.model_copy(update={"parallel": sc.parallel.model_copy(update={"offload": "none"})})
    full = {c.name: c.bytes for c in estimate_memory(on_gpu, arch, gpu, mp).components}
    off = {c.name: c.bytes for c in estimate_memory(sc, arch, gpu, mp).components}
    moved = ("master_weights", "optimizer_states", "gradients", "weights")
    return sum(max(0.0, full.get(k, 0.0) - off.get(k, 0.0)) for k in moved)


# The layout fields a single-GPU copy of a scenario resets (what the checkpoint's state is measured on)
_SINGLE_GPU = {"gpus": 1, "tp": 1, "pp": 1, "cp": 1, "zero": 0, "offload": "none", "distributed_optimizer": False,
               "virtual_pp": 1, "ep": 1}
_RESET = frozenset(_SINGLE_GPU)
_STATE_BYTES: dict[tuple[Any, ...], tuple[Architecture, MemoryModel, tuple[int, float]]] = {}
cleared_with_keys(_STATE_BYTES.clear)


def _state_bytes_per_trainable(sc: Scenario, arch: Architecture, mp: MemoryModel) -> tuple[int, float]:
    """(trainable parameters, master weights and optimizer state bytes per trainable parameter) of the scenario on
    one GPU; once per training block and parallel settings but the layout (a plan's options differ in the layout:
    the training state reads only the training and parallel blocks)."""
    key = (id(arch), id(mp), json_key(sc.training), json_key(sc.parallel, _RESET))
    hit = _STATE_BYTES.get(key)
    if hit is not None and hit[0] is arch and hit[1] is mp:
        return hit[2]
    single = sc.model_copy(update={"parallel": sc.parallel.model_copy(update=_SINGLE_GPU)})
    st = training_state(single, arch, mp)
    states = model_states(st, 0)
    named = {c.name: c.bytes for c in states.static}
    extra = named.get("master_weights", 0.0) + named.get("optimizer_states", 0.0) + states.managed_bytes
    trainable = st.trainable_params
    found = trainable, extra / trainable if trainable else 0.0
    if len(_STATE_BYTES) >= 1024:
        _STATE_BYTES.clear()
    _STATE_BYTES[key] = (arch, mp, found)
    return found


def size_system(sc: Scenario, arch: Architecture, gpu: Accelerator, tokens_per_s: float, site: Site | None,
                published_server_kw: float | None = None, mp: MemoryModel | None = None) -> SystemPlan:
    from trainsizer.estimate.step import peak_for

    mp = mp or default_memory_model()
    gpus = sc.parallel.gpus
    per_node = sc.gpus_per_node
    nodes = max(1, math.ceil(gpus / per_node))
    params = count_params(arch).total
    host = size_host(params, per_node, nodes, _offloaded_bytes_per_gpu(sc, arch, gpu, mp))
    trainable, state_bytes = _state_bytes_per_trainable(sc, arch, mp)
    peak, _, _ = peak_for(gpu, sc.training.precision)
    storage = size_storage(params, trainable, arch.vocab_size, sc.training.tokens, tokens_per_s, state_bytes,
                           peak * gpus, nodes, sc.training.seq_len, gpus)
    # one NIC per GPU on baseboard-class servers (server_form; Ascend modules too); the network the part's
    # servers come with (RoCE for Ascend, else that of the host's PCIe generation) when the plan names none
    network = size_network(nodes, per_node, gpus, sc.hardware.inter_node, baseboard_class(gpu),
                           default_scale_out(gpu))
    power = size_power(gpu, per_node, nodes, site.pue if site else 1.0, published_server_kw)
    fit = fit_site(site, gpu, per_node, nodes, power.node_kw) if site else None
    return SystemPlan(gpu.id, gpus, per_node, nodes, host, storage, network, power, fit)
