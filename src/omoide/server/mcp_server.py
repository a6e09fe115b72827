"""The MCP server: omoide's memory as tools an LLM agent can call.

Built with the official MCP Python SDK (``mcp`` 2.x, ``MCPServer``). Every tool is a thin call
into :mod:`omoide.service.local`, so identity and scopes work as in the REST API: over stdio the
agent comes from configuration (``--agent`` / ``$OMOIDE_AGENT``); over streamable HTTP from
the API key of the request (``Authorization: Bearer <key>``), checked by
:class:`~omoide.server.auth.KeyAuthMiddleware` before the MCP session sees the request.

Tools: one per operation the table (:mod:`omoide.service.table`) exposes over MCP, generated
from its entry: name, description and parameters (shaped for an LLM: which argument each
gives, its description and default; types and numeric bounds come from the protocol and the
table's arguments), ``remember`` is ``record``, ``search_knowledge`` is ``query``, and so on.
A tool whose entry has a ``reply`` answers with that line for the model (``recall`` with the
rendered ``<memories>`` text, writes with one line naming the id) and the result beside it,
as structured content; the others with the result. Forgetting has no tool (see the table's
``forget`` entry for why).
Resources: ``omoide://stats`` and ``omoide://stats/{layer}`` (counts and sizes of what the
agent may read).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from omoide._version import __version__
from omoide.errors import AuthenticationError, OmoideError
from omoide.memory import Memory
from omoide.server.auth import CALLER, KeyAuthMiddleware
from omoide.server.limits import check_request_text
from omoide.server.schemas import wire_type
from omoide.service.local import Caller, LocalOperations
from omoide.service.operation import Operation, Tool
from omoide.service.protocol import Operations
from omoide.service.table import OPERATIONS

if TYPE_CHECKING:
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

__all__ = ["create_mcp_app", "create_mcp_server", "local_operations", "mcp_route"]

#: Gives the operations for the caller of the current request (None: no HTTP key, i.e. stdio
#: or an in-process client).
OperationsFor = Callable[[Caller | None], Operations]
#: Runs a function on the caller's operations, the texts it embeds bounded by the budget.
Call = Callable[..., Any]
#: A tool's answer: a line for the model beside the result.
Answer = Callable[[str, dict[str, Any]], CallToolResult]

_CALLER: ContextVar[Caller | None] = ContextVar("omoide_mcp_caller", default=None)

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


def create_mcp_server(
    operations: OperationsFor, table: Iterable[Operation] = OPERATIONS.values()
) -> MCPServer:
    """An MCP server whose tools, one per operation of ``table`` with an MCP tool, call
    ``operations(caller)``."""
    server: MCPServer = MCPServer(
        "omoide",
        title="omoide — long-term memory",
        instructions=INSTRUCTIONS,
        version=__version__,
        log_level="WARNING",
        middleware=[_bind_caller],
    )

    def call(fn: Callable[[Operations], Any], *texts: tuple[str, Any]) -> Any:
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

    for op in table:
        if op.mcp is not None:
            server.add_tool(
                _tool(op, op.mcp, call, answer),
                name=op.mcp.name,
                description=op.mcp.description,
                annotations=_annotations(op),
            )

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


def _annotations(op: Operation) -> ToolAnnotations:
    """What a tool does to memory: only reads, deletes, or adds and changes."""
    if op.read_only:
        return ToolAnnotations(read_only_hint=True, open_world_hint=False)
    if op.rest and op.rest[0].method == "DELETE":
        return ToolAnnotations(read_only_hint=False, destructive_hint=True)
    return ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)


def _tool(op: Operation, tool: Tool, call: Call, answer: Answer) -> Callable[..., Any]:
    """The function of ``tool``: its parameters typed, bounded and described from the table
    (:func:`omoide.server.schemas.wire_type`), its body a call of ``op`` with them; it
    answers with the result, or with the table's reply line beside it."""
    arguments = {x.name: x for x in op.arguments()}
    given_to = {name: arguments[p.to or name] for name, p in tool.params.items()}
    params = []
    for name, p in tool.params.items():
        wire = wire_type(given_to[name], "mcp", param=p)
        default = inspect.Parameter.empty if wire.default is ... else wire.default
        kind: Any = wire.annotation
        annotation = Annotated[kind, Field(description=wire.description)]
        params.append(
            inspect.Parameter(
                name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default
            )
        )
    returns: Any = dict[str, Any]
    if tool.reply is not None:
        returns = CallToolResult
    elif op.returns_list():
        returns = list[dict[str, Any]]

    def run(**given: Any) -> Any:
        values: dict[str, Any] = {}
        texts: list[tuple[str, Any]] = []
        for name, p in tool.params.items():
            x, value = given_to[name], given[name]
            values[x.name] = [value] if p.one and value is not None else value
            if x.arg.embedded:
                texts.extend(_texts(name, value, x.arg.embedded))
        result = call(lambda ops: getattr(ops, op.name)(**values), *texts)
        if tool.reply is None:
            return result
        return answer(tool.reply.format_map(result) or tool.reply_empty, result)

    run.__signature__ = inspect.Signature(params, return_annotation=returns)  # type: ignore[attr-defined]
    run.__name__ = tool.name
    return run


def _texts(name: str, value: Any, embedded: bool | tuple[str, ...]) -> list[tuple[str, Any]]:
    """The texts a tool's parameter gives to embed (a list's items one by one)."""
    if not isinstance(value, list):
        return [(name, value)]
    if isinstance(embedded, tuple):
        value = [
            [item.get(k) for k in embedded] if isinstance(item, Mapping) else item for item in value
        ]
    return [(f"{name}[{i}]", item) for i, item in enumerate(value)]


def mcp_route(server: MCPServer, mem: Memory, *, host: str, path: str = "/mcp") -> Route:
    """The streamable HTTP endpoint of ``server`` behind API-key authentication.

    The server's session manager must run while the route serves (see :func:`create_mcp_app`).
    Over a shared database (replicas) the endpoint keeps no session between requests, so any
    replica answers any request of a client: omoide's tools need no session state.
    """
    app = server.streamable_http_app(
        streamable_http_path=path, host=host, stateless_http=mem.db.shared
    )
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
