"""Fitting the 80 % ranges (``estimate/ranges.yaml``) from the leave-one-source-out errors, and checking them.

Every case's held-out error (``holdout.leave_one_source_out``: the prediction of a publication's cases by
parameters fitted without that publication) becomes ``u = log(measured / predicted)`` (speed: tokens per second, so
a step time's error turns sign). :func:`fit_ranges` takes the conformal quantiles of ``u``, pooled and per regime
value (``estimate/regimes.py``). :func:`coverage` checks them the way they will be used, nested: each publication's
cases against ranges fitted on the other publications' errors alone."""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

import numpy as np

from trainsizer.estimate.ranges import KINDS, band
from trainsizer.estimate.regimes import DIMENSIONS, scenario_regime
from trainsizer.workflows.case_terms import source_key

LEVEL = 0.8
WIDE_LEVEL = 0.95  # a regime no case shows: the pooled 2.5 % / 97.5 % quantiles
SHRINKAGE_SOURCES = 3  # a regime seen in s publications weighs s / (s + 3) against the pooled errors
HOLDOUT_KIND = {"memory": "memory", "speed": "throughput"}


def residuals(cases: list[dict[str, Any]], holdout: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Per kind (memory | speed): each held-out case's ``u``, its publication and its regime."""
    by_id = {str(c.get("id")): c for c in cases}
    out: dict[str, list[dict[str, Any]]] = {}
    for kind in KINDS:
        rows = []
        for r in holdout[HOLDOUT_KIND[kind]]["cases"]:
            case = by_id[r["id"]]
            if not r["predicted"] or r["predicted"] <= 0:
                continue
            u = math.log(r["measured"] / r["predicted"])
            if kind == "speed" and "step_time_s" in case["measured"] and not any(
                    k in case["measured"] for k in ("tokens_per_s", "tokens_per_s_per_gpu")):
                u = -u  # a longer step than predicted is a slower run
            rows.append({"id": r["id"], "source": source_key(case), "u": u,
                         "regime": scenario_regime(case["scenario"])})
        out[kind] = rows
    return out


def conformal(values: list[float] | np.ndarray, level: float) -> tuple[float, float]:
    """The split-conformal lower and upper ranks for a central ``level`` range (Lei et al. 2018): the
    floor((n+1)a/2)-th and ceil((n+1)(1-a/2))-th smallest, clipped to the sample."""
    v = np.sort(np.asarray(values, dtype=float))
    n = len(v)
    a = (1 - level) / 2
    lo = int(math.floor((n + 1) * a)) - 1
    hi = int(math.ceil((n + 1) * (1 - a))) - 1
    return float(v[min(max(lo, 0), n - 1)]), float(v[min(max(hi, 0), n - 1)])


def _row(rows: list[dict[str, Any]], level: float) -> dict[str, Any]:
    us = [r["u"] for r in rows]
    lo, hi = conformal(us, level)
    mid = min(max(float(np.median(us)), lo), hi)  # the typical error: the ranges are skewed (memory's long upper tail)
    return {"cases": len(rows), "sources": len({r["source"] for r in rows}), "lo": round(lo, 4),
            "mid": round(mid, 4), "hi": round(hi, 4)}


def fit_kind(rows: list[dict[str, Any]], level: float = LEVEL) -> dict[str, Any]:
    """One kind's block of ranges.yaml: pooled, the wide range, each dimension's values."""
    out: dict[str, Any] = {"pooled": _row(rows, level), "no_evidence": _row(rows, WIDE_LEVEL)}
    for dim in DIMENSIONS:
        groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in rows:
            groups[r["regime"][dim]].append(r)
        out[dim] = {value: _row(groups[value], level) for value in sorted(groups)}
    return out


def fit_ranges(res: dict[str, list[dict[str, Any]]], level: float = LEVEL) -> dict[str, Any]:
    """The fitted ranges (ranges.yaml's data, without its provenance header)."""
    return {"level": level, "shrinkage_sources": SHRINKAGE_SOURCES, **{k: fit_kind(res[k], level) for k in KINDS}}


def coverage(res: dict[str, list[dict[str, Any]]], level: float = LEVEL) -> dict[str, Any]:
    """Nested leave-one-source-out coverage: each publication's cases against ranges fitted without it. Per kind:
    the share inside (overall and per regime value), the median half-width (in log units, about a share of the
    estimate) and the count."""
    out: dict[str, Any] = {}
    for kind in KINDS:
        rows = res[kind]
        hits: list[tuple[dict[str, Any], bool, float]] = []
        for source in dict.fromkeys(r["source"] for r in rows):
            train = [r for r in rows if r["source"] != source]
            fitted = {"level": level, "shrinkage_sources": SHRINKAGE_SOURCES, kind: fit_kind(train, level)}
            for r in rows:
                if r["source"] == source:
                    b = band(kind, r["regime"], fitted)
                    hits.append((r, b.lo <= r["u"] <= b.hi, (b.hi - b.lo) / 2))
        per: dict[str, Any] = {}
        for dim in DIMENSIONS:
            groups: dict[str, list[bool]] = defaultdict(list)
            for r, inside, _ in hits:
                groups[r["regime"][dim]].append(inside)
            per[dim] = {v: {"count": len(g), "coverage": round(sum(g) / len(g), 4)} for v, g in sorted(groups.items())}
        out[kind] = {"count": len(hits), "coverage": round(sum(h[1] for h in hits) / max(len(hits), 1), 4),
                     "median_half_width": round(float(np.median([h[2] for h in hits])), 4) if hits else None,
                     "by_regime": per}
    return out
