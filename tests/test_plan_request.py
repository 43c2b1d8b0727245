"""A plan request checks its own numbers when it is made: the command line, the web page and the Python API refuse
the same values with one message naming the field."""

from __future__ import annotations

import math

import pytest

from trainsizer.errors import InputError
from trainsizer.workflows.plan_request import PlanRequest


@pytest.mark.parametrize(("given", "field"), [
    ({"budget": -5.0}, "--budget"), ({"budget": math.inf}, "--budget"), ({"utilisation": 1.5}, "--utilisation"),
    ({"horizon_years": 0.0}, "--horizon"), ({"deadline_s": -3600.0}, "--deadline"), ({"top": 0}, "--top"),
    ({"max_oom_risk": 2.0}, "--max-oom-risk"), ({"time_value": math.nan}, "--time-value"),
    ({"runs_per_month": -1.0}, "--runs-per-month"), ({"setup_minutes": 1e9}, "--setup"),
])
def test_a_value_out_of_range_is_refused_naming_its_field(given: dict, field: str) -> None:
    with pytest.raises(InputError) as refused:
        PlanRequest(**given)
    assert refused.value.field == field


def test_values_in_range_and_the_defaults_are_kept() -> None:
    req = PlanRequest(budget=20_000.0, utilisation=0.5, horizon_years=3.0, deadline_s=86400.0, top=3,
                      max_oom_risk=0.0, time_value=0.0, setup_minutes=0.0)
    assert (req.budget, req.utilisation, req.top, req.max_oom_risk) == (20_000.0, 0.5, 3, 0.0)
    PlanRequest()


def test_the_request_is_keyword_only() -> None:
    with pytest.raises(TypeError):
        PlanRequest(("rtx-4090-24gb",), 8)  # type: ignore[misc]
