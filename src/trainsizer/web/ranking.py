"""Rankings of recommended options: the same functions as ``trainsizer plan`` (plan/pipeline.py)."""

from __future__ import annotations

from typing import Any

from trainsizer.plan.pipeline import recommended, total_cost
from trainsizer.plan.pipeline import rerank as _rerank

__all__ = ["recommended", "rerank", "total_cost"]


def rerank(options: list[dict[str, Any]], top: int) -> dict[str, list[int]]:
    return {k: v[:top] for k, v in _rerank(options).items()}
