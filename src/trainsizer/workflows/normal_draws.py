"""Seeded standard normal draws, the same numbers ``numpy.random.default_rng(seed)`` draws, kept in the user's cache
folder (``datafiles.cached_objects``): a plan samples its confidence from them in every run, and importing
``numpy.random`` costs ~12 ms of a ~0.4 s command, the draws themselves well under 1 ms. numpy.random loads only
when a longer stream than the kept one is needed, or when nothing can be kept."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np

from trainsizer.datafiles import cached_objects

# draws kept at least (512 KiB: 4000 samples of 16 options and families; a plan's confidence reads 4000 x 5 to 8);
# longer streams are kept by powers of 2
MIN_KEPT = 1 << 16


def _draw(seed: int, count: int) -> np.ndarray:
    from numpy.random import default_rng  # loaded here only (see the module's docstring)

    return default_rng(seed).standard_normal(count)


def standard_normals(seed: int, count: int) -> np.ndarray:
    """The first ``count`` standard normal draws of ``numpy.random.default_rng(seed)``, read-only. One stream:
    ``standard_normal`` called twice in a row on one generator draws its first values, then the next ones (each
    array filled in C order), so ``draws[:a].reshape(n, p)`` and ``draws[a:a + b].reshape(n, q)`` are those two
    calls' arrays. The numpy version is part of the key (a generator's stream may change between versions)."""
    return _kept(seed, max(MIN_KEPT, 1 << max(count - 1, 0).bit_length()))[:count]


@cache  # read once per process (a server plans many times)
def _kept(seed: int, size: int) -> np.ndarray:
    kept = cached_objects(f"normals-{seed}-{size}", [Path(__file__)], lambda: _draw(seed, size), np.__version__)
    draws = kept if isinstance(kept, np.ndarray) and kept.shape == (size,) else _draw(seed, size)
    draws.flags.writeable = False
    return draws
