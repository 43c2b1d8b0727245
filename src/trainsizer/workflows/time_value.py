"""The value of the time a run takes: the default of ``--time-value`` (money per wall-clock hour), from
``time_value.yaml`` (one engineer's loaded pay per hour of the year, each figure sourced; assumed)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from trainsizer.datafiles import packaged_yaml
from trainsizer.errors import InputError

if TYPE_CHECKING:  # the JSON's types, for annotations
    from trainsizer.workflows.plan_schema import TimeValueJSON


@dataclass(frozen=True)
class TimeValue:
    """Money per wall-clock hour of a run, in ``currency``; ``assumed`` when it is the shipped default."""

    per_hour: float
    currency: str
    assumed: bool
    source: str | None = None
    as_of: str | None = None

    def to_dict(self) -> TimeValueJSON:
        return {"per_hour": round(self.per_hour, 2), "currency": self.currency, "assumed": self.assumed,
                "source": self.source, "as_of": self.as_of}


def default_time_value(currency: str) -> TimeValue:
    """The shipped default in ``currency``: annual wage x loading / hours in a year (time_value.yaml)."""
    data = packaged_yaml("trainsizer.workflows", "time_value.yaml")
    row = data["currencies"].get(currency)
    if row is None:  # a currency the data does not cover: time is not valued, and the output says so
        return TimeValue(0.0, currency, True, "no default for this currency in time_value.yaml", None)
    per_hour = float(row["annual_wage"]) * float(row["loading"]) / float(data["hours_per_year"])
    return TimeValue(per_hour, currency, True, f"{row['wage_source']}; loading: {row['loading_source']}",
                     str(row["wage_as_of"]))


def time_value(value: float | None, currency: str) -> TimeValue:
    """The user's ``--time-value`` (money per hour in ``currency``), else the default."""
    if value is None:
        return default_time_value(currency)
    if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
        raise InputError("--time-value", f"{value!r}; accepted: a finite amount >= 0 per hour in {currency} "
                         "(0 ranks by the run's cost alone)")
    return TimeValue(float(value), currency, False)
