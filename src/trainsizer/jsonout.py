"""JSON that every parser reads: never ``NaN`` or ``Infinity`` (Python's json writes them; RFC 8259 has no such
numbers, and JavaScript's JSON.parse, jq and most languages refuse them).

Every ``--json`` printer and JSON file of the CLI goes through ``dumps_strict``. A non-finite number becomes
``null``; inside a mapping a sibling ``<key>_reason`` says why (unbounded, or undefined) unless the mapping already
has one. With ``TRAINSIZER_STRICT_JSON=1`` (the tests set it) a non-finite number raises ``NonFiniteNumber``
naming where it is, so a new one is found rather than hidden.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from numbers import Integral, Real
from typing import Any

from trainsizer.messages import Message

STRICT_ENV = "TRAINSIZER_STRICT_JSON"


class NonFiniteNumber(ValueError):
    """A NaN or infinity reached a JSON output while strict mode was on."""


def _strict_default() -> bool:
    return os.environ.get(STRICT_ENV, "") not in ("", "0", "false", "no")


def _reason(value: float) -> str:
    if math.isnan(value):
        return "undefined (not a number)"
    return f"unbounded ({'+' if value > 0 else '-'}infinity)"


def finite(obj: Any, strict: bool | None = None, path: str = "$") -> Any:
    """A copy of ``obj`` (mappings, lists, tuples, numbers, strings) with every non-finite float as None."""
    strict = _strict_default() if strict is None else strict
    if isinstance(obj, bool) or obj is None or isinstance(obj, str):
        return obj
    if isinstance(obj, Message):  # faces add the text (report.message_text.as_json); here the code and args
        return finite(obj.to_dict(), strict, path)
    if isinstance(obj, Integral):
        return int(obj)
    if isinstance(obj, Real):
        value = float(obj)
        if math.isfinite(value):
            return value
        if strict:
            raise NonFiniteNumber(f"{path} is {value} ({_reason(value)}); JSON output must be finite")
        return None
    if isinstance(obj, Mapping):
        out: dict[Any, Any] = {}
        for key, value in obj.items():
            out[key] = finite(value, strict, f"{path}.{key}")
            if out[key] is None and isinstance(value, Real) and not isinstance(value, Integral) \
                    and isinstance(key, str) and f"{key}_reason" not in obj:
                out[f"{key}_reason"] = _reason(float(value))
        return out
    if isinstance(obj, list | tuple):
        return [finite(v, strict, f"{path}[{i}]") for i, v in enumerate(obj)]
    return obj


def dumps_strict(obj: Any, *, indent: int | None = 2, ensure_ascii: bool = False, strict: bool | None = None) -> str:
    """``json.dumps`` of ``finite(obj)`` with ``allow_nan=False``: the text is always valid JSON."""
    return json.dumps(finite(obj, strict), indent=indent, ensure_ascii=ensure_ascii, allow_nan=False)
