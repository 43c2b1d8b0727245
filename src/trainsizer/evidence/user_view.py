"""The user's view of a measured case (``trainsizer validate --view user``): the case with only what a user states
(FORMAT.md's keys, the framework, the data shape, compile, optimizer in backward, expert and sharding-group sizes),
the internals keys and the loss kind dropped and filled again from its framework's profile
(``trainsizer.frameworks.resolve``; a case that names no framework takes the one assumed for its method)."""

from __future__ import annotations

from typing import Any

from trainsizer.frameworks import INTERNALS, resolve
from trainsizer.scenario import scenario_from_dict

VIEWS = ("annotated", "user")


def user_case(case: dict[str, Any]) -> dict[str, Any]:
    """``case`` as a user would write it, its internals keys set by its framework's profile."""
    scenario = {k: dict(v) if isinstance(v, dict) else v for k, v in case["scenario"].items()}
    for dotted in INTERNALS:
        section, key = dotted.split(".", 1)
        if isinstance(scenario.get(section), dict):
            scenario[section].pop(key, None)
    resolved, use = resolve(scenario_from_dict(scenario, source=str(case.get("id", "case"))))
    return {**case, "scenario": resolved.model_dump(exclude_unset=True), "framework": use.to_dict()}
