"""The REST server: ``omoide serve``.

One process owns the data directory and its :class:`~omoide.memory.Memory`; agents in any
process or language reach it over HTTP. Routes are versioned under ``/v1``; ``/healthz``
answers without a key and ``/openapi.json`` describes the API. With the MCP endpoint enabled,
``/mcp`` serves the same memory over MCP's streamable HTTP transport.

Every ``/v1`` route needs ``Authorization: Bearer <key>`` (``omoide keys add AGENT``). The key
decides the agent: writes are recorded as it, reads see what its scopes allow, and only its
owner may change an item. Routes of the pipelines (recall, distill, forget, maintain, audit,
restore, index, cache) are in :mod:`omoide.server.pipeline_routes`; every route takes its
method, path and summary from the operation table (:mod:`omoide.server.routing`). Route handlers are
synchronous, so FastAPI runs them on its thread pool; the library serializes what SQLite
needs serialized, and the MCP tools share the same ``Memory``. Errors map to status codes
in one place, :data:`STATUS_CODES`, and every error has one body
(:mod:`omoide.server.problems`). ``/docs`` and ``/redoc`` are served offline, and each request
is logged (:mod:`omoide.server.observe`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, FastAPI, Path, Query, Request, Security
from fastapi.responses import StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, Field

from omoide._version import __version__
from omoide.memory import Memory
from omoide.pipelines.scheduler import BackgroundMaintenance
from omoide.server import schemas as s
from omoide.server.auth import caller_for_key
from omoide.server.limits import BodyLimitMiddleware, check_request_text
from omoide.server.observe import LOG, LOG_CONFIG, LOG_SLOT, RequestLog, install_docs
from omoide.server.pipeline_routes import pipeline_routers
from omoide.server.problems import ERROR_RESPONSES, STATUS_CODES, install_error_handlers, status_of
from omoide.server.routing import PREFIX, route, strict_query
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
PathName = Annotated[str, Path(min_length=1, max_length=200)]
Slot = Literal["system", "active_task", "constraints", "scratchpad"]
Limit = Annotated[int, Query(ge=1, le=1000)]
Offset = Annotated[int, Query(ge=0, le=1_000_000_000)]
OptionalName = Annotated[str | None, Query(min_length=1, max_length=200)]
# Parsed by the library (ISO 8601; a bare number is not a date-time).
Instant = Annotated[str | None, Query(max_length=64, json_schema_extra={"format": "date-time"})]


class RecordBatch(s._Request):
    episodes: Annotated[list[s.RecordRequest], Field(min_length=1, max_length=1000)]


class MatchRequest(s._Request):
    task: Annotated[str, Field(min_length=1, max_length=10_000)]


def _fields(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(exclude_none=True)


def _episodes_router() -> APIRouter:
    api = APIRouter(tags=["episodic"])

    @route(api, "record", status_code=201, response_model=s.Episode)
    def record(body: s.RecordRequest, ops: Ops) -> Any:
        """Record an episode as the key's agent."""
        check_request_text(ops, ("description", body.description), ("outcome", body.outcome))
        fields = _fields(body)
        return ops.record(fields.pop("event_type"), fields.pop("description"), **fields)

    @route(api, "record_many", status_code=201, response_model=list[s.Episode])
    def record_many(body: RecordBatch, ops: Ops) -> Any:
        """Record several episodes in one transaction (all or none)."""
        check_request_text(
            ops,
            *(
                (f"episodes[{i}]", [e.description, e.outcome or ""])
                for i, e in enumerate(body.episodes)
            ),
        )
        return ops.record_many([_fields(e) for e in body.episodes])

    @route(api, "search_episodes", response_model=list[s.Episode])
    def search(body: s.EpisodeSearch, ops: Ops) -> Any:
        """Episodes that best answer a query: relevance × 0.4 + importance × 0.35 +
        freshness × 0.25."""
        check_request_text(ops, ("query", body.query))
        fields = _fields(body)
        return ops.search_episodes(fields.pop("query"), **fields)

    @route(api, "list_episodes", response_model=list[s.Episode])
    def browse(
        ops: Ops,
        agent_name: OptionalName = None,
        event_type: OptionalName = None,
        since: Instant = None,
        until: Instant = None,
        limit: Limit = 50,
        offset: Offset = 0,
    ) -> Any:
        """Episodes newest first, filtered, without scoring."""
        return ops.list_episodes(
            agent_name=agent_name,
            event_type=event_type,
            since=since,
            until=until,
            limit=limit,
            offset=offset,
        )

    @route(api, "add", status_code=201, response_model=s.AddReport)
    def add(body: s.AddMessagesRequest, ops: Ops) -> Any:
        """A conversation's messages as the key's agent's episodes and working memory
        (idempotent: a retry records nothing twice)."""
        check_request_text(
            ops, *((f"messages[{i}]", m.content) for i, m in enumerate(body.messages))
        )
        return ops.add(
            body.session_id,
            [m.model_dump(exclude_none=True) for m in body.messages],
            timestamp=body.timestamp,
            scope=body.scope,
        )

    @route(api, "get_episode", response_model=s.Episode)
    def get(episode_id: PathName, ops: Ops) -> Any:
        return ops.get_episode(episode_id)

    @route(api, "update_episode", response_model=s.Episode)
    def update(episode_id: PathName, body: s.EpisodeUpdate, ops: Ops) -> Any:
        """Record an outcome, or change importance or tags (the recording agent only)."""
        check_request_text(ops, ("outcome", body.outcome))
        return ops.update_episode(episode_id, **_fields(body))

    @route(api, "delete_episode", response_model=s.Episode)
    def delete(episode_id: PathName, ops: Ops) -> Any:
        """Delete an episode (the recording agent only; never-forget episodes are refused)."""
        return ops.delete_episode(episode_id)

    return api


def _semantic_router() -> APIRouter:
    api = APIRouter(tags=["semantic"])

    @route(api, "collections", response_model=list[s.Collection])
    def collections(ops: Ops) -> Any:
        return ops.collections()

    @route(api, "store", status_code=201, response_model=s.StoreResponse)
    def store(collection: PathName, body: s.StoreRequest, ops: Ops) -> Any:
        """Upsert documents (chunked when long). Replacing a document is for its owner."""
        check_request_text(ops, *((f"documents[{i}]", d) for i, d in enumerate(body.documents)))
        return ops.store(collection, body.documents, body.metadatas, body.ids, scope=body.scope)

    @route(api, "list_documents", response_model=list[s.Document])
    def documents(collection: PathName, ops: Ops, limit: Limit = 50, offset: Offset = 0) -> Any:
        return ops.list_documents(collection, limit=limit, offset=offset)

    @route(api, "get_document", response_model=s.Document)
    def get(collection: PathName, doc_id: PathName, ops: Ops) -> Any:
        return ops.get_document(collection, doc_id)

    @route(api, "delete_document", response_model=s.Document)
    def delete(collection: PathName, doc_id: PathName, ops: Ops) -> Any:
        return ops.delete_document(collection, doc_id)

    @route(api, "query", response_model=list[s.QueryHit])
    def query(collection: PathName, body: s.QueryRequest, ops: Ops) -> Any:
        """The passages nearest in meaning to ``query`` (or ``query_text``), best first."""
        check_request_text(ops, ("query", body.text))
        return ops.query(collection, body.text, body.n_results, body.where, body.where_document)

    return api


def _procedural_router() -> APIRouter:
    api = APIRouter(tags=["procedural"])

    @route(api, "procedures", response_model=list[s.Procedure])
    def procedures(ops: Ops) -> Any:
        return ops.procedures()

    @route(api, "register_procedure", status_code=201, response_model=s.Procedure)
    def register(body: s.RegisterRequest, ops: Ops) -> Any:
        fields = _fields(body)
        return ops.register_procedure(
            fields.pop("name"), fields.pop("trigger"), fields.pop("template"), **fields
        )

    @route(api, "match_procedure", response_model=s.ProcedureMatch)
    def match(body: MatchRequest, ops: Ops) -> Any:
        """The best procedure for a task (success rate × 0.6 + quality/10 × 0.4)."""
        return ops.match_procedure(body.task)

    @route(api, "get_procedure", response_model=s.Procedure)
    def get(name: PathName, ops: Ops) -> Any:
        return ops.get_procedure(name)

    @route(api, "procedure_history", response_model=list[s.ProcedureVersion])
    def history(name: PathName, ops: Ops) -> Any:
        return ops.procedure_history(name)

    @route(api, "report_outcome", response_model=s.Procedure)
    def outcome(name: PathName, body: s.OutcomeRequest, ops: Ops) -> Any:
        """Fold one execution's outcome into the figures (moving average, α 0.1)."""
        return ops.report_outcome(name, body.quality_score, body.success)

    @route(api, "evolve_procedure", status_code=201, response_model=s.Procedure)
    def evolve(name: PathName, body: s.EvolveRequest, ops: Ops) -> Any:
        """Make a new template version current (the owner only)."""
        return ops.evolve_procedure(name, body.template, trigger=body.trigger)

    @route(api, "rollback_procedure", response_model=s.Procedure)
    def rollback(name: PathName, body: s.RollbackRequest, ops: Ops) -> Any:
        return ops.rollback_procedure(name, body.version)

    return api


def _working_router() -> APIRouter:
    api = APIRouter(tags=["working"])

    @route(api, "working", "GET", response_model=s.SessionView)
    def view(session_id: PathName, ops: Ops) -> Any:
        """The key's agent's working memory of a session, rendered context included."""
        return ops.working(session_id)

    @route(api, "working", "PUT", response_model=s.SessionView)
    def open_session(session_id: PathName, body: s.SessionRequest, ops: Ops) -> Any:
        """Create a session, or resize it (a smaller one evicts messages as overflow does)."""
        return ops.working(session_id, create=True, max_tokens=body.max_tokens)

    @route(api, "add_message", response_model=s.EvictionsResponse)
    def add_message(session_id: PathName, body: s.AddMessageRequest, ops: Ops) -> Any:
        """Append a message; returns what it evicted (important ones became episodes)."""
        check_request_text(ops, ("content", body.content))
        fields = _fields(body)
        return ops.add_message(session_id, fields.pop("content"), **fields)

    @route(api, "set_slot", response_model=s.SessionView)
    def set_slot(session_id: PathName, slot: Slot, body: s.SlotRequest, ops: Ops) -> Any:
        return ops.set_slot(session_id, slot, body.value)

    @route(api, "pin", response_model=s.Pin)
    def pin(session_id: PathName, key: PathName, body: s.PinRequest, ops: Ops) -> Any:
        return ops.pin(session_id, key, body.content, body.reason)

    @route(api, "unpin", response_model=s.Pin)
    def unpin(session_id: PathName, key: PathName, ops: Ops) -> Any:
        return ops.unpin(session_id, key)

    @route(api, "clear_messages", response_model=s.EvictionsResponse)
    def clear(session_id: PathName, ops: Ops) -> Any:
        return ops.clear_messages(session_id)

    return api


def _store_router() -> APIRouter:
    api = APIRouter(tags=["store"])

    @route(api, "whoami", response_model=s.WhoAmI)
    def whoami(ops: Ops) -> Any:
        return ops.whoami()

    @route(api, "stats", response_model=s.Stats)
    def stats(ops: Ops) -> Any:
        """Counts and sizes per layer and per agent, of what the key's agent may read."""
        return ops.stats()

    @route(
        api,
        "export_lines",
        response_class=StreamingResponse,
        responses={
            200: {
                "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
                "description": "Every layer as JSON Lines (admin keys only)",
            }
        },
    )
    def export(ops: Ops, embeddings: bool = True) -> StreamingResponse:
        lines = ops.export_lines(embeddings=embeddings)
        return StreamingResponse((line + "\n" for line in lines), media_type="application/x-ndjson")

    @route(
        api,
        "import_lines",
        response_model=s.ImportReport,
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
            }
        },
    )
    async def import_(request: Request, ops: Ops, reembed: bool = False) -> Any:
        """Import an export (admin keys only); existing items are skipped, never replaced."""
        import anyio.to_thread

        body = await request.body()
        return await anyio.to_thread.run_sync(
            lambda: ops.import_lines(body.splitlines(), reembed=reembed)
        )

    @route(api, "list_keys", response_model=list[s.ApiKeyInfo])
    def keys(ops: Ops, include_revoked: bool = False) -> Any:
        return ops.list_keys(include_revoked=include_revoked)

    @route(api, "add_key", status_code=201, response_model=s.NewApiKey)
    def add_key(body: s.AddKeyRequest, ops: Ops) -> Any:
        """Mint a key for an agent (admin keys only); the key is shown once."""
        return ops.add_key(body.agent_name, admin=body.admin, label=body.label)

    @route(api, "revoke_key", response_model=s.ApiKeyInfo)
    def revoke_key(key_id: PathName, ops: Ops) -> Any:
        return ops.revoke_key(key_id)

    return api


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
    routers = [
        build()
        for build in (
            _episodes_router,
            _semantic_router,
            _procedural_router,
            _working_router,
            _store_router,
        )
    ]
    for router in [*routers, *pipeline_routers(_operations)]:
        app.include_router(
            router,
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
    uvicorn.run(app, host=host, port=port, log_level=log_level, log_config=config)
