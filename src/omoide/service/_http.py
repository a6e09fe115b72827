"""The HTTP side of :class:`~omoide.service.remote.RemoteOperations`: requests to a running
``omoide serve`` at the method and path the operation table gives each operation, and the
server's refusals turned back into :mod:`omoide.errors` exceptions. Standard library only.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import types
import typing
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, ParamSpec, TypeVar

from omoide.errors import (
    AlreadyExistsError,
    AuthenticationError,
    CapacityError,
    LLMError,
    NotFoundError,
    OmoideError,
    PermissionDeniedError,
    ProtectedMemoryError,
    StorageError,
    StoreLockedError,
    ValidationError,
)
from omoide.service.operation import Argument, Operation, Route
from omoide.service.table import OPERATIONS

__all__ = ["HttpOperations", "clean", "remote_call", "remote_calls"]

H = TypeVar("H", bound="type[HttpOperations]")

P = ParamSpec("P")
R = TypeVar("R")

_ERRORS: dict[str, type[OmoideError]] = {
    cls.__name__: cls
    for cls in (
        AlreadyExistsError,
        AuthenticationError,
        CapacityError,
        LLMError,
        PermissionDeniedError,
        ProtectedMemoryError,
        StorageError,
        StoreLockedError,
    )
}


def _error(status: int, body: bytes) -> OmoideError:
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    if status == 422 and isinstance(data, dict) and isinstance(data.get("problems"), list):
        first = data["problems"][0] if data["problems"] else {}
        loc = [str(p) for p in first.get("loc", []) if p not in ("body", "query", "path")]
        field = data.get("field") or ".".join(loc) or "request"
        return ValidationError(str(field), str(first.get("msg", "invalid")))
    detail = data.get("detail") if isinstance(data, dict) else None
    message = str(detail) if detail else body.decode("utf-8", "replace")[:500]
    name = data.get("error") if isinstance(data, dict) else None
    if status == 404:
        missing = NotFoundError("item", message)
        missing.args = (message,)  # keep the server's wording
        return missing
    if isinstance(name, str) and name in _ERRORS:
        return _ERRORS[name](message)
    if status == 401:
        return AuthenticationError(message)
    if status == 403:
        return PermissionDeniedError(message)
    return OmoideError(f"server answered {status}: {message}")


def clean(fields: Mapping[str, Any]) -> dict[str, Any]:
    """``fields`` as a JSON object, without the unset (None) ones."""
    return {str(k): _jsonable(v) for k, v in fields.items() if v is not None}


class HttpOperations:
    """A server at ``url``, called as the agent of ``key``; :attr:`table` gives each
    operation's routes."""

    table: Mapping[str, Operation] = OPERATIONS

    def __init__(self, url: str, key: str | None, *, timeout: float = 300.0) -> None:
        parsed = urllib.parse.urlparse(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValidationError("url", f"expected http(s)://host:port, got {url!r}")
        self.url = url.rstrip("/")
        self.key = key
        self.timeout = timeout

    # -- transport ---------------------------------------------------------------------

    def _open(
        self,
        method: str,
        path: str,
        *,
        body: bytes | None = None,
        content_type: str = "application/json",
        query: Mapping[str, Any] | None = None,
    ) -> Any:
        url = self.url + path
        if query:
            url += "?" + urllib.parse.urlencode(
                {k: (str(v).lower() if isinstance(v, bool) else v) for k, v in clean(query).items()}
            )
        headers = {"Accept": "application/json", "Content-Type": content_type}
        if self.key:
            headers["Authorization"] = f"Bearer {self.key}"
        request = urllib.request.Request(url, data=body, method=method, headers=headers)
        try:
            return urllib.request.urlopen(request, timeout=self.timeout)
        except urllib.error.HTTPError as exc:
            raise _error(exc.code, exc.read()) from None
        except urllib.error.URLError as exc:
            raise OmoideError(
                f"cannot reach the omoide server at {self.url}: {exc.reason}"
            ) from None

    def _call(
        self,
        method: str,
        path: str,
        payload: Any = None,
        *,
        query: Mapping[str, Any] | None = None,
    ) -> Any:
        body = None if payload is None else json.dumps(payload, ensure_ascii=False).encode()
        with self._open(method, path, body=body, query=query) as response:
            return json.loads(response.read())

    @staticmethod
    def _q(value: str) -> str:
        return urllib.parse.quote(value, safe="")

    def _operation(self, name: str) -> Operation:
        try:
            return self.table[name]
        except KeyError:
            raise NotFoundError("operation", name) from None

    def _route(self, operation_name: str, method: str | None = None, /, **path: str) -> Route:
        """The route of an operation with its placeholders filled (quoted)."""
        route = self._operation(operation_name).route(method)
        return Route(route.method, route.path.format(**{k: self._q(v) for k, v in path.items()}))

    def _generic(self, operation_name: str, values: dict[str, Any]) -> Any:
        """Call an operation with its arguments by name at the route the table gives it
        (:meth:`~omoide.service.operation.Operation.route_for`): those the route's path
        names fill it, the rest are the query (GET, DELETE) or the JSON body, by their wire
        names; unset ones and those at their defaults are left out (the server applies the
        same defaults). Local arguments are not sent: a callback is not called, any other
        value is refused (the server decides it, e.g. the agent from the key)."""
        op = self._operation(operation_name)
        route = op.route_for(values)
        placeholders = route.placeholders
        path = route.path.format(**{k: self._q(str(values[k])) for k in placeholders})
        fields: dict[str, Any] = {}
        for x in op.arguments():
            value = _value(x, values)
            if x.name in placeholders or x.name in route.fixed:
                continue
            if x.arg.local:
                if value is not None and value != x.default and not callable(value):
                    raise ValidationError(x.name, "is not sent to a server (it decides it)")
                continue
            if value is not None and (x.required or value != x.default):
                fields[x.wire] = _jsonable(value, x.type)
        if route.method in ("GET", "DELETE"):
            return self._call(route.method, path, query=fields)
        has_body = any(x.name not in placeholders for x in op.wire_arguments(route))
        return self._call(route.method, path, fields if has_body else None)


def _value(x: Argument, values: Mapping[str, Any]) -> Any:
    """The value of argument ``x`` in a call (a field of its query object, if it is one)."""
    if x.via is None:
        return values.get(x.name)
    query = values.get(x.via)
    return None if query is None else getattr(query, x.name)


def _jsonable(value: Any, kind: Any = None) -> Any:
    """``value`` as JSON: times as ISO 8601, paths as text, mappings as objects (an object in
    a list without its unset fields), other iterables as lists; a share list where the
    protocol also takes a string (a scope) joined by commas."""
    if isinstance(value, datetime):
        return value.isoformat()
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    union = typing.get_origin(kind) in (typing.Union, types.UnionType)
    if union and str in typing.get_args(kind) and all(isinstance(v, str) for v in value):
        return ",".join(value)
    return [clean(v) if isinstance(v, Mapping) else _jsonable(v) for v in value]


def remote_call(method: Callable[P, R]) -> Callable[P, R]:
    """The method of :class:`HttpOperations` that calls the protocol's ``method`` on the
    server (its signature and types are the protocol's): the generic remote call of an
    operation, by its table entry."""
    signature = inspect.signature(method)

    @functools.wraps(method)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        values = dict(bound.arguments)
        self = values.pop("self")
        result: R = self._generic(method.__name__, values)
        return result

    return call


def remote_calls(cls: H) -> H:
    """Class decorator: give ``cls`` the generic remote call of every operation of its
    table that it does not write out itself (nor its table marks custom)."""
    for name, op in cls.table.items():
        if name not in vars(cls) and not any(route.custom for route in op.rest):
            setattr(cls, name, remote_call(op.method()))
    return cls
