"""Identical requests answered once: a request whose normalised body (the validated request model as JSON, with
its defaults filled in) is being computed waits for that computation instead of queueing its own (request
coalescing), and a recent answer is served again from a small cache. A team that submits the same job from
several browsers, or reloads the page, costs the planner one computation.

Errors are shared with the requests that waited for them but never cached: the next identical request computes
again. ``stream`` does the same for a computation that comes in parts (the page's answer card, then the rest): the
first request gets each part as it is made, the others all parts at once.
Answers expire after ``ttl_s`` (prices and the staleness of their dates are read when a plan is made)."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from concurrent.futures import Future
from typing import Any, TypeVar

T = TypeVar("T")
CACHED_ANSWERS = 64  # a plan's answer is some 100-300 KB of JSON: a few tens of MB at most
ANSWER_TTL_S = 600.0


class SharedResults:
    """``run(key, compute)``: ``compute()`` once per key at a time, its answer kept for ``ttl_s``."""

    def __init__(self, size: int = CACHED_ANSWERS, ttl_s: float = ANSWER_TTL_S):
        self.size, self.ttl_s = size, ttl_s
        self._done: OrderedDict[Hashable, tuple[float, Any]] = OrderedDict()
        self._running: dict[Hashable, Future[Any]] = {}
        self._lock = threading.Lock()
        self.computed = 0  # computations started (the rest were answered from another's)

    def _claim(self, key: Hashable) -> tuple[bool, Any, Future[Any] | None, bool]:
        """Under the lock: (fresh, its cached value) when a recent answer is kept; else the computation of ``key``
        in flight and whether this caller owns it (it started it and must finish it)."""
        with self._lock:
            hit = self._done.get(key)
            if hit is not None and time.monotonic() - hit[0] < self.ttl_s:
                self._done.move_to_end(key)
                return True, hit[1], None, False
            running = self._running.get(key)
            if running is not None:
                return False, None, running, False
            running = self._running[key] = Future()
            self.computed += 1
            return False, None, running, True

    def _abandon(self, key: Hashable, running: Future[Any], exc: BaseException) -> None:
        """The computation of ``key`` failed: its waiters get ``exc``; the next request computes afresh."""
        with self._lock:
            del self._running[key]
        running.set_exception(exc)

    def run(self, key: Hashable, compute: Callable[[], T]) -> T:
        fresh, value, running, owner = self._claim(key)
        if fresh:
            return value
        assert running is not None
        if not owner:
            return running.result()
        try:
            value = compute()
        except BaseException as exc:
            self._abandon(key, running, exc)
            raise
        self._finish(key, running, value)
        return value

    def _finish(self, key: Hashable, running: Future, value: Any) -> None:
        """The computation of ``key`` is done: cache its ``value`` (the oldest out past ``size``); answer waiters."""
        with self._lock:
            del self._running[key]
            if self.size:
                self._done[key] = (time.monotonic(), value)
                self._done.move_to_end(key)
                while len(self._done) > self.size:
                    self._done.popitem(last=False)
        running.set_result(value)

    def stream(self, key: Hashable, produce: Callable[[], Iterator[T]]) -> Iterator[T]:
        """The parts ``produce()`` yields, once per key at a time: the request that computes gets each part as it
        comes; identical requests meanwhile, and soon after, get the parts together once it is done."""
        fresh, value, running, owner = self._claim(key)
        if fresh:
            yield from value
            return
        assert running is not None
        if not owner:
            yield from running.result()
            return
        parts: list[T] = []
        made = produce()
        try:
            for part in made:
                parts.append(part)
                yield part
        except BaseException as exc:  # an error, or the request went away before the last part
            made.close()  # its slot is given back now
            self._abandon(key, running, exc if isinstance(exc, Exception) else RuntimeError("the request went away"))
            raise
        value = tuple(parts)
        self._finish(key, running, value)

