"""How the REST server answers an error: one status per omoide error, one body for all.

Every error — a refusal of the library, bad input (422, FastAPI's checks included), a missing
key (401), an unknown route — is answered with the same JSON body, :class:`ErrorResponse`::

    {"error": "<ErrorType>", "detail": "<what went wrong>", "field": "<field>" | null,
     "problems": [{"loc": [...], "msg": "...", "type": "..."}] | null}

``field`` names the input at fault and ``problems`` lists every check a request failed (both
for bad input only). Statuses are in one place, :data:`STATUS_CODES`.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from omoide.errors import (
    AlreadyExistsError,
    AuthenticationError,
    BackendError,
    CapacityError,
    LLMError,
    NotFoundError,
    OmoideError,
    PayloadTooLargeError,
    PermissionDeniedError,
    ProtectedMemoryError,
    ReservedIdError,
    StoreLockedError,
    ValidationError,
)
from omoide.server.auth import safe_text
from omoide.server.schemas import ErrorResponse

__all__ = ["ERROR_RESPONSES", "STATUS_CODES", "error_body", "install_error_handlers", "status_of"]

#: How each omoide error is answered; the first matching class wins. Anything else is a 500.
STATUS_CODES: tuple[tuple[type[OmoideError], int], ...] = (
    (ReservedIdError, 422),
    (ValidationError, 422),
    (AuthenticationError, 401),
    (PermissionDeniedError, 403),
    (NotFoundError, 404),
    (AlreadyExistsError, 409),
    (ProtectedMemoryError, 409),
    (CapacityError, 409),
    (LLMError, 502),
    (StoreLockedError, 503),
    (BackendError, 503),
    (PayloadTooLargeError, 413),
)


def status_of(exc: OmoideError) -> int:
    return next((code for cls, code in STATUS_CODES if isinstance(exc, cls)), 500)


def _response(description: str) -> dict[str, Any]:
    return {"model": ErrorResponse, "description": description}


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    401: _response("No API key, or an unknown or revoked one"),
    403: _response("The key's agent may not do this"),
    404: _response("Not found (or not visible to this agent)"),
    409: _response(
        "Conflicts with what is stored: an existing id, a never-forget item, a full collection"
    ),
    413: _response("The request body is larger than `server.max_body_bytes` (1 MiB)"),
    422: _response("Bad input; `field` names it and `problems` lists every check that failed"),
    503: _response("The store is busy or its vector store failed; nothing was changed"),
}


def error_body(
    error: str, detail: str, field: str | None = None, problems: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The one error body (see the module's docstring)."""
    return {"error": error, "detail": safe_text(detail), "field": field, "problems": problems}


def _invalid(problems: list[dict[str, Any]]) -> JSONResponse:
    first = problems[0] if problems else {"loc": ["request"], "msg": "invalid"}
    where = [str(p) for p in first["loc"] if p not in ("body", "query", "path")]
    field = ".".join(where) or str(first["loc"][0] if first["loc"] else "request")
    body = error_body("ValidationError", f"{field}: {first['msg']}", field, problems)
    return JSONResponse(status_code=422, content=body)


def install_error_handlers(app: FastAPI) -> None:
    """Answer every error of ``app`` with :func:`error_body`."""

    @app.exception_handler(OmoideError)
    async def omoide_error(request: Request, exc: OmoideError) -> JSONResponse:
        status = status_of(exc)
        if isinstance(exc, ValidationError):
            problem = {
                "loc": [safe_text(exc.field)],
                "msg": safe_text(exc.message),
                "type": "value_error",
            }
            return _invalid([problem])
        headers = {"WWW-Authenticate": 'Bearer realm="omoide"'} if status == 401 else None
        body = error_body(type(exc).__name__, str(exc))
        return JSONResponse(status_code=status, content=body, headers=headers)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 400:  # a body that could not be read as JSON
            problem = {
                "loc": ["body"],
                "msg": "not a JSON document in UTF-8",
                "type": "json_invalid",
            }
            return _invalid([problem])
        body = error_body("HTTPException", str(exc.detail))
        return JSONResponse(status_code=exc.status_code, content=body, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def request_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        return _invalid(
            [
                {
                    "loc": [safe_text(str(p)) if isinstance(p, str) else p for p in e["loc"]],
                    "msg": safe_text(str(e.get("msg", "invalid"))),
                    "type": str(e.get("type", "value_error")),
                }
                for e in exc.errors()
            ]
        )
