"""The step-time screen prices the GPU types alike in what the estimate's terms branch on in one pass
(``plan.screen_times``, ``plan.screen_parts.screen_key``): every layout's screened step time is the one a pass of
its own GPU type alone gives, to the bit (the shortlist's order, and so the plan, depends on it)."""

from __future__ import annotations

import numpy as np
import pytest
from test_optimality import CNY, DEFAULT, LLAMA_QLORA, QWEN_LORA
from test_screen_agreement import MOE_CASES, WITH_EP

import trainsizer.plan.search as search
from trainsizer.plan.screen_parts import screen_key
from trainsizer.workflows.jobs import load_job
from trainsizer.workflows.plan_job import plan_job


def _fp8(path: str):
    job = load_job(path)
    return job.model_copy(update={"training": job.training.model_copy(update={"precision": "fp8-mixed"})})


JOBS = [("7b-lora", lambda: load_job(QWEN_LORA), DEFAULT), ("8b-qlora-cny", lambda: load_job(LLAMA_QLORA), CNY),
        ("7b-lora-fp8", lambda: _fp8(QWEN_LORA), DEFAULT),
        *((name, lambda path=path: load_job(path, framework=WITH_EP), req) for name, path, req in MOE_CASES)]


@pytest.mark.parametrize(("name", "job", "req"), JOBS, ids=[j[0] for j in JOBS])
def test_gpu_types_screened_together_get_their_own_step_times(name, job, req, monkeypatch) -> None:
    passes = []
    real = search.screen_times

    def both(screens, pp_, mp, step):
        together = real(screens, pp_, mp, step)
        keys = {screen_key(gpu, step[0].training) for gpu, _ in screens}
        passes.append((screens, len(keys), together, [real([one], pp_, mp, step)[0] for one in screens]))
        return together

    monkeypatch.setattr(search, "screen_times", both)
    plan_job(job(), req)
    (screens, n_passes, together, alone), = passes
    assert n_passes < len(screens)  # some GPU types shared a pass
    for (gpu, _), mine, own in zip(screens, together, alone, strict=True):
        for shape_times, own_times in zip(mine, own, strict=True):
            for t, o in zip(shape_times, own_times, strict=True):
                assert np.array_equal(t, o, equal_nan=True), gpu.id
