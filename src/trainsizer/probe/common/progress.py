"""Progress of long probe work (building a model, simulated or real steps, burn-in start-up): a rich spinner with
what is happening, on a terminal only. Under ``--json``, or when stdout is not a terminal (a pipe, a file, CI),
nothing is shown, so captured output stays exactly the result."""

from __future__ import annotations

import sys
from types import TracebackType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console
    from rich.live import Live
    from rich.spinner import Spinner

    from trainsizer.messages import Message


def make_console() -> Console | None:
    """Where progress goes: stderr, when stdout is a terminal (someone is watching); else nowhere."""
    if not sys.stdout.isatty():
        return None
    from rich.console import Console

    console = Console(stderr=True)
    return console if console.is_terminal else None


def progress_console(as_json: bool = False, quiet: bool = False) -> Console | None:
    return None if as_json or quiet else make_console()


class StatusLine:
    """``say(message)`` shows or updates a spinner with the engine's message (``trainsizer.messages``) in the
    reader's language (``lang``, else the locale's); ``say(None)`` or leaving the ``with`` block removes it.
    Without a console every call does nothing."""

    def __init__(self, console: Console | None, prefix: str = "", lang: str | None = None):
        self.console, self.prefix, self.lang = console, prefix, lang
        self._live: Live | None = None
        self._spinner: Spinner | None = None

    def __call__(self, said: Message | str | None) -> None:
        if self.console is None:
            return
        if said is None:
            self.stop()
            return
        from trainsizer.i18n import resolve_lang
        from trainsizer.report.message_text import text

        message = f"{self.prefix}{text(said, resolve_lang(self.lang))}"
        if self._live is None or self._spinner is None:
            from rich.live import Live
            from rich.spinner import Spinner

            self._spinner = Spinner("dots", text=message)
            self._live = Live(self._spinner, console=self.console, transient=True, refresh_per_second=8)
            self._live.start(refresh=True)
        else:
            self._spinner.update(text=message)
            self._live.refresh()

    def stop(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = self._spinner = None

    def __enter__(self) -> StatusLine:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()
