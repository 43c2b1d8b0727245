"""Host RAM and CPU cores per server: the seed's rules beside what the job really needs.

Needs per node: OS and runtime, each training rank's host memory (CUDA host allocations, pinned
staging buffers), data-loader workers, CPU-offloaded optimizer states / parameters (ZeRO-Offload,
Ren et al. 2021, arXiv:2101.06840), and one full 16-bit copy of the weights for loading or
consolidating a checkpoint. Cores: loader workers plus main and NCCL proxy threads per rank.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from trainsizer.messages import Message, clauses, msg
from trainsizer.system.rules import round_up, sizing_rules

if TYPE_CHECKING:  # the JSON's types, for annotations
    from trainsizer.plan.option_json import HostJSON

GIB = 2**30


@dataclass(frozen=True)
class HostSizing:
    """A server's host: RAM and CPU cores needed and chosen, the seed's rule, what a rented instance must have."""

    ram_gib: float  # per node, rounded to a standard size
    ram_needed_gib: float
    ram_breakdown_gib: dict[str, float]
    cores: int
    cores_needed: int
    seed_rule_ram_gib: float
    seed_rule_text: Message
    # what a rented instance (a container on the provider's host) must have: the training's own processes,
    # without the server's OS and runtime (the provider's)
    instance_ram_gib: float = 0.0
    instance_cores: int = 0

    def to_dict(self) -> HostJSON:
        return {"ram_gib_per_node": self.ram_gib, "ram_needed_gib": round(self.ram_needed_gib, 1),
                "instance_ram_gib": round(self.instance_ram_gib, 1), "instance_cores": self.instance_cores,
                "ram_breakdown_gib": {k: round(v, 1) for k, v in self.ram_breakdown_gib.items()},
                "cpu_cores_per_node": self.cores, "cpu_cores_needed": self.cores_needed,
                "seed_rule_ram_gib": round(self.seed_rule_ram_gib, 1), "seed_rule": self.seed_rule_text}


def instance_ram_gib(params: int, gpus_per_node: Any, offloaded_gib_per_gpu: Any) -> Any:
    """Host RAM (GiB) the training needs inside a rented instance of ``gpus_per_node`` cards (numbers or numpy
    arrays): each rank's process and loader workers, what CPU offload keeps there, one bf16 copy of the
    weights for loading or saving a checkpoint, with the same headroom as a server (size_host); the server's
    OS and runtime are the provider's."""
    r = sizing_rules()["host"]
    per_gpu = r["per_gpu_process_gib"] + r["loader_workers_per_gpu"] * r["per_worker_gib"]
    return ((per_gpu + offloaded_gib_per_gpu) * gpus_per_node + params * 2 / GIB) * r["headroom"]


def instance_cores(gpus_per_node: int) -> int:
    """CPU cores the training needs inside a rented instance: loader workers, main and NCCL proxy threads."""
    r = sizing_rules()["host"]
    return int(gpus_per_node * (r["loader_workers_per_gpu"] + r["cores_per_gpu_extra"]))


def size_host(params: int, gpus_per_node: int, nodes: int, offloaded_bytes_per_gpu: float) -> HostSizing:
    r = sizing_rules()["host"]
    breakdown = {
        "os_and_runtime": r["os_and_runtime_gib"],
        "training_processes": r["per_gpu_process_gib"] * gpus_per_node,
        "data_loader_workers": r["loader_workers_per_gpu"] * r["per_worker_gib"] * gpus_per_node,
        "cpu_offload": offloaded_bytes_per_gpu * gpus_per_node / GIB,
        "checkpoint_load_and_save": params * 2 / GIB,  # one bf16 copy of the weights on the node
    }
    needed = sum(breakdown.values()) * r["headroom"]
    ram = round_up(needed, r["standard_sizes_gib"])
    # seed: 参数规模×2以上的内存 (7B -> >=64 GB, 70B -> >=512 GB; multi-node ~1 TB per node):
    # read as twice the fp32 parameter bytes, rounded up to a standard size; 1 TB per node when multi-node.
    seed = round_up(2 * params * 4 / GIB, r["standard_sizes_gib"])
    text = msg("system.host_seed_rule")
    if nodes > 1:
        seed = max(seed, 1024)
        text = clauses([text, msg("system.host_multi_node")])
    cores_needed = gpus_per_node * (r["loader_workers_per_gpu"] + r["cores_per_gpu_extra"]) + r["cores_os"]
    cores = int(round_up(cores_needed, r["standard_core_counts"]))
    return HostSizing(ram, needed, breakdown, cores, cores_needed, seed, text,
                      float(instance_ram_gib(params, gpus_per_node, offloaded_bytes_per_gpu / GIB)),
                      instance_cores(gpus_per_node))
