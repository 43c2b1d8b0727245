"""The kept seeded normal draws are numpy.random's own: the first run draws and keeps them, a later one reads them."""

from __future__ import annotations

import numpy as np
import pytest

from trainsizer.workflows import normal_draws
from trainsizer.workflows.normal_draws import standard_normals


@pytest.fixture(autouse=True)
def _nothing_read_yet():
    normal_draws._kept.cache_clear()  # each test reads its own cache folder
    yield
    normal_draws._kept.cache_clear()


def test_kept_draws_are_the_generators_stream_split_as_two_calls(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINSIZER_CACHE_DIR", str(tmp_path))
    rng = np.random.default_rng(7)
    first, then = rng.standard_normal((300, 3)), rng.standard_normal((300, 5))
    for _ in range(2):  # drawn and kept, then read back from the cache folder
        normal_draws._kept.cache_clear()
        draws = standard_normals(7, 300 * 8)
        assert np.array_equal(draws[:900].reshape(300, 3), first)
        assert np.array_equal(draws[900:].reshape(300, 5), then)
        assert not draws.flags.writeable
    assert len(list(tmp_path.rglob("normals-7-*.pickle"))) == 1


def test_a_longer_stream_than_the_kept_one_is_drawn_and_kept_apart(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINSIZER_CACHE_DIR", str(tmp_path))
    count = normal_draws.MIN_KEPT + 1
    assert np.array_equal(standard_normals(3, count), np.random.default_rng(3).standard_normal(count))
    assert np.array_equal(standard_normals(3, 10), np.random.default_rng(3).standard_normal(10))
    assert len(list(tmp_path.rglob("normals-3-*.pickle"))) == 2


def test_without_a_cache_folder_the_draws_are_made_each_time(tmp_path, monkeypatch):
    blocked = tmp_path / "file"
    blocked.write_text("")
    monkeypatch.setenv("TRAINSIZER_CACHE_DIR", str(blocked))  # a file where the folder should be
    assert np.array_equal(standard_normals(5, 100), np.random.default_rng(5).standard_normal(100))
