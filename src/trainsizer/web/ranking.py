"""Rankings of recommended options: the same functions as ``trainsizer plan`` (plan/pipeline.py)."""

from __future__ import annotations

from typing import Any

from trainsizer.plan.pipeline import recommended, total_cost
from trainsizer.plan.search import rank_options

__all__ = ["recommended", "rerank", "total_cost"]


def rerank(options: list[dict[str, Any]], top: int) -> dict[str, list[int]]:
    return rank_options(options, top)
