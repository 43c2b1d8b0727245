"""The screen's shortlist and which of it the estimator re-checks: a :class:`ScreenedLayout` is one layout the
screen kept, :func:`choose_exact` picks the ones re-checked exactly after the deadline, the market and the budget
are applied (the planner's search: ``plan/search.py``)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from trainsizer.hardware.catalog import Accelerator
from trainsizer.plan.constraints import Constraints
from trainsizer.plan.data_screen import tokens_per_sequence
from trainsizer.plan.layouts import Layouts
from trainsizer.scenario import Scenario

MAX_EXACT = 80
# The screen's step time is the estimator's term by term (plan.fast); a layout the screen puts this much past
# the deadline is not re-checked as an option (a few are, to say what the deadline rules out).
DEADLINE_SLACK = 0.10
# Every screened layout whose objective is within this factor of the best screened one is re-checked exactly,
# whatever the cut (the screen prices renting as the plan does and buying by the servers alone): the best
# answer is never cut away. At most MAX_COMPETITIVE of them, cheapest first.
COMPETITIVE = 0.5
MAX_COMPETITIVE = 320
MAX_LATE = 12
# The layouts re-checked for the compute floor: within this factor of the least floor (workflows.offer_gap
# .SMALLEST_WITHIN, widened for the screen's error), at most this many (assumed: the planner's own choice).
FLOOR_SPAN = 1.5
MAX_AT_FLOOR = 8
# ... re-checked only where the best screened objective is above this many times the least floor (workflows.offer_gap
# .FLOOR_FACTOR, 3, less a margin for the screen's error: assumed)
FLOOR_NEEDED = 2.0
RUNNER_UP_SPAN = 3.0  # workflows.decide.RUNNER_UP_SPAN: a runner-up costs at most this many times the pick


@dataclass(frozen=True, slots=True, kw_only=True)
class ScreenedLayout:
    """One layout the screen shortlisted: its screened step time, on which GPU and network, where it sits in the
    screen's layout arrays, its device memory and the host memory it offloads per GPU."""

    step_time_s: float
    gpu: Accelerator
    layouts: Layouts
    index: int
    gpus: int  # the layout's GPUs and GPUs per node (``layouts.gpus[index]``, ``layouts.gpus_per_node[index]``)
    gpus_per_node: int
    inter_node: str | None
    device_bytes: float
    host_bytes_per_gpu: float
    safe: bool = False  # its chance of running out of memory (screened) is at most the safe limit (RISK)
    cell_safe: bool = False  # the fastest safe layout of its cell (GPU, count, network)
    eligible: bool = False  # ... at most the most a recommended layout may risk (search.risk_limits)
    cell_eligible: bool = False  # the fastest eligible layout of its cell


    def hardware(self) -> tuple[str, int, int, str | None]:
        """The hardware configuration of the option ``_scenario_for`` makes of it: GPU type, count, GPUs per node
        and network (``search._best_per_hardware``'s key)."""
        return self.gpu.id, self.gpus, min(self.gpus_per_node, self.gpus), self.inter_node

    def cell(self) -> tuple[str, int]:
        """The hardware cell: GPU type and count."""
        return self.gpu.id, self.gpus

    def scenario_key(self) -> tuple[Any, ...]:
        """What ``_scenario_for`` makes of this layout (equal keys, equal scenarios): the GPU, the network, the
        layout's fields and GPUs per node (one node shape's single-node layouts are another's)."""
        lay, i = self.layouts, self.index
        return (self.gpu.id, self.inter_node, min(self.gpus_per_node, self.gpus),
                *(getattr(lay, f.name)[i].item() for f in fields(Layouts) if f.name != "gpus_per_node"))


def _exact_order(shortlist: list[ScreenedLayout]) -> list[ScreenedLayout]:
    """The order in which shortlisted candidates get the exact re-check. Every GPU type first gets its
    cheapest candidate (fewest GPU-seconds per step: within a type that is the lowest cost), its fewest-GPU one
    and its fastest, so the cheap end of the space (one or a few small cards) is never crowded out by large fast
    clusters; then the best of each (GPU, count, network) alternately by speed and by GPU-seconds; then the rest."""
    def gpu_seconds(it: ScreenedLayout) -> float:
        return it.step_time_s * it.gpus

    firsts, rest, seen = [], [], set()
    for item in sorted(shortlist, key=lambda it: it.step_time_s):
        key = (*item.cell(), item.inter_node)
        (rest if key in seen else firsts).append(item)
        seen.add(key)
    by_gpu_seconds = sorted(firsts, key=gpu_seconds)
    per_type: dict[str, list[ScreenedLayout]] = {}
    for item in by_gpu_seconds:
        per_type.setdefault(item.gpu.id, []).append(item)
    type_picks = [pick(items) for items in per_type.values()
                  for pick in (lambda xs: xs[0], lambda xs: min(xs, key=lambda it: it.gpus),
                               lambda xs: min(xs, key=lambda it: it.step_time_s))]
    merged, taken = [], set()
    for item in [*type_picks, *(x for pair in zip(firsts, by_gpu_seconds, strict=True) for x in pair), *rest]:
        if id(item) not in taken:
            taken.add(id(item))
            merged.append(item)
    return merged


def _screen_hours(item: ScreenedLayout, tokens: int | None, per_step: float) -> float | None:
    """The screened time to train in hours: the job's ``tokens`` (None: no time to train) over the screened tokens
    per second (``per_step``: the job's tokens in a step, the global batch's sequences)."""
    if not tokens:
        return None
    return tokens * item.step_time_s / per_step / 3600


def _screen_objective(item: ScreenedLayout, hours: float | None, constraints: Constraints, per_step: float) -> float:
    """The screened layout's objective: the run's cost (``hours``: its screened time to train) plus its time valued
    (per million tokens without training.tokens); GPU-seconds per step without prices; inf when it cannot be had."""
    count, per_node = item.gpus, item.gpus_per_node
    if constraints.pricer is None:
        return item.step_time_s * count
    per_mtok = hours is None
    if per_mtok:
        hours = 1e6 * item.step_time_s / per_step / 3600
    cost = constraints.pricer.run_cost(item.gpu.id, count, max(1, count // per_node), per_node, hours,
                                       item.host_bytes_per_gpu / 2**30)
    if cost is None:
        return float("inf")
    return cost if per_mtok else cost + constraints.time_value * hours


def choose_exact(shortlist: list[ScreenedLayout], job: Scenario, constraints: Constraints,
                  global_batch: int) -> list[ScreenedLayout]:
    """The candidates the estimator re-checks, chosen after the deadline, the market and the budget are
    applied: every one within COMPETITIVE of the best screened objective of an eligible layout (one the answer may
    be: ``search.risk_limits``; so the best eligible one is never cut away, nor anything cheaper), then the planner's
    spread over GPU types, counts and speeds up to MAX_EXACT, each cell near the answer's cost with its fastest safe
    and eligible layouts, then a few that miss the deadline (to say what it rules out)."""
    deadline_h = constraints.deadline_s / 3600 * (1 + DEADLINE_SLACK) if constraints.deadline_s else None
    per_step = global_batch * tokens_per_sequence(job)  # the job's tokens in a step, the same for every layout
    hours = {id(it): _screen_hours(it, job.training.tokens, per_step) for it in shortlist}
    on_time, late = [], []
    for item in shortlist:
        h = hours[id(item)]
        (late if deadline_h and h is not None and h > deadline_h else on_time).append(item)
    value = {id(it): _screen_objective(it, hours[id(it)], constraints, per_step) for it in on_time}
    finite = [it for it in on_time if np.isfinite(value[id(it)])]
    best = min((value[id(it)] for it in finite if it.eligible), default=None)
    if best is None:
        best = min((value[id(it)] for it in finite), default=float("inf"))
    competitive = sorted((it for it in finite if value[id(it)] <= best * (1 + COMPETITIVE)),
                         key=lambda it: (value[id(it)], it.step_time_s))[:MAX_COMPETITIVE]
    taken = {id(it) for it in competitive}
    spread = [it for it in _exact_order(finite or on_time) if id(it) not in taken][:MAX_EXACT]
    by_cell: dict[tuple[str, int], ScreenedLayout] = {}
    for item in sorted(late, key=lambda it: it.step_time_s):
        by_cell.setdefault(item.cell(), item)
    misses = sorted(by_cell.values(), key=lambda it: -it.gpus)[:MAX_LATE]
    chosen = competitive + spread
    # a cell re-checked without a safe (eligible) layout, priced within RUNNER_UP_SPAN of the best eligible objective
    # (a runner-up the answer may name), gets its fastest safe (eligible) layout too: the answer and the runner-ups
    # may not run out of memory, and the safe one may win once the risk is weighed (decide.objective_value)
    near = {(*it.cell(), it.inter_node) for it in chosen if value[id(it)] <= best * RUNNER_UP_SPAN}
    added: list[ScreenedLayout] = []
    for flag, fastest in (("safe", "cell_safe"), ("eligible", "cell_eligible")):
        covered = {(*it.cell(), it.inter_node) for it in chosen + added if getattr(it, flag)}
        added += [it for it in on_time if getattr(it, fastest) and (*it.cell(), it.inter_node) in near - covered]
    covered = {(*it.cell(), it.inter_node) for it in chosen + added if it.eligible}
    return chosen + added + _at_floor(on_time, covered, hours, constraints, best) + misses


def _at_floor(on_time: list[ScreenedLayout], covered: set[tuple[str, int, str | None]],
              screen_hours: dict[int, float | None], constraints: Constraints, best: float) -> list[ScreenedLayout]:
    """The eligible layouts whose compute floor (``ScreenPricer.floor_cost``) plus time value is within FLOOR_SPAN
    of the least, at most MAX_AT_FLOOR: where no known offer rents the job by the hour the answer names the layout a
    team would ask a cloud to quote (``workflows.offer_gap``), which must be re-checked and eligible like any
    answer.
    None where the best screened objective (``best``) is within FLOOR_NEEDED of the least floor: a priced offer then
    holds the job near its floor and no quote leads. ``screen_hours``: each layout's screened time to train (by
    id)."""
    pricer = constraints.pricer
    if pricer is None:
        return []
    value: dict[int, float] = {}
    for it in on_time:
        hours = screen_hours[id(it)]
        cost = None if hours is None or not it.cell_eligible else pricer.floor_cost(it.gpu.id, it.gpus, hours)
        if cost is not None:
            value[id(it)] = cost + constraints.time_value * hours
    least = min(value.values(), default=None)
    if least is None or best <= FLOOR_NEEDED * least:
        return []
    near = sorted((it for it in on_time if id(it) in value and value[id(it)] <= FLOOR_SPAN * least
                   and (*it.cell(), it.inter_node) not in covered), key=lambda it: value[id(it)])
    return near[:MAX_AT_FLOOR]
