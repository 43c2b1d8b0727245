"""What the planner's search is asked (:class:`Constraints`: GPUs allowed, counts, deadline, the screen's prices and
host check) and what it answers (:class:`PlanResult`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from trainsizer.errors import InputError
from trainsizer.messages import Message

# The objective of one run for the screen: (gpu id, gpus, servers, gpus per server, hours) -> its cost in the
# plan's currency, or None when it cannot be had (market, offers, budget); workflows.objective builds it.
RunCost = Callable[[str, int, int, int, float, float], "float | None"]
# Whether some way to have the GPU (an offer's machine, a bought server) holds each layout's host memory:
# (gpu id, GPUs per server, host bytes offloaded per GPU) as arrays -> a boolean array; workflows.objective builds
# it from the offers' machines. None: the planner's one host limit per GPU (planner.yaml host_memory).
HostFits = Callable[[str, np.ndarray, np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Constraints:
    gpus: tuple[str, ...] = ()  # allowed GPU ids; empty = the whole catalog
    max_gpus: int = 1024
    gpus_per_node: int | None = None
    deadline_s: float | None = None
    top: int = 10
    exact_gpus: int | None = None  # search only this GPU count (the scaling view)
    intra_node: str | None = None  # force the link inside a node
    inter_node: str | None = None  # force the network between nodes
    data_parallel_only: bool = False  # tp = pp = cp = 1: how teams usually add cards
    run_cost: RunCost | None = field(default=None, compare=False)  # prices the screen's shortlist
    host_fits: HostFits | None = field(default=None, compare=False)  # host memory on the machines to be had
    time_value: float = 0.0  # money per wall-clock hour of the run, added to its cost (the objective)

    def __post_init__(self) -> None:
        if self.max_gpus < 1 or self.max_gpus > 100_000:
            raise InputError("--max-gpus", f"{self.max_gpus} is out of range; accepted: 1 to 100000")
        if self.gpus_per_node is not None and self.gpus_per_node not in (1, 2, 4, 8, 16):
            raise InputError("--gpus-per-node", f"{self.gpus_per_node}; accepted: 1, 2, 4, 8, 16")
        if self.deadline_s is not None and self.deadline_s <= 0:
            raise InputError("--deadline", "must be positive")


@dataclass
class PlanResult:
    options: list[dict[str, Any]]
    suggestions: list[Message]
    rankings: dict[str, list[int]] = field(default_factory=dict)  # index lists into options
    evaluated: int = 0
    notes: list[Message] = field(default_factory=list)
    late: list[dict[str, Any]] = field(default_factory=list)  # options that fit but miss the deadline
    blocked: str | None = None  # "market": no option because the layouts that fit cannot be had, not memory

    def to_dict(self) -> dict[str, Any]:
        out = {"options": self.options, "suggestions": self.suggestions, "rankings": self.rankings,
               "candidates_evaluated": self.evaluated, "notes": self.notes}
        if self.blocked:
            out["blocked"] = self.blocked
        return out
