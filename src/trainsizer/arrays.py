"""Float-or-array arithmetic shared by the step-time terms: one case (floats) or many (numpy arrays, a fit's cases,
the planner's layouts) through the same expressions; numpy is imported only for arrays, so a single estimate starts
without it."""

from __future__ import annotations

from typing import Any


def is_array(x: Any) -> bool:
    return getattr(x, "ndim", 0) > 0  # numpy arrays (a fit's many cases); floats and numpy scalars are not


def safe_div(num: Any, den: Any) -> Any:
    """``num / den``, 0 where ``den`` is 0; for floats and numpy arrays alike (numpy is imported only for
    arrays, so a single estimate starts without it)."""
    if is_array(den):
        import numpy as np

        return np.divide(num, den, out=np.zeros(np.broadcast(num, den).shape), where=den != 0)
    return num / den if den else 0.0


def positive_part(x: Any) -> Any:
    """max(0, x) for a float or, elementwise, an array."""
    return x.clip(min=0.0) if is_array(x) else max(0.0, x)


def where(condition: Any, value: Any, other: Any = 0.0) -> Any:
    """``value`` where ``condition`` holds, else ``other``: for a bool, or elementwise for an array of them."""
    if is_array(condition):
        import numpy as np

        return np.where(condition, value, other)
    return value if condition else other


def minimum(a: Any, b: Any) -> Any:
    """min(a, b) for numbers, elementwise for arrays."""
    if is_array(a) or is_array(b):
        import numpy as np

        return np.minimum(a, b)
    return min(a, b)


def maximum(a: Any, b: Any) -> Any:
    """max(a, b) for numbers, elementwise for arrays."""
    if is_array(a) or is_array(b):
        import numpy as np

        return np.maximum(a, b)
    return max(a, b)


def exp(x: Any) -> Any:
    """e**x for a number, elementwise for an array."""
    if is_array(x):
        import numpy as np

        return np.exp(x)
    import math

    return math.exp(x)


def all_at_most_one(degree: Any) -> bool:
    """Whether a parallel degree is 1 (or less) for the one layout, or for every one of many: a term that needs a
    degree above 1 is 0 then."""
    return not (degree > 1).any() if is_array(degree) else degree <= 1


def any_nonzero(x: Any) -> bool:
    """Whether a number, or any element of an array, is non-zero."""
    return bool(x.any()) if is_array(x) else bool(x)


def negate(x: Any) -> Any:
    """``not x`` for a bool, elementwise for an array of them (``~`` on a Python bool is an integer)."""
    return ~x if is_array(x) else not x
