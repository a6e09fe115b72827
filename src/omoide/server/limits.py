"""Per-request limits of the server: the body size and the text one request may embed.

A body past ``server.max_body_bytes`` (``server.max_import_bytes`` for ``/v1/import``) is
answered 413 with the standard error body before any of it is parsed; the text a request
gives to embed is bounded by ``server.max_request_text_chars`` (:func:`check_text_budget`),
so that one agent's request cannot hold the embedder for minutes.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

from omoide.core.config import ServerConfig
from omoide.errors import PayloadTooLargeError, ValidationError

__all__ = ["BodyLimitMiddleware", "check_request_text", "check_text_budget", "text_chars"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: Routes whose bodies are exports (admin keys only), bounded by ``max_import_bytes``.
IMPORT_PATHS = frozenset({"/v1/import"})


class BodyLimitMiddleware:
    """ASGI middleware: read a request's body up to its limit, or answer 413.

    The declared ``Content-Length`` is checked first; a chunked body is counted as it
    arrives and refused as soon as it passes the limit. The body read is handed on whole.
    """

    def __init__(self, app: ASGIApp, config: ServerConfig) -> None:
        self.app = app
        self.config = config

    @staticmethod
    def setting_for(path: str) -> str:
        return "server.max_import_bytes" if path in IMPORT_PATHS else "server.max_body_bytes"

    def limit_for(self, path: str) -> int:
        if path in IMPORT_PATHS:
            return self.config.max_import_bytes
        return self.config.max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit_for(str(scope.get("path", "")))
        headers = {k.lower(): v for k, v in scope.get("headers", [])}
        declared = headers.get(b"content-length")
        if declared is not None:
            try:
                size = int(declared)
            except ValueError:
                size = -1
            if size > limit:
                await _refuse(send, limit, self.setting_for(str(scope.get("path", ""))))
                return
        elif b"transfer-encoding" not in headers:
            await self.app(scope, receive, send)  # no body (GET, an SSE stream)
            return
        chunks: list[bytes] = []
        total = 0
        pending: list[Message] = []
        while True:
            message = await receive()
            if message["type"] != "http.request":
                pending.append(message)  # the client went away: let the app see it
                break
            body = bytes(message.get("body", b""))
            total += len(body)
            if total > limit:
                await _refuse(send, limit, self.setting_for(str(scope.get("path", ""))))
                return
            chunks.append(body)
            if not message.get("more_body", False):
                break
        pending.insert(0, {"type": "http.request", "body": b"".join(chunks), "more_body": False})

        async def replay() -> Message:
            if pending:
                return pending.pop(0)
            return await receive()

        await self.app(scope, replay, send)


async def _refuse(send: Send, limit: int, setting: str) -> None:
    error = PayloadTooLargeError(f"the request body is larger than {limit:,} bytes ({setting})")
    body = json.dumps(
        {"error": type(error).__name__, "detail": str(error), "field": None, "problems": None}
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def text_chars(value: Any) -> int:
    """Characters of the strings in ``value`` (a string, or lists and mappings of them)."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return sum(text_chars(v) for v in value.values())
    if isinstance(value, list | tuple):
        return sum(text_chars(v) for v in value)
    return 0


def check_text_budget(budget: int, fields: Iterable[tuple[str, Any]]) -> None:
    """Refuse a request whose texts to embed pass ``budget`` characters in total, naming
    the field at which the total passes it."""
    total = 0
    for field, value in fields:
        total += text_chars(value)
        if total > budget:
            raise ValidationError(
                field,
                f"the text to embed in one request is {total:,}+ characters; the limit is "
                f"{budget:,} (server.max_request_text_chars)",
            )


def check_request_text(ops: Any, *fields: tuple[str, Any]) -> None:
    """:func:`check_text_budget` with the budget of the server ``ops`` works on."""
    check_text_budget(ops.mem.config.server.max_request_text_chars, fields)
