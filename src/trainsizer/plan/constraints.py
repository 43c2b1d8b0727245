"""What the planner's search is asked (:class:`Constraints`: GPUs allowed, counts, deadline, the screen's prices and
host check) and what it answers (:class:`PlanResult`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, overload

import numpy as np

from trainsizer.errors import InputError
from trainsizer.messages import Message
from trainsizer.plan.option import PlanOption

if TYPE_CHECKING:  # the JSON's types, for annotations
    from trainsizer.plan.option_json import OptionJSON

# what the suggestions try where nothing fits (suggest), also tried by a full re-plan (workflows/feasible.py)
MORE_GPUS_FACTOR = 8  # this many times the GPU limit
MAX_SUGGESTED_GPUS = 4096
SHORTEST_SEQ_LEN = 1024  # the sequence is halved while longer than this


class ScreenPricer(Protocol):
    """The run cost the screen ranks layouts by (``workflows.screen_pricing.ScreenPricing``)."""

    def run_cost(self, gpu: str, gpus: int, servers: int, gpus_per_server: int, hours: float,
                 offloaded_gib_per_gpu: float) -> float | None:
        """One run of ``hours`` on that hardware, in the plan's currency; None when it cannot be had (market,
        offers, budget)."""
        ...

    def floor_cost(self, gpu: str, gpus: int, hours: float) -> float | None:
        """The run's compute floor: its GPU-hours and its setup on every GPU at the cheapest on-demand price the
        market knows for the GPU, whether or not an offer rents the layout; None without such a price."""
        ...


class HostCheck(Protocol):
    """Whether some way to have a GPU (an offer's machine, a bought server) holds each layout's host memory
    (``workflows.screen_pricing.HostFit``)."""

    def holds(self, gpu: str, gpus_per_server: np.ndarray, offloaded_bytes_per_gpu: np.ndarray) -> np.ndarray:
        """A boolean per layout (arrays of the same length)."""
        ...


@dataclass(frozen=True)
class Constraints:
    """What the search is asked: the GPUs allowed, counts and node shapes, deadline, the screen's prices and host
    check."""

    gpus: tuple[str, ...] = ()  # allowed GPU ids; empty = the whole catalog
    max_gpus: int = 1024
    gpus_per_node: int | None = None
    deadline_s: float | None = None
    top: int = 10
    exact_gpus: int | None = None  # search only this GPU count (the scaling view)
    intra_node: str | None = None  # force the link inside a node
    inter_node: str | None = None  # force the network between nodes
    data_parallel_only: bool = False  # tp = pp = cp = 1: how teams usually add cards
    pricer: ScreenPricer | None = field(default=None, compare=False)  # prices the screen's shortlist
    # host memory on the machines to be had; None: the planner's one host limit per GPU (planner.yaml host_memory)
    host: HostCheck | None = field(default=None, compare=False)
    time_value: float = 0.0  # money per wall-clock hour of the run, added to its cost (the objective)
    # the most a recommended layout may risk running out of memory (--max-oom-risk): each cell keeps its fastest
    # layout within it beside its fastest safe one (plan.search.risk_limits); None: the safe limit alone
    max_oom_risk: float | None = None

    def __post_init__(self) -> None:
        if self.max_gpus < 1 or self.max_gpus > 100_000:
            raise InputError("--max-gpus", f"{self.max_gpus} is out of range; accepted: 1 to 100000")
        if self.gpus_per_node is not None and self.gpus_per_node not in (1, 2, 4, 8, 16):
            raise InputError("--gpus-per-node", f"{self.gpus_per_node}; accepted: 1, 2, 4, 8, 16")
        if self.deadline_s is not None and self.deadline_s <= 0:
            raise InputError("--deadline", "must be positive")


@dataclass
class PlanResult:
    """What the search answers: the options re-checked, their rankings, suggestions and notes."""

    options: list[PlanOption]
    suggestions: list[Message]
    rankings: dict[str, list[int]] = field(default_factory=dict)  # index lists into options (the plan ranks)
    evaluated: int = 0
    notes: list[Message] = field(default_factory=list)
    late: list[PlanOption] = field(default_factory=list)  # options that fit but miss the deadline
    blocked: str | None = None  # "market": no option because the layouts that fit cannot be had, not memory

    def to_dict(self, when_read: bool = False) -> dict[str, Any]:
        """The plan's JSON edge: every option written once, here (docs/plan-json.md); ``when_read``: each option
        written when it is read (:class:`OptionDicts`), for a face that shows a few of them."""
        options = OptionDicts(self.options) if when_read else [o.to_dict() for o in self.options]
        out = {"options": options, "suggestions": self.suggestions,
               "rankings": self.rankings, "candidates_evaluated": self.evaluated, "notes": self.notes}
        if self.blocked:
            out["blocked"] = self.blocked
        return out


class OptionDicts(Sequence["OptionJSON"]):
    """The options' JSON, each option's written the first time it is read (:meth:`PlanOption.to_dict`): the terminal
    table reads the options it prints (a ranking's rows and the answer, ~15 of ~40), and an option's cost figures
    (its FX sensitivity, month-by-month series, seed checks: ``cost.tco.Comparison``) are made when written. The
    same dicts as the list ``to_dict`` writes; not for ``json`` (a list is)."""

    def __init__(self, options: list[PlanOption]) -> None:
        self._options = options
        self._dicts: dict[int, OptionJSON] = {}

    def __len__(self) -> int:
        return len(self._options)

    @overload
    def __getitem__(self, index: int) -> OptionJSON: ...

    @overload
    def __getitem__(self, index: slice) -> list[OptionJSON]: ...

    def __getitem__(self, index: int | slice) -> OptionJSON | list[OptionJSON]:
        if isinstance(index, slice):
            return [self[i] for i in range(len(self))[index]]
        i = range(len(self))[index]  # a negative index counted from the end; IndexError past it
        if i not in self._dicts:
            self._dicts[i] = self._options[i].to_dict()
        return self._dicts[i]
