"""The command line's plan options (``plan``, ``report``), generated from the typed plan request
(``trainsizer.workflows.plan_request.PlanRequest``): each option is a request field, its names and help in the
field's metadata (``RequestFlag``), its value type and default the field's own, so what the request accepts and what
``--help`` says are written once; the request checks the values it is made with (one message naming the flag), as it
does for the web page and the Python API.

Typer reads a command's options from its signature (typer.utils.get_params_from_function:
https://github.com/fastapi/typer/blob/0.12.5/typer/utils.py); :func:`with_plan_flags` gives a command the generated
options in the order it names, beside its own, and hands it their values as ``plan_values``
(``{field name: value}``), which :func:`plan_request` turns into the request."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Annotated, Any, get_args, get_origin, get_type_hints

import typer

from trainsizer.workflows.plan_request import PLAN_FIELDS, PlanRequest, request_flag


@functools.cache
def _field_types() -> dict[str, Any]:
    return get_type_hints(PlanRequest)


def _cli_type(name: str) -> Any:
    """The command-line type of a request field: a repeatable option for a tuple, text for a value given as text."""
    if request_flag(name).as_text:
        return str | None
    kind = _field_types()[name]
    if get_origin(kind) is tuple:
        return list[get_args(kind)[0]] | None  # type: ignore[misc]
    return kind


def request_option(name: str) -> Any:
    """The typer option (``Annotated`` type) of the request's field ``name``."""
    flag = request_flag(name)
    return Annotated[_cli_type(name), typer.Option(*flag.names, help=flag.help)]


def _option_parameter(name: str) -> inspect.Parameter:
    default = PLAN_FIELDS[name].default
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=request_option(name),
                             default=None if isinstance(default, tuple) else default)


def plan_request(values: dict[str, Any], **fixed: Any) -> PlanRequest:
    """The request of the options' values (a repeatable option's list as a tuple, a duration parsed), and ``fixed``
    (fields a command sets itself)."""
    made: dict[str, Any] = {}
    for name, value in values.items():
        if request_flag(name).as_text:
            from trainsizer.workflows.jobs import parse_duration

            value = parse_duration(value)
        elif isinstance(PLAN_FIELDS[name].default, tuple):
            value = tuple(value or ())
        made[name] = value
    return PlanRequest(**made, **fixed)


def with_plan_flags(order: tuple[str, ...]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A command whose parameters are ``order``: its own (by name) and the request fields it asks for (the rest),
    called with the fields' values as ``plan_values``. The command is returned as it is; the function typer reads,
    with the generated options, is built when the command is (``command.with_generated_options()``,
    cli_groups.typer_callback)."""

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        command.with_generated_options = functools.cache(  # type: ignore[attr-defined]
            lambda: _with_options(command, order))
        return command

    return decorate


def _with_options(command: Callable[..., Any], order: tuple[str, ...]) -> Callable[..., Any]:
    """``command`` with the parameters ``order`` in its signature (what typer reads), called with the request
    fields' values as ``plan_values``."""
    own = {p.name: p for p in inspect.signature(command).parameters.values() if p.name != "plan_values"}
    asked = [name for name in order if name not in own]
    unknown = set(asked) - set(PLAN_FIELDS)
    assert not unknown and set(own) <= set(order), (command.__name__, unknown, set(own) - set(order))
    params = [own[name].replace(kind=inspect.Parameter.KEYWORD_ONLY) if name in own else _option_parameter(name)
              for name in order]

    @functools.wraps(command)
    def run(**kwargs: Any) -> Any:
        values = {name: kwargs.pop(name) for name in asked}
        return command(plan_values=values, **kwargs)

    run.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in params}
    del run.__wrapped__  # typer reads this signature, not the command's
    del run.with_generated_options  # copied by functools.wraps (the function's __dict__)
    return run
