"""Derive the evidence-bound MFU ceilings from measured throughput cases; write them as data.

Usage: python tools/mfu_ceilings.py [CASES.yaml ...] [--margin 0.03] [--write]
(default: validation/cases/throughput.yaml and validation/published/throughput.yaml of this repository)

For every throughput case not listed under ``fit.exclude`` in performance_model.yaml, the measured MFU is the
estimator's MFU scaled by measured / predicted (MFU as trainsizer defines it: model FLOPs without recomputation,
attention counted in full, over the dense peak of the training precision; PaLM appendix B). The ceiling of a
(GPU architecture, precision) is the highest measured MFU plus ``margin``, with the case ids it came from; any
precision the data has no run of, on an architecture with runs at the same tensor-core rate, takes those runs'
ceiling; anything else falls back to ``UNMEASURED_MFU``, marked ``assumed``.
``--write`` replaces the ``mfu_ceiling:`` block of src/trainsizer/estimate/performance_model.yaml; its date stays
when the ceilings do not change, so a rerun on the same cases rewrites the file byte for byte.
"""

from __future__ import annotations

import re
import sys
from datetime import date
from pathlib import Path
from typing import Any

import yaml

from trainsizer.estimate.estimator import estimate
from trainsizer.estimate.model_params import PerformanceModel
from trainsizer.estimate.step import default_performance_model
from trainsizer.estimate.step_terms import COMPILED_KEY
from trainsizer.scenario import scenario_from_dict
from trainsizer.workflows.cases import METRICS_SPEED, load_cases, speed_metric
from trainsizer.workflows.shipped_cases import CEILING_EVIDENCE

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "src/trainsizer/estimate/performance_model.yaml"
# the throughput cases in this repository: the fitted ones and the held-out publications (validation/cases/README.md)
DEFAULT_CASES = [ROOT / "validation" / relative for relative in CEILING_EVIDENCE]
DEFAULT_MARGIN = 0.03


def measured_mfu(case: dict[str, Any], params: PerformanceModel) -> tuple[str, str, float] | None:
    """(GPU architecture, training precision, measured MFU) of one speed case; None for memory cases. A run under
    torch.compile has its precision key suffixed ``+compile`` (its own row: eager plans are bounded by eager
    runs)."""
    name = next((k for k in METRICS_SPEED if k in case["measured"]), None)
    if name is None:
        return None
    cid = str(case["id"])
    result = estimate(scenario_from_dict(case["scenario"], source=cid), performance_params=params, with_limits=False)
    perf = result.performance
    assert perf is not None
    compare_with, _ = speed_metric(cid, name, params)
    predicted = float(getattr(perf, compare_with))
    ratio = predicted / float(case["measured"][name]) if name == "step_time_s" else \
        float(case["measured"][name]) / predicted
    tr = result.scenario.training
    return result.gpu.architecture or "unknown", tr.precision + (COMPILED_KEY if tr.compile else ""), perf.mfu * ratio


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


def ceilings(cases: list[dict[str, Any]], params: PerformanceModel, margin: float) -> dict[str, Any]:
    """The ceiling of each (architecture, precision) with a measured run: the best measured MFU plus ``margin``.
    A precision with fewer than MIN_CASES runs on that architecture takes the best of the architecture's runs at
    the same tensor-core rate (bf16-mixed and bf16-true share one), as does one whose own best is below theirs (the
    tensor cores bound both); if those are fewer still, the overall maximum (assumed) - one slow run must not cap
    what the hardware does. Runs under torch.compile form rows of their own (``bf16-true+compile``), never pooled
    with eager runs; too few of them leave a compiled job to the eager row."""
    excluded = set(params.fit.exclude)
    runs: dict[tuple[str, str], list[tuple[float, str]]] = {}
    for case in cases:
        if str(case.get("id")) in excluded:
            continue
        got = measured_mfu(case, params)
        if got is not None:
            runs.setdefault((got[0], got[1]), []).append((got[2], str(case["id"])))
    if not runs:
        raise SystemExit("no throughput case to derive ceilings from")
    overall = max((m, cid, arch, prec) for (arch, prec), rows in runs.items() for m, cid in rows
                  if not prec.endswith(COMPILED_KEY))
    fallback = {"mfu": round(min(overall[0] + margin, UNMEASURED_MFU), 3), "status": "assumed",
                "reason": f"no (or too few) measured runs of that architecture at that tensor-core rate: at most "
                          f"{UNMEASURED_MFU:.0%} (the overall maximum, {overall[2]} {overall[3]} {overall[1]}, plus "
                          "the margin, is higher: only measured evidence may claim more)"}
    table: dict[str, dict[str, Any]] = {}
    for (arch, prec), rows in sorted(runs.items()):
        pooled = [r for (a, q), rs in runs.items() if a == arch and _rate(q) == _rate(prec) for r in rs]
        if len(rows) >= MIN_CASES and max(rows) >= max(pooled):
            basis, evidence = "measured", rows
        elif len(pooled) >= MIN_CASES:
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
    return {"margin": margin, "min_cases": MIN_CASES, "table": table, "fallback": fallback}


def _rate(precision_key: str) -> str:
    """The tensor-core rate of a precision key, and whether it holds compiled runs (``bf16-true+compile``): eager
    and compiled runs are never pooled."""
    compiled = precision_key.endswith(COMPILED_KEY)
    return PEAK_DTYPE[precision_key.removesuffix(COMPILED_KEY)] + (COMPILED_KEY if compiled else "")


def _same_rate_rows(table: dict[str, dict[str, Any]]) -> None:
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


def block(data: dict[str, Any], sources: list[str], written: str | None = None) -> str:
    """The ``mfu_ceiling:`` block of the data file, ``written`` on that date (default: today)."""
    head = ("mfu_ceiling:\n"
            "  # Evidence-bound planning: no step is priced faster than its model FLOPs at this MFU (model FLOPs over\n"
            "  # the dense peak of the precision) for its GPU architecture and precision: the highest measured in the\n"
            "  # validation cases plus the margin (fit.exclude cases left out). Written by tools/mfu_ceilings.py on\n"
            f"  # {written or date.today().isoformat()} from {', '.join(sources)};\n"
            "  # rerun it after changing the model or the cases.\n")
    body = yaml.safe_dump(data, sort_keys=False, width=120)
    return head + "".join(f"  {line}\n" for line in body.splitlines())


def write(text: str, path: Path = DATA) -> None:
    current = path.read_text(encoding="utf-8")
    pattern = re.compile(r"^mfu_ceiling:\n(?:(?:  .*|\s*)\n)*", re.M)
    if pattern.search(current):
        current = pattern.sub(lambda _: text, current, count=1)
    else:
        current = current.replace("\nfit:\n", "\n" + text + "\nfit:\n", 1)
    path.write_text(current, encoding="utf-8")


def written_date(data: dict[str, Any], path: Path = DATA) -> str | None:
    """The date of the shipped block when it holds exactly ``data`` (a rerun changes nothing), else None."""
    text = path.read_text(encoding="utf-8")
    shipped = (yaml.safe_load(text) or {}).get("mfu_ceiling")
    found = re.search(r"Written by tools/mfu_ceilings.py on\s*(?:#\s*)?(\d{4}-\d{2}-\d{2})", text)
    same = shipped == yaml.safe_load(yaml.safe_dump(data, sort_keys=False))
    return found.group(1) if same and found else None


def _label(path: Path) -> str:
    """A case file as the data file names it: relative to the repository, or as given when outside it."""
    resolved = path.resolve()
    return str(resolved.relative_to(ROOT)) if resolved.is_relative_to(ROOT) else str(path)


def derive(paths: list[Path], margin: float = DEFAULT_MARGIN) -> tuple[dict[str, Any], str]:
    """The ceilings from the case files (default: the repository's) and the block that stores them."""
    files = paths or DEFAULT_CASES
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise SystemExit(f"case file not found: {', '.join(missing)}")
    cases = [c for f in files for c in load_cases(f)]
    data = ceilings(cases, default_performance_model(), margin)
    return data, block(data, [_label(f) for f in files], written_date(data))


def main(argv: list[str]) -> None:
    margin = DEFAULT_MARGIN
    if "--margin" in argv:
        margin = float(argv[argv.index("--margin") + 1])
    paths = [a for i, a in enumerate(argv) if not a.startswith("--") and (i == 0 or argv[i - 1] != "--margin")]
    data, text = derive([Path(p) for p in paths], margin)
    for arch, row in data["table"].items():
        for dtype, entry in row.items():
            print(f"{arch:16s} {dtype:11s} ceiling {entry['mfu']:.3f} ({entry.get('basis', 'assumed')}, "
                  f"{entry['runs']} runs: {', '.join(entry.get('cases', []))})")
    print(f"fallback {data['fallback']['mfu']:.3f} ({data['fallback']['reason']})")
    if "--write" in argv:
        write(text)
        print(f"written to {DATA}")


if __name__ == "__main__":
    main(sys.argv[1:])
