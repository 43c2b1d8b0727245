"""Loading the YAML data shipped inside the package, and users' own YAML files."""

from __future__ import annotations

from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from trainsizer.errors import InputError

# libyaml's C loader when PyYAML was built with it (8x faster on the catalogs), else pure Python
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _load(text: str) -> Any:
    return yaml.load(text, Loader=_Loader)  # noqa: S506 - a safe loader


@cache
def packaged_yaml(package: str, name: str) -> Any:
    """Parsed YAML file shipped in ``package`` (cached; callers must not mutate it)."""
    text = resources.files(package).joinpath(name).read_text(encoding="utf-8")
    return _load(text)


def user_yaml(path: str | Path, field: str = "file") -> Any:
    """Parse a user's YAML file; any problem becomes one InputError naming the file."""
    p = Path(path)
    if not p.is_file():
        raise InputError(field, f"no such file: {p}")
    try:
        return _load(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(field, f"malformed YAML in {p}{where}: {problem}") from None
    except UnicodeDecodeError:
        raise InputError(field, f"{p} is not UTF-8 text") from None


def refuse_overwrite(path: str | Path | None, field: str, overwrite: bool) -> None:
    """An output file the user names: never a folder, and never replaced without ``--overwrite``."""
    if path is None:
        return
    p = Path(path)
    if p.is_dir():
        raise InputError(field, f"{p} is a directory; give a file path")
    if p.exists() and not overwrite:
        raise InputError(field, f"{p} already exists; pass --overwrite to replace it")
