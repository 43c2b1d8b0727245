"""The one error type for mistakes a user can make (bad keys, values, ids, layouts), and the one conversion of a
pydantic ``ValidationError`` (a data file's row that does not fit its model) into it."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, get_args, get_origin

if TYPE_CHECKING:
    from pydantic import BaseModel, ValidationError

MAX_CLOSE_KEYS = 3  # an unknown key names at most this many keys (its error line stays short: issue 20)
MAX_KEYS_TEXT = 40  # ... and, where none is close, only the known keys that fit in this many characters
MAX_INPUT_TEXT = 60  # at most this much of a value the user gave is quoted back in an error
MAX_VALUE_TEXT = 500  # and no value of any message is longer (an accepted list, a path): one line stays one line


def excerpt(text: str, limit: int = MAX_INPUT_TEXT) -> str:
    """``text`` cut to ``limit`` characters ('...' marks the cut): what an error quotes of the user's input."""
    return text if len(text) <= limit else text[:limit] + "..."


def short_input(value: Any) -> Any:
    """A value the user gave, as an error may quote it: a string cut to :data:`MAX_INPUT_TEXT` characters."""
    return excerpt(value) if isinstance(value, str) else value


def N_(msgid: str) -> str:
    """Mark an input error's message id for the catalog where it is raised (a face says it in the reader's
    language: report.error_text); the same mark as ``trainsizer.i18n.N_``, for the layers below it."""
    return msgid


class InputError(ValueError):
    """A user-caused problem. The message names the field and the accepted values.

    The CLI prints it on one line and exits with status 2; nothing else is raised for user input.
    ``message`` is English; with ``values`` it is a catalog message id (marked ``N_`` where it is raised) whose
    ``{fields}`` they fill, so a face can say it in the reader's language (``report.message_text.error_text``).
    ``source``: the file the problem is in, said after the message.
    """

    def __init__(self, field: str, message: str, /, *, source: str | None = None, **values: Any):
        self.field = excerpt(field, MAX_VALUE_TEXT)
        self.template = message
        values = {k: excerpt(v, MAX_VALUE_TEXT) if isinstance(v, str) else v for k, v in values.items()}
        self.values = values
        self.source = source
        text = message.format(**values) if values else message
        self.message = f"{text} (in {source})" if source else text
        super().__init__(f"{self.field}: {self.message}" if field else self.message)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as its field, message id, file and values (a planner worker process sends it back to the web
        server)."""
        return _rebuild, (type(self), self.field, self.template, self.source, self.values)


def _rebuild(cls: type[InputError], field: str, template: str, source: str | None,
             values: dict[str, Any]) -> InputError:
    return cls(field, template, source=source, **values)


def in_file(exc: InputError, source: str | None) -> InputError:
    """The error with the file it came from appended (``(in FILE)``), when ``source`` is a YAML or JSON file."""
    if not source or not source.lower().endswith((".yaml", ".yml", ".json")) or source in str(exc):
        return exc
    if exc.source is None:
        return InputError(exc.field, exc.template, source=source, **exc.values)
    return InputError(exc.field, f"{exc.message} (in {source})")


def _join(where: str, loc: tuple[Any, ...]) -> str:
    """``where`` and a pydantic location as one field name: ``file: quotes[0].storage.included_tb`` (a ``where``
    that ends in ':' is a file: its first key follows a space)."""
    out = where
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            part = excerpt(str(part))  # a key of the user's file
            out += f" {part}" if out.endswith(":") else (f".{part}" if out else str(part))
    return out.rstrip(":")


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and hasattr(annotation, "model_fields")


def _inner(annotation: Any) -> tuple[Any, bool]:
    """(the model inside an annotation, whether a mapping key comes before its fields in a location)."""
    if _is_model(annotation):
        return annotation, False
    keyed = get_origin(annotation) in (dict, Mapping)
    for arg in get_args(annotation):
        model, _ = _inner(arg)
        if model is not None:
            return model, keyed
    return None, False


def _model_at(model: type[BaseModel] | None, loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The model that holds the last key of ``loc`` (walking nested models, list indices and mapping keys)."""
    skip = False
    for part in loc:
        if model is None:
            return None
        if skip or isinstance(part, int):
            skip = False
            continue
        info = model.model_fields.get(str(part))
        if info is None:
            return None
        model, skip = _inner(info.annotation)
    return model


def _own_first(model: type[BaseModel]) -> list[str]:
    """The model's keys, those it declares itself before those it inherits (a row's own fields lead)."""
    own = set(vars(model).get("__annotations__", {}))
    return sorted(model.model_fields, key=lambda k: k not in own)


def _bound(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() and abs(value) < 1e9 else f"{value:g}"


def _constraints(annotation: Any, metadata: list[Any]) -> tuple[set[Any], dict[str, float]]:
    """(the plain types, the bounds gt/ge/lt/le) inside an annotation and its metadata, through unions and
    ``Annotated`` (a bound in an Annotated alias such as ``Price`` counts)."""
    types: set[Any] = set()
    bounds: dict[str, float] = {}
    for item in metadata:
        for name in ("gt", "ge", "lt", "le"):
            if getattr(item, name, None) is not None:
                bounds[name] = getattr(item, name)
        if getattr(item, "metadata", None):
            bounds.update(_constraints(None, list(item.metadata))[1])
    if annotation is None:
        return types, bounds
    args = get_args(annotation)
    if str(get_origin(annotation)).endswith("Literal"):
        return {annotation}, bounds
    if hasattr(annotation, "__metadata__"):  # Annotated[T, ...]
        inner_types, inner = _constraints(args[0], list(annotation.__metadata__))
        return inner_types, {**bounds, **inner}
    if not args:
        return {annotation}, bounds
    for arg in args:
        inner_types, inner = _constraints(arg, [])
        types |= inner_types
        bounds.update(inner)
    return types, bounds


def _accepted(model: type[BaseModel] | None, key: Any) -> str | None:
    """What a scalar field accepts, in words ('a number > 0 and <= 1,000'), from its type and bounds."""
    info = model.model_fields.get(str(key)) if model is not None else None
    if info is None:
        return None
    types, b = _constraints(info.annotation, list(info.metadata))
    literals = [str(v) for t in types if str(get_origin(t)).endswith("Literal") for v in get_args(t)]
    if literals:
        return ", ".join(literals)
    kind = (N_("true or false") if bool in types else N_("an integer") if int in types else
            N_("a finite number") if float in types else None)
    if kind is None:
        return None
    parts = [f"{op} {_bound(b[name])}" for name, op in (("gt", ">"), ("ge", ">="), ("lt", "<"), ("le", "<="))
             if name in b]
    return f"{kind} {' and '.join(parts)}" if parts and kind != "true or false" else kind


def _shown(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    text = repr(value)
    return text if len(text) <= MAX_INPUT_TEXT else text[:MAX_INPUT_TEXT] + "..."


def unknown_key(field: str, key: Any, known: list[str]) -> InputError:
    """An unknown ``key`` (the last part of ``field``) as one short line: the (at most three) closest known keys
    (difflib), or where none is close, the first (at most three) known keys that fit in :data:`MAX_KEYS_TEXT`
    characters and how many there are."""
    close = difflib.get_close_matches(str(key), known, n=MAX_CLOSE_KEYS)
    if close:
        quoted = [f"'{c}'" for c in close]
        if len(quoted) == 1:
            return InputError(field, N_("unknown key (did you mean {key}?)"), key=quoted[0])
        return InputError(field, N_("unknown key (did you mean {keys} or {key}?)"), keys=", ".join(quoted[:-1]),
                          key=quoted[-1])
    if not known:
        return InputError(field, N_("unknown key"))
    shown = known[:1]
    for k in known[1:MAX_CLOSE_KEYS]:
        if len(", ".join([*shown, k])) > MAX_KEYS_TEXT:
            break
        shown.append(k)
    if len(shown) < len(known):
        return InputError(field, N_("unknown key; accepted keys: {keys}, ... ({n} keys)"), keys=", ".join(shown),
                          n=len(known))
    return InputError(field, N_("unknown key; accepted keys: {keys}"), keys=", ".join(shown))


def from_validation_error(exc: ValidationError, where: str = "", model: type[BaseModel] | None = None) -> InputError:
    """The first problem of ``exc`` as one InputError naming ``where`` and the field (``where`` is usually
    ``FILE: section[i]``): an unknown key with the (at most three) closest known ones ('did you mean'), a value
    outside a closed set with the accepted values, anything else with pydantic's reason and what was given.
    ``model`` is the model that was validated (it lists the accepted keys of an unknown one)."""
    errors = exc.errors()
    # a misspelt key is also a missing one: name the misspelling (it carries the 'did you mean')
    err = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and ("[" in p or p.startswith("function-"))))
    field = _join(where, loc) or "input"
    kind, given = err["type"], err.get("input")
    if kind == "extra_forbidden" and loc:
        parent = _model_at(model, loc[:-1])
        return unknown_key(field, loc[-1], _own_first(parent) if parent is not None else [])
    if kind == "missing":
        return InputError(field, N_("is required"))
    if kind in ("literal_error", "enum"):
        expected = str(err.get("ctx", {}).get("expected", ""))
        options = [o.strip().strip("'") for o in expected.replace(" or ", ",").split(",") if o.strip()]
        close = difflib.get_close_matches(str(given), options, n=1)
        if close:
            return InputError(field, N_("{value} is not accepted (did you mean '{close}'?); accepted: {accepted}"),
                              value=_shown(given), close=close[0], accepted=", ".join(options))
        return InputError(field, N_("{value} is not accepted; accepted: {accepted}"), value=_shown(given),
                          accepted=", ".join(options))
    if kind == "value_error":  # a model's own check; 'key.sub: message' names the field inside it
        message = str(err.get("ctx", {}).get("error", err["msg"]))
        head, _, rest = message.partition(": ")
        if rest and " " not in head and head.endswith(tuple("abcdefghijklmnopqrstuvwxyz_]")):
            return InputError(_join(where, (*loc, head)), rest)
        return InputError(field, message)
    accepted = _accepted(_model_at(model, loc[:-1]), loc[-1]) if loc else None
    if accepted:
        return InputError(field, N_("{value} is not accepted; accepted: {accepted}"), value=_shown(given),
                          accepted=accepted)
    return InputError(field, f"{err['msg'][:1].lower()}{err['msg'][1:]} (got {_shown(given)})")
