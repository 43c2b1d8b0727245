"""Issue 23, memory near the GPU's capacity: the caching allocator flushes its cache and retries a failed cudaMalloc
instead of reserving past the device, so the reserved (and device) memory of a job whose allocated bytes fit stays
within the GPU; the planner's vectorised screen applies the same cap."""

from __future__ import annotations

import numpy as np
import pytest

from trainsizer.api import estimate
from trainsizer.estimate.memory import default_memory_model, reserved_bytes, under_pressure
from trainsizer.estimate.memory_types import GIB
from trainsizer.hardware.catalog import default_catalog
from trainsizer.models.catalog import resolve_model
from trainsizer.plan.fast import CKPT, Layouts, job_basis, screen_memory
from trainsizer.scenario import scenario_from_dict


def test_reserved_memory_stops_at_the_usable_memory_while_the_allocated_bytes_fit():
    mp = default_memory_model()
    free = reserved_bytes(60 * GIB, 30 * GIB, mp)
    assert free > 60 * GIB  # the cache's own overhead
    assert reserved_bytes(60 * GIB, 30 * GIB, mp, usable=100 * GIB) == free  # room: unchanged
    assert reserved_bytes(60 * GIB, 30 * GIB, mp, usable=62 * GIB) == 62 * GIB  # pressure: held at the device
    assert under_pressure(60 * GIB, 30 * GIB, mp, 62 * GIB) and not under_pressure(60 * GIB, 30 * GIB, mp, 100 * GIB)
    # allocated bytes past the device: nothing to flush, the job does not fit (reserved >= allocated)
    assert reserved_bytes(70 * GIB, 30 * GIB, mp, usable=62 * GIB) == 70 * GIB
    arrays = reserved_bytes(np.array([60.0, 60.0, 70.0]) * GIB, np.full(3, 30.0) * GIB, mp,
                            usable=np.array([100.0, 62.0, 62.0]) * GIB)
    assert arrays == pytest.approx([free, 62 * GIB, 70 * GIB])


def _job(mbs: int, seq: int = 8192) -> dict:
    return {"model": {"preset": "llama-3.1-8b"},
            "training": {"method": "full", "precision": "bf16-mixed", "micro_batch_size": mbs, "seq_len": seq,
                         "global_batch_size": 8 * mbs, "activation_checkpointing": "full"},
            "parallel": {"gpus": 8, "zero": 3},
            "hardware": {"gpu": "h100-sxm5-80gb", "gpus_per_node": 8}}


def _near_capacity() -> tuple[dict, object]:
    for seq in range(8192, 1023, -512):  # steps of one micro-batch can jump over the narrow band: try lengths too
        for mbs in range(1, 33):
            mem = estimate(scenario_from_dict(_job(mbs, seq)), with_limits=False, with_performance=False).memory
            if any(n.code == "mem.allocator_pressure" for n in mem.notes):
                if mem.fits:
                    return _job(mbs, seq), mem
                break
    raise AssertionError("no micro-batch brings the job near the H100's memory")


def test_a_job_near_capacity_fits_with_its_reserved_memory_at_the_device_and_says_so():
    job, mem = _near_capacity()
    assert mem.fits and mem.allocated_bytes < mem.reserved_bytes <= mem.device_bytes <= mem.capacity_bytes
    over = estimate(scenario_from_dict(_job(job["training"]["micro_batch_size"] * 4, job["training"]["seq_len"])),
                    with_limits=False,
                    with_performance=False).memory
    assert not over.fits and over.reserved_bytes >= over.allocated_bytes


def test_the_planners_screen_applies_the_same_cap():
    job, mem = _near_capacity()
    sc = scenario_from_dict(job)
    arch, gpu = resolve_model(sc.model), default_catalog().accelerator("h100-sxm5-80gb")
    one = lambda v, dtype=int: np.array([v], dtype=dtype)  # noqa: E731
    lay = Layouts(gpus=one(8), tp=one(1), pp=one(1), cp=one(1), vpp=one(1), zero=one(3), dist_opt=one(False, bool),
                  sp=one(False, bool), offload=one(0), mbs=one(job["training"]["micro_batch_size"]),
                  ckpt=one(CKPT.index("full")), gpus_per_node=one(8))
    screened, _host = screen_memory(job_basis(sc, arch), lay, sc, gpu)
    assert screened[0] == pytest.approx(mem.device_bytes, rel=0.005)
    assert screened[0] <= gpu.memory_gib * GIB
