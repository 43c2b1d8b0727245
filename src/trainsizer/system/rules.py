"""Loading the sizing constants and rounding to what can be bought."""

from __future__ import annotations

import math
from functools import cache
from typing import Any

from trainsizer.datafiles import packaged_yaml


@cache
def sizing_rules() -> dict[str, Any]:
    return packaged_yaml("trainsizer.system", "sizing.yaml")


def round_up(value: float, sizes: list[float]) -> float:
    """The smallest standard size that holds ``value`` (beyond the largest: multiples of it)."""
    for size in sizes:
        if value <= size:
            return size
    return math.ceil(value / sizes[-1]) * sizes[-1]
