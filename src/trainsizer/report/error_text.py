"""An input error (``errors.InputError``) in the reader's language, on one line: ``error: FIELD: what is wrong``.

The error's message id and values come from where it was raised; the field (a flag, a file and key, an id) is
data and stays as it is. A value named ``accepted`` that is itself a catalog phrase ("a finite number > 0") is
said in the reader's language too; ids, numbers and lists of accepted values stay as they are."""

from __future__ import annotations

from trainsizer.errors import InputError
from trainsizer.i18n import tr


def error_text(exc: InputError, lang: str) -> str:
    values = dict(exc.values)
    for key in ("accepted", "vendor"):  # a catalog phrase or name (a vendor's) shown in the reader's language
        if isinstance(values.get(key), str) and values[key]:
            values[key] = tr(values[key], lang)
    message = (tr(exc.template, lang, **values) if values else tr(exc.template, lang)) if exc.template else ""
    if exc.source:
        message = tr("{message} (in {source})", lang, message=message, source=exc.source)
    if exc.field:
        return tr("error: {field}: {message}", lang, field=exc.field, message=message)
    return tr("error: {message}", lang, message=message)
