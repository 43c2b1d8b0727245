"""The evidence-bound MFU ceilings (``mfu_ceiling`` in performance_model.yaml) derived from measured speed cases.

A case's measured MFU is the estimator's MFU scaled by measured / predicted (MFU as trainsizer defines it: model
FLOPs without recomputation, attention counted in full, over the dense peak of the training precision; PaLM,
Chowdhery et al. 2022, appendix B), taken over the part's sustained peak
(:func:`trainsizer.estimate.peak.peak_share`: a part whose matmuls reach more of their nominal peak than its
family's reference parts, an H20 1.2 times the H100's share, is bounded at that much more of its nominal peak),
and with its loss against the best matmul at the family reference's ridge point
(:func:`trainsizer.estimate.gemm_rows.with_overhead`: an H20's 67 % of its sustained peak is what an H100 would run
at 32 %), so a part that loses less than the reference does not lift the family's ceiling.
It does not depend on the fitted parameters: every speed figure is inversely proportional to the step time, so the
ratio cancels the prediction. The ceiling of a (GPU architecture, precision) is the highest measured MFU plus
``margin``, with the case it came from; any precision the data has no run of, on an architecture with runs at the
same tensor-core rate, takes those runs' ceiling; anything else falls back to
``UNMEASURED_MFU``, marked ``assumed``.

tools/mfu_ceilings.py writes the shipped block from every shipped speed case; each cross-validation fold
(evidence/holdout.py, nested_holdout.py) derives its own from its training cases only (:func:`fold_ceilings`), so
no held-out case bounds its own prediction."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Required, TypedDict

import numpy as np

from trainsizer.estimate.gemm_rows import reference_share, with_overhead
from trainsizer.estimate.model_params import MfuCeilings, PerformanceModel
from trainsizer.estimate.step_terms import COMPILED_KEY, combine_step, per_case
from trainsizer.estimate.typed_data import build

Run = tuple[str, str, float, str]  # (architecture, precision key, measured MFU, case id)


class CeilingRow(TypedDict, total=False):
    """A ceiling as the ``mfu_ceiling`` block writes it (``model_params.MfuRow``): measured (its best run, the
    cases, how many runs, the basis) or assumed (status and reason)."""

    mfu: Required[float]
    measured: float
    cases: list[str]
    runs: int
    basis: str
    status: str
    reason: str


class Ceilings(TypedDict):
    """The ``mfu_ceiling`` block (``model_params.MfuCeilings``) as derived, before it is typed or written."""

    margin: float
    min_cases: int
    table: dict[str, dict[str, CeilingRow]]  # architecture: precision key: ceiling
    fallback: CeilingRow


PEAK_DTYPE = {"fp32": "fp32", "fp16-mixed": "fp16", "bf16-mixed": "bf16", "bf16-true": "bf16", "fp8-mixed": "fp8"}
MIN_CASES = 3  # fewer measured runs than this do not bound a precision on their own
# Where no run of an architecture was measured at that tensor-core rate, no claim above 60 % MFU: above that only
# measured evidence may go (issue 12's bound; the best published dense runs at scale: Megatron-LM 2024 on H100
# under 50 %, torchtitan 2024 on 64 A100 61 % without checkpointing). Assumed.
UNMEASURED_MFU = 0.60
# No dense bf16 job is planned above 60 % MFU (issue 12's bound). The one bf16 run measured above it, torchtune's
# compiled Llama 3.2 3B on one A100 at 62.9 % by the causal count, packed its sequences with per-document masks the
# shared case cannot state, so its useful FLOPs are overstated by up to its attention share. Assumed.
DENSE_BF16_CAP = 0.60


def measured_mfu(terms: Any, params: PerformanceModel) -> np.ndarray:
    """Each case's measured MFU from stacked speed terms (:class:`~trainsizer.evidence.refit.SpeedTerms`) and
    their measured figures: the MFU predicted under ``params`` times measured / predicted (time: the inverse)."""
    from trainsizer.evidence.refit import speed_predictions

    t = terms.speed
    step = sum(np.asarray(v, dtype=float) for v in combine_step(t.raw, params).values())
    predicted_mfu = np.asarray(t.raw.model_step_at_peak_s, dtype=float) / step
    predicted = speed_predictions(t, params)
    measured = np.asarray(terms.measured, dtype=float)
    slower = np.array([m == "step_time_s" for m in t.metrics])
    mfu = predicted_mfu * np.where(slower, predicted / measured, measured / predicted)
    # as the family's reference part would run it: the loss against the best matmul at the reference's ridge point
    # (the inverse of what the MFU floor does to the ceiling on a part, step_terms.mfu_floor_s)
    reference = per_case(t.raw, lambda a, d: reference_share(params, a, d) or 0.0, "architecture", "dtype")
    return np.asarray(with_overhead(mfu, reference, 1.0 / np.asarray(t.raw.overhead_scale, dtype=float)))


def precision_keys(terms: Any) -> list[str]:
    """Each speed case's ceiling row: its training precision, ``+compile`` under torch.compile."""
    raw = terms.speed.raw
    return [str(q) + (COMPILED_KEY if c else "") for q, c in zip(raw.precision, raw.compiled, strict=True)]


def _rate(precision_key: str) -> str:
    """The tensor-core rate of a precision key, and whether it holds compiled runs (``bf16-true+compile``): eager
    and compiled runs are never pooled."""
    compiled = precision_key.endswith(COMPILED_KEY)
    return PEAK_DTYPE[precision_key.removesuffix(COMPILED_KEY)] + (COMPILED_KEY if compiled else "")


def _same_rate_rows(table: dict[str, dict[str, CeilingRow]]) -> None:
    """Precisions without runs get the measured row of the same architecture at the same tensor-core rate (a plan
    in bf16-mixed on an architecture measured only in bf16-true is bounded by those runs)."""
    for rows in table.values():
        for prec, rate in PEAK_DTYPE.items():
            if prec in rows:
                continue
            same = [r for q, r in rows.items() if _rate(q) == rate and r.get("basis")]
            if same:
                best = max(same, key=lambda r: r["mfu"])
                rows[prec] = {**best, "basis": f"measured at the same tensor-core rate ({rate}): no run of {prec}"}


def ceilings(runs_list: Sequence[Run], margin: float, min_cases: int = MIN_CASES) -> Ceilings:
    """The ceiling of each (architecture, precision) with a measured run: the best measured MFU plus ``margin``.
    A precision with fewer than ``min_cases`` runs on that architecture takes the best of the architecture's runs at
    the same tensor-core rate (bf16-mixed and bf16-true share one), as does one whose own best is below theirs (the
    tensor cores bound both); if those are fewer still, the overall maximum (assumed) - one slow run must not cap
    what the hardware does. Runs under torch.compile form rows of their own (``bf16-true+compile``), never pooled
    with eager runs; too few of them leave a compiled job to the eager row."""
    runs: dict[tuple[str, str], list[tuple[float, str]]] = {}
    for arch, prec, mfu, cid in runs_list:
        runs.setdefault((arch, prec), []).append((mfu, cid))
    eager = [(m, cid, arch, prec) for (arch, prec), rows in runs.items() for m, cid in rows
             if not prec.endswith(COMPILED_KEY)]
    if eager:
        overall = max(eager)
        fallback = {"mfu": round(min(overall[0] + margin, UNMEASURED_MFU), 3), "status": "assumed",
                    "reason": f"no (or too few) measured runs of that architecture at that tensor-core rate: at most "
                              f"{UNMEASURED_MFU:.0%} (the overall maximum, {overall[2]} {overall[3]} {overall[1]}, "
                              "plus the margin, is higher: only measured evidence may claim more)"}
    else:
        fallback = {"mfu": UNMEASURED_MFU, "status": "assumed",
                    "reason": f"no measured run: at most {UNMEASURED_MFU:.0%} (only measured evidence may claim more)"}
    table: dict[str, dict[str, CeilingRow]] = {}
    for (arch, prec), rows in sorted(runs.items()):
        pooled = [r for (a, q), rs in runs.items() if a == arch and _rate(q) == _rate(prec) for r in rs]
        if len(rows) >= min_cases and max(rows) >= max(pooled):
            basis, evidence = "measured", rows
        elif len(pooled) >= min_cases:
            basis, evidence = f"measured at the same tensor-core rate ({_rate(prec)}): {len(rows)} run(s) of " \
                              f"{prec}", pooled
        elif prec.endswith(COMPILED_KEY):
            continue  # too few compiled runs: a compiled job is bounded by the eager row
        else:
            table.setdefault(arch, {})[prec] = {**fallback, "runs": len(rows)}
            continue
        best, best_id = max(evidence)
        mfu = round(best + margin, 3)
        if _rate(prec).startswith("bf16") and mfu > DENSE_BF16_CAP:
            basis += f"; capped at {DENSE_BF16_CAP:.0%}, the bound for dense bf16 (the best run measured {best:.1%})"
            mfu = DENSE_BF16_CAP
        table.setdefault(arch, {})[prec] = {"mfu": mfu, "measured": round(best, 3),
                                            "cases": [best_id], "runs": len(evidence), "basis": basis}
    _same_rate_rows(table)
    _compiled_rows_above_eager(table)
    return {"margin": margin, "min_cases": min_cases, "table": table, "fallback": fallback}


def _compiled_rows_above_eager(table: dict[str, dict[str, CeilingRow]]) -> None:
    """A compiled row lets compiled jobs go past the eager evidence (Inductor's fusion); one whose best run is below
    the eager row of its precision says only that those runs were slow, not that compiling slows the tensor cores:
    it is dropped, and a compiled job is bounded by the eager row (as where too few compiled runs were measured)."""
    for rows in table.values():
        for prec in [q for q in rows if q.endswith(COMPILED_KEY)]:
            eager = rows.get(prec.removesuffix(COMPILED_KEY))
            if eager is not None and rows[prec]["mfu"] < eager["mfu"]:
                del rows[prec]


def case_runs(terms: Any, rows: Sequence[int], params: PerformanceModel) -> list[Run]:
    """The measured runs of the dense speed cases among ``rows`` of ``terms`` (a :class:`~trainsizer.evidence.
    case_terms.CaseTerms`): architecture, precision key, measured MFU, id. A mixture-of-experts run is no evidence
    of a ceiling: its model MFU (active parameters' FLOPs) stays below a dense run's on the same part by its routing,
    all-to-alls and per-expert GEMMs (estimate/moe.py), so it would cap dense jobs on a family it alone measured."""
    mfu = measured_mfu(terms, params)
    keys = precision_keys(terms)
    arch = terms.speed.raw.architecture
    models = terms.models or ["dense"] * len(terms.ids)
    return [(str(arch[i] or "unknown"), keys[i], float(mfu[i]), terms.ids[i]) for i in rows if models[i] != "moe"]


def typed(data: Ceilings) -> MfuCeilings:
    """A derived ceilings block as the typed section of the performance model."""
    return build(MfuCeilings, data, "mfu_ceiling:")


def fold_ceilings(params: PerformanceModel, terms: Any, rows: Sequence[int]) -> PerformanceModel:
    """``params`` with MFU ceilings derived from the speed cases ``rows`` alone (a fold's training cases, those the
    data does not exclude from fits), at the shipped block's margin and minimum run count; unchanged where the
    model has no ceilings."""
    shipped = params.mfu_ceiling
    if shipped is None or terms.speed is None:
        return params
    data = ceilings(case_runs(terms, rows, params), shipped.margin, shipped.min_cases)
    return replace(params, mfu_ceiling=typed(data))
