"""API keys on the wire: ``Authorization: Bearer <key>`` decides the calling agent.

The REST routes resolve the key in a FastAPI dependency (so the OpenAPI document declares the
scheme); the MCP endpoint sits behind :class:`KeyAuthMiddleware`, which refuses a request
without a valid key before the MCP session sees it and binds the session to the key's agent.
"""

from __future__ import annotations

import json
from typing import Any

import anyio.to_thread
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from omoide.errors import AuthenticationError
from omoide.memory import Memory
from omoide.service.keys import KeyStore
from omoide.service.local import Caller

__all__ = ["CALLER", "KeyAuthMiddleware", "bearer_token", "caller_for_key", "safe_text"]

#: Where the middleware leaves the resolved :class:`Caller` in the ASGI scope.
CALLER = "omoide.caller"


def bearer_token(authorization: str | None) -> str | None:
    """The key of an ``Authorization: Bearer <key>`` header, if that is what it holds."""
    if not authorization:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    return token.strip() or None


def caller_for_key(mem: Memory, key: str | None) -> Caller:
    """The caller a key stands for (AuthenticationError if there is none or it is unknown)."""
    return Caller.for_key(mem, KeyStore(mem.db, clock=mem.clock).verify(key))


def safe_text(text: str) -> str:
    """Text that encodes as UTF-8 (lone surrogates from a client's input are escaped)."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


class KeyAuthMiddleware:
    """ASGI middleware: 401 without a valid key, else the caller in ``scope[CALLER]``."""

    def __init__(self, app: ASGIApp, mem: Memory) -> None:
        self.app = app
        self.mem = mem

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        token = bearer_token(Headers(scope=scope).get("authorization"))
        try:
            caller = await anyio.to_thread.run_sync(caller_for_key, self.mem, token)
        except AuthenticationError as exc:
            await _refuse(send, str(exc))
            return
        from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
        from mcp.server.auth.provider import AccessToken

        scope[CALLER] = caller
        # The MCP session manager binds a session to the user that opened it, so another
        # agent's key cannot use the session id.
        scope["user"] = AuthenticatedUser(
            AccessToken(token=token or "", client_id=caller.agent or "", scopes=[])
        )
        await self.app(scope, receive, send)


async def _refuse(send: Send, detail: str) -> None:
    body: dict[str, Any] = {
        "error": "AuthenticationError",
        "detail": safe_text(detail),
        "field": None,
        "problems": None,
    }
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"application/json"),
                (b"www-authenticate", b'Bearer realm="omoide"'),
            ],
        }
    )
    await send({"type": "http.response.body", "body": json.dumps(body).encode("utf-8")})
