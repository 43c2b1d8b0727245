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

import yaml

from trainsizer.errors import InputError

# libyaml's C loader when PyYAML was built with it (8x faster on the catalogs), else pure Python
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_MERGE_TAG = "tag:yaml.org,2002:merge"


class DuplicateKey(yaml.YAMLError):
    """A mapping names the same key twice (YAML 1.2 forbids it; PyYAML would keep the last one silently)."""

    def __init__(self, path: str, mark: Any):
        self.path, self.problem_mark = path, mark
        super().__init__(f"duplicate key {path!r}")


def _check_unique_keys(node: yaml.Node, path: str = "") -> None:
    """Walk the composed document: every mapping's scalar keys are unique (merge keys ``<<`` excepted)."""
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.tag != _MERGE_TAG:
                key = f"{path}.{key_node.value}" if path else str(key_node.value)
                if key_node.value in seen:
                    raise DuplicateKey(key, key_node.start_mark)
                seen.add(key_node.value)
                _check_unique_keys(value_node, key)
            else:
                _check_unique_keys(value_node, path)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _check_unique_keys(item, f"{path}[{i}]")


def _load(text: str) -> Any:
    """Parse with the safe loader; a duplicate key anywhere raises DuplicateKey (a yaml.YAMLError)."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_unique_keys(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


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
    data = _load(source.read_text(encoding="utf-8"))
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
    return _load(resource.read_text(encoding="utf-8"))  # a zipped install: no file to key a cache on


def user_yaml(path: str | Path, field: str = "file") -> Any:
    """Parse a user's YAML file; any problem becomes one InputError naming the file."""
    p = Path(path)
    if not p.is_file():
        raise InputError(field, f"no such file: {p}")
    try:
        return _load(p.read_text(encoding="utf-8"))
    except DuplicateKey as exc:
        mark = exc.problem_mark
        raise InputError(field, f"duplicate key {exc.path!r} in {p} (line {mark.line + 1}); accepted: each key once "
                                "per mapping") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(field, f"malformed YAML in {p}{where}: {problem}") from None
    except UnicodeDecodeError:
        raise InputError(field, f"{p} is not UTF-8 text") from None


def refuse_overwrite(path: str | Path | None, field: str, overwrite: bool) -> None:
    """An output file the user names: its folder exists, never a folder, never replaced without ``--overwrite``
    (``trainsizer.outputs.check_output_path``, kept here for the callers that import it from this module)."""
    from trainsizer.outputs import check_output_path

    check_output_path(path, field, overwrite=overwrite)
