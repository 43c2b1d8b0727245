"""A link profile: the catalog entry of the link a ``trainsizer probe comm`` run measured, with the run's
all-reduce bus bandwidth, as a user catalog file (``links:``) that ``--catalog`` gives to ``estimate``,
``plan`` and ``scale`` (``prefer_measured`` makes the estimator use it, ``estimate/comm.py``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from statistics import median
from typing import Any

import yaml

from trainsizer.errors import InputError
from trainsizer.probe.comm.result import PROFILE_SIZES, CommProbeResult, format_size, sig4
from trainsizer.probe.common.gpu_match import intra_link_for_device


def resolve_link(catalog: Any, link_id: str | None, device_names: Sequence[str], nodes: int,
                 nics_per_node: int | None) -> Any:
    """The catalog link a run measured, checked against the run's shape (one node: an intra-node link; several
    nodes: a scale-out link with --nics-per-node)."""
    if link_id is None:
        if nodes > 1:
            raise InputError("--link-id", f"a run across {nodes} nodes measures the network: give the NIC's link id "
                                          "(e.g. ib-ndr-400, roce-400) and --nics-per-node")
        found = intra_link_for_device(device_names[0], catalog) if device_names and device_names[0] != "cpu" \
            else None
        if found is None:
            what = f"GPU {device_names[0]!r}" if device_names and device_names[0] != "cpu" else "a CPU (gloo) run"
            raise InputError("--link-id", f"cannot tell the link of {what}; give one, e.g. nvlink4, pcie4, "
                                          "ib-ndr-400 (see `trainsizer catalog links`)")
        link_id = found
    link = catalog.link(link_id, "--link-id")
    if link.scope == "scale-out":
        if nodes < 2:
            raise InputError("--link-id", f"{link_id} is a scale-out (NIC) link but this run is on one node; run "
                                          "torchrun on every node (see --help) or give an intra-node link")
        if not nics_per_node or nics_per_node < 1:
            raise InputError("--nics-per-node", f"required for the scale-out link {link_id}: NICs of that kind per "
                                                "node (the catalog records busbw per NIC)")
    else:
        if nodes > 1:
            raise InputError("--link-id", f"{link_id} is an intra-node ({link.scope}) link but this run spans "
                                          f"{nodes} nodes, so it measured the network; give a scale-out link id")
        if nics_per_node is not None:
            raise InputError("--nics-per-node", f"only for a scale-out link; {link_id} is {link.scope}")
    return link


def link_profile(result: CommProbeResult, catalog: Any, link_id: str | None = None,
                 nics_per_node: int | None = None) -> dict[str, Any]:
    """A user catalog file (``links:`` list) with the measured link: the shipped entry's fields, its measured
    all-reduce busbw replaced by this run's at the largest sizes; ``prefer_measured`` so the estimator uses it, except
    for a gloo/CPU run (recorded as ``backend``/``measured_on``; never preferred over the shipped figures)."""
    env = result.environment
    link = resolve_link(catalog, link_id, env.device_names, env.nodes, nics_per_node)
    rows = sorted(result.ops.get("all_reduce") or [], key=lambda r: r.size_bytes)[-PROFILE_SIZES:]
    if not rows:
        raise InputError("--link-profile", "needs all_reduce in --ops (the catalog records all-reduce busbw)")
    if env.world_size < 2 or not all(r.busbw_gbps > 0 for r in rows):
        raise InputError("--link-profile", "needs at least 2 ranks (with one, nothing crosses a link)")
    scale_out = link.scope == "scale-out"
    divisor = nics_per_node if scale_out and nics_per_node else 1
    device = ", ".join(env.device_names)
    algo = f", NCCL_ALGO={env.nccl_env['NCCL_ALGO']}" if env.nccl_env.get("NCCL_ALGO") else ""
    per = f", per NIC (node busbw / {divisor})" if scale_out else ""
    measured = [{"setup": f"{env.layout}, {device}, {env.backend}{algo}, all_reduce {format_size(r.size_bytes)} "
                          f"{env.dtype}{per}",
                 "busbw_gbps": sig4(r.busbw_gbps / divisor),
                 "source": f"trainsizer probe comm on {env.hostname}, {env.date}"} for r in rows]
    entry = link.model_dump()
    note = (f"Measured by trainsizer probe comm: world size {env.world_size}, {env.nodes} node(s) x "
            f"{env.local_world_size} ranks, {env.backend}, {env.dtype}, {result.iters} iters; all-reduce busbw at the "
            f"{len(rows)} largest sizes ({format_size(rows[0].size_bytes)}..{format_size(rows[-1].size_bytes)}), "
            "the estimator uses their median.")
    if scale_out:
        note += (f" Scale-out: the node-level busbw is divided by --nics-per-node {divisor} to give per-NIC busbw "
                 "(the catalog convention); the estimator multiplies by the job's nics_per_node again.")
    on_cpu = measured_on_cpu(env.backend, env.device_names)
    if on_cpu:
        note += (f" Measured with {env.backend} on {device}, not NCCL on GPUs: not a GPU link figure; prefer_measured "
                 "is false, and it applies only where this file is passed with --catalog.")
    entry.update(measured_allreduce_busbw_gbps=measured, prefer_measured=not on_cpu,
                 source=f"trainsizer probe comm on {env.hostname}, {env.date}; {link.source}",
                 as_of=env.date[:10], notes=note)
    new = median(m["busbw_gbps"] for m in measured)
    replaces = (f"the shipped {link.id} entry ({shipped_figure(link)}) by all-reduce busbw median {new:g} GB/s "
                f"measured with {env.backend} on {device}")
    # backend / measured_on / replaces sit beside links: (the catalog reads only accelerators: and links:)
    return {"schema_version": 1, "backend": env.backend, "measured_on": "cpu" if on_cpu else "gpu",
            "replaces": replaces, "links": [entry]}


def measured_on_cpu(backend: str, device_names: Sequence[str]) -> bool:
    """gloo (or any backend but NCCL) or a CPU device: a check of the machinery, not a GPU link."""
    return backend != "nccl" or not device_names or "cpu" in device_names


def shipped_figure(link: Any) -> str:
    """What the shipped catalog entry says about the link's bandwidth, in words."""
    published = [float(m["busbw_gbps"]) for m in link.measured_allreduce_busbw_gbps or [] if m.get("busbw_gbps")]
    text = f"{link.per_direction_gbps:g} GB/s per direction"
    if published:
        text += f", published all-reduce busbw median {median(published):g} GB/s"
    return text


def write_link_profile(profile: dict[str, Any], path: str | Path) -> None:
    """Write the profile; a CPU/gloo measurement is refused as ``prefer_measured: true`` (it would be taken for a
    GPU link), and its header says so and which shipped figures it replaces where it is passed."""
    link = profile["links"][0]
    on_cpu = profile.get("measured_on") == "cpu" or profile.get("backend", "nccl") != "nccl"
    if on_cpu and any(entry.get("prefer_measured") for entry in profile["links"]):
        backend = profile.get("backend", "gloo")
        raise InputError("--link-profile", f"a {backend} (CPU) measurement cannot be written with prefer_measured: "
                                           f"true; it is not a GPU figure for {link['id']}")
    header = (f"# Link profile for {link['id']} measured by `trainsizer probe comm`.\n"
              f"# Use it: trainsizer estimate job.yaml --catalog {path}   |   trainsizer plan ... --catalog {path}\n")
    if on_cpu:
        header += (f"# Measured with {profile.get('backend', 'gloo')} on CPU: a check of the machinery, not a GPU link "
                   "figure (prefer_measured: false).\n")
    if profile.get("replaces"):
        header += f"# Passed with --catalog it replaces {profile['replaces']}.\n"
    Path(path).write_text(header + yaml.safe_dump(profile, sort_keys=False, allow_unicode=True, width=120),
                          encoding="utf-8")
