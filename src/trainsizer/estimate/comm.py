"""Collective communication time: latency + bytes / achievable bus bandwidth.

Ring collectives move ``2(n-1)/n`` of the buffer per GPU for all-reduce and ``(n-1)/n`` for
all-gather and reduce-scatter (Patarasuk & Yuan 2009; the nccl-tests PERFORMANCE.md definition of
bus bandwidth). A group inside one node uses the intra-node link; a group that spans nodes is
limited by the node's NICs: NCCL runs one ring per NIC rail, so its bus bandwidth is about
``nics_per_node x per-NIC bandwidth`` (nccl-tests#175: 2 nodes x 8 A100 with 4x200G reach ~86 of
~96 GB/s), never above the intra-node figure; a group with fewer members per node than the node has
GPUs (a data-parallel group strided by tp) shares the NICs with the other groups that run the same
collective at once, and gets its members' share. Achievable fractions of the line rate are data.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from statistics import median
from typing import TYPE_CHECKING, Any

from trainsizer.arrays import is_array, maximum, minimum, where
from trainsizer.estimate.model_params import PerformanceModel
from trainsizer.hardware.catalog import INTER_NODE_SCOPES, INTRA_NODE_SCOPES, Accelerator, Catalog, Link
from trainsizer.hardware.scale_out import default_scale_out
from trainsizer.scenario import ParallelSpec

if TYPE_CHECKING:
    from trainsizer.estimate.step_layout import StepLayout


@dataclass(frozen=True)
class Fabric:
    """The links a job's collectives run over, with achievable bus bandwidths (GB/s)."""

    intra: Link | None
    inter: Link | None
    intra_busbw_gbps: float
    inter_busbw_gbps: float  # node-level (all NICs), for groups that span nodes
    intra_latency_s: float
    inter_latency_s: float
    gpus_per_node: Any  # a number, or per layout where one screen prices several node shapes (:meth:`per_layout`)
    shared_host_gbps: float | None = None  # no P2P: all GPUs of a node share the host-memory path
    # per layout where one screen prices several scale-out networks at once (:meth:`per_layout`); else the link's
    inter_line_gbps: Any = None
    # all-gather / reduce-scatter inside a node: the ring's bus bandwidth (NVLink SHARP speeds up the all-reduce only:
    # NVIDIA/nccl-tests#212, sjeaugey: 'NCCL can get an effective NVLink bandwidth of 370GB/s, which you can observe as
    # BusBw when running non-allreduce operations'); None: as the all-reduce's
    intra_ring_gbps: Any = None
    # the scale-up link's per-direction line rate per layout where one screen prices several GPU types' links at once
    # (:meth:`per_layout`); else the link's
    intra_line_gbps: Any = None

    @property
    def intra_line_rate_gbps(self) -> Any:
        """The scale-up link's per-direction line rate (GB/s; 0 where it states none)."""
        if self.intra_line_gbps is not None:
            return self.intra_line_gbps
        return (self.intra.per_direction_gbps or 0.0) if self.intra else 0.0

    @property
    def inter_line_rate_gbps(self) -> Any:
        """The scale-out link's per-direction line rate (GB/s; 12.5 where none is named)."""
        if self.inter_line_gbps is not None:
            return self.inter_line_gbps
        return self.inter.per_direction_gbps if self.inter else 12.5

    def per_layout(self, fabrics: list[Fabric], which: Any, inter_factor: Any = 1.0) -> Fabric:
        """This fabric's scale-up links with the scale-out network and node size of ``fabrics[which[i]]`` for layout
        ``i`` (arrays; fabrics whose scale-up links are alike: one GPU type's, or those of GPU types the planner's
        screen prices together, ``plan.screen_parts.screen_key``), its node-level bandwidth times ``inter_factor``
        (RoCE's derating at scale, :func:`roce_derate`)."""
        import numpy as np

        def pick(values: list[float]) -> Any:
            return np.array(values, dtype=float)[which]

        def links(f: Fabric) -> tuple[Any, ...]:
            return f.intra_busbw_gbps, f.intra_latency_s, f.shared_host_gbps, f.intra_ring_gbps, f.intra_line_rate_gbps

        scale_up = {"intra_line_gbps": None}  # alike links: this fabric's own
        if any(links(f) != links(self) for f in fabrics):  # each layout's own (no host-path cap: inf; no ring: AR's)
            scale_up = {"intra_busbw_gbps": pick([f.intra_busbw_gbps for f in fabrics]),
                        "intra_latency_s": pick([f.intra_latency_s for f in fabrics]),
                        "shared_host_gbps": pick([f.shared_host_gbps or np.inf for f in fabrics]),
                        "intra_ring_gbps": pick([f.intra_busbw_gbps if f.intra_ring_gbps is None else f.intra_ring_gbps
                                                 for f in fabrics]),
                        "intra_line_gbps": pick([f.intra_line_rate_gbps for f in fabrics])}
        shapes = [f.gpus_per_node for f in fabrics]
        return replace(self, inter=None, inter_busbw_gbps=pick([f.inter_busbw_gbps for f in fabrics]) * inter_factor,
                       inter_latency_s=pick([f.inter_latency_s for f in fabrics]),
                       gpus_per_node=self.gpus_per_node if len(set(shapes)) == 1 else np.array(shapes)[which],
                       inter_line_gbps=pick([f.inter_line_rate_gbps for f in fabrics]), **scale_up)

    def ring(self) -> Fabric:
        """This fabric as an all-gather or reduce-scatter sees it: the intra-node ring's bus bandwidth."""
        if self.intra_ring_gbps is None or (not is_array(self.intra_ring_gbps)
                                            and self.intra_ring_gbps == self.intra_busbw_gbps):
            return self
        return replace(self, intra_busbw_gbps=self.intra_ring_gbps)

    def intra_for(self, group: Any) -> Any:
        """Intra-node bus bandwidth for a group: without P2P the host-memory path is shared."""
        if is_array(self.shared_host_gbps) or self.shared_host_gbps:  # per layout: inf where the GPUs talk P2P
            return minimum(self.intra_busbw_gbps, self.shared_host_gbps / maximum(1, group))
        return self.intra_busbw_gbps

    def busbw(self, group: Any, stride: Any = 1, nic_share: bool = True) -> tuple[Any, Any]:
        """(bus bandwidth GB/s, per-step latency s) for a group of ``group`` GPUs whose members are
        ``stride`` ranks apart (TP innermost, then CP, PP, DP, as Megatron orders ranks). Numbers, or arrays of
        many layouts (the planner's screen)."""
        if is_array(group) or is_array(stride):
            return self._busbw_many(group, stride, nic_share)
        if group <= 1:
            return float("inf"), 0.0
        intra = self.intra_for(min(group, self.gpus_per_node))
        if group * stride <= self.gpus_per_node:
            return intra, self.intra_latency_s
        return min(intra, self.inter_share(group, stride) if nic_share else self.inter_busbw_gbps), self.inter_latency_s

    def _busbw_many(self, group: Any, stride: Any, nic_share: bool) -> tuple[Any, Any]:
        """:meth:`busbw` elementwise over arrays of groups and strides."""
        import numpy as np

        intra = self.intra_for(np.minimum(group, self.gpus_per_node))
        within = group * stride <= self.gpus_per_node
        inter = self.inter_share(group, stride) if nic_share else self.inter_busbw_gbps
        single = group <= 1
        return (np.where(single, np.inf, np.where(within, intra, np.minimum(intra, inter))),
                np.where(single, 0.0, np.where(within, self.intra_latency_s, self.inter_latency_s)))

    def inter_share(self, group: Any, stride: Any = 1) -> Any:
        """The node's NIC bandwidth a group that spans nodes can use: the share of the GPUs it has on each node.
        ``gpus_per_node / stride`` members of the group sit on one node; the node's other GPUs belong to the
        other groups of the same kind, which run their collectives at the same time over the same NICs (a
        data-parallel group under tp=8 has one GPU per node and gets that GPU's NIC, not all eight)."""
        members = maximum(1, minimum(group, self.gpus_per_node // maximum(1, stride)))
        return self.inter_busbw_gbps * members / self.gpus_per_node


def _achievable(link: Link, params: PerformanceModel, gpu: Accelerator | None, ring: bool = False) -> float:
    """Achievable all-reduce bus bandwidth of one GPU's link (scale-up, PCIe) or one NIC (scale-out); ``ring``: of an
    all-gather or reduce-scatter, without the points measured under NVLink SHARP (``algorithm: nvls``)."""
    comm = params.communication
    measured = [float(m["busbw_gbps"]) for m in link.measured_allreduce_busbw_gbps or [] if m.get("busbw_gbps")
                and not (ring and m.get("algorithm") == "nvls")]
    if link.prefer_measured and measured:
        # a profile measured on the user's own machine (`trainsizer probe comm`) wins, for every scope
        return median(measured)
    if link.scope == "pcie" and gpu is not None and gpu.p2p is False:
        # no peer-to-peer (GeForce): NCCL stages every transfer through host memory
        return link.per_direction_gbps * comm.pcie_without_p2p_fraction
    if link.scope != "scale-out" and measured:
        return median(measured)
    key = link.id.split("-")[0] if link.scope == "scale-out" else link.scope
    return link.per_direction_gbps * comm.busbw_fraction.get(key, comm.busbw_fraction["default"])


def roce_derate(inter_id: str, total_gpus: int, params: PerformanceModel) -> float:
    """Bus-bandwidth factor for RoCE fabrics beyond the size where they get strained (data)."""
    rule = params.communication.roce_at_scale
    return rule.busbw_factor if inter_id.startswith("roce") and total_gpus > rule.gpus_threshold else 1.0


def fabric(catalog: Catalog, gpu: Accelerator, intra_id: str | None, inter_id: str | None,
           nics_per_node: int | None, gpus_per_node: int, params: PerformanceModel, total_gpus: int = 1) -> Fabric:
    intra_name = intra_id or gpu.default_intra_node or "pcie4"
    intra = catalog.link(intra_name, "hardware.intra_node", INTRA_NODE_SCOPES)
    inter = catalog.link(inter_id or default_scale_out(gpu), "hardware.inter_node",
                         INTER_NODE_SCOPES)
    nics = nics_per_node or gpus_per_node
    intra_bw = _achievable(intra, params, gpu)
    inter_bw = _achievable(inter, params, gpu) * nics * roce_derate(inter.id, total_gpus, params)
    lat = params.communication.nccl_step_latency_us
    shared = None
    if intra.scope == "pcie" and gpu.p2p is False:
        shared = params.communication.pcie_without_p2p_shared_host_gbps
    return Fabric(intra, inter, intra_bw, inter_bw, (intra.latency_us or 2.0) * 1e-6 + lat * 1e-6,
                  (inter.latency_us or 5.0) * 1e-6 + lat * 1e-6, gpus_per_node, shared,
                  intra_ring_gbps=_achievable(intra, params, gpu, ring=True))


def _many(*values: Any) -> bool:
    return any(is_array(v) for v in values)


def all_reduce_s(bytes_: Any, group: Any, fab: Fabric, stride: Any = 1, nic_share: bool = True) -> Any:
    """Ring all-reduce of a buffer of ``bytes_``; numbers, or arrays of many layouts (0 where the group is one GPU)."""
    if _many(bytes_, group, stride):
        bw, lat = fab.busbw(group, stride, nic_share)
        return where((group > 1) & (bytes_ > 0), 2 * (group - 1) * lat + 2 * (group - 1) / group * bytes_ / (bw * 1e9))
    if group <= 1 or bytes_ <= 0:
        return 0.0
    bw, lat = fab.busbw(group, stride, nic_share)
    return 2 * (group - 1) * lat + 2 * (group - 1) / group * bytes_ / (bw * 1e9)


def all_gather_s(bytes_: Any, group: Any, fab: Fabric, stride: Any = 1, nic_share: bool = True) -> Any:
    """All-gather (or reduce-scatter) of a buffer of ``bytes_`` total, at the ring's bus bandwidth inside a node
    (:meth:`Fabric.ring`); numbers or arrays."""
    fab = fab.ring()
    if _many(bytes_, group, stride):
        bw, lat = fab.busbw(group, stride, nic_share)
        return where((group > 1) & (bytes_ > 0), (group - 1) * lat + (group - 1) / group * bytes_ / (bw * 1e9))
    if group <= 1 or bytes_ <= 0:
        return 0.0
    bw, lat = fab.busbw(group, stride, nic_share)
    return (group - 1) * lat + (group - 1) / group * bytes_ / (bw * 1e9)


def replica_all_reduce_s(bytes_: Any, par: ParallelSpec | StepLayout, fab: Fabric, stride: Any) -> Any:
    """Where each copy of the ZeRO-sharded states spans only ``parallel.zero_shard_gpus`` ranks, the gradients
    reduced inside a copy (``bytes_`` before sharding) are then all-reduced, a ``1/group`` share per rank, across the
    copies, whose members are ``stride x group`` ranks apart (the 2-hop gradient synchronisation of MiCS, Zhang et
    al. 2022, arXiv:2205.00119, section 3.3; FSDP HYBRID_SHARD). 0 where one copy spans dp x cp."""
    group = par.zero_group
    return all_reduce_s(bytes_ / group, par.dp * par.cp // group, fab, stride=stride * group, nic_share=False)


def p2p_s(bytes_: Any, fab: Fabric, crosses_node: Any) -> Any:
    """One point-to-point transfer to the next pipeline stage or ring neighbour; numbers or arrays."""
    if _many(bytes_, crosses_node):
        bw = fab.inter_line_rate_gbps * 0.9
        return where(bytes_ > 0, where(crosses_node, fab.inter_latency_s + bytes_ / (bw * 1e9),
                                       fab.intra_latency_s + bytes_ / (fab.intra_busbw_gbps * 1e9)))
    if bytes_ <= 0:
        return 0.0
    if crosses_node:
        bw = fab.inter_line_rate_gbps * 0.9
        return fab.inter_latency_s + bytes_ / (bw * 1e9)
    return fab.intra_latency_s + bytes_ / (fab.intra_busbw_gbps * 1e9)


def gathered_linear_bytes(fp8_all_gather: bool, stored_bytes: float) -> float:
    """Bytes per base linear parameter a ZeRO-3 / FSDP all-gather moves: as stored, or one (float8 e4m3; the one
    fp32 scale per tensor is negligible) where each shard is cast to FP8 before the gather (``training.fp8_all_gather``:
    pytorch/ao ``torchao/float8/fsdp_utils.py`` @ 11ce634, ``WeightWithDynamicFloat8CastTensor.fsdp_pre_all_gather``
    returns the float8 data as what FSDP2 all-gathers)."""
    return 1.0 if fp8_all_gather else stored_bytes
