"""Cache keys of a scenario's frozen blocks: a block's JSON, written once per object. The estimator keys its caches on
the training and parallel blocks several times per estimate, and the planner re-checks a hundred layouts a plan."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

_KEYS: OrderedDict[tuple[int, frozenset[str] | None], tuple[BaseModel, str]] = OrderedDict()
KEPT = 4096  # blocks whose JSON is kept (each held alive while kept, so that its id is not reused)
_LOCK = threading.Lock()


def json_key(block: BaseModel, exclude: frozenset[str] | None = None) -> str:
    """``block.model_dump_json(exclude=exclude)`` of a frozen block, written once per object."""
    key = (id(block), exclude)
    hit = _KEYS.get(key)
    if hit is not None and hit[0] is block:
        return hit[1]
    text = block.model_dump_json(exclude=exclude)
    with _LOCK:  # the web server's threads may plan at once
        _KEYS[key] = (block, text)
        if len(_KEYS) > KEPT:
            _KEYS.popitem(last=False)
    return text


def one_copy(copies: dict[Any, Any] | None, base: BaseModel, update: dict[str, Any]) -> Any:
    """``base.model_copy(update=update)``, one object per equal update of the same base kept in ``copies`` (None:
    a new copy), so that the keys of equal blocks are written once (the planner re-checks a hundred layouts of one
    job, most sharing their training and hardware blocks)."""
    if copies is None:
        return base.model_copy(update=update)
    key = (id(base), *update.items())
    if key not in copies:
        copies[key] = base.model_copy(update=update)
    return copies[key]


_ALSO_CLEARED: list[Callable[[], None]] = []


def cleared_with_keys(clear: Callable[[], None]) -> None:
    """``clear`` is called with :func:`clear_caches` (a cache keyed on these keys, outside the estimators)."""
    _ALSO_CLEARED.append(clear)


def clear_caches() -> None:
    with _LOCK:
        _KEYS.clear()
    for clear in _ALSO_CLEARED:
        clear()
