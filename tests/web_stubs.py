"""Stand-ins for jobs of ``trainsizer.web.jobs``, injected through ``create_app(job_functions=...)`` by
tests/test_web_pool.py; at module level so that a planner worker process can import them."""

from __future__ import annotations

import os
import time
from typing import Any

SLOW_S = 1.0


def slow_plan(req: Any) -> dict[str, Any]:
    time.sleep(SLOW_S)
    return {"pid": os.getpid(), "options": []}


def quick_plan(req: Any) -> dict[str, Any]:
    return {"pid": os.getpid(), "options": []}


def dying_estimate(req: Any) -> dict[str, Any]:
    os._exit(3)  # a worker killed mid-request (the kernel's OOM killer, a segfault)


def no_warm() -> None:
    """A worker's start without the real warm-up (a small plan): the stubs need no catalogs."""


def counted_plan(req: Any) -> dict[str, Any]:
    """A plan that takes a while (identical requests arrive while it runs); in the server's threads."""
    from trainsizer.errors import InputError

    time.sleep(0.3)
    if "nope" in req.constraints.gpus:
        raise InputError("constraints.gpus[0]", "'nope' is not a GPU id")
    return {"pid": os.getpid(), "options": [], "max_gpus": req.constraints.max_gpus}
