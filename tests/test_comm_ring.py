"""All-gather and reduce-scatter inside a node at the ring's bus bandwidth: NVLink SHARP (NVLS) speeds up NCCL's
all-reduce only, so a link's NVLS points price its all-reduces and never its all-gathers (estimate/comm.py)."""

import pytest

from trainsizer.estimate.comm import Fabric, all_gather_s, all_reduce_s, fabric
from trainsizer.estimate.step import default_performance_model
from trainsizer.hardware.catalog import default_catalog


def _fabric(link: str) -> Fabric:
    cat = default_catalog()
    return fabric(cat, cat.accelerator("h100-sxm5-80gb"), link, None, None, 8, default_performance_model())


def test_nvls_points_price_the_all_reduce_and_not_the_ring():
    link = default_catalog().link("nvlink4", "hardware.intra_node", ("scale-up",))
    points = link.measured_allreduce_busbw_gbps or []
    ring = [p["busbw_gbps"] for p in points if p.get("algorithm") != "nvls"]
    assert ring and len(ring) < len(points)  # the catalog holds both kinds for NVLink 4
    fab = _fabric("nvlink4")
    assert fab.intra_ring_gbps < fab.intra_busbw_gbps
    assert fab.intra_ring_gbps == pytest.approx(sorted(ring)[len(ring) // 2])


def test_all_gather_runs_at_the_ring_bandwidth_inside_a_node():
    fab = _fabric("nvlink4")
    size = 2.0**30
    # an all-gather moves half an all-reduce's bytes: at equal bandwidth it would take half the time
    assert all_gather_s(size, 8, fab) > all_reduce_s(size, 8, fab) / 2
    assert all_gather_s(size, 8, fab) == pytest.approx(all_gather_s(size, 8, fab.ring()))


def test_a_link_measured_only_under_nvls_rings_at_the_line_rate_fraction():
    fab = _fabric("nvlink-h800")
    link = default_catalog().link("nvlink-h800", "hardware.intra_node", ("scale-up",))
    params = default_performance_model()
    assert fab.intra_ring_gbps == pytest.approx(
        link.per_direction_gbps * params.communication.busbw_fraction["scale-up"])
