"""Sending :class:`~omoide.client.calls.Call` objects over HTTP (httpx), blocking or async.

Both transports resolve the server's address and key the same way (``$OMOIDE_URL`` and
``$OMOIDE_API_KEY`` when not given), apply one timeout to every request, turn a refusal into
the :mod:`omoide.errors` exception it names, and turn a server that cannot be reached or does
not answer in time into an :class:`~omoide.errors.OmoideError` that says so.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlparse

from omoide.client.calls import Call, error_for
from omoide.errors import OmoideError, ValidationError

if TYPE_CHECKING:
    import httpx

__all__ = ["DEFAULT_TIMEOUT", "AsyncTransport", "SyncTransport", "server_address"]

T = TypeVar("T")

#: Seconds a request may take. Maintenance and indexing of a large store take longer: pass
#: ``timeout=`` to the client for those.
DEFAULT_TIMEOUT = 60.0


def server_address(url: str | None, key: str | None) -> tuple[str, str | None]:
    """The server's base URL and the API key: the arguments, else ``$OMOIDE_URL`` and
    ``$OMOIDE_API_KEY``."""
    url = url or os.environ.get("OMOIDE_URL")
    if not url:
        raise ValidationError("url", "no server given: pass url= or set $OMOIDE_URL")
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ValidationError("url", f"expected http(s)://host:port, got {url!r}")
    return url.rstrip("/"), key if key is not None else os.environ.get("OMOIDE_API_KEY")


def _headers(key: str | None) -> dict[str, str]:
    headers = {"Accept": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    return headers


def _unreachable(url: str, timeout: float, exc: Exception) -> OmoideError:
    import httpx

    if isinstance(exc, httpx.TimeoutException):
        return OmoideError(
            f"the omoide server at {url} did not answer within {timeout:g} s "
            "(pass a larger timeout= for long jobs such as maintain or index)"
        )
    return OmoideError(
        f"cannot reach the omoide server at {url}: {exc or type(exc).__name__} "
        "(is `omoide serve` running there?)"
    )


def _answer(call: Call[T], response: httpx.Response) -> T:
    if response.status_code >= 400:
        raise error_for(response.status_code, response.content)
    try:
        data = response.json()
    except ValueError:
        raise OmoideError(
            f"the server answered {call.method} {call.path} with something other than JSON"
        ) from None
    return call.decode(data)


def _request(call: Call[Any]) -> dict[str, Any]:
    options: dict[str, Any] = {}
    if call.body is not None:
        options["json"] = call.body
    if call.query:
        options["params"] = call.query
    return options


class SyncTransport:
    """Blocking requests on one connection pool (thread-safe, as httpx.Client is)."""

    def __init__(self, url: str, key: str | None, timeout: float) -> None:
        import httpx

        self.url, self.timeout = url, timeout
        self._http = httpx.Client(base_url=url, headers=_headers(key), timeout=timeout)

    def run(self, call: Call[T]) -> T:
        """Send ``call`` and decode its answer (or raise what the server refused)."""
        import httpx

        try:
            response = self._http.request(call.method, call.path, **_request(call))
        except httpx.TransportError as exc:
            raise _unreachable(self.url, self.timeout, exc) from exc
        return _answer(call, response)

    def close(self) -> None:
        self._http.close()


class AsyncTransport:
    """Requests on an event loop (one ``httpx.AsyncClient``)."""

    def __init__(self, url: str, key: str | None, timeout: float) -> None:
        import httpx

        self.url, self.timeout = url, timeout
        self._http = httpx.AsyncClient(base_url=url, headers=_headers(key), timeout=timeout)

    async def run(self, call: Call[T]) -> T:
        """Send ``call`` and decode its answer (or raise what the server refused)."""
        import httpx

        try:
            response = await self._http.request(call.method, call.path, **_request(call))
        except httpx.TransportError as exc:
            raise _unreachable(self.url, self.timeout, exc) from exc
        return _answer(call, response)

    async def close(self) -> None:
        await self._http.aclose()
