"""Loading the YAML data shipped inside the package, and users' own YAML files."""

from __future__ import annotations

import datetime
import json
import os
import zlib
from collections.abc import Callable
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

from trainsizer.errors import N_, InputError
from trainsizer.yaml_limits import MAX_YAML_BYTES

T = TypeVar("T")


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
    yaml_text = source.read_text(encoding="utf-8")
    data = load_yaml_text(yaml_text)
    try:
        text = json.dumps(data, default=_json_default, ensure_ascii=False)
        if _warranted(text, yaml_text) and json.loads(text, object_hook=_json_hook) == data:
            _write_atomically(cached, text)
    except (OSError, TypeError, ValueError):
        pass
    return data


# A JSON copy is at most this many times its YAML's size (the shipped files' copies: at most 1.4x, the GPU
# catalog's aliases written out): a copy larger than that comes from aliases expanded, and is not written
CACHE_GROWTH = 4
CACHE_SLACK_CHARS = 1024  # a tiny file's JSON may be a little longer ('a: ~' is '{"a": null}')


def _warranted(json_text: str, yaml_text: str) -> bool:
    """A JSON copy of ``yaml_text`` is no larger than the YAML warrants (see CACHE_GROWTH)."""
    return len(json_text) <= CACHE_GROWTH * len(yaml_text) + CACHE_SLACK_CHARS


def _write_atomically(path: Path, text: str) -> None:
    """``text`` into ``path`` through a temporary file renamed over it, so a reader sees the old file or the new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def _owned_and_private(path: Path) -> bool:
    """The file and its folder belong to this user and no one else may write them (a pickle runs code when loaded:
    only one this user wrote is read back)."""
    if not hasattr(os, "getuid"):
        return False
    for p in (path, path.parent):
        st = p.stat()
        if st.st_uid != os.getuid() or st.st_mode & 0o022:
            return False
    return True


def cached_objects(name: str, sources: list[Path], build: Callable[[], T], version: str = "") -> T | None:
    """``build()``'s result (objects already checked, e.g. validated catalog entries) kept as a pickle in the user's
    cache folder, so that a later command loads it in ~2 ms instead of building the validators and checking every
    entry again (~20 ms). The key is each source file's path, size and modification time (the data and the code
    that defines and checks the objects), ``version`` (the libraries') and Python's; a changed source makes a new
    key. Only a file this user owns and only they can write is loaded. None when ``build`` fails or the cache folder
    cannot be written (the caller then checks entries as it uses them)."""
    import pickle
    import sys

    parts = [version, sys.version] + [f"{p.resolve()}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in sources]
    cached = _cache_dir() / f"{name}-{zlib.crc32(chr(10).join(parts).encode()):08x}.pickle"
    try:
        if _owned_and_private(cached):
            return pickle.loads(cached.read_bytes())  # noqa: S301 - written by this user (see above)
    except (OSError, pickle.UnpicklingError, AttributeError, EOFError, ImportError, TypeError, ValueError):
        pass
    folder = cached.parent
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError:
        return None
    if not os.access(folder, os.W_OK) or not _owned_and_private(folder / "."):
        return None  # a pickle could not be written, or not trusted when read: entries are checked when used
    try:
        value = build()
    except Exception:  # noqa: BLE001 - an entry that fails its check fails where it is used, as without a cache
        return None
    try:
        tmp = cached.with_name(f"{cached.name}.{os.getpid()}.tmp")
        with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as out:
            out.write(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
        tmp.replace(cached)
    except (OSError, pickle.PicklingError, TypeError, AttributeError):
        pass
    return value


@cache
def packaged_yaml(package: str, name: str) -> Any:
    """Parsed YAML file shipped in ``package`` (cached; callers must not mutate it)."""
    resource = resources.files(package).joinpath(name)
    if isinstance(resource, Path):
        return _cached_parse(resource)
    return load_yaml_text(resource.read_text(encoding="utf-8"))  # a zipped install: no file to key a cache on


def _read_user_text(p: Path, field: str) -> str:
    """The file's text, refused unread when it is over ``yaml_limits.MAX_YAML_BYTES`` (never more is read: a file that
    grows while read is refused too) or not UTF-8."""
    too_big = InputError(field, N_("{path} is over {limit} bytes; accepted: YAML files up to {limit} bytes"),
                         path=str(p), limit=f"{MAX_YAML_BYTES:,}")
    try:
        if p.stat().st_size > MAX_YAML_BYTES:
            raise too_big
        with p.open("rb") as f:
            raw = f.read(MAX_YAML_BYTES + 1)
    except OSError as exc:
        raise InputError(field, N_("cannot read {path}: {reason}"), path=str(p), reason=exc.strerror or "") from None
    if len(raw) > MAX_YAML_BYTES:
        raise too_big
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(field, N_("{path} is not UTF-8 text"), path=str(p)) from None


def _yaml_error(exc: Exception, p: Path, field: str) -> InputError:
    """A YAML error as one InputError naming the file and line, quoting at most ``errors.MAX_INPUT_TEXT`` of it."""
    from trainsizer.errors import excerpt
    from trainsizer.yaml_text import DuplicateKey, YamlLimit

    mark = getattr(exc, "problem_mark", None)
    line = mark.line + 1 if mark is not None else 0
    if isinstance(exc, DuplicateKey):
        return InputError(field, N_("duplicate key {key!r} in {path} (line {line}); accepted: each key once per "
                                    "mapping"), key=exc.path, path=str(p), line=line)
    if isinstance(exc, YamlLimit):
        limit = f"{exc.limit:,}"
        if exc.what == "bytes":
            return InputError(field, N_("{path} is over {limit} bytes; accepted: YAML files up to {limit} bytes"),
                              path=str(p), limit=limit)
        if exc.what == "recursive":
            return InputError(field, N_("alias *{name} in {path} (line {line}) is inside the value it names; "
                                        "accepted: aliases to a value that ends before them"),
                              name=excerpt(exc.name), path=str(p), line=line)
        if exc.what == "aliases":
            return InputError(field, N_("{path} has over {limit} aliases (line {line}); accepted: at most {limit} "
                                        "aliases (*name) in a file"), path=str(p), limit=limit, line=line)
        if exc.what == "depth":
            return InputError(field, N_("{path} nests over {limit} levels deep (line {line}); accepted: at most "
                                        "{limit} levels"), path=str(p), limit=limit, line=line)
        return InputError(field, N_("{path} holds over {limit} values with its aliases expanded (line {line}); "
                                    "accepted: at most {limit} values"), path=str(p), limit=limit, line=line)
    problem = excerpt(getattr(exc, "problem", None) or (str(exc).splitlines() or [""])[0])
    if mark is not None:
        return InputError(field, N_("malformed YAML in {path} (line {line}, column {column}): {problem}"),
                          path=str(p), line=line, column=mark.column + 1, problem=problem)
    return InputError(field, N_("malformed YAML in {path}: {problem}"), path=str(p), problem=problem)


def user_yaml(path: str | Path, field: str = "file") -> Any:
    """Parse a user's YAML file; any problem becomes one InputError naming the file. The file is bounded
    (``trainsizer.yaml_text``: its size, nesting, aliases and the values they expand to)."""
    p = Path(path)
    if not p.is_file():
        raise InputError(field, N_("no such file: {path}"), path=str(p))
    text = _read_user_text(p, field)
    parsed = _parsed_before(text)
    if parsed is not None:
        return parsed[0]
    import yaml  # a user's file is always YAML text: PyYAML is needed here anyway

    try:
        data = load_yaml_text(text)
    except yaml.YAMLError as exc:
        raise _yaml_error(exc, p, field) from None
    _keep_parsed(text, data)
    return data


USER_CACHE_MAX_CHARS = 200_000  # a job, price or site file; larger files (validation cases) are parsed each time


def _user_cache_file(text: str) -> Path:
    return _cache_dir() / f"user-{zlib.crc32(text.encode()):08x}-{len(text)}.json"


def _parsed_before(text: str) -> tuple[Any] | None:
    """The data of a user's YAML text parsed before (``_keep_parsed``), as a 1-tuple; None if it was not. A user
    re-plans the same job with other flags: its text is parsed once, later runs read a JSON copy and never import
    PyYAML (~10 ms). The copy holds the text it came from and is used only for exactly that text."""
    if len(text) > USER_CACHE_MAX_CHARS:
        return None
    try:
        kept = json.loads(_user_cache_file(text).read_text(encoding="utf-8"), object_hook=_json_hook)
    except (OSError, ValueError):
        return None
    if not isinstance(kept, dict) or kept.get("text") != text or "data" not in kept:
        return None
    return (kept["data"],)


def _keep_parsed(text: str, data: Any) -> None:
    """Keep ``data`` (parsed from ``text`` without error) as JSON in the user's cache folder, when JSON holds it
    exactly (no NaN, non-string keys or binary) and no larger than the YAML warrants (``CACHE_GROWTH``: aliases
    are not written out in full); a folder that cannot be written is skipped."""
    if len(text) > USER_CACHE_MAX_CHARS:
        return
    try:
        data_json = json.dumps(data, default=_json_default, ensure_ascii=False)
        if not _warranted(data_json, text):
            return
        dumped = f'{{"text": {json.dumps(text, ensure_ascii=False)}, "data": {data_json}}}'
        if json.loads(dumped, object_hook=_json_hook)["data"] != data:
            return
        _write_atomically(_user_cache_file(text), dumped)
    except (OSError, TypeError, ValueError):
        pass


def refuse_overwrite(path: str | Path | None, field: str, overwrite: bool) -> None:
    """An output file the user names: its folder exists, never a folder, never replaced without ``--overwrite``
    (``trainsizer.outputs.check_output_path``, kept here for the callers that import it from this module)."""
    from trainsizer.outputs import check_output_path

    check_output_path(path, field, overwrite=overwrite)
