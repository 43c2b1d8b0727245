"""Shared by the fit scripts: coordinate descent over bounded grids, and writing fitted values
back into a YAML data file in place (comments kept).

The shipped fit has two stages (validation/published/README.md, "Shipped fit"): the shared cases alone
(validation/cases/) to convergence, from the file's ``fit.start`` block, which that result then replaces; then
``calibrate.REFINE_ROUNDS`` rounds over every shipped case, the parameters the tool uses. Each cross-validation fold
of ``trainsizer validate`` repeats the second stage without its held-out cases, so the accuracy it states is that of
this procedure."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from trainsizer.estimate.typed_data import value_at
from trainsizer.evidence.calibrate import REFINE_ROUNDS, Free, fit_split, fit_start, settle_priors


def write_values(path: Path, params: Any, free: Free) -> None:
    """Replace ``key: value`` under each (possibly nested) section of the YAML file at ``path``."""
    text = path.read_text(encoding="utf-8")
    for dotted, key, _ in free:
        value = value_at(params, dotted, key)
        parts = dotted.split(".")
        # find the section block by walking indentation levels
        start = 0
        for depth, part in enumerate(parts):
            m = re.compile(rf"^{'  ' * depth}{re.escape(part)}:\s*$", re.M).search(text, start)
            if not m:
                raise SystemExit(f"section {dotted} not found in {path}")
            start = m.end()
        indent = "  " * len(parts)
        m = re.compile(rf"^({indent}{re.escape(key)}: )([-0-9.e]+)", re.M).search(text, start)
        if not m:
            raise SystemExit(f"{dotted}.{key} not found in {path}")
        text = text[:m.start(2)] + f"{value:g}" + text[m.end(2):]
    path.write_text(text, encoding="utf-8")


def _terms(paths: list[str | Path], memory_cases: bool) -> tuple[Any, list[tuple[str, str]]]:
    from trainsizer.estimate.memory import default_memory_model
    from trainsizer.estimate.step import default_performance_model
    from trainsizer.evidence.case_terms import build_case_terms
    from trainsizer.evidence.cases import load_cases

    cases = [c for p in paths for c in load_cases(p)]
    return build_case_terms(cases, "memory" if memory_cases else "performance", default_memory_model(),
                            default_performance_model())


def fit(paths: list[str | Path], params: Any, free: Free, memory_cases: bool,
        rounds: int = 3) -> tuple[Any, float, list[tuple[str, str]]]:
    """The fitted parameters, the loss at them and the cases that could not be fitted, for the case files."""
    terms, failed = _terms(paths, memory_cases)
    fitted, best = fit_split(terms, range(len(terms)), params, free, rounds)
    return fitted, best, failed


def fit_shipped(core: list[str | Path], every: list[str | Path], params: Any, free: Free,
                memory_cases: bool) -> tuple[Any, Any, float, list[tuple[str, str]]]:
    """The two-stage shipped fit: (the shared cases' fit, from ``params``' ``fit.start``; the parameters refined on
    every case from it), the loss on every case and the cases that could not be fitted."""
    start, _, failed_core = fit(core, fit_start(params), free, memory_cases)
    # a prior-only family's ceiling from the fit it starts from and from the fit it ends at, as each fold sets it
    refined, best, failed = fit(every, settle_priors(start, free), free, memory_cases, rounds=REFINE_ROUNDS)
    return start, settle_priors(refined, free), best, list(dict.fromkeys(failed_core + failed))


def write_start(path: Path, params: Any, free: Free) -> None:
    """Replace the ``start:`` block under ``fit:`` of the YAML file at ``path`` with ``params``' values of ``free``."""
    text = path.read_text(encoding="utf-8")
    lines = "".join(f"    {dotted}.{key}: {value_at(params, dotted, key):g}\n" for dotted, key, _ in free)
    block = re.compile(r"^(  start:[^\n]*\n)((?:    [^\n]*\n)*)", re.M)
    fit = re.search(r"^fit:\s*$", text, re.M)
    m = block.search(text, fit.end()) if fit else None
    if not m:
        raise SystemExit(f"fit.start not found in {path}")
    path.write_text(text[:m.start(1)] + "  start:\n" + lines + text[m.end():], encoding="utf-8")


def run(argv: list[str], data: Path, core_cases: list[Path], every_case: list[Path], params: Any, free: Free,
        memory_cases: bool) -> None:
    """Command-line body of the fit scripts: the two-stage shipped fit on the repository's cases (``core_cases``, then
    ``every_case``), or with case files named, one fit on those; print, and with --write store."""
    paths = [a for a in argv if not a.startswith("--")]
    start = None
    if paths:
        fitted, best, failed = fit(paths, params, free, memory_cases)
    else:
        start, fitted, best, failed = fit_shipped(list(core_cases), list(every_case), params, free, memory_cases)
    for cid, reason in failed:
        print(f"not fitted: {cid}: {reason}")
    print(f"rms log error on fitted cases: {best ** 0.5:.4f}")
    for dotted, key, _ in free:
        first = "" if start is None else f" (shared cases: {value_at(start, dotted, key):g})"
        print(f"{dotted}.{key} = {value_at(fitted, dotted, key):g}{first}")
    if "--write" in argv:
        write_values(data, fitted, free)
        if start is not None:
            write_start(data, start, free)
        print(f"written to {data}")
