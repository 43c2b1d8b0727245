"""Every user mistake becomes HTTP 422 ``{"field": ..., "message": ...}``; the field is named as in the
request body (``job.training.micro_batch_size``, ``constraints.max_gpus``), so the page can show the
message beside the input it names.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from trainsizer.errors import InputError
from trainsizer.i18n import N_, tr

if TYPE_CHECKING:  # one pydantic validation error, as pydantic types it
    from pydantic_core import ErrorDetails

# the library names some fields by their CLI flag; the web request names them by their body key
FLAG_FIELDS = {
    "--max-gpus": "constraints.max_gpus", "--gpus-per-node": "constraints.gpus_per_node",
    "--deadline": "constraints.deadline_days", "--site": "constraints.site", "--currency": "constraints.currency",
    "--gpu": "constraints.gpus", "--budget": "constraints.budget", "--utilisation": "constraints.utilisation",
    "--horizon": "constraints.horizon_years", "--time-value": "constraints.time_value",
    "--setup": "constraints.setup_minutes", "--max-oom-risk": "constraints.max_oom_risk",
    "--voucher": "constraints.voucher", "--runs-per-month": "constraints.runs_per_month",
    "--objective": "constraints.objective",
}
JOB_SECTIONS = ("model", "training", "parallel", "hardware")
# pydantic's error types in words the catalog translates (the English is pydantic's own, so an English reader
# sees what pydantic says); the fields are the error's ``ctx``. A type not listed keeps pydantic's English
# message in English and says "invalid value" in other languages.
PYDANTIC_MESSAGES = {
    "greater_than": N_("Input should be greater than {gt}"),
    "greater_than_equal": N_("Input should be greater than or equal to {ge}"),
    "less_than": N_("Input should be less than {lt}"),
    "less_than_equal": N_("Input should be less than or equal to {le}"),
    "int_parsing": N_("Input should be a valid integer, unable to parse string as an integer"),
    "int_type": N_("Input should be a valid integer"),
    "int_from_float": N_("Input should be a valid integer, got a number with a fractional part"),
    "float_parsing": N_("Input should be a valid number, unable to parse string as a number"),
    "float_type": N_("Input should be a valid number"),
    "finite_number": N_("Input should be a finite number"),
    "string_type": N_("Input should be a valid string"),
    "bool_parsing": N_("Input should be a valid boolean, unable to interpret input"),
    "bool_type": N_("Input should be a valid boolean"),
    "literal_error": N_("Input should be {expected}"),
    "enum": N_("Input should be {expected}"),
    "list_type": N_("Input should be a valid list"),
    "dict_type": N_("Input should be a valid dictionary"),
    "model_type": N_("Input should be a valid dictionary or object"),
    "string_too_long": N_("String should have at most {max_length} characters"),
    "string_too_short": N_("String should have at least {min_length} characters"),
    "too_long": N_("Should have at most {max_length} items"),
    "too_short": N_("Should have at least {min_length} items"),
}


class Busy(Exception):
    """The planner cannot take the request now (HTTP 503 with ``Retry-After``): its queue is full, or every
    slot stayed taken for longer than the wait limit."""

    def __init__(self, message: str, retry_after_s: int = 5):
        super().__init__(message)
        self.retry_after_s = retry_after_s


def message_of(exc: InputError) -> str:
    text = str(exc)
    prefix = f"{exc.field}: "
    return text[len(prefix):] if exc.field and text.startswith(prefix) else text


def renamed(field: str, flags: dict[str, str] | None = None, job_prefix: str | None = None) -> str:
    if flags and field in flags:
        return flags[field]
    if job_prefix and field.split(".", 1)[0].split("[", 1)[0] in JOB_SECTIONS:
        return f"{job_prefix}.{field}"
    return field


@contextmanager
def fields(flags: dict[str, str] | None = None, job_prefix: str | None = None) -> Iterator[None]:
    """Re-raise InputErrors with the field renamed to its place in the request body."""
    try:
        yield
    except InputError as exc:
        new = renamed(exc.field, flags, job_prefix)
        if new == exc.field:
            raise
        raise InputError(new, exc.template, source=exc.source, **exc.values) from None


def _loc_to_field(loc: tuple[Any, ...] | list[Any]) -> str:
    parts: list[str] = []
    for p in loc:
        if p == "body" and not parts:
            continue
        if isinstance(p, int):
            if parts:
                parts[-1] += f"[{p}]"
            continue
        text = str(p)
        if "[" in text or "(" in text or text in ("str", "InlineGpu", "InlineGpuIn", "int", "float"):
            continue  # pydantic's union branch names
        parts.append(text)
    return ".".join(parts)


def _most_specific(errors: list[ErrorDetails]) -> ErrorDetails:
    """The first error, unless it is a union branch's type mismatch (``hardware.gpu`` is not a string)
    while another branch got further (``hardware.gpu.bf16_tflops`` is out of range): then that one."""
    first = errors[0]
    loc = tuple(first.get("loc", ()))
    if str(first.get("type", "")).endswith("_type") and len(loc) > 1:
        parent = loc[:-1]
        for err in errors[1:]:
            other = tuple(err.get("loc", ()))
            if other[:len(parent)] == parent and len(other) > len(loc):
                return err
    return first


def _pydantic_message(err: ErrorDetails, lang: str) -> str:
    """A pydantic error's message in ``lang`` from the catalog (pydantic's own words for a type not listed)."""
    kind, ctx = str(err.get("type", "")), err.get("ctx") or {}
    msgid = PYDANTIC_MESSAGES.get(kind)
    if msgid is None:
        return str(err.get("msg", "invalid")) if lang == "en" else tr("invalid value", lang)
    if kind in ("string_too_long", "string_too_short", "too_long", "too_short") and lang == "en":
        return str(err.get("msg", "invalid"))  # pydantic's English handles the singular
    try:
        return tr(msgid, lang, **{k: v for k, v in ctx.items() if isinstance(v, int | float | str)})
    except (KeyError, IndexError):
        return str(err.get("msg", "invalid")) if lang == "en" else tr("invalid value", lang)


# long: one branch per kind of pydantic error, each worded as the CLI words it
def validation_error_body(errors: list[ErrorDetails], lang: str = "en") -> dict[str, str]:
    """``field`` and ``message`` of the first pydantic error, in the same words as the CLI's, in ``lang``."""
    if not errors:
        return {"field": "body", "message": tr("invalid request", lang)}
    err = _most_specific(errors)
    field = _loc_to_field(err.get("loc", ()))
    kind = err.get("type", "")
    msg = str(err.get("msg", "invalid"))
    if kind == "extra_forbidden":
        key = field.rsplit(".", 1)[-1]
        return {"field": field, "message": tr("unknown key {key}", lang, key=repr(key))}
    if kind == "missing":
        return {"field": field, "message": tr("is required", lang)}
    if kind == "json_invalid":
        return {"field": "body", "message": tr("malformed JSON: {error}", lang,
                                               error=err.get("ctx", {}).get("error", msg))}
    if kind == "value_error":  # the schemas' own checks: English sentences of the validators
        text = msg.removeprefix("Value error, ")
        head = text.split(" ", 1)[0]
        if head.endswith(":") and head[:-1].replace("_", "").replace(".", "").isalnum():
            sub, rest = text.split(":", 1)
            return {"field": f"{field}.{sub}" if field else sub, "message": rest.strip()}
        return {"field": field or "body", "message": text}
    given = err.get("input")
    shown = repr(given) if isinstance(given, int | float | str | bool) and len(repr(given)) < 60 else None
    message = _pydantic_message(err, lang)
    return {"field": field or "body", "message": tr("{message} (got {value})", lang, message=message, value=shown)
            if shown else message}


class Limiter:
    """At most ``slots`` planner computations at once, granted first come first served (a freed slot is
    handed to the longest waiter, so no request starves behind newer ones). At most ``queue_limit`` wait
    (None: no limit); one more is refused at once, and one that waits ``wait_s`` gives up: both raise Busy
    (HTTP 503), whose ``Retry-After`` is the time the requests ahead take at the recent pace."""

    def __init__(self, slots: int = 2, wait_s: float = 10.0, queue_limit: int | None = None):
        self._lock = threading.Lock()
        self.slots = slots
        self._free = slots
        self._waiting: deque[threading.Event] = deque()
        self.wait_s = wait_s
        self.queue_limit = queue_limit
        self._held_s = 0.0  # recent time a slot is held (exponential average)

    @property
    def running(self) -> int:
        return self.slots - self._free

    @property
    def queued(self) -> int:
        return len(self._waiting)

    def retry_after_s(self) -> int:
        """Seconds until the requests now running and waiting are through, at least 1."""
        ahead = self.running + self.queued
        return max(1, math.ceil(ahead * self._held_s / max(self.slots, 1)))

    def _acquire(self) -> str:
        with self._lock:
            if self._free and not self._waiting:
                self._free -= 1
                return "granted"
            if self.queue_limit is not None and len(self._waiting) >= self.queue_limit:
                return "full"
            turn = threading.Event()
            self._waiting.append(turn)
        if turn.wait(self.wait_s):
            return "granted"
        with self._lock:
            if turn.is_set():  # granted just as the wait ran out
                return "granted"
            self._waiting.remove(turn)
            return "waited"

    def _release(self, held_s: float) -> None:
        with self._lock:
            self._held_s = held_s if not self._held_s else 0.8 * self._held_s + 0.2 * held_s
            if self._waiting:
                self._waiting.popleft().set()  # the slot passes straight to the next in line
            else:
                self._free += 1

    @contextmanager
    def slot(self) -> Iterator[None]:
        outcome = self._acquire()
        if outcome == "full":
            raise Busy(f"the planner is busy ({self.running} plans running, {self.queued} waiting, the most "
                       "it queues); retry shortly", self.retry_after_s())
        if outcome == "waited":
            raise Busy(f"the planner is busy (all slots taken for {self.wait_s:g} s); retry shortly",
                       self.retry_after_s())
        start = time.monotonic()
        try:
            yield
        finally:
            self._release(time.monotonic() - start)
