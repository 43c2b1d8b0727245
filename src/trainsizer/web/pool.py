"""Where the planner's computations run: a bounded pool of worker processes, so that requests use every
core (a plan is CPU-bound numpy and Python; threads would share one interpreter lock).

``Planner(workers, queue_limit, wait_s)`` starts ``workers`` processes (spawned, never forked from the
server's threads), each warmed once by ``warm`` (the app passes ``jobs.warm``). The ``Limiter`` of
``web/errors.py`` lets one computation per worker run; up to ``queue_limit`` more wait their turn for at
most ``wait_s``; any other request is answered 503 at once (``Busy``). ``workers=0`` runs the computations
in the server's own threads (tests; ``planner_slots`` at once). An error raised in a worker
(``InputError``, …) is raised again in the server, so it gets the same HTTP answer as in-process.

Spawned workers import the main module of the server process: a script that runs the app itself must do it
under ``if __name__ == "__main__":`` (``trainsizer serve`` and ``uvicorn --factory`` need nothing).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from trainsizer.web.errors import Busy, Limiter

T = TypeVar("T")
QUEUE_PER_WORKER = 4


def default_workers() -> int:
    """The cores this process may use, at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _worker_start(warm: Callable[[], None] | None) -> None:
    """A worker leaves Ctrl-C to the server (the terminal sends it to the whole process group): the server
    then stops the pool in order, instead of each worker dying with a traceback."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if warm is not None:
        warm()


def _started() -> int:
    time.sleep(0.05)  # long enough for each worker to take one of these
    return os.getpid()


class Planner:
    """Runs the endpoints' jobs: ``run(fn, *args)`` waits for a slot, then runs ``fn(*args)`` in a worker."""

    def __init__(self, workers: int | None = None, queue_limit: int | None = None, wait_s: float = 10.0,
                 planner_slots: int = 2, warm: Callable[[], None] | None = None):
        self.workers = default_workers() if workers is None else max(0, workers)
        slots = self.workers or max(1, planner_slots)
        self.limiter = Limiter(slots, wait_s, QUEUE_PER_WORKER * slots if queue_limit is None else queue_limit)
        self._warm = warm
        self._pool: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()

    @property
    def capacity(self) -> int:
        """Requests that can be inside the planner at once (running or waiting)."""
        return self.limiter.slots + (self.limiter.queue_limit or 0)

    def start(self) -> None:
        """Start and warm the workers (the app's start-up; a no-op in-process or when started)."""
        with self._lock:
            self._start()

    def _start(self) -> ProcessPoolExecutor | None:
        if self.workers and self._pool is None:
            self._pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"),
                                             initializer=_worker_start, initargs=(self._warm,))
            for started in [self._pool.submit(_started) for _ in range(self.workers)]:
                started.result()  # a warm-up that fails stops the server's start-up, with its error
        return self._pool

    def close(self) -> None:
        """Stop the workers (the app's shut-down): running jobs finish, queued ones are cancelled."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    def pids(self) -> list[int]:
        pool = self._pool
        return [p.pid for p in (pool._processes or {}).values()] if pool is not None else []  # noqa: SLF001

    def run(self, fn: Callable[..., T], *args: Any) -> T:
        with self.limiter.slot():
            if not self.workers:
                return fn(*args)
            with self._lock:
                pool = self._start()  # started by the app's lifespan; here if the app was run without one
            assert pool is not None
            try:
                return pool.submit(fn, *args).result()
            except BrokenProcessPool:
                self._replace(pool)
                raise Busy("a planner worker stopped (out of memory?); it was restarted: retry", 1) from None

    def _replace(self, broken: ProcessPoolExecutor) -> None:
        with self._lock:
            if self._pool is broken:
                self._pool = None
                self._start()
        broken.shutdown(wait=False, cancel_futures=True)
