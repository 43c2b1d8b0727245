"""The web planner under a team's burst (the short version of benchmarks/bench_web.py, without timing asserts):
many clients with different jobs at once are all answered, none refused; identical jobs are computed once."""

from __future__ import annotations

import itertools
import threading
import warnings

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from fastapi.testclient import TestClient

import web_stubs  # noqa: E402

from trainsizer.web.app import create_app  # noqa: E402
from trainsizer.web.pool import default_queue  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

CLIENTS = 16
MODELS = ("qwen2.5-0.5b", "qwen2.5-1.5b", "llama-3.2-1b", "tinyllama-1.1b")
GPUS = (["rtx-4090-24gb"], ["l40s-48gb"], ["a100-sxm4-80gb"], ["h20-96gb"])


def _bodies(n: int) -> list[dict]:
    out = []
    for model, method, gpus, seq in itertools.islice(itertools.product(MODELS, ("lora", "full"), GPUS, (1024, 2048)),
                                                     n):
        training = {"method": method, "micro_batch_size": 1, "seq_len": seq, "global_batch_size": 16,
                    "activation_checkpointing": "full", "tokens": 1.0e8}
        training |= ({"precision": "bf16-true", "lora": {"rank": 16, "targets": "all-linear"}} if method == "lora"
                     else {"precision": "bf16-mixed"})
        out.append({"job": {"model": {"preset": model}, "training": training},
                    "constraints": {"gpus": gpus, "max_gpus": 4}})
    return out


def _burst(client: TestClient, bodies: list[dict]) -> list:
    answers: list = [None] * len(bodies)
    start = threading.Barrier(len(bodies))

    def post(i: int) -> None:
        start.wait()
        answers[i] = client.post("/api/plan", json=bodies[i])

    threads = [threading.Thread(target=post, args=(i,)) for i in range(len(bodies))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return answers


def test_a_burst_of_different_jobs_is_all_answered_by_the_worker_pool():
    bodies = _bodies(CLIENTS)
    assert len({str(b) for b in bodies}) == CLIENTS
    app = create_app(workers=2)  # the defaults but the worker count: queue and wait as served
    assert app.state.limiter.queue_limit == default_queue(2) >= 50  # a team's burst waits, not refused
    with TestClient(app) as client:
        answers = _burst(client, bodies)
    assert all(a is not None for a in answers)
    assert [a.status_code for a in answers] == [200] * CLIENTS, [a.text[:200] for a in answers if a.status_code != 200]
    assert all({"options", "recommendation", "rankings"} <= a.json().keys() for a in answers)  # each its plan
    assert sum(bool(a.json()["options"]) for a in answers) >= CLIENTS // 2
    assert app.state.planner.shared.computed == CLIENTS


def test_identical_jobs_are_computed_once_and_errors_are_not_kept():
    app = create_app(workers=0, job_functions={"plan": web_stubs.counted_plan})
    body = _bodies(1)[0]
    with TestClient(app) as client:
        same = _burst(client, [body] * 8)
        again = client.post("/api/plan", json=body)
        # the same job written differently (defaults spelt out) is the same request
        spelt = client.post("/api/plan", json={**body, "constraints": {**body["constraints"], "top": 10}})
        other = client.post("/api/plan", json={**body, "constraints": {**body["constraints"], "max_gpus": 2}})
        bad = [client.post("/api/plan", json={**body, "constraints": {**body["constraints"], "gpus": ["nope"]}})
               for _ in range(2)]
    assert [a.status_code for a in same] == [200] * 8 and again.status_code == spelt.status_code == 200
    assert other.json()["max_gpus"] == 2
    assert all(b.status_code == 422 and b.json()["field"] == "constraints.gpus[0]" for b in bad)
    assert app.state.planner.shared.computed == 2 + 2  # body and other; each bad request computed (never kept)
