"""The web planner's pool of worker processes (``web/pool.py``): a full queue is 503 with Retry-After at
once, a request that waits past the limit is 503, an InputError raised in a worker is the same 422 naming
the field, a worker that dies is replaced, and the workers stop with the app."""

from __future__ import annotations

import os
import threading
import time
import warnings

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from fastapi.testclient import TestClient

import web_stubs  # noqa: E402  (tests/ is on sys.path, and the spawned workers inherit it)

from trainsizer.web.app import create_app  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

JOB = {"model": {"preset": "qwen2.5-1.5b"},
       "training": {"method": "lora", "precision": "bf16-true", "micro_batch_size": 1, "seq_len": 2048,
                    "global_batch_size": 16, "activation_checkpointing": "full", "tokens": 1.0e8,
                    "lora": {"rank": 16, "targets": "all-linear"}}}
PLAN = {"job": JOB, "constraints": {"gpus": ["rtx-4090-24gb"], "max_gpus": 4}}
STUB_START = {"warm": web_stubs.no_warm}  # stubs need no warm-up: the pool starts in a fraction of a second


def until(condition, limit_s: float = 10.0) -> None:
    deadline = time.monotonic() + limit_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_full_queue_and_long_wait_are_503_with_retry_after():
    """One worker, one place in the queue: the third request is refused at once, the queued one after
    the wait limit; the running one completes in the worker."""
    app = create_app(workers=1, queue_limit=1, busy_wait_s=0.5,
                     job_functions={"plan": web_stubs.slow_plan, **STUB_START})
    limiter, answers = app.state.limiter, {}
    with TestClient(app) as client:
        def post(name: str, max_gpus: int) -> None:  # distinct jobs: identical ones would be computed once
            answers[name] = client.post("/api/plan", json={**PLAN, "constraints": {**PLAN["constraints"],
                                                                                   "max_gpus": max_gpus}})

        running = threading.Thread(target=post, args=("running", 1))
        running.start()
        until(lambda: limiter.running == 1)
        queued = threading.Thread(target=post, args=("queued", 2))
        queued.start()
        until(lambda: limiter.queued == 1)
        t0 = time.monotonic()
        full = client.post("/api/plan", json=PLAN)
        assert time.monotonic() - t0 < 0.4  # refused at once, not after the wait
        queued.join(10)
        running.join(10)
        pids = app.state.planner.pids()
    assert full.status_code == 503, full.text
    assert full.json()["field"] == "" and "busy" in full.json()["message"] and "waiting" in full.json()["message"]
    assert int(full.headers["retry-after"]) >= 1
    late = answers["queued"]
    assert late.status_code == 503 and "0.5 s" in late.json()["message"] and int(late.headers["retry-after"]) >= 1
    done = answers["running"]
    assert done.status_code == 200, done.text
    assert done.json()["pid"] in pids and done.json()["pid"] != os.getpid()


def test_input_error_in_a_worker_is_the_same_422():
    app = create_app(workers=1)
    with TestClient(app) as client:
        ok = client.post("/api/plan", json=PLAN)
        bad_gpu = client.post("/api/plan", json={"job": JOB, "constraints": {"gpus": ["rtx-4090-24gb", "nope"]}})
        bad_job = client.post("/api/scale", json={"job": {**JOB, "training": {**JOB["training"], "seq_len": 1}},
                                                  "gpu": "nope"})
        page = client.post("/ui/plan?lang=zh-CN", json={"job": JOB, "constraints": {"gpus": ["nope"]}})
        csv = client.post("/api/export?format=csv", json=PLAN)
    with TestClient(create_app(workers=0)) as client:
        same = client.post("/api/plan", json={"job": JOB, "constraints": {"gpus": ["rtx-4090-24gb", "nope"]}})
    assert ok.status_code == 200 and ok.json()["options"], ok.text
    assert bad_gpu.status_code == 422 and bad_gpu.json() == same.json()
    assert bad_gpu.json()["field"] == "constraints.gpus[1]" and "nope" in bad_gpu.json()["message"]
    assert bad_job.status_code == 422 and bad_job.json()["field"] == "gpu"
    assert page.status_code == 422 and page.json()["field"] == "constraints.gpus[0]"
    assert csv.status_code == 200 and csv.headers["content-type"].startswith("text/csv")


def test_a_dead_worker_is_503_and_replaced():
    app = create_app(workers=1, job_functions={"estimate": web_stubs.dying_estimate,
                                                "plan": web_stubs.quick_plan, **STUB_START})
    with TestClient(app) as client:
        first = app.state.planner.pids()
        died = client.post("/api/estimate", json={**JOB, "parallel": {"gpus": 1}, "hardware": {"gpu": "rtx-4090-24gb"}})
        after = client.post("/api/plan", json=PLAN)
    assert died.status_code == 503 and died.headers["retry-after"] and "restarted" in died.json()["message"]
    assert after.status_code == 200 and after.json()["pid"] not in first


def test_the_workers_stop_with_the_app():
    app = create_app(workers=2, job_functions={"plan": web_stubs.quick_plan, **STUB_START})
    planner = app.state.planner
    with TestClient(app) as client:
        pids = planner.pids()
        assert len(pids) == 2 and all(alive(p) for p in pids)  # started, warmed, with the app
        assert client.post("/api/plan", json=PLAN).json()["pid"] in pids
    assert planner.pids() == []
    assert not any(alive(p) for p in pids)
