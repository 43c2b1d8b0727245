"""Loading the YAML data shipped inside the package, and users' own YAML files."""

from __future__ import annotations

import datetime
import json
import os
import zlib
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from trainsizer.errors import N_, InputError


def load_yaml_text(text: str) -> Any:
    """Parse YAML text (PyYAML loads only here: a command whose data comes from the JSON cache never imports it)."""
    from trainsizer.yaml_text import load_yaml_text as load

    return load(text)


def _cache_dir() -> Path:
    base = os.environ.get("TRAINSIZER_CACHE_DIR") or os.environ.get("XDG_CACHE_HOME") or "~/.cache"
    return Path(base).expanduser() / "trainsizer" / "data"


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime.date):  # YAML dates (as_of); datetime is a date too
        return {"__date__": value.isoformat()}
    raise TypeError(type(value).__name__)


def _json_hook(obj: dict[str, Any]) -> Any:
    if len(obj) == 1 and "__date__" in obj:
        text = obj["__date__"]
        return datetime.datetime.fromisoformat(text) if "T" in text else datetime.date.fromisoformat(text)
    return obj


def _cached_parse(source: Path) -> Any:
    """Parse a shipped YAML file through a JSON copy in the user's cache folder: libyaml builds Python
    objects slowly (about 15 ms for the GPU catalog), ``json`` in well under 1 ms, and every command
    reads several catalogs. The key is the file's path, size and modification time, so a changed file is
    parsed again; data that JSON cannot hold exactly (non-string keys) is never cached; a cache that
    cannot be read or written is skipped."""
    stat = source.stat()
    key = f"{zlib.crc32(str(source.resolve()).encode()):08x}-{source.name}-{stat.st_size}-{stat.st_mtime_ns}.json"
    cached = _cache_dir() / key
    try:
        return json.loads(cached.read_text(encoding="utf-8"), object_hook=_json_hook)
    except (OSError, ValueError):
        pass
    data = load_yaml_text(source.read_text(encoding="utf-8"))
    try:
        text = json.dumps(data, default=_json_default, ensure_ascii=False)
        if json.loads(text, object_hook=_json_hook) == data:
            cached.parent.mkdir(parents=True, exist_ok=True)
            tmp = cached.with_name(f"{cached.name}.{os.getpid()}.tmp")
            tmp.write_text(text, encoding="utf-8")
            tmp.replace(cached)
    except (OSError, TypeError, ValueError):
        pass
    return data


@cache
def packaged_yaml(package: str, name: str) -> Any:
    """Parsed YAML file shipped in ``package`` (cached; callers must not mutate it)."""
    resource = resources.files(package).joinpath(name)
    if isinstance(resource, Path):
        return _cached_parse(resource)
    return load_yaml_text(resource.read_text(encoding="utf-8"))  # a zipped install: no file to key a cache on


def user_yaml(path: str | Path, field: str = "file") -> Any:
    """Parse a user's YAML file; any problem becomes one InputError naming the file."""
    p = Path(path)
    if not p.is_file():
        raise InputError(field, N_("no such file: {path}"), path=str(p))
    import yaml  # a user's file is always YAML text: PyYAML is needed here anyway

    from trainsizer.yaml_text import DuplicateKey

    try:
        return load_yaml_text(p.read_text(encoding="utf-8"))
    except DuplicateKey as exc:
        mark = exc.problem_mark
        raise InputError(field, N_("duplicate key {key!r} in {path} (line {line}); accepted: each key once per "
                                   "mapping"), key=exc.path, path=str(p), line=mark.line + 1) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        if mark:
            raise InputError(field, N_("malformed YAML in {path} (line {line}, column {column}): {problem}"),
                             path=str(p), line=mark.line + 1, column=mark.column + 1, problem=problem) from None
        raise InputError(field, N_("malformed YAML in {path}: {problem}"), path=str(p), problem=problem) from None
    except UnicodeDecodeError:
        raise InputError(field, N_("{path} is not UTF-8 text"), path=str(p)) from None


def refuse_overwrite(path: str | Path | None, field: str, overwrite: bool) -> None:
    """An output file the user names: its folder exists, never a folder, never replaced without ``--overwrite``
    (``trainsizer.outputs.check_output_path``, kept here for the callers that import it from this module)."""
    from trainsizer.outputs import check_output_path

    check_output_path(path, field, overwrite=overwrite)
