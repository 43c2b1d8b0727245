"""The compiled code of the methods ``dataclasses`` generates, kept between runs of the ``trainsizer`` executable.

A command creates ~160 of trainsizer's dataclasses; for each, Python 3.11 and 3.12 write the source of every
generated method (``__init__``, ``__repr__``, ``__eq__``, ``__hash__``, a frozen class's ``__setattr__`` and
``__delattr__``) and compile it with ``exec`` (3.13: one text a class): ~0.35 ms a class, ~60 ms of a 0.5 s plan.
The source of a class's methods is the same text in every run, so its compiled code can be kept, as Python keeps a
module's in ``.pyc``: :func:`install` makes ``dataclasses`` look the text up (the exact text is the key; an unknown
text is compiled as before and remembered) and :func:`save` writes what a run compiled to the user's cache folder.
The functions are still made by ``dataclasses`` from that code, in the class's own globals: classes behave exactly
as without it. Only a file this user owns and only they can write is read (marshal loads code that runs).
https://docs.python.org/3/library/marshal.html
"""

from __future__ import annotations

import builtins
import dataclasses
import importlib.util
import marshal
import os
import sys
import zlib
from pathlib import Path
from types import CodeType
from typing import Any

from trainsizer.datafiles import _cache_dir, _owned_and_private

MAX_KEPT = 4000  # methods kept; past this, a run that compiles keeps only the methods it used (old classes go)

_codes: dict[str, CodeType] = {}
_used: set[str] = set()
_compiled: list[str] = []  # texts compiled in this run (none: nothing to save)


def _cache_file() -> Path:
    # marshal's format, the bytecode and the generated text change with Python: one file per build and bytecode
    key = sys.version.encode() + importlib.util.MAGIC_NUMBER
    return _cache_dir() / f"dataclass-methods-{zlib.crc32(key):08x}.marshal"


def _exec(source: Any, globals: dict[str, Any] | None = None, locals: Any = None) -> None:  # noqa: A002
    """``exec`` as ``dataclasses`` calls it (source text, globals, a namespace), the text's code looked up first."""
    if isinstance(source, str):
        code = _codes.get(source)
        if code is None:  # compiled as exec() compiles a text (no __future__ flags of this module's)
            code = _codes[source] = compile(source, "<string>", "exec", dont_inherit=True)
            _compiled.append(source)
        _used.add(source)
        source = code
    builtins.exec(source, globals, locals)  # noqa: S102 - dataclasses' own generated methods


def install() -> None:
    """Make ``dataclasses`` reuse the code compiled by earlier runs (call before the classes are created)."""
    path = _cache_file()
    try:
        if _owned_and_private(path):
            loaded = marshal.loads(path.read_bytes())
            if isinstance(loaded, dict) and all(isinstance(k, str) and isinstance(v, CodeType)
                                                for k, v in loaded.items()):
                _codes.update(loaded)
    except (OSError, EOFError, ValueError, TypeError):
        pass
    dataclasses.exec = _exec  # type: ignore[attr-defined]  # the module's global shadows the builtin


def save() -> None:
    """Write the methods this run compiled, with those kept before, when there are new ones."""
    if not _compiled:
        return
    kept = _codes if len(_codes) <= MAX_KEPT else {k: _codes[k] for k in _used}
    path = _cache_file()
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not _owned_and_private(path.parent / "."):
            return
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as out:
            out.write(marshal.dumps(kept))
        tmp.replace(path)
    except (OSError, ValueError):
        pass
    _compiled.clear()
