"""REST routes registered from the operation table (:mod:`omoide.service.table`).

A route handler names its operation; the method, the path and the OpenAPI summary come from
the table, the same entry :class:`~omoide.service.remote.RemoteOperations` calls. Every route
refuses query parameters it does not declare (:func:`strict_query`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from fastapi import APIRouter, Request
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute

from omoide.errors import ValidationError
from omoide.service.table import operation

__all__ = ["PREFIX", "route", "strict_query"]

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


def _query_names(dependant: Dependant) -> set[str]:
    names = {field.alias for field in dependant.query_params}
    for sub in dependant.dependencies:
        names |= _query_names(sub)
    return names


def strict_query(request: Request) -> None:
    """Refuse query parameters the route does not declare, or given twice (none of the
    API's parameters is a list): a typo is an error, not a silently ignored filter."""
    route = request.scope.get("route")
    declared = _query_names(route.dependant) if isinstance(route, APIRoute) else set()
    seen: set[str] = set()
    for key, _ in request.query_params.multi_items():
        if key not in declared:
            raise ValidationError(key or "query", "is not a parameter of this route")
        if key in seen:
            raise ValidationError(key, "is given more than once")
        seen.add(key)
