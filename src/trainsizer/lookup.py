"""Looking an id up in a catalog: the closest known ids when it is not there (never the whole list), and the
``trainsizer catalog ...`` command that lists the rest."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from trainsizer.errors import N_, InputError, short_input

MAX_SUGGESTIONS = 4
# the field an id was given for -> the listing of its catalog (first match wins)
LISTINGS = (("preset", "trainsizer catalog models"), ("model", "trainsizer catalog models"),
            ("site", "trainsizer catalog sites"), ("node", "trainsizer catalog links"),
            ("link", "trainsizer catalog links"), ("gpu", "trainsizer catalog gpus"))


def closest_ids(given: str, known: Iterable[str], n: int = MAX_SUGGESTIONS) -> list[str]:
    """Ids that contain what was given (e.g. 'h100' -> the H100 variants), then the most similar spellings."""
    known = sorted(known)
    text = given.lower()
    found = sorted((k for k in known if text and text in k.lower()), key=lambda k: (len(k) - len(text), k))
    found += difflib.get_close_matches(text, known, n=n, cutoff=0.5)
    return list(dict.fromkeys(found))[:n]


def listing_command(field: str) -> str:
    name = field.lower()
    return next((command for key, command in LISTINGS if key in name), "trainsizer catalog --help")


def unknown_id(field: str, given: str, known: Iterable[str], listing: str | None = None,
               close: list[str] | None = None) -> InputError:
    """The one-line error for an id that is not in the catalog: the closest ids (``close``, else the most similar
    spellings), and where the rest are listed."""
    close = closest_ids(str(given), known) if close is None else close
    given = short_input(given)  # quoted back: at most errors.MAX_INPUT_TEXT characters of it
    if close:
        return InputError(field, N_("unknown id {given!r}; did you mean {close}? all ids: {listing}"), given=given,
                          close=", ".join(close), listing=listing or listing_command(field))
    return InputError(field, N_("unknown id {given!r}; no id is close; all ids: {listing}"), given=given,
                      listing=listing or listing_command(field))
