"""REST routes registered from the operation table (:mod:`omoide.service.table`).

A route handler names its operation; the method, the path and the OpenAPI summary come from
the table, the same entry :class:`~omoide.service.remote.RemoteOperations` calls.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from fastapi import APIRouter

from omoide.service.table import operation

__all__ = ["PREFIX", "route"]

#: Where the routers are mounted: the table's paths are full ones.
PREFIX = "/v1"

F = TypeVar("F", bound=Callable[..., Any])


def route(api: APIRouter, name: str, method: str | None = None, **options: Any) -> Callable[[F], F]:
    """Register the decorated handler as the REST route of operation ``name`` (of
    ``method`` when it has several); ``options`` go to FastAPI (response model, status)."""
    op = operation(name)
    where = op.route(method)
    summary = op.summary[:1].upper() + op.summary[1:]
    decorator: Callable[[F], F] = api.api_route(
        where.path.removeprefix(PREFIX), methods=[where.method], summary=summary, **options
    )
    return decorator
