"""A stage's model-state bytes per layout for the planner's memory screen (``plan.fast.memory_screen``), from the job's
per-layer and per-end bytes (``plan.fast.JobBasis``), with the routed experts split over expert parallelism.

The estimate builds each layout's layers with ``E / ep`` experts on a rank (``estimate/training_state.py``) and shards
their ZeRO states over the expert-data-parallel group, ``group x tp / (ep x etp)`` ranks, the rest over ``group``
(``estimate/state_terms.py``: ``expert_data_shards``, ``split_shards``; Megatron-Core's expert data parallelism,
MoE parallel folding, arXiv:2504.14960). The screen holds the experts' share of each per-layer figure
(:class:`ExpertBasis`, probed at ep 1 and 2) and does the same over arrays: without routed experts every figure is
the basis's own expression.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from trainsizer.estimate.state_terms import expert_state_shards, split_shards

ENDS = ("first", "last", "whole")  # the stage holding the embedding, the output head, or both (no pipelining)


@dataclass(frozen=True)
class ExpertBasis:
    """The routed experts' part of ``JobBasis``'s model-state bytes at ep 1, by category: per layer (tp-divisible,
    replicated) and per end (the embedding's and the head's stages less the average layer: negative where a stage
    holds a dense layer, as DeepSeek's first ones)."""

    layer_div: dict[str, float]
    layer_rep: dict[str, float]
    first_extra: dict[str, float]
    last_extra: dict[str, float]


def expert_basis(ep1: list[dict[str, float]], ep2: list[dict[str, float]], ep1_tp2: list[dict[str, float]],
                 ep2_tp2: list[dict[str, float]], keys: tuple[str, ...], mids: range) -> ExpertBasis:
    """The experts' part from per-stage probes (one layer a stage) at ep 1 and 2, tp 1 and 2: a rank's bytes are
    ``rest + experts / ep``, so the experts' part at ep 1 is twice the drop from ep 1 to ep 2."""
    def avg(rows: list[dict[str, float]], key: str) -> float:
        return float(np.mean([rows[i].get(key, 0.0) for i in mids]))

    div, rep, first, last = {}, {}, {}, {}
    for key in keys:
        e1 = 2 * (avg(ep1, key) - avg(ep2, key))
        e2 = 2 * (avg(ep1_tp2, key) - avg(ep2_tp2, key))
        div[key] = 2 * (e1 - e2)
        rep[key] = e1 - div[key]
        first[key] = 2 * (ep1[0].get(key, 0.0) - ep2[0].get(key, 0.0)) - e1
        last[key] = 2 * (ep1[-1].get(key, 0.0) - ep2[-1].get(key, 0.0)) - e1
    return ExpertBasis(div, rep, first, last)


class StageBytes:
    """One stage's bytes of the model-state categories, per layout: ``layers`` layers of the basis ``b`` (a
    ``plan.fast.JobBasis``) and one end's extra,
    tensor-parallel ``tp``, expert-parallel ``ep``, the experts' tensor parallelism ``expert_tp`` (etp, else tp)."""

    def __init__(self, b: Any, layers: Any, tp: Any, ep: Any, expert_tp: Any) -> None:
        self.b, self.layers, self.tp, self.ep, self.expert_tp = b, layers, tp, ep, expert_tp
        self.extras = {"first": b.first_extra, "last": b.last_extra,
                       "whole": {k: b.first_extra[k] + b.last_extra[k] for k in b.first_extra}}
        ex = b.experts
        self.expert_extras = None if ex is None else {
            "first": ex.first_extra, "last": ex.last_extra,
            "whole": {k: ex.first_extra[k] + ex.last_extra[k] for k in ex.first_extra}}

    def total(self, key: str, end: str) -> Any:
        """The stage's bytes at ep 1, unsharded."""
        b = self.b
        return self.layers * (b.layer_div[key] / self.tp + b.layer_rep[key]) + self.extras[end][key] / self.tp

    def _experts(self, keys: tuple[str, ...], end: str) -> Any:
        ex = self.b.experts
        return sum(self.layers * (ex.layer_div[k] / self.tp + ex.layer_rep[k]) + self.expert_extras[end][k] / self.tp
                   for k in keys)

    def sharded(self, keys: tuple[str, ...], end: str, shard: Any) -> Any:
        """The categories' bytes of one expert-parallel rank (:meth:`per_rank`) over ``shard`` ranks (ZeRO), the
        rank's ``1 / ep`` of the experts over the expert-data-parallel ranks of that group
        (``state_terms.split_shards``)."""
        if self.b.experts is None:
            return self.per_rank(keys, end, shard)
        experts = self._experts(keys, end) / self.ep  # the experts this rank holds
        expert_shards = expert_state_shards(shard, self.tp, self.ep, self.expert_tp)
        return split_shards(self.per_rank(keys, end) - experts, experts, shard, expert_shards)

    def per_rank(self, keys: tuple[str, ...], end: str, shard: Any = 1.0) -> Any:
        """The categories' bytes of one expert-parallel rank, split evenly over ``shard`` ranks."""
        total = sum(self.total(k, end) for k in keys)
        if self.b.experts is None:
            return total / shard
        return (total - self._experts(keys, end) * (1 - 1 / self.ep)) / shard

    def off_rank(self, key: str) -> Any:
        """One layer's bytes of experts that live on the other ranks of its expert-parallel group (0 without)."""
        ex = self.b.experts
        if ex is None:
            return 0.0
        return (ex.layer_div[key] / self.tp + ex.layer_rep[key]) * (1 - 1 / self.ep)
