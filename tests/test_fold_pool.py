"""Cross-validation folds on every core (evidence/fold_pool.py): the answer is the one the folds give one after
another, in order, whatever the number of workers."""

from __future__ import annotations

import os

import pytest

from trainsizer.evidence import fold_pool


def _task_of(offset: int):
    def task(item: int) -> tuple[int, int]:  # a closure: workers inherit it, it is never pickled
        return item, item * item + offset
    return task


@pytest.mark.parametrize("jobs", ["1", "2", "3"])
def test_folds_come_back_in_order_and_equal_to_one_after_another(monkeypatch, jobs):
    monkeypatch.setenv(fold_pool.JOBS_ENV, jobs)
    items = list(range(17))
    assert fold_pool.fold_map(_task_of(5), items) == [(i, i * i + 5) for i in items]


def test_workers_are_other_processes_unless_one_job_is_asked_for(monkeypatch):
    monkeypatch.setenv(fold_pool.JOBS_ENV, "2")
    assert set(fold_pool.fold_map(lambda _: os.getpid(), range(4))) - {os.getpid()}
    monkeypatch.setenv(fold_pool.JOBS_ENV, "1")
    assert set(fold_pool.fold_map(lambda _: os.getpid(), range(4))) == {os.getpid()}


def test_a_map_inside_a_worker_runs_one_after_another_and_an_odd_setting_takes_the_cores(monkeypatch):
    monkeypatch.setenv(fold_pool.JOBS_ENV, "2")
    inner = fold_pool.fold_map(lambda i: fold_pool.fold_map(lambda j: (os.getpid(), j), range(3)), range(2))
    assert all(len({pid for pid, _ in row}) == 1 for row in inner)
    monkeypatch.setenv(fold_pool.JOBS_ENV, "many")
    assert fold_pool.jobs() >= 1
    assert fold_pool.fold_map(str, []) == []
