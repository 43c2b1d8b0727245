"""Checks of single values a user gives on the command line (the scenario file has its own, ``scenario.py``):
each failure is one InputError naming the flag and what it accepts."""

from __future__ import annotations

import math
from typing import Any


def finite_positive(value: Any, field: str, accepted: str = "a finite number > 0",
                    maximum: float | None = None) -> float | None:
    """``value`` as a float when it is a finite number above 0 (and at most ``maximum``); None stays None.
    NaN, infinity, 0, negatives and true/false are refused."""
    from trainsizer.errors import InputError

    if value is None:
        return None
    if isinstance(value, bool):
        raise InputError(field, f"{value!r} is not accepted; accepted: {accepted}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InputError(field, f"{value!r} is not a number; accepted: {accepted}") from None
    if not math.isfinite(number) or number <= 0 or (maximum is not None and number > maximum):
        return_text = f"{value!r}" if isinstance(value, str) else f"{number:g}"
        raise InputError(field, f"{return_text} is not accepted; accepted: {accepted}")
    return number


def count_in_range(value: Any, field: str, low: int, high: int) -> int | None:
    """An integer option between ``low`` and ``high`` (inclusive); None stays None."""
    from trainsizer.errors import InputError

    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InputError(field, f"{value!r} is not accepted; accepted: an integer from {low:,} to {high:,}")
    return value
