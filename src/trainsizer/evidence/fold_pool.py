"""Independent cross-validation folds run on every core of the machine.

Each fold of a leave-one-out (``holdout``) or of the nested one (``nested_holdout``) fits its parameters on its own
training cases and predicts its own held-out ones: nothing passes between folds, so they run in worker processes
and come back in order, the answer the same as one after another. Workers are forked (the fold's task, a closure
over the case terms, is inherited, not pickled); where the platform cannot fork, or one core is all there is, or
``TRAINSIZER_JOBS=1``, the folds run one after another in this process (Python docs, ``concurrent.futures``
``ProcessPoolExecutor`` and ``multiprocessing`` start methods)."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

JOBS_ENV = "TRAINSIZER_JOBS"  # how many worker processes at most; default: the cores this process may run on

_task: Callable[[Any], Any] | None = None  # the running map's task, inherited by the forked workers


def jobs() -> int:
    """Worker processes a fold map may use: ``TRAINSIZER_JOBS`` when it is a positive whole number, else the cores
    this process may run on."""
    stated = os.environ.get(JOBS_ENV, "").strip()
    if stated.isdigit() and int(stated) > 0:
        return int(stated)
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _run(item: Any) -> Any:
    assert _task is not None  # set by fold_map before the workers fork
    return _task(item)


def fold_map(task: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
    """``[task(i) for i in items]``, the items spread over worker processes. ``task`` may be a closure (workers
    inherit it by forking); items and results are pickled."""
    global _task
    workers = min(len(items), jobs())
    if workers <= 1 or "fork" not in multiprocessing.get_all_start_methods() or _task is not None:
        return [task(i) for i in items]  # one core, no fork, or already inside a map: one after another
    _task = task
    try:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            return list(pool.map(_run, items))
    finally:
        _task = None
