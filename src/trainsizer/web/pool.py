"""Where the planner's computations run: a bounded pool of worker processes, so that requests use every
core (a plan is CPU-bound numpy and Python; threads would share one interpreter lock).

``Planner(workers, queue_limit, wait_s)`` starts ``workers`` processes (spawned, never forked from the
server's threads), each warmed once by ``warm`` (the app passes ``jobs.warm``). The ``Limiter`` of
``web/errors.py`` lets one computation per worker run; up to ``queue_limit`` more wait their turn for at
most ``wait_s`` (by default a team's burst: TEAM_BURST requests, or 8 per worker, waiting up to 30 s); any other
request is answered 503 at once (``Busy``): ``Retry-After`` only when the machine is truly saturated.
``answer(name, fn, *args)`` runs an endpoint's job once per identical request (``web/shared.py``).
``workers=0`` runs the computations in the server's own threads (tests; ``planner_slots`` at once). An error
raised in a worker (``InputError``, …) is raised again in the server, so it gets the same HTTP answer as in-process.

Spawned workers import the main module of the server process: a script that runs the app itself must do it
under ``if __name__ == "__main__":`` (``trainsizer serve`` and ``uvicorn --factory`` need nothing).
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from trainsizer.web.errors import Busy, Limiter
from trainsizer.web.shared import CACHED_ANSWERS, SharedResults

T = TypeVar("T")
QUEUE_PER_WORKER = 8
TEAM_BURST = 64  # a team submitting at once (50 people) waits in the queue rather than being refused
WORKER_GC_THRESHOLD = 100_000  # allocations between a worker's young-generation collections
WAIT_S = 30.0  # a request queued this long means the machine is saturated: 503 with Retry-After


def default_workers() -> int:
    """The cores this process may use, at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def default_queue(slots: int) -> int:
    """Requests that may wait for a slot: a team's burst, more on a machine with many cores."""
    return max(TEAM_BURST, QUEUE_PER_WORKER * slots)


def _worker_start(warm: Callable[[], None] | None) -> None:
    """A worker leaves Ctrl-C to the server (the terminal sends it to the whole process group): the server
    then stops the pool in order, instead of each worker dying with a traceback."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if warm is not None:
        warm()
    # What the warm-up loaded (modules, catalogs, schemas) lives as long as the worker: out of the cyclic
    # collector's passes, which would otherwise traverse it again during plans (docs.python.org: gc.freeze); a
    # plan makes ~10^6 short-lived objects: young passes every 100,000 net allocations, not 700 (a few % of a plan)
    gc.freeze()
    gc.set_threshold(WORKER_GC_THRESHOLD, *gc.get_threshold()[1:])


@contextlib.contextmanager
def _worker_environment() -> Iterator[None]:
    """The environment the workers are spawned with: numpy's OpenBLAS with one thread per worker (the pool is the
    parallelism: a plan makes no BLAS call worth threads, and each worker would otherwise start a busy thread per
    core). The user's own setting wins; the server's environment is restored once they have started.
    https://github.com/OpenMathLib/OpenBLAS#setting-the-number-of-threads-using-environment-variables"""
    if "OPENBLAS_NUM_THREADS" in os.environ:
        yield
        return
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        yield
    finally:
        os.environ.pop("OPENBLAS_NUM_THREADS", None)


def _started() -> int:
    time.sleep(0.05)  # long enough for each worker to take one of these
    return os.getpid()


class Planner:
    """Runs the endpoints' jobs: ``run(fn, *args)`` waits for a slot, then runs ``fn(*args)`` in a worker."""

    def __init__(self, workers: int | None = None, queue_limit: int | None = None, wait_s: float = WAIT_S,
                 planner_slots: int = 2, warm: Callable[[], None] | None = None,
                 cached_answers: int = CACHED_ANSWERS):
        self.workers = default_workers() if workers is None else max(0, workers)
        slots = self.workers or max(1, planner_slots)
        self.limiter = Limiter(slots, wait_s, default_queue(slots) if queue_limit is None else queue_limit)
        self.shared = SharedResults(cached_answers)
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
            with _worker_environment():
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

    def answer(self, name: str, fn: Callable[..., T], *args: Any) -> T:
        """``run(fn, *args)``, once for identical requests: those that come while it runs wait for its answer,
        those that come soon after get it again. ``name``: the endpoint (a request model's JSON is the key)."""
        key = (name, *(a.model_dump_json() if hasattr(a, "model_dump_json") else a for a in args))
        return self.shared.run(key, lambda: self.run(fn, *args))

    def answer_in_parts(self, name: str, first: Callable[..., tuple[T, Any]], rest: Callable[..., T],
                        *args: Any) -> Iterator[T]:
        """Two parts of one answer, in one slot: ``first(*args)`` gives the first part and a state, sent at once;
        ``rest(*args, state)`` the second (each in a worker). Identical requests share it as :meth:`answer` does.
        The slot is taken when the first part is asked for (a full queue raises Busy then)."""
        key = (name, *(a.model_dump_json() if hasattr(a, "model_dump_json") else a for a in args))

        def produce() -> Iterator[T]:
            with self.limiter.slot():
                head, state = self._call(first, *args)
                yield head
                yield self._call(rest, *args, state)

        return self.shared.stream(key, produce)

    def run(self, fn: Callable[..., T], *args: Any) -> T:
        with self.limiter.slot():
            return self._call(fn, *args)

    def _call(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in a worker (in this thread without workers); the caller holds a slot."""
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
