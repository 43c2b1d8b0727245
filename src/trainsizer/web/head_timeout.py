"""The server's connection settings: uvicorn's h11 protocol with a request-head read timeout.

uvicorn (0.55) times out only an idle kept-alive connection (``timeout_keep_alive``: "Close Keep-Alive connections
if no new data is received within this timeout", https://www.uvicorn.org/settings/#timeouts), and only after a
response: its h11 protocol arms that timer in ``on_response_complete`` and cancels it on any data
(uvicorn/protocols/http/h11_impl.py), so a new connection that sends nothing, or half a request head, holds its
socket for ever. Here a connection must deliver a complete request head within ``HEAD_TIMEOUT_S`` of opening, or
of the first bytes of its next request; else it is closed. The head's size is bounded by h11 itself (uvicorn's
``h11_max_incomplete_event_size``, 16 KB by default: 400 beyond it).
"""

from __future__ import annotations

import asyncio
from typing import Any, TypedDict

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

# A client sends its request head in one packet; 10 s leaves room for a slow link and still frees a socket held by
# a client that stalls (nginx's client_header_timeout is the same setting, default 60 s:
# https://nginx.org/en/docs/http/ngx_http_core_module.html#client_header_timeout)
HEAD_TIMEOUT_S = 10.0
KEEP_ALIVE_S = 5  # uvicorn's default timeout_keep_alive, stated


class HeadTimeoutH11(H11Protocol):
    """uvicorn's h11 protocol that closes a connection whose request head is not complete in ``head_timeout_s``."""

    head_timeout_s = HEAD_TIMEOUT_S

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._watch_head()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._watch_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_head_timer()
        super().connection_lost(exc)

    def on_response_complete(self) -> None:
        super().on_response_complete()  # an idle kept-alive connection: uvicorn's keep-alive timer
        self._stop_head_timer()

    def _watch_head(self) -> None:
        """A timer runs while a request head is awaited: h11 is idle (no complete head yet) and, on a kept-alive
        connection, bytes of the next one have come (before that, uvicorn's keep-alive timer runs)."""
        waiting = self.conn.their_state is h11.IDLE and not self.transport.is_closing() and (
            self.timeout_keep_alive_task is None)
        if waiting and self._head_timer is None:
            self._head_timer = self.loop.call_later(self.head_timeout_s, self._head_timed_out)
        elif not waiting:
            self._stop_head_timer()

    def _stop_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if not self.transport.is_closing():
            self.transport.close()


class ServerSettings(TypedDict):
    """The keyword arguments :func:`server_settings` gives ``uvicorn.run``."""

    http: type[H11Protocol]
    timeout_keep_alive: int


def server_settings() -> ServerSettings:
    """Keyword arguments of ``uvicorn.run`` / ``uvicorn.Config`` for the planner's connections (``http`` takes a
    protocol class as well as 'h11' or 'httptools': uvicorn/config.py)."""
    return {"http": HeadTimeoutH11, "timeout_keep_alive": KEEP_ALIVE_S}
