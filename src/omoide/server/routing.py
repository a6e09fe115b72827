"""REST routes generated from the operation table (:mod:`omoide.service.table`).

Every route of every operation is registered here: its method, path, OpenAPI summary and
description, tag, response model and status code come from the table's :class:`Route`; its
parameters from the operation's arguments (:meth:`Operation.wire_arguments`): those the path
names are path parameters, the rest are query parameters of a GET or DELETE and the fields
of a JSON body otherwise (a model built with pydantic's ``create_model``, named after the
operation: ``QueryRequest``), each typed and bounded by :func:`omoide.server.schemas.wire_type`.
The generic handler calls the operation with what the request gave (unset fields leave the
operation's defaults), after counting the texts the table marks ``embedded`` against the
server's per-request budget. A route whose table entry names a ``custom`` handler (a
streamed export or import) is registered with that handler instead. Every route refuses
query parameters it does not declare (:func:`strict_query`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from pydantic import BaseModel, Field, create_model, model_validator

from omoide.errors import ValidationError
from omoide.server import pipeline_routes, schemas
from omoide.server.limits import check_request_text
from omoide.service.operation import Argument, Operation, Route
from omoide.service.table import OPERATIONS

__all__ = ["PREFIX", "Custom", "operation_router", "register", "strict_query"]

#: Where the routers are mounted: the table's paths are full ones.
PREFIX = "/v1"

#: A custom handler: the endpoint and the options FastAPI registers it with.
Custom = tuple[Callable[..., Any], Mapping[str, Any]]

_MODELS: dict[str, Any] = {
    name: value
    for module in (schemas, pipeline_routes)
    for name, value in vars(module).items()
    if isinstance(value, type) and issubclass(value, BaseModel)
}


def register(
    api: APIRouter,
    op: Operation,
    route: Route,
    endpoint: Callable[..., Any],
    models: schemas.Models = _MODELS,
    **options: Any,
) -> None:
    """Register ``endpoint`` as ``route`` of ``op``, with the table's summary, description,
    tag, response model (by name in ``models``) and status code (``options`` go to FastAPI
    too)."""
    if route.response is not None:
        model = models[route.response]
        options.setdefault("response_model", schemas.list_of(model) if op.returns_list() else model)
    api.api_route(
        route.path.removeprefix(PREFIX),
        methods=[route.method],
        summary=op.summary[:1].upper() + op.summary[1:],
        description=route.about or None,
        status_code=route.status,
        tags=[route.tag] if route.tag else None,
        name=op.name if len(op.rest) < 2 else f"{op.name}_{route.method.lower()}",
        **options,
    )(endpoint)


def operation_router(
    ops_dependency: Callable[..., Any],
    operations: Iterable[Operation] = OPERATIONS.values(),
    custom: Mapping[str, Custom] | None = None,
    models: Mapping[str, type[BaseModel]] | None = None,
) -> APIRouter:
    """The routes of ``operations``, given the dependency that yields the caller's
    operations, the handlers the table's ``custom`` routes name and the response models
    its routes name beside those of the schemas (``models``)."""
    api = APIRouter()
    bodies = _Bodies(list(operations), models or {})
    for op in bodies.operations:
        for route in op.rest:
            if route.custom is not None:
                endpoint, options = (custom or {})[route.custom]
                register(api, op, route, endpoint, bodies, **options)
            else:
                register(api, op, route, _handler(op, route, ops_dependency, bodies), bodies)
    return api


class _Bodies:
    """The request bodies of the operations, built once each (a list of one operation's
    bodies, as ``record_many`` takes, names that operation's model)."""

    def __init__(self, operations: list[Operation], models: Mapping[str, Any]) -> None:
        self.operations = operations
        self._models = {**_MODELS, **models}
        self._built: dict[str, type[BaseModel] | None] = {}

    def model(self, op: Operation, route: Route) -> type[BaseModel] | None:
        key = f"{op.name} {route.method}"
        if key not in self._built:
            self._built[key] = _body_model(op, route, self)
        return self._built[key]

    def __getitem__(self, name: str) -> Any:
        """A model by name: a response or item model of the schemas, or the request body
        of the operation it is named after (``RecordRequest``)."""
        if name in self._models:
            return self._models[name]
        for op in self.operations:
            if _body_name(op) == name:
                return self.model(op, op.route())
        raise KeyError(name)


def _body_name(op: Operation) -> str:
    return "".join(part.title() for part in op.name.split("_")) + "Request"


def _in_body(op: Operation, route: Route) -> list[Argument]:
    if route.method in ("GET", "DELETE"):
        return []
    return [x for x in op.wire_arguments(route) if x.name not in route.placeholders]


def _body_model(op: Operation, route: Route, models: _Bodies) -> type[BaseModel] | None:
    """The JSON body of ``route`` (None: it takes none); an argument with an older name
    takes either name, once."""
    fields: dict[str, Any] = {}
    validators: dict[str, Any] = {}
    for x in _in_body(op, route):
        wire = schemas.wire_type(x, "body", models)
        for name in (x.wire, x.arg.alias) if x.arg.alias else (x.wire,):
            default = None if x.arg.alias else wire.default
            annotation = wire.annotation | None if x.arg.alias else wire.annotation
            fields[name] = (annotation, Field(default, description=wire.description))
        if x.arg.alias:
            validators[f"_one_{x.name}"] = model_validator(mode="after")(_one_of(x))
    if not fields:
        return None
    model: type[BaseModel] = create_model(
        _body_name(op), __base__=schemas._Request, __validators__=validators, **fields
    )
    return model


def _one_of(x: Argument) -> Callable[[Any], Any]:
    names = (x.wire, str(x.arg.alias))

    def check(self: Any) -> Any:
        if sum(getattr(self, n) is not None for n in names) != 1:
            raise ValueError(f"give {names[0]} (or its older name {names[1]}), once")
        return self

    return check


def _handler(
    op: Operation, route: Route, ops_dependency: Callable[..., Any], models: _Bodies
) -> Callable[..., Any]:
    """The endpoint of ``route``: its parameters from the table, its body from
    :func:`_body_model`; it calls the operation with what the request gave."""
    params = [
        inspect.Parameter(
            "ops",
            inspect.Parameter.KEYWORD_ONLY,
            annotation=Annotated[Any, Depends(ops_dependency)],
        )
    ]
    body = models.model(op, route)
    for x in op.wire_arguments(route):
        if x.name in route.placeholders:
            wire = schemas.wire_type(x, "path")
            params.append(_parameter(x.wire, Annotated[wire.annotation, Path()], ...))
        elif body is None:
            wire = schemas.wire_type(x, "query")
            where = Query(description=wire.description, json_schema_extra=wire.schema_extra)
            params.append(_parameter(x.wire, Annotated[wire.annotation, where], wire.default))
    if body is not None:
        params.append(_parameter("body", body, ...))
    arguments = op.wire_arguments(route)

    def endpoint(**given: Any) -> Any:
        ops = given.pop("ops")
        request = given.pop("body", None)
        fields = {}
        if request is not None:  # what the request gave (the operation has the defaults)
            fields = request.model_dump(include=request.model_fields_set, exclude_none=True)
        fields.update((k, v) for k, v in given.items() if v is not None)
        texts = _embedded(arguments, fields)
        if texts:
            check_request_text(ops, *texts)
        values = _call_values(arguments, fields) | dict(route.fixed)
        return getattr(ops, op.name)(**op.call_values(values))

    endpoint.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    endpoint.__name__ = op.name
    return endpoint


def _parameter(name: str, annotation: Any, default: Any) -> inspect.Parameter:
    default = inspect.Parameter.empty if default is ... else default
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default
    )


def _call_values(arguments: list[Argument], fields: Mapping[str, Any]) -> dict[str, Any]:
    """The operation's argument values from a request's fields (by their wire names, or an
    older name): a required argument left null is None, an optional one left out is left
    out (its default applies)."""
    values: dict[str, Any] = {}
    for x in arguments:
        given = [fields[n] for n in (x.wire, x.arg.alias) if n and n in fields]
        if given or x.required:
            values[x.name] = given[0] if given else None
    return values


def _embedded(arguments: list[Argument], fields: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The texts of a request to embed, by field (a list's items one by one, as
    ``documents[3]``), in the arguments' order."""
    texts: list[tuple[str, Any]] = []
    for x in arguments:
        if not x.arg.embedded:
            continue
        name = next((n for n in (x.wire, x.arg.alias) if n and n in fields), x.wire)
        value = fields.get(name)
        if isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(x.arg.embedded, tuple) and isinstance(item, Mapping):
                    item = [item.get(k) for k in x.arg.embedded]
                texts.append((f"{name}[{i}]", item))
        else:
            texts.append((name, value))
    return texts


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
