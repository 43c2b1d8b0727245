"""The user's view of a measured case (``trainsizer validate --view user``): the case with only what a user states
(FORMAT.md's keys, the framework, the data shape, compile, optimizer in backward, expert and sharding-group sizes, and
the MoE token dispatcher, all-to-all overlap and token ranks its source states: docs/accuracy.md, the MoE runs),
the internals keys and the loss kind dropped and filled again from its framework's profile
(``trainsizer.frameworks.resolve``; a case that names no framework takes the one assumed for its method).

Three views of the same cases: ``annotated`` (as written, internals included: what the shipped parameters are
fitted on), ``user`` (what a user states, the framework included where the case's source names it) and
``unstated`` (the user's view without the framework: the one assumed for the method stands in, as for an estimate
whose user names none; its errors calibrate the wider "framework not stated" ranges, ``evidence/ranges_fit.py``)."""

from __future__ import annotations

from dataclasses import replace

from trainsizer.evidence.cases import Case
from trainsizer.frameworks import INTERNALS, resolve
from trainsizer.scenario import scenario_from_dict

VIEWS = ("annotated", "user")
UNSTATED = "unstated"  # the user's view with no framework named (scored beside the user view, never asked for alone)


def user_case(case: Case, framework_named: bool = True) -> Case:
    """``case`` as a user would write it, its internals keys set by its framework's profile; with not
    ``framework_named``, without the framework too (the one assumed for its method)."""
    scenario = {k: dict(v) if isinstance(v, dict) else v for k, v in case.scenario.items()}
    for dotted in INTERNALS + (() if framework_named else ("training.framework",)):
        section, key = dotted.split(".", 1)
        if isinstance(scenario.get(section), dict):
            scenario[section].pop(key, None)
    resolved, use = resolve(scenario_from_dict(scenario, source=case.id))
    return replace(case, scenario=resolved.model_dump(exclude_unset=True), framework=use)


def case_views(cases: list[Case]) -> dict[str, list[Case]]:
    """The three views of ``cases`` (annotated, user, unstated), in the cases' order."""
    return {"annotated": cases, "user": [user_case(c) for c in cases],
            UNSTATED: [user_case(c, framework_named=False) for c in cases]}
