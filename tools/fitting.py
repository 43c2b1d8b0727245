"""Shared by the fit scripts: coordinate descent over bounded grids, and writing fitted values
back into a YAML data file in place (comments kept)."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

Free = Sequence[tuple[str, str, np.ndarray]]  # (dotted section, key, grid)
Evaluate = Callable[[list[dict[str, Any]], dict[str, Any]], list[Any]]


def _get(params: dict[str, Any], section: str) -> dict[str, Any]:
    node = params
    for part in section.split("."):
        node = node[part]
    return node


def coordinate_descent(loss: Callable[[dict[str, Any]], float], params: dict[str, Any], free: Free,
                       rounds: int = 3) -> tuple[dict[str, Any], float]:
    """Minimise ``loss`` one parameter at a time over its grid, repeating until nothing improves."""
    best_params, best = copy.deepcopy(params), loss(params)
    for _ in range(rounds):
        improved = False
        for section, key, grid in free:
            for value in grid:
                trial = copy.deepcopy(best_params)
                _get(trial, section)[key] = float(value)
                score = loss(trial)
                if score < best - 1e-12:
                    best, best_params, improved = score, trial, True
        if not improved:
            break
    return best_params, best


def write_values(path: Path, params: dict[str, Any], free: Free) -> None:
    """Replace ``key: value`` under each (possibly nested) section of the YAML file at ``path``."""
    text = path.read_text(encoding="utf-8")
    for section, key, _ in free:
        value = _get(params, section)[key]
        parts = section.split(".")
        # find the section block by walking indentation levels
        start = 0
        for depth, part in enumerate(parts):
            m = re.compile(rf"^{'  ' * depth}{re.escape(part)}:\s*$", re.M).search(text, start)
            if not m:
                raise SystemExit(f"section {section} not found in {path}")
            start = m.end()
        indent = "  " * len(parts)
        m = re.compile(rf"^({indent}{re.escape(key)}: )([-0-9.e]+)", re.M).search(text, start)
        if not m:
            raise SystemExit(f"{section}.{key} not found in {path}")
        text = text[:m.start(2)] + f"{value:g}" + text[m.end(2):]
    path.write_text(text, encoding="utf-8")


def log_errors(results: list[Any]) -> np.ndarray:
    return np.array([np.log(r.predicted / r.measured) for r in results
                     if not r.excluded_from_fit and r.predicted and r.predicted > 0])


def run(argv: list[str], data: Path, default_cases: Path, params: dict[str, Any], free: Free,
        evaluate: Evaluate, memory_cases: bool) -> None:
    """Command-line body of the fit scripts: load cases, fit, print, and with --write store."""
    from trainsizer.validate import load_cases

    paths = [a for a in argv if not a.startswith("--")] or [str(default_cases)]
    cases = [c for p in paths for c in load_cases(p) if ("memory_gib" in c["measured"]) == memory_cases]

    def loss(trial: dict[str, Any]) -> float:
        return float(np.mean(log_errors(evaluate(cases, trial)) ** 2))

    fitted, best = coordinate_descent(loss, params, free)
    print(f"rms log error on fitted cases: {best ** 0.5:.4f}")
    for section, key, _ in free:
        print(f"{section}.{key} = {_get(fitted, section)[key]:g}")
    if "--write" in argv:
        write_values(data, fitted, free)
        print(f"written to {data}")
