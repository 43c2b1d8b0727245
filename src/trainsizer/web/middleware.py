"""A pure-ASGI guard in front of the app: bodies over the limit get 413 before anything parses them,
and JSON bodies with NaN, Infinity, overflowing numbers or absurd nesting get 422 (Python's json
module accepts them; the estimators must never see them)."""

from __future__ import annotations

import json
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

MAX_BODY_BYTES = 64 * 1024


class _NotFinite(ValueError):
    pass


def _reject_constant(name: str) -> Any:
    raise _NotFinite(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise _NotFinite(f"{text} overflows a double")
    return value


def json_problem(body: bytes) -> str | None:
    """Why a JSON body cannot reach the models (None: fine, or not JSON at all - FastAPI says so)."""
    try:
        json.loads(body, parse_constant=_reject_constant, parse_float=_finite_float)
    except _NotFinite as exc:
        return str(exc)
    except RecursionError:
        return "nested too deeply"
    except ValueError:
        return None  # malformed JSON: FastAPI answers 422 json_invalid
    return None


async def _send_json(send: Send, status: int, payload: dict[str, Any]) -> None:
    data = json.dumps(payload).encode()
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
        too_big = {"field": "body", "message": f"request body is larger than {self.max_bytes:,} bytes"}
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
        content_type = headers.get(b"content-type", b"")
        if body and (not content_type or b"json" in content_type):  # FastAPI parses both as JSON
            problem = json_problem(body)
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
