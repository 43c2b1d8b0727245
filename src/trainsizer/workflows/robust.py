"""The plan under the model's error: each option's 80 % ranges (time to train, cost per run), its chance of running
out of memory, and how often the recommendation stays the right one across the plausible outcomes.

The ranges are the estimate's (``estimate/ranges.py``, fitted on held-out publications). An option's cost per run
scales with its hours (rented by the hour; a bought server's share by the hours the run uses it), so the cost's
range is the time's. :func:`confidence` samples the speed errors of all options at once (numpy, seeded): options on
one GPU family share most of their error (``FAMILY_CORRELATION``, assumed: the family's residuals move together
across the validation cases, ``ranges.yaml``), other families draw theirs independently."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from trainsizer.estimate.intervals import RISK
from trainsizer.estimate.ranges import Band, band
from trainsizer.estimate.regimes import gpu_family, regime
from trainsizer.messages import Message, msg
from trainsizer.plan.option import PlanOption

SAMPLES = 4000
SEED = 20240601
FAMILY_CORRELATION = 0.9  # assumed: within a GPU family most of the error is the family's, not the layout's
CLOSE = 0.25  # the runner-up is the better choice in at least this share of outcomes: a close call
# Assumed: a run that runs out of memory does so at its first steps' peak, but the launch, the crash, finding the
# cause and the relaunch take about an hour of the run's hardware and of the team's time (rentals bill by the hour).
FAILED_ATTEMPT_HOURS = 1.0


def _bands(o: PlanOption) -> tuple[Band, Band]:
    reg = regime(o.gpu, o.method, o.gpus, o.gpus_per_node)
    return band("memory", reg), band("speed", reg)


def option_range(o: PlanOption) -> dict[str, Any]:
    """``option["range"]``: the 80 % ranges of the option's time to train and cost per run, the chance its peak
    memory exceeds the GPU, and whether that is a real risk (a message where it is)."""
    mem_b, speed_b = _bands(o)
    device, capacity = o.device_gib, o.capacity_gib
    p = mem_b.p_above(device, capacity)
    out: dict[str, Any] = {"level": speed_b.level, "p_exceeds_capacity": round(p, 4), "at_risk": p > RISK,
                           "fits_unless_above": round(capacity / device - 1, 4) if device else None,
                           "device_gib": [round(v, 2) for v in mem_b.scale(device)],
                           "step_time_s": [round(v, 4) for v in speed_b.scale_inverse(o.step_time_s)]}
    if o.time_to_train_s:
        out["time_to_train_s"] = [round(v, 1) for v in speed_b.scale_inverse(o.time_to_train_s)]
    if o.run_cost is not None:
        out["per_run_cost"] = [round(v) for v in speed_b.scale_inverse(float(o.run_cost))]
    out["notes"] = ([msg("range.oom_risk", pct=p, above=max(out["fits_unless_above"] or 0.0, 0.0))]
                    if p > RISK else [])
    return out


def failure_cost(o: PlanOption, value: float) -> float:
    """The expected cost of running out of memory, in the objective's units: the option's chance of it
    (``range.p_exceeds_capacity``) times a failed attempt (FAILED_ATTEMPT_HOURS of its ``value`` per hour of the
    run); 0 where the option is not at real risk or its run's hours are not known (no training.tokens)."""
    r = o.range or {}
    seconds = o.time_to_train_s
    if not r.get("at_risk") or not seconds:
        return 0.0
    return float(r["p_exceeds_capacity"]) * value * FAILED_ATTEMPT_HOURS * 3600 / float(seconds)


def with_ranges(options: list[PlanOption]) -> list[PlanOption]:
    """Each option with its ``range`` (and a risk of running out of memory among its notes)."""
    out = []
    for o in options:
        r = option_range(o)
        out.append(replace(o, range=r, notes=(*((o.fabric_twin,) if o.fabric_twin else ()), *r["notes"])))
    return out


def _samples(options: list[PlanOption], n: int, seed: int) -> np.ndarray:
    """``u`` (log of measured / predicted speed) per sample and option: a family draw shared by the options on
    one GPU family plus an option's own draw, each option's marginal normal fitted to its range."""
    rng = np.random.default_rng(seed)
    families = sorted({gpu_family(o.gpu) for o in options})
    fam_z = rng.standard_normal((n, len(families)))
    own_z = rng.standard_normal((n, len(options)))
    rho = FAMILY_CORRELATION
    cols = []
    for j, o in enumerate(options):
        b = _bands(o)[1]
        z = rho * fam_z[:, families.index(gpu_family(o.gpu))] + math.sqrt(1 - rho * rho) * own_z[:, j]
        cols.append(b.center + b.sigma * z)
    return np.stack(cols, axis=1)


def confidence(options: list[PlanOption], order: list[int], values: list[float], deadline_s: float | None,
               budget: float | None, scales: bool = True, n: int = SAMPLES, seed: int = SEED) -> dict[str, Any] | None:
    """``recommendation.confidence``: the share of sampled outcomes in which the pick (``order[0]``) is the best
    on the objective among ``order`` (``values``: each option's objective value, one that scales with the run's
    time, unless ``scales`` is False), meets the deadline and stays within the budget (its commitment); each share
    alone, and the contender: the other option best most often."""
    if not order:
        return None
    chosen = [options[i] for i in order]
    u = _samples(chosen, n, seed)
    factor = np.exp(-u)  # time (and cost) per run scale with 1 / speed
    scaled = np.asarray([values[i] for i in order])[None, :] * (factor if scales else 1.0)
    best = scaled.argmin(axis=1)
    pick = chosen[0]
    ok = np.ones(n, dtype=bool)
    out: dict[str, Any] = {"samples": n, "seed": seed, "best_on_objective": round(float((best == 0).mean()), 4)}
    seconds = pick.time_to_train_s
    if deadline_s and seconds:
        meets = seconds * factor[:, 0] <= deadline_s
        out["meets_deadline"] = round(float(meets.mean()), 4)
        ok &= meets
    pr = pick.per_run
    commitment = pr.get("commitment")
    if budget is not None and commitment is not None:  # renting commits the run's hours; buying, the price
        within = commitment * (factor[:, 0] if pr.get("acquisition") == "rent" else np.ones(n)) <= budget
        out["within_budget"] = round(float(within.mean()), 4)
        ok &= within
    out["share"] = round(float((ok & (best == 0)).mean()), 4)
    wins = [float((best == j).mean()) for j in range(1, len(order))]
    j = int(np.argmax(wins)) + 1 if wins else 0
    out["contender"] = {"option": order[j], "best_on_objective": round(wins[j - 1], 4)} if wins else None
    out["close"] = bool(wins) and wins[j - 1] >= CLOSE
    return out


def close_call(rec: dict[str, Any], options: list[PlanOption], job_path: str) -> Message | None:
    """When the runner-up wins in a large share of outcomes: what would settle it."""
    conf = rec.get("confidence") or {}
    if not conf.get("close"):
        return None
    contender = options[conf["contender"]["option"]]
    conf["settle_with"] = f"trainsizer probe profile {job_path}"  # an hour on each of the two, then compare
    return msg("range.close_call", hardware={"gpus": contender.gpus, "gpu": contender.gpu},
               pct=conf["contender"]["best_on_objective"])
