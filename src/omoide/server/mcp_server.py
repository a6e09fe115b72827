"""The MCP server: omoide's memory as tools an LLM agent can call.

Built with the official MCP Python SDK (``mcp`` 2.x, ``MCPServer``). Every tool is a thin call
into :mod:`omoide.service.local`, so identity and scopes work as in the REST API: over stdio the
agent comes from configuration (``--agent`` / ``$OMOIDE_AGENT``); over streamable HTTP from
the API key of the request (``Authorization: Bearer <key>``), checked by
:class:`~omoide.server.auth.KeyAuthMiddleware` before the MCP session sees the request.

Tools: one per operation the table (:mod:`omoide.service.table`) exposes over MCP, named and
described there (``remember`` is ``record``, ``search_knowledge`` is ``query``, ...); the
parameters, shaped for an LLM, are declared here. ``recall`` answers with the rendered
``<memories>`` text (the items beside it, as structured content); writes answer with one line
naming the id. Forgetting has no tool (see the table's ``forget`` entry for why).
Resources: ``omoide://stats`` and ``omoide://stats/{layer}`` (counts and sizes of what the
agent may read).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from omoide._version import __version__
from omoide.errors import AuthenticationError, OmoideError, ValidationError
from omoide.memory import Memory
from omoide.server.auth import CALLER, KeyAuthMiddleware
from omoide.server.limits import check_request_text
from omoide.service.local import Caller, LocalOperations
from omoide.service.protocol import Operations
from omoide.service.table import operation

if TYPE_CHECKING:
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

__all__ = ["create_mcp_app", "create_mcp_server", "local_operations", "mcp_route"]

#: Gives the operations for the caller of the current request (None: no HTTP key, i.e. stdio
#: or an in-process client).
OperationsFor = Callable[[Caller | None], Operations]

_CALLER: ContextVar[Caller | None] = ContextVar("omoide_mcp_caller", default=None)
T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

INSTRUCTIONS = """\
omoide is your long-term memory, shared with the other agents you work with.
- To remember anything relevant to a question, call `recall`: it searches every layer and
  returns a ready-to-read context within a token budget.
- After something worth remembering happens (a decision, an error and its fix, feedback from
  a human, a success), call `remember`. Later, `search_episodes` finds it again.
- For reference knowledge (documentation, facts, how things work) use `store_knowledge` and
  `search_knowledge`.
- Before a routine task, `get_procedure` returns the best known way to do it; afterwards,
  `report_outcome` says how it went, so better procedures win.
- Hand over a conversation's messages with `add_messages`; `recent_episodes` lists what was
  recorded lately, `update_episode` adds an outcome to one of yours later (the fix of an
  error), `delete_episode` removes one of yours.
- `pin` keeps an instruction in your working context for the whole session.
- Information fetched from outside goes to `cache_information` with a time to live;
  `get_cached_information` returns it while it is fresh.
Japanese and English both work, in stored text and in queries.
"""


def local_operations(mem: Memory, default: Caller | None = None) -> OperationsFor:
    """Operations over ``mem`` as the request's key's agent, else as ``default``."""

    def operations(caller: Caller | None) -> LocalOperations:
        chosen = caller or default
        if chosen is None:
            raise AuthenticationError("no agent: this MCP server needs an API key or --agent")
        return LocalOperations(mem, chosen)

    return operations


async def _bind_caller(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Middleware: make the HTTP request's caller (if any) visible to the handlers."""
    scope = getattr(ctx.request, "scope", None)
    caller = scope.get(CALLER) if isinstance(scope, Mapping) else None
    token = _CALLER.set(caller)
    try:
        return await call_next(ctx)
    finally:
        _CALLER.reset(token)


def create_mcp_server(operations: OperationsFor) -> MCPServer:
    """An MCP server whose tools call ``operations(caller)``."""
    server: MCPServer = MCPServer(
        "omoide",
        title="omoide — long-term memory",
        instructions=INSTRUCTIONS,
        version=__version__,
        log_level="WARNING",
        middleware=[_bind_caller],
    )

    def call(fn: Callable[[Operations], T], *texts: tuple[str, Any]) -> T:
        """``fn`` on the caller's operations; ``texts`` (field, text) are what it embeds,
        bounded by the server's per-request text budget."""
        try:
            ops = operations(_CALLER.get())
            if texts and isinstance(ops, LocalOperations):
                check_request_text(ops, *texts)
            return fn(ops)
        except OmoideError as exc:
            raise ToolError(f"{type(exc).__name__}: {exc}") from exc

    def answer(line: str, data: dict[str, Any]) -> CallToolResult:
        """A tool's answer: ``line`` for the model to read, ``data`` beside it."""
        return CallToolResult(
            content=[TextContent(type="text", text=line)], structured_content=data
        )

    def tool(name: str, annotations: ToolAnnotations) -> Callable[[F], F]:
        """Register the decorated function as the MCP tool of operation ``name``: the tool's
        name and description come from the operation table."""
        spec = operation(name).mcp
        if spec is None:
            raise ValidationError("name", f"the operation {name!r} has no MCP tool")
        decorator: Callable[[F], F] = server.tool(
            name=spec.name, description=spec.description, annotations=annotations
        )
        return decorator

    writes = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
    reads = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    @tool("record", writes)
    def remember(
        description: Annotated[
            str, Field(description="What happened, in one or two sentences (any language).")
        ],
        event_type: Annotated[
            str,
            Field(
                description="decision, error, success, feedback (from a human), conflict, "
                "or another short word; it sets the default importance"
            ),
        ] = "observation",
        outcome: Annotated[
            str | None, Field(description="What came of it, e.g. how an error was fixed.")
        ] = None,
        importance: Annotated[
            float | None, Field(ge=0, le=1, description="0..1; leave empty for the default.")
        ] = None,
        tags: Annotated[list[str] | None, Field(description="Short labels to filter by.")] = None,
        context: Annotated[
            dict[str, Any] | None, Field(description="Any structured details (JSON object).")
        ] = None,
        scope: Annotated[
            str | None,
            Field(
                description="Who may read it: 'global' (default), 'private', or "
                "'agent:NAME,team:NAME'."
            ),
        ] = None,
    ) -> CallToolResult:
        episode = call(
            lambda ops: ops.record(
                event_type,
                description,
                outcome=outcome,
                importance=importance,
                tags=tags,
                context=context,
                scope=scope,
            ),
            ("description", description),
            ("outcome", outcome),
        )
        line = (
            f"remembered {episode['id']} ({episode['event_type']}, importance "
            f"{episode['importance']:.2f}, scope {episode['scope']})"
        )
        return answer(line, episode)

    @tool("list_episodes", reads)
    def recent_episodes(
        agent_name: Annotated[
            str | None, Field(description="Only episodes recorded by this agent.")
        ] = None,
        event_type: Annotated[str | None, Field(description="Only this event type.")] = None,
        limit: Annotated[int, Field(ge=1, le=100, description="How many, newest first.")] = 10,
    ) -> list[dict[str, Any]]:
        return call(
            lambda ops: ops.list_episodes(agent_name=agent_name, event_type=event_type, limit=limit)
        )

    @tool("update_episode", writes)
    def update_episode(
        episode_id: Annotated[str, Field(description="The episode's id (from remember).")],
        outcome: Annotated[
            str | None, Field(description="What came of it, e.g. the fix of an error.")
        ] = None,
        importance: Annotated[float | None, Field(ge=0, le=1, description="0..1.")] = None,
        tags: Annotated[list[str] | None, Field(description="Replaces the tags.")] = None,
    ) -> CallToolResult:
        episode = call(
            lambda ops: ops.update_episode(
                episode_id, outcome=outcome, importance=importance, tags=tags
            ),
            ("outcome", outcome),
        )
        return answer(f"updated {episode['id']}", episode)

    @tool("delete_episode", ToolAnnotations(read_only_hint=False, destructive_hint=True))
    def delete_episode(
        episode_id: Annotated[str, Field(description="The id of an episode you recorded.")],
    ) -> CallToolResult:
        episode = call(lambda ops: ops.delete_episode(episode_id))
        return answer(f"deleted {episode['id']}", episode)

    @tool("add", writes)
    def add_messages(
        session_id: Annotated[str, Field(description="The conversation (its thread).")],
        messages: Annotated[
            list[dict[str, Any]],
            Field(
                min_length=1,
                max_length=1000,
                description="Messages such as {'role': 'user', 'content': '...'} (role: user, "
                "assistant, system or tool; optional name, timestamp, id).",
            ),
        ],
    ) -> CallToolResult:
        texts = [(f"messages[{i}]", m.get("content")) for i, m in enumerate(messages)]
        report = call(lambda ops: ops.add(session_id, messages), *texts)
        return answer(report["summary"], report)

    @tool("search_episodes", reads)
    def search_episodes(
        query: Annotated[str, Field(description="What you want to remember, in any language.")],
        event_type: Annotated[str | None, Field(description="Only this event type.")] = None,
        agent_name: Annotated[
            str | None, Field(description="Only episodes recorded by this agent.")
        ] = None,
        top_k: Annotated[int, Field(ge=1, le=50, description="How many to return.")] = 5,
    ) -> list[dict[str, Any]]:
        return call(
            lambda ops: ops.search_episodes(
                query, event_type=event_type, agent_name=agent_name, top_k=top_k
            ),
            ("query", query),
        )

    @tool("store", writes)
    def store_knowledge(
        content: Annotated[str, Field(description="The text to keep; long texts are chunked.")],
        collection: Annotated[
            str, Field(description="knowledge (default), code, decisions or feedback")
        ] = "knowledge",
        metadata: Annotated[
            dict[str, str | int | float | bool] | None,
            Field(description="Flat key/value labels, e.g. {'topic': 'fastapi'}."),
        ] = None,
        id: Annotated[
            str | None,
            Field(description="Give an id to replace this document later; default: by content."),
        ] = None,
        scope: Annotated[
            str | None, Field(description="'global' (default), 'private' or 'agent:NAME,...'.")
        ] = None,
    ) -> dict[str, Any]:
        return call(
            lambda ops: ops.store(
                collection,
                [content],
                [metadata] if metadata is not None else None,
                [id] if id is not None else None,
                scope=scope,
            ),
            ("content", content),
        )

    @tool("query", reads)
    def search_knowledge(
        query: Annotated[str, Field(description="A question or topic, in any language.")],
        collection: Annotated[
            str, Field(description="knowledge (default), code, decisions or feedback")
        ] = "knowledge",
        n_results: Annotated[int, Field(ge=1, le=20, description="How many to return.")] = 5,
        where: Annotated[
            dict[str, Any] | None,
            Field(description="Optional metadata filter, e.g. {'topic': 'fastapi'}."),
        ] = None,
    ) -> list[dict[str, Any]]:
        return call(lambda ops: ops.query(collection, query, n_results, where), ("query", query))

    @tool("pin", writes)
    def pin(
        key: Annotated[str, Field(description="A short name for the pinned item.")],
        content: Annotated[str, Field(description="The instruction or fact to keep in view.")],
        reason: Annotated[str, Field(description="Why it is pinned.")] = "",
        session_id: Annotated[str, Field(description="Your working session.")] = "default",
    ) -> dict[str, Any]:
        return call(lambda ops: ops.pin(session_id, key, content, reason))

    @tool("match_procedure", reads)
    def get_procedure(
        task: Annotated[
            str, Field(description="The task at hand, e.g. 'deploy:production' or '記事を書く'.")
        ],
    ) -> dict[str, Any]:
        return call(lambda ops: ops.match_procedure(task))

    @tool("report_outcome", writes)
    def report_outcome(
        name: Annotated[str, Field(description="The procedure's name, from get_procedure.")],
        quality_score: Annotated[float, Field(ge=0, le=10, description="0 (bad) to 10.")],
        success: Annotated[bool, Field(description="Did the task succeed?")],
    ) -> dict[str, Any]:
        return call(lambda ops: ops.report_outcome(name, quality_score, success))

    @tool("recall", reads)
    def recall(
        query: Annotated[
            str, Field(description="What you need to remember, in any language; may say when.")
        ],
        budget_tokens: Annotated[
            int | None,
            Field(ge=50, le=100_000, description="Token budget of the context (default 2,000)."),
        ] = None,
        session_id: Annotated[
            str | None, Field(description="Your working session, to include its pins.")
        ] = None,
    ) -> CallToolResult:
        context = call(
            lambda ops: ops.recall(query, session_id=session_id, budget_tokens=budget_tokens)
        )
        return answer(context["context"] or "(nothing relevant remembered)", context)

    @tool("cache", writes)
    def cache_information(
        key: Annotated[str, Field(description="The URL or a key naming the information.")],
        content: Annotated[str, Field(description="The text fetched (an answer, a page).")],
        source: Annotated[str, Field(description="Where it came from (URL, API name).")],
        ttl_days: Annotated[
            float, Field(gt=0, le=36_500, description="Days it stays valid.")
        ] = 7.0,
        scope: Annotated[
            str | None, Field(description="'global' (default), 'private' or 'agent:NAME,...'.")
        ] = None,
    ) -> dict[str, Any]:
        return call(
            lambda ops: ops.cache(key, content, ttl_days, source, scope=scope),
            ("content", content),
        )

    @tool("cached", reads)
    def get_cached_information(
        key: Annotated[str, Field(description="The URL or key it was cached under.")],
    ) -> dict[str, Any]:
        return call(lambda ops: ops.cached(key))

    @server.resource(
        "omoide://stats",
        name="stats",
        title="Memory statistics",
        description="Counts and sizes of every layer, and per agent (what you may read).",
        mime_type="application/json",
    )
    def stats() -> str:
        return json.dumps(call(lambda ops: ops.stats()), ensure_ascii=False, indent=2)

    @server.resource(
        "omoide://stats/{layer}",
        name="layer-stats",
        title="Statistics of one layer",
        description="working, episodic, semantic or procedural.",
        mime_type="application/json",
    )
    def layer_stats(layer: str) -> str:
        layers = call(lambda ops: ops.stats())["layers"]
        if layer not in layers:
            raise ResourceError(f"unknown layer {layer!r}; known: {', '.join(layers)}")
        return json.dumps(layers[layer], ensure_ascii=False, indent=2)

    return server


def mcp_route(server: MCPServer, mem: Memory, *, host: str, path: str = "/mcp") -> Route:
    """The streamable HTTP endpoint of ``server`` behind API-key authentication.

    The server's session manager must run while the route serves (see :func:`create_mcp_app`).
    """
    app = server.streamable_http_app(streamable_http_path=path, host=host)
    for route in app.routes:
        if isinstance(route, Route) and route.path == path:
            return Route(path, endpoint=KeyAuthMiddleware(route.endpoint, mem))
    raise RuntimeError("the MCP SDK built no streamable HTTP route")  # pragma: no cover


def create_mcp_app(mem: Memory, *, host: str = "127.0.0.1", path: str = "/mcp") -> Starlette:
    """A streamable HTTP MCP server over ``mem`` alone (``omoide mcp --transport http``)."""
    server = create_mcp_server(local_operations(mem))
    route = mcp_route(server, mem, host=host, path=path)

    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "version": __version__})

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with server.session_manager.run():
            yield

    return Starlette(routes=[route, Route("/healthz", health)], lifespan=lifespan)
