"""Checks of single values a user gives on the command line (the scenario file has its own, ``scenario.py``), and
the types and parsing of the data files a user may pass (catalogs, prices, quotes, sites, cases, calibration
profiles): each failure is one InputError naming the flag, or the file and the field, and what it accepts.

The data-file models use :data:`Number` (a finite float, never true/false), :data:`Int` (a strict integer),
:data:`Flag` (true or false only) and :data:`IsoDate`, with ``ConfigDict(extra="forbid", allow_inf_nan=False)``."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, TypeVar

import pydantic
from pydantic import BaseModel, BeforeValidator, ValidationError

from trainsizer.datafiles import cached_objects
from trainsizer.errors import N_
from trainsizer.scenario import Flag, Int, Number

__all__ = ["Flag", "Int", "IsoDate", "Number", "checked_once", "count_in_range", "finite_positive", "known_keys",
           "parse_model"]
M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")


def checked_once(name: str, package: str, data_files: Sequence[str], module_file: str,
                 build: Callable[[], T]) -> T | None:
    """``build()``'s shipped entries, checked by the models of ``module_file``, kept in the user's cache folder
    (``datafiles.cached_objects``) under a key of ``package``'s ``data_files``, that module, this one and pydantic's
    version; None in a zipped install (nothing to key on) or where the cache cannot be used: the caller then checks
    entries as it uses them."""
    here = resources.files(package)
    sources = [here / f for f in data_files] + [Path(module_file), Path(__file__)]
    if not all(isinstance(p, Path) and p.is_file() for p in sources):
        return None
    return cached_objects(name, sources, build, version=f"pydantic {pydantic.VERSION}")  # type: ignore[arg-type]


def finite_positive(value: Any, field: str, accepted: str = N_("a finite number > 0"),
                    maximum: float | None = None) -> float | None:
    """``value`` as a float when it is a finite number above 0 (and at most ``maximum``); None stays None.
    NaN, infinity, 0, negatives and true/false are refused."""
    from trainsizer.errors import InputError

    if value is None:
        return None
    if isinstance(value, bool):
        raise InputError(field, N_("{value!r} is not accepted; accepted: {accepted}"), value=value, accepted=accepted)
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InputError(field, N_("{value!r} is not a number; accepted: {accepted}"), value=value,
                         accepted=accepted) from None
    if not math.isfinite(number) or number <= 0 or (maximum is not None and number > maximum):
        return_text = f"{value!r}" if isinstance(value, str) else f"{number:g}"
        raise InputError(field, N_("{value} is not accepted; accepted: {accepted}"), value=return_text,
                         accepted=accepted)
    return number


def count_in_range(value: Any, field: str, low: int, high: int) -> int | None:
    """An integer option between ``low`` and ``high`` (inclusive); None stays None."""
    from trainsizer.errors import InputError

    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InputError(field, N_("{value!r} is not accepted; accepted: an integer from {low:,} to {high:,}"),
                         value=value, low=low, high=high)
    return value


# --- data files (catalogs, prices, quotes, sites, cases): typed models and their one error line -------------------


def _iso_date(value: Any) -> str:
    """An ISO date (YYYY-MM-DD) as text; YAML reads an unquoted date as a date, which is taken as it is."""
    import datetime

    if isinstance(value, datetime.date):
        return value.isoformat()[:10]
    if not isinstance(value, str):
        raise ValueError(f"{value!r} is not an ISO date (YYYY-MM-DD)")
    try:
        datetime.date.fromisoformat(value)
    except ValueError:
        raise ValueError(f"{value!r} is not an ISO date (YYYY-MM-DD)") from None
    return value


IsoDate = Annotated[str, BeforeValidator(_iso_date)]


def parse_model(model: type[M], data: Any, where: str) -> M:
    """``data`` validated by ``model``; a problem is one InputError naming ``where`` and the field."""
    from trainsizer.errors import from_validation_error

    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise from_validation_error(exc, where, model) from None


def known_keys(data: Mapping[str, Any], accepted: Iterable[str], where: str) -> None:
    """Every key of ``data`` (a file's top level) is one of ``accepted``; else the closest ones are named. A
    ``where`` that ends in ':' is a file (``FILE: key``), any other a prefix (``--calibration.key``); one short
    line (``errors.unknown_key``)."""
    from trainsizer.errors import unknown_key

    accepted = list(accepted)
    for key in data:
        if key not in accepted:
            field = f"{where} {key}" if where.endswith(":") else f"{where}.{key}" if where else str(key)
            raise unknown_key(field, key, accepted)
