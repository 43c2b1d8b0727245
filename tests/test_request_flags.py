"""The plan and report options are generated from the typed plan request (workflows/plan_request.py, through
request_flags.py): every field is an option with its field's type and default, the field's metadata (accepted values,
bounds) matches the rule it restates, and the request made from the options refuses what the field's bounds refuse."""

from __future__ import annotations

import math

import pytest
import typer.main

from trainsizer.cli import app
from trainsizer.commands.plan import PLAN_OPTIONS, REPORT_OPTIONS
from trainsizer.errors import InputError
from trainsizer.hardware.catalog import MARKETS
from trainsizer.request_flags import plan_request
from trainsizer.workflows.decide import OBJECTIVES
from trainsizer.workflows.plan_request import PLAN_FIELDS, PlanRequest, request_flag


def _options(name: str) -> dict[str, object]:
    group = typer.main.get_command(app)
    command = group.get_command(typer.Context(group), name)  # type: ignore[attr-defined]
    return {opt: p for p in command.params for opt in p.opts}


@pytest.mark.parametrize(("command", "order"), [("plan", PLAN_OPTIONS), ("report", REPORT_OPTIONS)])
def test_each_request_field_the_command_asks_for_is_an_option_with_the_fields_default(command, order) -> None:
    options = _options(command)
    asked = [name for name in order if name in PLAN_FIELDS]
    assert len(asked) >= 20
    for name in asked:
        flag = request_flag(name)
        option = options[flag.names[0]]
        assert option.help == flag.help, name
        default = PLAN_FIELDS[name].default
        assert option.default == (None if isinstance(default, tuple) else default), name
    assert set(PLAN_FIELDS) <= set(PLAN_OPTIONS)  # plan asks for every field


def test_the_accepted_values_are_those_of_the_rules_they_restate() -> None:
    assert request_flag("objective").choices == OBJECTIVES
    assert request_flag("market").choices == MARKETS
    for name in ("objective", "market", "currency", "lang"):
        flag = request_flag(name)
        assert all(choice in flag.help for choice in flag.choices), name  # --help names each


def test_the_options_values_make_the_request() -> None:
    values = {name: None for name in PLAN_FIELDS if PLAN_FIELDS[name].default is None}
    req = plan_request({**values, "gpus": ["rtx-4090-24gb"], "deadline_s": "36h", "prices": None, "max_gpus": 8},
                       top=5)
    assert (req.gpus, req.deadline_s, req.prices, req.max_gpus, req.top) == (("rtx-4090-24gb",), 36 * 3600.0, (), 8, 5)


BOUNDED = [name for name, f in PLAN_FIELDS.items() if f.metadata["flag"].bounds]


@pytest.mark.parametrize("name", BOUNDED)
def test_a_value_beyond_a_fields_bounds_is_refused_naming_its_flag(name) -> None:
    low, high = request_flag(name).bounds
    beyond = [math.inf if high is None else high * 2, -1]
    if name == "top":
        beyond = [high + 1, low - 1]
    for value in beyond:
        with pytest.raises(InputError) as refused:
            PlanRequest(**{name: value})
        assert refused.value.field == request_flag(name).names[0], (name, value)
    if high is not None:
        assert getattr(PlanRequest(**{name: high}), name) == high  # the bound itself is accepted
