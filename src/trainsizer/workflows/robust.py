"""The plan under the model's error: each option's 80 % ranges (time to train, cost per run), its chance of running
out of memory, and how often the recommendation stays the right one across the plausible outcomes.

The ranges are the estimate's (``estimate/ranges.py``, fitted on held-out publications). An option's cost per run
scales with its hours (rented by the hour; a bought server's share by the hours the run uses it), so the cost's
range is the time's. :func:`confidence` samples the speed errors of all options at once (numpy, seeded): options on
one GPU family share most of their error (``FAMILY_CORRELATION``, assumed: the family's residuals move together
across the validation cases, ``ranges.yaml``), other families draw theirs independently."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from trainsizer.estimate.ranges import RISK, Band, band, framework_regime
from trainsizer.estimate.regimes import gpu_family, is_moe, regime
from trainsizer.messages import Message, msg
from trainsizer.plan.option import PlanOption
from trainsizer.plan.option_range import Interval, OptionRange
from trainsizer.workflows.normal_draws import standard_normals

if TYPE_CHECKING:  # the JSON's types, for annotations
    from trainsizer.workflows.plan_schema import ConfidenceJSON, DeadlineRiskJSON

SAMPLES = 4000
SEED = 20240601
FAMILY_CORRELATION = 0.9  # assumed: within a GPU family most of the error is the family's, not the layout's
CLOSE = 0.25  # the runner-up is the better choice in at least this share of outcomes: a close call
# Assumed: a run that runs out of memory does so at its first steps' peak, but the launch, the crash, finding the
# cause and the relaunch take about an hour of the run's hardware and of the team's time (rentals bill by the hour).
FAILED_ATTEMPT_HOURS = 1.0


def _bands(o: PlanOption) -> tuple[Band, Band]:
    reg = framework_regime(regime(o.gpu, o.method, o.gpus, o.gpus_per_node, is_moe(o.scenario.model)),
                           o.scenario.training.framework)
    return band("memory", reg), band("speed", reg)


def option_range(o: PlanOption) -> OptionRange:
    """``option.range``: the 80 % ranges of the option's time to train and cost per run, the chance its peak
    memory exceeds the GPU, and whether that is a real risk (a message where it is)."""
    mem_b, speed_b = _bands(o)
    device, capacity = o.device_gib, o.capacity_gib
    p = mem_b.p_above(device, capacity)
    fits_unless_above = round(capacity / device - 1, 4) if device else None
    lo, hi = speed_b.scale_inverse(o.time_to_train_s) if o.time_to_train_s else (None, None)
    mem_lo, mem_hi = mem_b.scale(device)
    step_lo, step_hi = speed_b.scale_inverse(o.step_time_s)
    return OptionRange(
        level=speed_b.level, p_exceeds_capacity=round(p, 4), at_risk=p > RISK, fits_unless_above=fits_unless_above,
        device_gib=(round(mem_lo, 2), round(mem_hi, 2)), step_time_s=(round(step_lo, 4), round(step_hi, 4)),
        time_to_train_s=None if lo is None or hi is None else (round(lo, 1), round(hi, 1)),
        per_run_cost=None if o.run_cost is None else cost_range(o, float(o.run_cost)),
        notes=(msg("range.oom_risk", pct=p, above=max(fits_unless_above or 0.0, 0.0)),) if p > RISK else ())


def oom_chance(o: PlanOption) -> float:
    """The chance the option's peak memory exceeds its GPU's, from its memory band: its range's
    ``p_exceeds_capacity`` (what ``PlanOption.oom_chance`` reads once the range is attached), before the range is."""
    return round(_bands(o)[0].p_above(o.device_gib, o.capacity_gib), 4)


def p_misses_deadline(o: PlanOption, deadline_s: float) -> float | None:
    """The chance the option's run takes longer than ``deadline_s``, from its speed band (the split normal its 80 %
    time range is read from): the time is the estimate over e^u, so it runs past the deadline where u falls below
    log(estimate / deadline), 1 - ``Band.p_above(deadline, estimate)``; None without a run length."""
    seconds = o.time_to_train_s
    if not seconds:
        return None
    return round(1.0 - _bands(o)[1].p_above(deadline_s, float(seconds)), 4)


def deadline_risk(o: PlanOption, deadline_s: float | None) -> DeadlineRiskJSON | None:
    """``recommendation.deadline_risk``: the deadline, the answer's chance of missing it and the clause that says
    so; None without a deadline or a run length."""
    p = p_misses_deadline(o, deadline_s) if deadline_s else None
    if deadline_s is None or p is None:
        return None
    days = round(deadline_s / 86400, 4)
    return {"deadline_days": days, "p_misses": p, "message": msg("range.misses_deadline", days=days, pct=p)}


def cost_range(o: PlanOption, cost: float) -> Interval:
    """The 80 % range of a cost of the option's run that scales with its hours (rented by the hour, or a bought
    server's share of them): the time's range, from the option's speed band."""
    lo, hi = _bands(o)[1].scale_inverse(cost)
    return round(lo), round(hi)


def failure_cost(o: PlanOption, value: float) -> float:
    """The expected cost of running out of memory, in the objective's units: the option's chance of it
    (``range.p_exceeds_capacity``) times a failed attempt (FAILED_ATTEMPT_HOURS of its ``value`` per hour of the
    run); 0 where the option is not at real risk or its run's hours are not known (no training.tokens)."""
    seconds = o.time_to_train_s
    if not o.at_risk or not seconds:
        return 0.0
    return o.oom_chance * value * FAILED_ATTEMPT_HOURS * 3600 / float(seconds)


def with_ranges(options: list[PlanOption]) -> list[PlanOption]:
    """Each option with its ``range`` (and a risk of running out of memory among its notes)."""
    out = []
    for o in options:
        r = option_range(o)
        out.append(replace(o, range=r, notes=(*((o.fabric_twin,) if o.fabric_twin else ()), *r.notes)))
    return out


def _samples(options: list[PlanOption], n: int, seed: int) -> np.ndarray:
    """``u`` (log of measured / predicted speed) per sample and option: a family draw shared by the options on
    one GPU family plus an option's own draw, each option's marginal the split normal of its range (``Band.draw``;
    the draws of ``numpy.random.default_rng(seed)``: the families' first, then the options')."""
    families = sorted({gpu_family(o.gpu) for o in options})
    draws = standard_normals(seed, n * (len(families) + len(options)))
    fam_z = draws[:n * len(families)].reshape(n, len(families))
    own_z = draws[n * len(families):].reshape(n, len(options))
    rho = FAMILY_CORRELATION
    cols = []
    for j, o in enumerate(options):
        b = _bands(o)[1]
        z = rho * fam_z[:, families.index(gpu_family(o.gpu))] + math.sqrt(1 - rho * rho) * own_z[:, j]
        cols.append(b.draw(z))
    return np.stack(cols, axis=1)


@dataclass(frozen=True, slots=True, kw_only=True)
class Contender:
    """The other option best most often across the sampled outcomes, and how often."""

    option: int
    best_on_objective: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Confidence:
    """``recommendation.confidence``: how often the pick stays the right one across the model's error (shares of
    ``samples`` seeded outcomes): best on the objective, on time for the deadline, within the budget, all of these
    (``share``), and running at all (``runs``: never above 1 − its chance of running out of memory); the contender
    and whether it is a close call, with what would settle it."""

    samples: int
    seed: int
    best_on_objective: float
    share: float
    contender: Contender | None
    close: bool
    meets_deadline: float | None = None  # None: no deadline (or no run length)
    within_budget: float | None = None  # None: no budget
    runs: float | None = None
    settle_with: str | None = None  # a close call: the command that settles it

    def to_dict(self) -> ConfidenceJSON:
        out: ConfidenceJSON = {"samples": self.samples, "seed": self.seed, "best_on_objective": self.best_on_objective}
        if self.meets_deadline is not None:
            out["meets_deadline"] = self.meets_deadline
        if self.within_budget is not None:
            out["within_budget"] = self.within_budget
        out.update({"share": self.share, "contender": None if self.contender is None else
                    {"option": self.contender.option, "best_on_objective": self.contender.best_on_objective},
                    "close": self.close})
        if self.runs is not None:
            out["runs"] = self.runs
        if self.settle_with is not None:
            out["settle_with"] = self.settle_with
        return out


def confidence(options: list[PlanOption], order: list[int], values: list[float], deadline_s: float | None,
               budget: float | None, scales: bool = True, n: int = SAMPLES, seed: int = SEED) -> Confidence | None:
    """The share of sampled outcomes in which the pick (``order[0]``) is the best on the objective among ``order``
    (``values``: each option's objective value, one that scales with the run's time, unless ``scales`` is False),
    meets the deadline and stays within the budget (its commitment); each share alone, and the contender: the other
    option best most often."""
    if not order:
        return None
    chosen = [options[i] for i in order]
    u = _samples(chosen, n, seed)
    factor = np.exp(-u)  # time (and cost) per run scale with 1 / speed
    scaled = np.asarray([values[i] for i in order])[None, :] * (factor if scales else 1.0)
    best = scaled.argmin(axis=1)
    pick = chosen[0]
    ok = np.ones(n, dtype=bool)
    meets_deadline = within_budget = None
    seconds = pick.time_to_train_s
    if deadline_s and seconds:
        meets = seconds * factor[:, 0] <= deadline_s
        meets_deadline = round(float(meets.mean()), 4)
        ok &= meets
    commitment = pick.commitment
    if budget is not None and commitment is not None:  # renting commits the run's hours; buying, the price
        within = commitment * (factor[:, 0] if pick.acquisition == "rent" else np.ones(n)) <= budget
        within_budget = round(float(within.mean()), 4)
        ok &= within
    wins = [float((best == j).mean()) for j in range(1, len(order))]
    j = int(np.argmax(wins)) + 1 if wins else 0
    return Confidence(samples=n, seed=seed, best_on_objective=round(float((best == 0).mean()), 4),
                      share=round(float((ok & (best == 0)).mean()), 4),
                      contender=Contender(option=order[j], best_on_objective=round(wins[j - 1], 4)) if wins else None,
                      close=bool(wins) and wins[j - 1] >= CLOSE, meets_deadline=meets_deadline,
                      within_budget=within_budget)


def settle_command(job_path: str) -> str:
    """What settles a close call: an hour on each of the two, then compare."""
    return f"trainsizer probe profile {job_path}"


def close_call(conf: Confidence | None, options: list[PlanOption]) -> Message | None:
    """When the runner-up wins in a large share of outcomes: what would settle it."""
    if conf is None or not conf.close or conf.contender is None:
        return None
    contender = options[conf.contender.option]
    return msg("range.close_call", hardware={"gpus": contender.gpus, "gpu": contender.gpu},
               pct=conf.contender.best_on_objective)
