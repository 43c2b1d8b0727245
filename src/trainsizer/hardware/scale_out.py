"""The scale-out network a part's servers come with when a job names none: the part's own where it is fixed
(accelerators.yaml ``default_inter_node``: Ascend servers ship RoCE, never InfiniBand), else one NIC per GPU at the
rate the host's PCIe generation carries. A NIC sits in a PCIe x16 slot, so Gen3 servers take 100 Gb/s ports (DGX-2:
8 x ConnectX-5 EDR 100 Gb/s, https://docs.nvidia.com/dgx/dgx2-user-guide/introduction-to-dgx2.html), Gen4 servers
200 Gb/s (DGX A100: 8 x ConnectX-6 HDR 200 Gb/s,
https://docs.nvidia.com/dgx/dgxa100-user-guide/introduction-to-dgxa100.html), Gen5 servers 400 Gb/s (DGX H100, H200
and B200: 8 x ConnectX-7 NDR 400 Gb/s, DGX BasePOD reference architecture, core components,
https://docs.nvidia.com/dgx-basepod/reference-architecture-infrastructure-foundation-enterprise-ai/latest/core-components.html)
and Gen6 servers 800 Gb/s (DGX B300: 8 x ConnectX-8 XDR 800 Gb/s, https://docs.nvidia.com/dgx/dgxb300-user-guide/).
Grace-Blackwell trays, whose GPUs reach their NICs without a PCIe host slot, state theirs in the catalog."""

from __future__ import annotations

from trainsizer.hardware.catalog import Accelerator

_BY_PCIE_GEN = {6: ("ib-xdr-800", "roce-400"), 5: ("ib-ndr-400", "roce-400"), 4: ("ib-hdr-200", "roce-200"),
                3: ("ib-edr-100", "roce-100")}


def scale_out_networks(gpu: Accelerator) -> tuple[str, ...]:
    """The networks such servers are sold with, InfiniBand first: the part's own, else InfiniBand and RoCE at the
    host's PCIe generation (Gen4 where the catalog states none; Gen3's pair for older hosts, Gen6's for newer)."""
    if gpu.default_inter_node:
        return (gpu.default_inter_node,)
    gen = gpu.pcie_gen or 4
    return _BY_PCIE_GEN[min(max(gen, 3), 6)]


def default_scale_out(gpu: Accelerator) -> str:
    """The network a job on ``gpu`` that names none is priced on: the first of :func:`scale_out_networks`."""
    return scale_out_networks(gpu)[0]
