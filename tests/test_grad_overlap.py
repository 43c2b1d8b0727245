"""``parallel.overlap_grad_reduce: false``: the step waits for the whole data-parallel gradient reduction (DeepSpeed
ZeRO-1/2 with ``overlap_comm`` at its default false reduces the buckets on the compute stream;
estimate/grad_overlap.py), in the estimate and in the planner's screen alike."""

import numpy as np
import pytest
from screen_layouts import estimate_and_screen, one_layout  # tests/ is on sys.path

from trainsizer.estimate.grad_overlap import reduce_overlaps
from trainsizer.scenario import scenario_from_dict

GPU = "v100-sxm2-32gb"


def _job(zero, overlap=None):
    parallel = {"gpus": 16, "zero": zero}
    if overlap is not None:
        parallel["overlap_grad_reduce"] = overlap
    return {"model": {"preset": "gpt2-124m"},
            "training": {"method": "full", "precision": "fp16-mixed", "micro_batch_size": 8, "seq_len": 1024,
                         "global_batch_size": 128, "attention": "eager"},
            "parallel": parallel, "hardware": {"gpu": GPU, "gpus_per_node": 16}}


def _run(job):
    sc = scenario_from_dict(job)
    _, _, perf, raw, screen = estimate_and_screen(job, GPU, one_layout(gpus=16, zero=sc.parallel.zero, mbs=8,
                                                                       gpus_per_node=16))
    return perf, raw, screen


@pytest.mark.parametrize("zero", [0, 1])
def test_an_unoverlapped_reduction_is_exposed_whole(zero):
    default, raw, screen = _run(_job(zero))
    same, _, same_screen = _run(_job(zero, True))
    waits, raw_waits, screen_waits = _run(_job(zero, False))
    assert same.step_time_s == default.step_time_s and same_screen == screen
    assert raw.dp_sync_s > 0 and raw.reduce_overlapped == 1.0 and raw_waits.reduce_overlapped == 0.0
    # default: hidden behind backward; false: all of it on the step, on top of what was exposed (the gather)
    assert default.breakdown_s["dp_grad_sync"] < raw.dp_sync_s
    assert waits.breakdown_s["dp_grad_sync"] == pytest.approx(default.breakdown_s["dp_grad_sync"] + raw.dp_sync_s)
    assert screen_waits - screen == pytest.approx(waits.step_time_s - default.step_time_s, rel=0.05)


def test_reduce_overlaps_takes_flags_or_arrays():
    assert reduce_overlaps(True) == 1.0 and reduce_overlaps(False) == 0.0
    assert list(reduce_overlaps(np.array([True, False]))) == [1.0, 0.0]
