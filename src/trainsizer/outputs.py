"""Files the user names for output (``--out``, ``--db``, ``--trace-out``, ``--link-profile``): checked before any
work, so a long run is never lost to a typo in a folder name and nothing is replaced by surprise."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from trainsizer.errors import N_, InputError


def check_output_path(path: str | Path | None, field: str, *, overwrite: bool = False, append: bool = False,
                      suffixes: Sequence[str] = (), exists_hint: str | None = None) -> Path | None:
    """``path`` as a Path when it can be written: its folder exists and is writable, it is not a folder, it has
    one of ``suffixes`` (when given), and an existing file is replaced only with ``overwrite`` (or added to, with
    ``append``). None stays None. ``exists_hint`` replaces the advice given when the file exists."""
    if path is None:
        return None
    p = Path(path)
    if suffixes and not p.name.lower().endswith(tuple(s.lower() for s in suffixes)):
        raise InputError(field, N_("{name}: accepted extensions {accepted}"), name=p.name, accepted=", ".join(suffixes))
    if p.is_dir():
        raise InputError(field, N_("{path} is a directory; give a file path"), path=str(p))
    folder = p.parent
    if not folder.exists():
        raise InputError(field, N_("folder {folder} does not exist; create it first or give a path in an existing "
                                   "folder"), folder=str(folder))
    if not folder.is_dir():
        raise InputError(field, N_("{folder} is not a folder; give a path in an existing folder"), folder=str(folder))
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(field, N_("folder {folder} is not writable; give a path in a folder you can write to"),
                         folder=str(folder))
    if p.exists() and not (overwrite or append):
        if exists_hint:
            raise InputError(field, N_("{path} already exists; {hint}"), path=str(p), hint=exists_hint)
        raise InputError(field, N_("{path} already exists; pass --overwrite to replace it"), path=str(p))
    return p
