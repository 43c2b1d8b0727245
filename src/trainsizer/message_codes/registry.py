"""The message registry: ``CODES`` maps a code to its catalog message id (English; the Chinese is in the .po), the
argument counted for plurals and the kind of each argument (``trainsizer.messages.KINDS``)."""

from __future__ import annotations

from typing import Any

CODES: dict[str, tuple[str | tuple[str, str], str, dict[str, str]]] = {}


def _c(code: str, msgid: str | tuple[str, str], count: str = "n", **kinds: Any) -> None:
    CODES[code] = (msgid, count, kinds)
