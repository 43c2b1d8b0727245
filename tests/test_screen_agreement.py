"""One model: the planner's numpy screen and the exact estimate agree on every candidate the search re-checks, for
every job of the optimality test (the jobs the whole-catalog answer is held to) and two mixture-of-experts jobs, whose
candidates include expert-parallel layouts. The screen's step time is the
estimate's own terms over arrays of layouts (``plan.fast.screen_step_time``): equal to float rounding. Its memory is
the estimate's per-layer figures probed once per job and sharded per layout (``plan.fast.memory_screen``): equal up to
the rounding of those per-layer averages (a few parts in a million)."""

from __future__ import annotations

import pytest
from conftest import REPO
from test_optimality import CASES, CNY, _scenario

import trainsizer.plan.search as search
from trainsizer.errors import InputError
from trainsizer.estimate.estimator import estimate
from trainsizer.models.catalog import resolve_model
from trainsizer.plan.fast import job_basis, memory_screen
from trainsizer.workflows.jobs import load_job
from trainsizer.workflows.plan_job import plan_job

STEP_TOLERANCE = 1e-9  # relative: float rounding of the same terms summed over arrays
MEMORY_TOLERANCE = 1e-5  # relative: the per-layer bytes are averages over the job's layers
# mixture-of-experts jobs, whose layouts the search also varies by expert parallelism (under a framework that runs it
# with their methods: Megatron-SWIFT's --expert_model_parallel_size, frameworks/ms-swift-megatron.yaml)
MOE_CASES = [("qwen3-30b-a3b-full-cny", str(REPO / "examples/jobs/qwen3-30b-a3b-full.yaml"), CNY),
             ("deepseek-v2-lite-lora-cny", str(REPO / "examples/jobs/deepseek-v2-lite-lora.yaml"), CNY)]
WITH_EP = "ms-swift-megatron"


@pytest.mark.parametrize(("name", "job", "req"), CASES + MOE_CASES, ids=[c[0] for c in CASES + MOE_CASES])
def test_the_screen_is_the_estimate_on_every_rechecked_candidate(name, job, req, monkeypatch) -> None:
    rechecked = []
    exact_options = search._exact_options

    def keep(chosen, job, constraints, cat, mp, pp_, global_batch, *args, **kwargs):
        rechecked.append((list(chosen), job, constraints, cat, mp, pp_, global_batch))
        return exact_options(chosen, job, constraints, cat, mp, pp_, global_batch, *args, **kwargs)

    monkeypatch.setattr(search, "_exact_options", keep)
    moe = (name, job, req) in MOE_CASES
    plan_job(load_job(job, framework=WITH_EP) if moe else _scenario(job), req)
    compared = expert_parallel = 0
    for chosen, planned, constraints, cat, mp, pp_, global_batch in rechecked:
        # the screen steps through the global batch the options are held to (search.plan's screened job)
        screened = planned.model_copy(update={"training": planned.training.model_copy(
            update={"global_batch_size": global_batch})})
        basis = job_basis(screened, resolve_model(screened.model), mp)
        memory = {}
        for item in chosen:
            sc = search._scenario_for(planned, item.gpu, item.layouts, item.index, item.inter_node, global_batch,
                                      constraints.intra_node)
            try:
                exact = estimate(sc, catalog=cat, memory_params=mp, performance_params=pp_, with_limits=False)
            except InputError:
                continue
            if id(item.layouts) not in memory:
                memory[id(item.layouts)] = memory_screen(basis, item.layouts, screened, mp)
            device = memory[id(item.layouts)].on(item.gpu)[0][item.index]
            where = (name, item.gpu.id, sc.parallel, sc.training.micro_batch_size,
                     sc.training.activation_checkpointing, item.inter_node)
            assert item.step_time_s == pytest.approx(exact.performance.step_time_s, rel=STEP_TOLERANCE), where
            assert device == pytest.approx(exact.memory.device_bytes, rel=MEMORY_TOLERANCE), where
            compared += 1
            expert_parallel += sc.parallel.ep > 1
    assert compared >= 10, name  # the search re-checks 21 to 166 candidates of these jobs
    assert expert_parallel >= 10 or not moe, name
