"""Every message the engine can say: its code, its catalog message id (English; the Chinese is in the .po) and
the kind of each argument (``trainsizer.messages.KINDS``), one module per area. A new message: one line in its
area's module, then ``python tools/i18n.py`` and its Chinese in ``locale/zh_CN/LC_MESSAGES/trainsizer.po``;
tests/test_messages.py renders every code in every language."""

from __future__ import annotations

from trainsizer.message_codes import (  # noqa: F401  (each registers its codes)
    answer,
    data_shape,
    offers,
    plan,
    probes,
    system,
    words,
)
from trainsizer.message_codes.registry import CODES

__all__ = ["CODES"]
