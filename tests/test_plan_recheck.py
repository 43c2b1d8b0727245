"""The search re-checks, without a deadline, only the shortlisted layouts whose options ``_best_per_hardware`` can
keep (``search._fastest_per_hardware``): the plan is the same as when every shortlisted layout is re-checked, for the
jobs of the optimality test that have no deadline and two mixture-of-experts jobs."""

from __future__ import annotations

import pytest
from test_optimality import CASES, _scenario
from test_screen_agreement import MOE_CASES, WITH_EP

import trainsizer.plan.search as search
from trainsizer.workflows.jobs import load_job
from trainsizer.workflows.plan_job import plan_job

UNBOUNDED = [c for c in CASES if not c[2].deadline_s] + MOE_CASES


def _every_layout(unique, recheck, risks=None):
    """The re-check of every shortlisted layout (what the search would do without pruning)."""
    return [(pos, search._option(*found)) for pos, item in unique if (found := recheck(item)) is not None]


@pytest.mark.parametrize(("name", "job", "req"), UNBOUNDED, ids=[c[0] for c in UNBOUNDED])
def test_rechecking_fewer_layouts_gives_the_same_plan(name, job, req, monkeypatch) -> None:
    def scenario():
        return load_job(job, framework=WITH_EP) if (name, job, req) in MOE_CASES else _scenario(job)

    calls = {"pruned": 0, "every": 0}
    recheck_all = search._fastest_per_hardware

    def counted(label, fn):
        def run(unique, recheck, *limits):
            def one(item):
                calls[label] += 1
                return recheck(item)
            return fn(unique, one, *limits)
        return run

    monkeypatch.setattr(search, "_fastest_per_hardware", counted("pruned", recheck_all))
    pruned = plan_job(scenario(), req).out
    monkeypatch.setattr(search, "_fastest_per_hardware", counted("every", _every_layout))
    every = plan_job(scenario(), req).out
    assert pruned == every, name
    assert calls["pruned"] <= calls["every"], name
