"""Shared by the fit scripts: coordinate descent over bounded grids, and writing fitted values
back into a YAML data file in place (comments kept)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from trainsizer.estimate.typed_data import value_at
from trainsizer.workflows.calibrate import Free, coordinate_descent


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


def fit(paths: list[str | Path], params: Any, free: Free,
        memory_cases: bool) -> tuple[Any, float, list[tuple[str, str]]]:
    """The fitted parameters, the loss at them and the cases that could not be fitted, for the case files."""
    from trainsizer.estimate.memory import default_memory_model
    from trainsizer.estimate.step import default_performance_model
    from trainsizer.workflows.case_terms import build_case_terms, log_error_loss
    from trainsizer.workflows.cases import load_cases

    cases = [c for p in paths for c in load_cases(p)]
    terms, failed = build_case_terms(cases, "memory" if memory_cases else "performance", default_memory_model(),
                                     default_performance_model())
    fitted, best = coordinate_descent(log_error_loss(terms, terms.fit_rows(range(len(terms)))), params, free)
    return fitted, best, failed


def run(argv: list[str], data: Path, default_cases: Path, params: Any, free: Free,
        memory_cases: bool) -> None:
    """Command-line body of the fit scripts: load cases (default: the repository's, ``default_cases``), fit,
    print, and with --write store."""
    paths = [a for a in argv if not a.startswith("--")] or [str(default_cases)]
    fitted, best, failed = fit(paths, params, free, memory_cases)
    for cid, reason in failed:
        print(f"not fitted: {cid}: {reason}")
    print(f"rms log error on fitted cases: {best ** 0.5:.4f}")
    for dotted, key, _ in free:
        print(f"{dotted}.{key} = {value_at(fitted, dotted, key):g}")
    if "--write" in argv:
        write_values(data, fitted, free)
        print(f"written to {data}")
