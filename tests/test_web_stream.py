"""The page's result comes in two parts: its answer card as soon as the plan is made, then the charts, rankings and
details (``POST /ui/plan`` streams them; web/static/app.js shows the card first). Checked by order of arrival on a
real server (the details are held back until the card has reached the client), never by timing."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
import warnings
from collections.abc import Iterator

import pytest

pytest.importorskip("fastapi")
httpx = pytest.importorskip("httpx")
uvicorn = pytest.importorskip("uvicorn")

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from fastapi.testclient import TestClient

from trainsizer.web import jobs  # noqa: E402
from trainsizer.web.app import create_app  # noqa: E402
from trainsizer.web.schemas import UiPlanIn  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

TRAINING = {"method": "lora", "precision": "bf16-true", "micro_batch_size": 1, "seq_len": 1024,
            "global_batch_size": 16, "activation_checkpointing": "full", "tokens": 1.0e8,
            "lora": {"rank": 16, "targets": "all-linear"}}
BODY = {"job": {"model": {"preset": "qwen2.5-0.5b"}, "training": TRAINING},
        "constraints": {"gpus": ["rtx-4090-24gb"], "max_gpus": 2}}


@contextlib.contextmanager
def _served(app: object) -> Iterator[str]:
    """``app`` on a loopback port in a thread of this process (so a test's stand-in jobs run in it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(30)


def test_the_answer_card_arrives_before_the_details_are_made():
    release = threading.Event()

    def held_rest(req, lang, state):  # the details are made only once the client has read the card
        assert release.wait(60)
        return jobs.ui_rest(req, lang, state)

    app = create_app(workers=0, job_functions={"ui_rest": held_rest})
    with _served(app) as base, httpx.Client(base_url=base, timeout=60) as client, \
            client.stream("POST", "/ui/plan", json=BODY) as resp:
        assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/html")
        chunks = resp.iter_text()
        first = ""
        while not first.rstrip().endswith("</section>"):
            first += next(chunks)
        assert 'data-testid="answer-card"' in first and 'data-testid="rankings"' not in first
        assert 'data-slot="charts"' not in first
        release.set()  # only now can the rest be made
        rest = "".join(chunks)
    assert 'data-testid="rankings"' in rest and 'data-testid="answer-card"' not in rest
    # the two parts are the whole fragment, as the job that makes it in one piece gives it
    assert first + rest == jobs.ui_plan(UiPlanIn.model_validate(BODY), "en")


def test_an_error_comes_before_any_part_and_identical_requests_share_one_plan():
    made = []

    def counted_answer(req, lang):
        made.append(True)
        return jobs.ui_answer(req, lang)

    app = create_app(workers=0, job_functions={"ui_answer": counted_answer})
    with TestClient(app) as client:
        bad = client.post("/ui/plan", json={**BODY, "constraints": {"gpus": ["nope"]}})
        assert bad.status_code == 422 and bad.json()["field"] == "constraints.gpus[0]"
        pages = [client.post("/ui/plan", json=BODY) for _ in range(2)]
        assert [p.status_code for p in pages] == [200, 200] and pages[0].text == pages[1].text
        assert 'data-testid="answer-card"' in pages[0].text and 'data-testid="rankings"' in pages[0].text
    assert len(made) == 2  # the bad request's, then one plan for both identical requests (the second from cache)
