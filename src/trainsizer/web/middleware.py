"""A pure-ASGI guard in front of the app: bodies over the limit get 413 before anything parses them,
and JSON bodies that are not UTF-8, or hold NaN, Infinity, overflowing numbers or absurd nesting get 422
(Python's json module accepts them; the estimators must never see them). Both in the API's one error shape,
``{"field", "message"}``."""

from __future__ import annotations

import json
from email.message import Message as MimeHeader
from typing import Any
from urllib.parse import parse_qs

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from trainsizer.i18n import N_, tr

MAX_BODY_BYTES = 64 * 1024


class _NotFinite(ValueError):
    pass


def _reject_constant(name: str) -> Any:
    raise _NotFinite(N_("{value} is not a JSON number"), name)


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise _NotFinite(N_("{value} overflows a double"), text[:40])
    return value


def json_problem(body: bytes, lang: str = "en") -> str | None:
    """Why a JSON body cannot reach the models, in ``lang`` (None: fine, or malformed JSON - FastAPI says so).
    JSON is UTF-8 (RFC 8259 §8.1; a byte order mark may be ignored): other bytes are refused here, as Python's
    json module would guess UTF-16 or -32 and FastAPI answers a decoding error with 400 {"detail"}."""
    try:
        text = body.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        return tr(N_("the body is not UTF-8 text (byte {offset}); accepted: JSON in UTF-8"), lang, offset=exc.start)
    try:
        json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
    except _NotFinite as exc:
        return tr(exc.args[0], lang, value=exc.args[1])
    except RecursionError:
        return tr(N_("nested too deeply"), lang)
    except ValueError:
        return None  # malformed JSON: FastAPI answers 422 json_invalid
    return None


def parsed_as_json(content_type: bytes) -> bool:
    """FastAPI parses the body as JSON: no content type, or application/json or application/*+json, in any case
    (media types are case-insensitive: RFC 9110 §8.3.1; FastAPI reads them with email.message, as here)."""
    if not content_type:
        return True
    header = MimeHeader()
    header["content-type"] = content_type.decode("latin-1")
    subtype = header.get_content_subtype()
    return header.get_content_maintype() == "application" and (subtype == "json" or subtype.endswith("+json"))


def _lang(scope: Scope) -> str:
    """The page's language for a /ui/ request (its ?lang=), English for the API (as the app's handlers)."""
    if not str(scope.get("path", "")).startswith("/ui/"):
        return "en"
    from trainsizer.web.labels import resolve

    lang = parse_qs((scope.get("query_string") or b"").decode("latin-1")).get("lang", [None])[0]
    return resolve(lang)


async def _send_json(send: Send, status: int, payload: dict[str, str]) -> None:  # the error body: field, message
    data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]})
    await send({"type": "http.response.body", "body": data})


class BodyGuard:
    def __init__(self, app: ASGIApp, max_bytes: int = MAX_BODY_BYTES):
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        lang = _lang(scope)
        too_big = {"field": "body", "message": tr(N_("request body is larger than {limit} bytes"), lang,
                                                  limit=f"{self.max_bytes:,}")}
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await _send_json(send, 413, too_big)
            return
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await _send_json(send, 413, too_big)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        if body and parsed_as_json(headers.get(b"content-type", b"")):
            problem = json_problem(body, lang)
            if problem:
                await _send_json(send, 422, {"field": "body", "message": problem})
                return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)
