"""Where a data row's figure comes from, and how old it is: the rules every price, availability, tariff and
voucher row of the shipped data keeps (tests/test_price_data.py), also used to flag rows to a reader.

A row's ``source`` is a public address a reader can open: a URL, or a repository + file path + commit. A
private or unnamed note ("research note", "notes file", a ``shared/`` path, a reference id like ``[S55]``,
"of this file") is not one. ``as_of`` is the figure's own date; a figure more than :data:`STALE_MONTHS`
months old by that date is stale: check it before you sign.
"""

from __future__ import annotations

import datetime
import re
from typing import Any

STALE_MONTHS = 18
_URL = re.compile(r"https?://[^\s,;()'\"]+\.[^\s,;()'\"]+")
# repository owner/name, a file path in it, and a commit (7-40 hex digits)
_REPO_PATH_COMMIT = re.compile(r"\b[\w.-]+/[\w.-]+\b.*?\b[\w./-]+\.\w+\b.*?\bcommit [0-9a-f]{7,40}\b", re.S)
UNNAMED = ("shared/", "research note", "notes file", "quote-tool preset", "of this file", "public repository file",
           "searched corpora", "general market knowledge", "companion research", "[s")


def unnamed_parts(source: str) -> list[str]:
    """The phrases of ``source`` that point to a private or unnamed note (empty when there are none)."""
    low = source.lower()
    return [u for u in UNNAMED if u in low]


def has_public_address(source: str | None) -> bool:
    """Whether ``source`` names a public address (a URL, or repository + path + commit) and no unnamed note."""
    text = source or ""
    return bool(_URL.search(text) or _REPO_PATH_COMMIT.search(text)) and not unnamed_parts(text)


def months_old(as_of: Any, today: datetime.date | None = None) -> int | None:
    """Whole months from the figure's date to ``today`` (None: not a date)."""
    try:
        when = datetime.date.fromisoformat(str(as_of))
    except ValueError:
        return None
    now = today or datetime.date.today()
    return (now.year - when.year) * 12 + (now.month - when.month) - (now.day < when.day)


def is_stale(row: dict[str, Any], today: datetime.date | None = None) -> bool:
    """A row marked ``stale`` in the data, or whose figure (``as_of``) is over :data:`STALE_MONTHS` months old."""
    return stale_figure(bool(row.get("stale")), row.get("as_of"), today)


def stale_figure(marked: bool, as_of: Any, today: datetime.date | None = None) -> bool:
    """A figure marked stale, or dated (``as_of``) over :data:`STALE_MONTHS` months before ``today``."""
    if marked:
        return True
    age = months_old(as_of, today)
    return age is not None and age >= STALE_MONTHS
