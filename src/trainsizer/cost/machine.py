"""Whether a rental offer's machine holds a layout: host RAM, vCPU and local disk per instance against what the
layout needs there (system/host.py, system/storage.py). A figure the offer does not state is treated
conservatively: unknown host RAM holds no layout with CPU offload (its need cannot be checked), unknown vCPU or
disk is not held against the offer (the option's notes say so). Bought servers are sized to the need instead."""

from __future__ import annotations

from dataclasses import dataclass

from trainsizer.cost.prices import OfferMachine, RentalOffer
from trainsizer.messages import Message, listing, msg

GIB_PER_GB = 1e9 / 2**30


@dataclass(frozen=True)
class MachineNeed:
    """What one server (instance) of a layout needs beside its GPUs."""

    gpus_per_node: int
    ram_gib: float  # host RAM per server (system.host.size_host: ram_needed_gib)
    cores: int  # CPU cores per server
    disk_gb: float | None = None  # local disk per server (checkpoints kept, tokenised data), None: not checked
    offload: bool = False  # the layout keeps optimizer states or weights in host RAM (CPU offload)


def ram_gib(machine: OfferMachine | None, gpus_per_node: int) -> float | None:
    """Host RAM (GiB) one instance of ``gpus_per_node`` cards has on this offer, None: not stated."""
    if machine is None:
        return None
    if machine.ram_gb_per_gpu is not None:
        return machine.ram_gb_per_gpu * gpus_per_node * GIB_PER_GB
    return machine.ram_gb_per_instance * GIB_PER_GB if machine.ram_gb_per_instance is not None else None


def vcpus(machine: OfferMachine | None, gpus_per_node: int) -> float | None:
    if machine is None:
        return None
    if machine.vcpus_per_gpu is not None:
        return machine.vcpus_per_gpu * gpus_per_node
    return machine.vcpus_per_instance


def shortfall(offer: RentalOffer, need: MachineNeed) -> Message | None:
    """None when the offer's machine holds the layout, else one message naming each shortfall."""
    machine, parts = offer.machine, []
    ram = ram_gib(machine, need.gpus_per_node)
    if ram is None and need.offload:
        parts.append(msg("machine.ram_unknown_offload", need=need.ram_gib))
    elif ram is not None and need.ram_gib > ram:
        parts.append(msg("machine.short_ram", need=need.ram_gib, have=ram, n=need.gpus_per_node))
    cores = vcpus(machine, need.gpus_per_node)
    if cores is not None and need.cores > cores:
        parts.append(msg("machine.short_cores", need=need.cores, have=cores, n=need.gpus_per_node))
    if machine and machine.disk_gb is not None and need.disk_gb is not None and need.disk_gb > machine.disk_gb:
        parts.append(msg("machine.short_disk", need=need.disk_gb, have=machine.disk_gb))
    if not parts:
        return None
    return msg("machine.does_not_hold", provider=offer.provider, parts=listing(parts))


def unchecked(offer: RentalOffer, need: MachineNeed) -> Message | None:
    """What the offer does not state and so could not be checked (its host RAM, for a layout it holds only
    because that layout keeps nothing in host RAM beyond the ranks, loaders and a checkpoint copy), said with the
    need so the user checks the instance before the run; None when the RAM is stated."""
    if ram_gib(offer.machine, need.gpus_per_node) is not None:
        return None
    return msg("machine.ram_unstated", provider=offer.provider, need=need.ram_gib, n=need.gpus_per_node)
