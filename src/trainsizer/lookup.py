"""Looking an id up in a catalog, with the closest known ids when it is not there."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from trainsizer.errors import InputError


def unknown_id(field: str, given: str, known: Iterable[str]) -> InputError:
    known = sorted(known)
    close = difflib.get_close_matches(given.lower(), known, n=3, cutoff=0.5)
    if not close:  # prefix / substring matches catch e.g. 'h100' -> h100-sxm5-80gb
        close = [k for k in known if given.lower() in k][:3]
    hint = f"did you mean {', '.join(close)}? " if close else ""
    return InputError(field, f"unknown id {given!r}; {hint}known: {', '.join(known)}")
