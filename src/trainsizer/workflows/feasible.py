"""What would make a job without a recommendation feasible, each found by planning it again with the change, never
guessed from the options of the plan that failed (those are the ones the limits left, not the ones a change would
bring): where a deadline was set, the shortest time that works (the fastest option that can be recommended once
the deadline is lifted, within the same budget); where nothing fits in memory, the smallest change to the job that
gets a recommendation: another precision the form offers, then more GPUs, then a shorter sequence (in that order:
what is trained changes least first)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from trainsizer.messages import Message, msg
from trainsizer.messages import money as to_money
from trainsizer.plan.constraints import MAX_SUGGESTED_GPUS, MORE_GPUS_FACTOR, SHORTEST_SEQ_LEN
from trainsizer.plan.option import PlanOption
from trainsizer.scenario import Scenario
from trainsizer.workflows.decide import choose

# The precisions tried, in the order the web form offers them (web/render.py FORM_CHOICES); fp32 never lowers memory.
PRECISIONS = ("bf16-mixed", "bf16-true", "fp16-mixed", "fp8-mixed")

# what the search suggests when nothing fits in memory (search.suggest)
MEMORY_BINDS = {"plan.relaxation_fits", "plan.nothing_fits"}
Replan = Callable[[Scenario, Any], Any]  # (job, PlanRequest) -> PlanOutcome, without these suggestions


def _found(outcome: Any, objective: str, max_oom_risk: float) -> dict[str, Any] | None:
    """What a plan would recommend on ``objective``, of the options it can (priced, within the budget, at most the
    risk of running out of memory), as a message's arguments; None where there is none."""
    options = outcome.result.options
    order = choose(options, objective, max_oom_risk)
    if not order:
        return None
    o: PlanOption = options[order[0]]
    return {"hardware": {"gpus": o.gpus, "gpu": o.gpu}, "acquisition": o.acquisition,
            "cost": to_money(o.run_cost or 0.0, outcome.out["currency"]), "time": o.seconds()}


def shortest_time(job: Scenario, req: Any, replan: Replan) -> Message | None:
    """The shortest time to train that can be had within the budget once the deadline is lifted (None without a
    deadline, or where nothing can be had even then)."""
    if not req.deadline_s:
        return None
    fastest = _found(replan(job, replace(req, deadline_s=None, all_options=True)), "fastest", req.max_oom_risk)
    return None if fastest is None else msg("plan.shortest_time", **fastest)


def _changes(job: Scenario, req: Any) -> list[tuple[Message, Scenario, Any]]:
    """The changes tried where memory binds, smallest first."""
    tr = job.training
    out = [(msg(f"change.precision_{p.replace('-', '_')}"), job.model_copy(update={
        "training": tr.model_copy(update={"precision": p})}), req) for p in PRECISIONS if p != tr.precision]
    if req.max_gpus < MAX_SUGGESTED_GPUS:
        more = min(MAX_SUGGESTED_GPUS, req.max_gpus * MORE_GPUS_FACTOR)
        out.append((msg("change.more_gpus", n=more, was=req.max_gpus), job, replace(req, max_gpus=more)))
    seq = tr.seq_len // 2
    while seq >= SHORTEST_SEQ_LEN:
        out.append((msg("change.seq_len", n=seq, was=tr.seq_len),
                    job.model_copy(update={"training": tr.model_copy(update={"seq_len": seq})}), req))
        seq //= 2
    return out


def smallest_change(job: Scenario, req: Any, replan: Replan, objective: str) -> Message | None:
    """The first change (:func:`_changes`) with which the plan recommends something, and what it recommends."""
    for change, changed, changed_req in _changes(job, req):
        try:
            pick = _found(replan(changed, changed_req), objective, req.max_oom_risk)
        except ValueError:  # a precision the job's other settings refuse (e.g. fp8 on its GPUs or method)
            continue
        if pick is not None:
            return msg("plan.smallest_change", change=change, **pick)
    return None


def ways_to_feasible(job: Scenario, req: Any, outcome: Any, replan: Replan, objective: str) -> list[Message]:
    """The shortest time where a deadline was set, and where nothing fits in memory the smallest change."""
    out = [shortest_time(job, req, replan)]
    searched = {getattr(m, "code", None) for m in outcome.result.suggestions}
    if not outcome.result.late and searched & MEMORY_BINDS:  # nothing fits in memory, whatever its time
        out.append(smallest_change(job, req, replan, objective))
    return [m for m in out if m is not None]


def with_ways(ways: list[Message], suggestions: list[Any]) -> list[Any]:
    """The plan's suggestions led by the ways to feasible; "the deadline may be what binds" dropped where the
    shortest time that works is said."""
    timed = any(m.code == "plan.shortest_time" for m in ways)
    return ways + [m for m in suggestions if not (timed and getattr(m, "code", None) == "plan.deadline_binds")]
