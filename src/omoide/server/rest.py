"""The REST server: ``omoide serve``.

One process owns the data directory and its :class:`~omoide.memory.Memory`; agents in any
process or language reach it over HTTP. Routes are versioned under ``/v1``; ``/healthz``
answers without a key and ``/openapi.json`` describes the API. With the MCP endpoint enabled,
``/mcp`` serves the same memory over MCP's streamable HTTP transport.

Every ``/v1`` route needs ``Authorization: Bearer <key>`` (``omoide keys add AGENT``). The key
decides the agent: writes are recorded as it, reads see what its scopes allow, and only its
owner may change an item. Every route is generated from the operation table
(:mod:`omoide.server.routing`): method, path, summary, parameters, body, response and status;
only the streamed export and import have handlers of their own here (:data:`CUSTOM`). Route
handlers are synchronous, so FastAPI runs them on its thread pool; the library serializes
what SQLite needs serialized, and the MCP tools share the same ``Memory``. Errors map to
status codes in one place, :data:`STATUS_CODES`, and every error has one body
(:mod:`omoide.server.problems`). ``/docs`` and ``/redoc`` are served offline, and each
request is logged (:mod:`omoide.server.observe`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Request, Security
from fastapi.responses import StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from omoide._version import __version__
from omoide.core.blas import process_wide
from omoide.memory import Memory
from omoide.pipelines.scheduler import BackgroundMaintenance
from omoide.server import schemas as s
from omoide.server.auth import caller_for_key
from omoide.server.limits import BodyLimitMiddleware
from omoide.server.observe import LOG, LOG_CONFIG, LOG_SLOT, RequestLog, install_docs
from omoide.server.problems import ERROR_RESPONSES, STATUS_CODES, install_error_handlers, status_of
from omoide.server.routing import PREFIX, Custom, operation_router, strict_query
from omoide.server.ui import mount_dashboard
from omoide.service.local import LocalOperations

__all__ = ["DEFAULT_PORT", "STATUS_CODES", "create_app", "serve", "status_of"]

DEFAULT_PORT = 8765

_bearer = HTTPBearer(
    auto_error=False,
    description="An API key minted with `omoide keys add AGENT`; it decides the agent.",
)


def _operations(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)],
) -> LocalOperations:
    mem: Memory = request.app.state.memory
    caller = caller_for_key(mem, credentials.credentials if credentials else None)
    noted = request.scope.get(LOG_SLOT)
    if isinstance(noted, dict):
        noted["agent"] = caller.agent
    return LocalOperations(mem, caller)


Ops = Annotated[LocalOperations, Depends(_operations)]


def _export(ops: Ops, embeddings: bool = True) -> StreamingResponse:
    lines = ops.export_lines(embeddings=embeddings)
    return StreamingResponse((line + "\n" for line in lines), media_type="application/x-ndjson")


async def _import(request: Request, ops: Ops, reembed: bool = False) -> Any:
    import anyio.to_thread

    body = await request.body()
    return await anyio.to_thread.run_sync(
        lambda: ops.import_lines(body.splitlines(), reembed=reembed)
    )


_NDJSON: dict[str, Any] = {"application/x-ndjson": {"schema": {"type": "string"}}}
#: The routes the table marks custom: an export streams JSON Lines out, an import reads
#: them from the raw body (neither is a JSON object, so the generic handler cannot serve
#: them).
CUSTOM: dict[str, Custom] = {
    "export": (
        _export,
        {
            "response_class": StreamingResponse,
            "responses": {
                200: {
                    "content": _NDJSON,
                    "description": "Every layer as JSON Lines (admin keys only)",
                }
            },
        },
    ),
    "import": (
        _import,
        {"openapi_extra": {"requestBody": {"required": True, "content": _NDJSON}}},
    ),
}


def create_app(
    mem: Memory,
    *,
    mcp: bool = True,
    host: str = "127.0.0.1",
    maintenance: bool = False,
    dashboard: bool = True,
) -> FastAPI:
    """The REST API (and, with ``mcp``, the MCP endpoint at ``/mcp``) over ``mem``.

    With ``maintenance``, the daily job (``distill.schedule``) runs in a background thread
    of this process while the app serves: the server owns the data directory, so a
    separate ``python -m omoide.cli.schedule`` could not open it. The app does not close
    ``mem``: whoever opened it does.
    """
    mcp_server = None
    routes = []
    if mcp:
        from omoide.server.mcp_server import create_mcp_server, local_operations, mcp_route

        mcp_server = create_mcp_server(local_operations(mem))
        routes.append(mcp_route(mcp_server, mem, host=host))

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        background = BackgroundMaintenance(mem) if maintenance else None
        app.state.maintenance = background
        if background is not None:
            background.start()
        try:
            if mcp_server is None:
                yield
            else:
                async with mcp_server.session_manager.run():
                    yield
        finally:
            if background is not None:
                background.stop()
            LOG.info("omoide: server stopped (%s)", mem.path)

    app = FastAPI(
        title="omoide",
        version=__version__,
        summary="Long-term memory for AI agents (思い出): working, episodic, semantic and "
        "procedural layers.",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
    )
    app.state.memory = mem
    app.add_middleware(BodyLimitMiddleware, config=mem.config.server)
    app.add_middleware(RequestLog)
    install_docs(app)
    install_error_handlers(app)
    app.include_router(
        operation_router(_operations, custom=CUSTOM),
        prefix=PREFIX,
        responses=ERROR_RESPONSES,
        dependencies=[Depends(strict_query)],
    )
    app.router.routes.extend(routes)
    mount_dashboard(app, mem, enabled=dashboard)  # /ui, unless server.dashboard is false

    @app.get("/healthz", response_model=s.Health, tags=["health"])
    def healthz() -> Any:
        """Liveness: answers without a key."""
        return {"status": "ok", "version": __version__}

    return app


def serve(
    mem: Memory,
    *,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    mcp: bool = True,
    log_level: str = "info",
    maintenance: bool = True,
    dashboard: bool = True,
) -> None:
    """Run the server until interrupted (uvicorn, one process owning ``mem``), with the daily
    maintenance in a background thread unless ``maintenance`` is False."""
    import uvicorn

    app = create_app(mem, mcp=mcp, host=host, maintenance=maintenance, dashboard=dashboard)
    config = {**LOG_CONFIG, "loggers": dict(LOG_CONFIG["loggers"])}
    config["loggers"]["omoide"] = {**config["loggers"]["omoide"], "level": log_level.upper()}
    with process_wide():  # its recalls run in worker threads (omoide.core.blas)
        uvicorn.run(app, host=host, port=port, log_level=log_level, log_config=config)
