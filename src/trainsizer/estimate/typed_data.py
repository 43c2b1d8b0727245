"""Nested YAML data as frozen dataclasses, and back: the machinery under the model parameters (``model_params.py``).

:func:`build` checks a parsed YAML mapping against a frozen dataclass whose fields mirror its keys (nested
dataclasses for sections, :class:`Table` for mappings keyed by data such as GPU architectures, tuples for lists)
and returns the typed object; a key the class does not have is one :class:`~trainsizer.errors.InputError` naming
the file, the dotted key and the (at most three) closest valid keys. :func:`overlay` lays a partial mapping (a
calibration profile) over a typed object through the same types; :func:`with_value` and :func:`value_at` reach one
parameter by its dotted path (``compute.max_efficiency``, ``hopper``) with :func:`dataclasses.replace`, so fitting
never mutates a shared object; :func:`to_plain` gives the nested mapping back.

Numbers keep the type the YAML gave them (an int stays an int): the typed objects price exactly what the mappings
did."""

from __future__ import annotations

import dataclasses
import datetime
import functools
import math
import types
import typing
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar, get_args, get_origin

from trainsizer.errors import InputError, unknown_key

T = TypeVar("T")
V = TypeVar("V")
DERIVED = "derived"  # field metadata: filled at load, not a key of the file (e.g. provenance)
REST = "rest"  # field metadata: a Table of the section's remaining keys (e.g. quantization formats beside source)


class Table(Mapping[str, V]):
    """A read-only mapping keyed by data (GPU architectures, link kinds, optimizers), picklable."""

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, V] | None = None):
        self._data: dict[str, V] = dict(data or {})

    def __getitem__(self, key: str) -> V:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mapping) and dict(self.items()) == dict(other.items())

    def __hash__(self) -> int:
        return hash(tuple(self._data.items()))

    def __repr__(self) -> str:
        return f"Table({self._data!r})"

    def __reduce__(self) -> tuple[type, tuple[dict[str, V]]]:
        return type(self), (self._data,)

    def replace(self, key: str, value: V) -> Table[V]:
        return Table({**self._data, key: value})


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def file_fields(cls: type) -> list[dataclasses.Field[Any]]:
    """The fields of ``cls`` that are keys of its file (not derived at load)."""
    return [f for f in dataclasses.fields(cls) if not f.metadata.get(DERIVED)]


def _field_name(where: str, path: tuple[str, ...]) -> str:
    """``FILE: a.b.c`` for a file (``where`` ends in ':'), ``PREFIX.a.b.c`` otherwise."""
    dotted = ".".join(path).replace(".[", "[")  # a list index follows its key: metric_definitions[0].metric
    if where.endswith(":"):
        return f"{where} {dotted}" if dotted else where[:-1]
    return f"{where}.{dotted}" if where and dotted else where or dotted


def _kind(annotation: Any) -> str:
    return {bool: "true or false", int: "an integer", float: "a finite number", str: "text"}.get(annotation,
                                                                                                 str(annotation))


def _scalar(annotation: Any, value: Any, where: str, path: tuple[str, ...]) -> Any:
    ok = {bool: lambda v: isinstance(v, bool),
          int: lambda v: isinstance(v, int) and not isinstance(v, bool),
          float: lambda v: isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v),
          str: lambda v: isinstance(v, str),
          datetime.date: lambda v: isinstance(v, datetime.date | str)}.get(annotation)
    if ok is None:
        raise TypeError(f"unsupported parameter type {annotation!r}")
    if not ok(value):
        raise InputError(_field_name(where, path), f"{value!r} is not accepted; accepted: {_kind(annotation)}")
    return value


def _convert(annotation: Any, value: Any, where: str, path: tuple[str, ...]) -> Any:
    """``value`` (parsed YAML) as ``annotation`` describes it."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        if len(inner) == 1:
            return _convert(inner[0], value, where, path)
        for candidate in inner:  # a union of plain types: the first that takes the value
            try:
                return _convert(candidate, value, where, path)
            except InputError:
                continue
        raise InputError(_field_name(where, path), f"{value!r} is not accepted")
    if dataclasses.is_dataclass(annotation):
        return build(annotation, value, where, path)
    if origin in (Mapping, dict, Table):
        if not isinstance(value, Mapping):
            raise InputError(_field_name(where, path), f"{value!r} is not accepted; accepted: a mapping")
        return Table({str(k): _convert(args[-1], v, where, (*path, str(k))) for k, v in value.items()})
    if origin is tuple:
        if not isinstance(value, list | tuple):
            raise InputError(_field_name(where, path), f"{value!r} is not accepted; accepted: a list")
        return tuple(_convert(args[0], v, where, (*path, f"[{i}]")) for i, v in enumerate(value))
    return _scalar(annotation, value, where, path)


def build(cls: type[T], data: Any, where: str, path: tuple[str, ...] = ()) -> T:
    """``data`` (a parsed YAML mapping) as ``cls``; every key checked, nested sections built. ``where`` names the
    file (``FILE:``) or a prefix (``--calibration.memory``)."""
    if not isinstance(data, Mapping):
        raise InputError(_field_name(where, path), f"{data!r} is not accepted; accepted: a mapping")
    hints = _hints(cls)
    fields = file_fields(cls)
    rest = next((f for f in fields if f.metadata.get(REST)), None)
    names = [f.name for f in fields if f is not rest]
    values: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, value in data.items():
        key = str(key)
        if key in names:
            values[key] = _convert(hints[key], value, where, (*path, key))
        elif rest is not None:
            extra[key] = value
        else:
            raise unknown_key(_field_name(where, (*path, key)), key, names)
    if rest is not None:
        values[rest.name] = _convert(hints[rest.name], extra, where, path)
    missing = [f.name for f in fields if f.name not in values and _required(f)]
    if missing:
        raise InputError(_field_name(where, (*path, missing[0])), "is required")
    return cls(**values)


def _required(f: dataclasses.Field[Any]) -> bool:
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


def to_plain(obj: Any) -> Any:
    """A typed object as the nested mapping it was built from (derived fields left out)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out: dict[str, Any] = {}
        for f in file_fields(type(obj)):
            raw = getattr(obj, f.name)
            value = to_plain(raw)
            if f.metadata.get(REST):
                out.update(value)
            elif raw not in (None, ()) or _required(f):
                out[f.name] = value  # an optional field left empty is left out, as in the file
        return out
    if isinstance(obj, Mapping):
        return {k: to_plain(v) for k, v in obj.items()}
    if isinstance(obj, tuple):
        return [to_plain(v) for v in obj]
    return obj


def _step(node: Any, part: str) -> Any:
    if isinstance(node, Mapping):
        return node[part]
    if dataclasses.is_dataclass(node) and part in {f.name for f in file_fields(type(node))}:
        return getattr(node, part)
    raise KeyError(part)


def value_at(obj: Any, dotted: str, key: str) -> Any:
    """The parameter ``key`` of the section ``dotted`` (``compute.max_efficiency``, ``hopper``)."""
    node = obj
    for part in dotted.split("."):
        node = _step(node, part)
    return _step(node, key)


def _set(node: Any, parts: list[str], value: Any) -> Any:
    head, rest = parts[0], parts[1:]
    current = _step(node, head)  # KeyError on a key the object does not have
    new = _set(current, rest, value) if rest else value
    if isinstance(node, Table):
        return node.replace(head, new)
    if isinstance(node, Mapping):
        return Table({**node, head: new})
    return dataclasses.replace(node, **{head: new})


def with_value(obj: T, dotted: str, key: str, value: Any) -> T:
    """A copy of ``obj`` with one parameter replaced (``dataclasses.replace`` along the path; ``obj`` unchanged)."""
    return _set(obj, [*dotted.split("."), key], value)


Check = Callable[[str, Any], None]


def overlay(obj: T, data: Any, where: str, path: tuple[str, ...] = (), check: Check | None = None) -> T:
    """``obj`` with the values of ``data`` (a partial mapping of the same shape, e.g. a calibration profile) laid
    over it: every key must be one ``obj`` has (else one line naming the closest), every value of its type;
    ``check(dotted, value)`` may refuse a number outside its range."""
    if not isinstance(data, Mapping):
        known = [f.name for f in file_fields(type(obj))] if dataclasses.is_dataclass(obj) else list(obj)
        raise InputError(_field_name(where, path), f"{data!r} is not accepted; accepted: a mapping of "
                                                   f"{', '.join(map(str, known))}")
    if isinstance(obj, Mapping):
        known, hints = list(obj), None
    else:
        known, hints = [f.name for f in file_fields(type(obj))], _hints(type(obj))
    updates: dict[str, Any] = {}
    for key, value in data.items():
        key = str(key)
        if key not in known:
            raise unknown_key(_field_name(where, (*path, key)), key, known)
        current = obj[key] if isinstance(obj, Mapping) else getattr(obj, key)
        if dataclasses.is_dataclass(current) or isinstance(current, Mapping):
            updates[key] = overlay(current, value, where, (*path, key), check)
            continue
        annotation = type(current) if hints is None else hints[key]
        if annotation is float or (hints is None and isinstance(current, int | float)
                                   and not isinstance(current, bool)):
            annotation = float
        new = _convert(annotation, value, where, (*path, key))
        if check is not None:
            check(".".join((*path, key)), new)
        updates[key] = new
    if isinstance(obj, Mapping):
        return Table({**obj, **updates})  # type: ignore[return-value]
    return dataclasses.replace(obj, **updates)
