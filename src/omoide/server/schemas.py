"""Response models of the REST API, and the request fields derived from the operation table.

Request bodies are built from the table (:func:`wire_type` gives each argument's type, bounds
and default; :mod:`omoide.server.routing` puts them together), except the items of a list
whose shape is their own (:class:`ChatMessage`). Requests forbid unknown fields, so a body
that names ``agent_name`` is refused: the key decides who writes. The bounds describe the API
to its clients; the library validates everything again (and names the field) when a request
reaches it. The MCP tools' parameters come from :func:`wire_type` too.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal, Protocol

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
)

from omoide.service.operation import REQUIRED, Argument, Bounds, Param

__all__ = [
    "AddReport",
    "ApiKeyInfo",
    "ChatMessage",
    "Collection",
    "Document",
    "Episode",
    "ErrorResponse",
    "EvictionsResponse",
    "Health",
    "ImportReport",
    "Message",
    "Models",
    "NewApiKey",
    "Pin",
    "Procedure",
    "ProcedureMatch",
    "ProcedureVersion",
    "QueryHit",
    "SessionView",
    "Stats",
    "StoreResponse",
    "WhoAmI",
    "WireField",
    "list_of",
    "wire_type",
]

Name = Annotated[str, Field(min_length=1, max_length=200)]
MetaValue = StrictBool | StrictInt | StrictFloat | StrictStr


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- errors and identity -----------------------------------------------------------------


class ErrorResponse(BaseModel):
    """Every error: the error's class, what went wrong, and for bad input the field (and, for
    a request that fails several checks, each problem)."""

    error: str = Field(description="the omoide error class, e.g. ValidationError")
    detail: str = Field(description="what went wrong, in one sentence")
    field: str | None = Field(None, description="the field at fault (bad input only)")
    problems: list[dict[str, Any]] | None = Field(
        None, description="every problem of a bad request: loc (where), msg, type"
    )


class Health(BaseModel):
    status: str
    version: str


class WhoAmI(BaseModel):
    agent: str | None
    teams: list[str]
    admin: bool


# -- episodic ----------------------------------------------------------------------------


class Episode(BaseModel):
    id: str
    timestamp: datetime
    agent_name: str
    event_type: str
    description: str
    context: dict[str, Any]
    outcome: str | None
    importance: float
    tags: list[str]
    references: list[str]
    access_count: int
    last_accessed: datetime | None
    decay_rate: float
    scope: str
    protected: bool
    state: str
    distilled_at: datetime | None
    score: float | None = None
    tokens: int | None = None


# -- semantic ----------------------------------------------------------------------------


class Collection(BaseModel):
    """A collection's policy beside its usage; whole-store figures only for admin keys."""

    name: str
    purpose: str
    retention_days: int | None = Field(description="days a document is kept; null: forever")
    max_docs: int
    on_full: str = Field(description="at the cap: refuse, or archive_lowest (by maintenance)")
    update_freq: str
    documents: int = Field(description="active documents this key's agent may read")
    full: bool = Field(description="the cap is reached")
    pending: int | None = None
    archived: int | None = None
    compressed: int | None = None
    expired: int | None = Field(None, description="expired cache entries awaiting maintenance")
    chunks: int | None = None
    usage: float | None = Field(None, description="share of the cap in use")


class StoreResponse(BaseModel):
    collection: str
    ids: list[str]


class QueryHit(BaseModel):
    id: str
    document: str
    metadata: dict[str, Any]
    distance: float
    collection: str
    doc_id: str
    chunk_index: int
    current: bool
    similarity: float
    tokens: int | None = None
    relevance: float | None = None


class Document(BaseModel):
    id: str
    collection: str
    document: str
    metadata: dict[str, Any]
    agent_name: str
    scope: str
    created_at: datetime
    updated_at: datetime
    chunk_count: int
    access_count: int
    last_accessed: datetime | None
    state: str
    protected: bool
    subject: str | None
    version: int | None
    superseded_by: str | None
    superseded_at: datetime | None


# -- procedural --------------------------------------------------------------------------


class Procedure(BaseModel):
    name: str
    trigger: str
    template: str
    success_rate: float
    avg_quality_score: float
    execution_count: int
    last_updated: datetime
    version: int
    agent_name: str
    scope: str
    description: str
    selection_score: float


class ProcedureVersion(BaseModel):
    name: str
    version: int
    trigger: str
    template: str
    success_rate: float
    avg_quality_score: float
    execution_count: int
    created_at: datetime
    current: bool


class ProcedureMatch(BaseModel):
    task: str
    best: Procedure | None
    matches: list[Procedure]


# -- working memory ----------------------------------------------------------------------


class Pin(BaseModel):
    key: str
    content: str
    reason: str
    pinned_at: datetime
    tokens: int


class Message(BaseModel):
    content: str
    role: str
    importance: float
    pinned: bool
    created_at: datetime | None
    tokens: int
    metadata: dict[str, Any]
    id: int | None


class SessionView(BaseModel):
    agent_name: str
    session_id: str
    max_tokens: int
    total_tokens: int
    budgets: dict[str, int]
    slot_tokens: dict[str, int]
    slots: dict[str, str | None]
    pins: list[Pin]
    messages: list[Message]
    context: str = Field(description="the slots rendered for a prompt")


class ChatMessage(_Request):
    role: Literal["user", "assistant", "system", "tool"] = "user"
    content: Annotated[str, Field(min_length=1, max_length=1_000_000)]
    name: Name | None = Field(None, description="who spoke (a speaker, never the owner)")
    timestamp: datetime | None = None
    id: Name | None = Field(None, description="the message's own id (makes a retry exact)")


class AddReport(BaseModel):
    agent_name: str
    session_id: str
    recorded: list[Episode]
    episode_ids: list[str]
    duplicates: list[str]
    skipped: list[dict[str, Any]]
    extracted: list[str]
    notes: list[str]
    summary: str


class Eviction(BaseModel):
    message: Message
    episode_id: str | None
    promoted: bool


class EvictionsResponse(BaseModel):
    evictions: list[Eviction]
    total_tokens: int


# -- whole store -------------------------------------------------------------------------


class CollectionStats(BaseModel):
    documents: int
    bytes: int
    max_docs: int = Field(description="the collection's cap")
    full: bool = Field(description="the cap is reached (counting every document)")


class SemanticStats(BaseModel):
    documents: int
    bytes: int
    collections: dict[str, CollectionStats]


class WorkingStats(BaseModel):
    sessions: int
    message_tokens: int
    pin_tokens: int = Field(0, description="tokens of the sessions' pins")


class EpisodicStats(BaseModel):
    episodes: int = Field(description="active episodes (the ones recall and search read)")
    bytes: int
    compressed: int = Field(0, description="episodes compressed by forgetting (restorable)")
    archived: int = Field(0, description="episodes archived by forgetting (restorable)")


class ProceduralStats(BaseModel):
    procedures: int
    bytes: int


class Layers(BaseModel):
    working: WorkingStats
    episodic: EpisodicStats
    semantic: SemanticStats
    procedural: ProceduralStats


class AgentStats(BaseModel):
    agent: str
    episodes: int
    episode_bytes: int
    documents: int
    document_bytes: int
    procedures: int
    procedure_bytes: int
    sessions: int
    message_tokens: int


class StorageStats(BaseModel):
    path: str
    database_bytes: int
    chroma_bytes: int


class Stats(BaseModel):
    layers: Layers
    agents: list[AgentStats]
    storage: StorageStats | None = Field(description="files on disk (admin keys only)")


class ImportReport(BaseModel):
    imported: dict[str, int]
    skipped: dict[str, int]
    reembedded: int


class ApiKeyInfo(BaseModel):
    id: str
    agent_name: str
    admin: bool
    label: str
    created_at: datetime
    revoked_at: datetime | None


class NewApiKey(ApiKeyInfo):
    key: str = Field(description="the key itself: shown once, store it now")


# -- request fields derived from the operation table ----------------------------------------

#: Where an argument travels: a JSON body's field, a query or path parameter, an MCP tool's.
Place = Literal["body", "query", "path", "mcp"]
_NAME = Bounds(min_length=1, max_length=200)


class Models(Protocol):
    """The models a table's ``schema`` names, by name."""

    def __getitem__(self, name: str) -> Any: ...


_LIST = Bounds(max_length=1000)
_SCALAR_DEFAULTS = (str, int, float, bool)


@dataclass(frozen=True)
class WireField:
    """An argument as a field: its type (bounds included, None allowed when it may be
    null), its default (``...``: required), its description and what a query parameter
    adds to its schema (``format``)."""

    annotation: Any
    default: Any
    description: str | None
    schema_extra: dict[str, Any] | None = None


def wire_type(
    x: Argument,
    place: Place,
    models: Models | None = None,
    param: Param | None = None,
) -> WireField:
    """Argument ``x`` as a field at ``place``; ``models`` resolve the table's item schemas
    (bodies only), ``param`` is the MCP parameter that gives the argument (its description,
    default and bounds).

    A string defaults to 1 to 200 characters and a list to 1,000 items of those; an instant
    is a date-time in a body and ISO 8601 text elsewhere; a bool is strict in a body (JSON
    has true and false) and lax in a query (``?dry_run=true``). A default that is not a JSON
    scalar (``()``) becomes null: the operation's own default then applies.
    """
    options = [t for t in typing.get_args(x.type) or (x.type,) if t is not type(None)]
    if typing.get_origin(x.type) not in (typing.Union, types.UnionType):
        options = [x.type]
    kind, bounds = _kind(x, options, place, models or {}, param)
    one = param is not None and param.one
    if one:  # the MCP parameter is the list's only item
        kind = typing.get_args(kind)[0] if typing.get_args(kind) else Any
        bounds = {}
    default = param.default if param is not None and param.default is not REQUIRED else x.default
    if one and default is REQUIRED and not x.required:
        default = None
    nullable = type(None) in typing.get_args(x.type) or default is None
    if default is not REQUIRED and not isinstance(default, _SCALAR_DEFAULTS):
        default, nullable = None, True
    if isinstance(default, str) and len(default) < bounds.get("min_length", 0):
        default, nullable = None, True  # a default the bounds refuse is "not given"
    extra = bounds.pop("json_schema_extra", None) if place == "query" else None
    annotation: Any = Annotated[kind, Field(**bounds)] if bounds else kind
    if nullable and place != "path":
        annotation = annotation | None
    help = param.description if param is not None else x.arg.help
    return WireField(annotation, ... if default is REQUIRED else default, help or None, extra)


def _kind(
    x: Argument, options: list[Any], place: Place, models: Models, param: Param | None
) -> tuple[Any, dict[str, Any]]:
    """The type of ``x`` on the wire and the bounds that go with it."""
    spec = x.arg
    first = options[0] if options else Any
    origin = typing.get_origin(first) or first
    mcp = place == "mcp"
    own = spec.bounds or Bounds(ge=spec.minimum)
    if param is not None and param.bounds is not None:
        own = param.bounds
    numeric = {k: v for k, v in own.options().items() if k in ("ge", "gt", "le")}
    if str in options and spec.choices is None and (mcp or datetime not in options):
        return str, ({} if mcp else (spec.bounds or _NAME).options())
    if spec.choices is not None and origin not in (list, Sequence, Iterable):
        return Literal[spec.choices], {}
    if datetime in options:
        if place == "body":
            return datetime, {}
        return str, {"max_length": 64, "json_schema_extra": {"format": "date-time"}}
    if first is bool:
        return (StrictBool if place == "body" else bool), {}
    if first in (int, float):
        return first, numeric
    if isinstance(origin, type) and issubclass(origin, Mapping):
        if spec.schema is not None and not mcp:
            return models[spec.schema], {}
        return _mapping(first, strict=not mcp), {}
    size = (own if own.min_length or own.max_length else _LIST).options()
    size = {k: v for k, v in size.items() if k in ("min_length", "max_length")}
    item = typing.get_args(first)[0] if typing.get_args(first) else Any
    if spec.schema is not None and not mcp:
        return list_of(models[spec.schema]), size
    return list_of(_item(item, spec, mcp)), size


def list_of(item: Any) -> Any:
    """``list[item]`` of a type known only when the table is read."""
    return list[item]


def _item(item: Any, spec: Any, mcp: bool) -> Any:
    """The type of a list's items: strings bounded like names (unless the table says
    otherwise), mappings as objects, a union with None kept nullable."""
    options = [t for t in typing.get_args(item) or (item,) if t is not type(None)]
    if typing.get_origin(item) not in (typing.Union, types.UnionType):
        options = [item]
    nullable = len(options) < len(typing.get_args(item) or (item,))
    first = options[0] if options else Any
    origin = typing.get_origin(first) or first
    kind: Any
    if spec.choices is not None:
        kind = Literal[spec.choices]
    elif isinstance(origin, type) and issubclass(origin, Mapping):
        kind = _mapping(first, strict=not mcp)
    elif str in options:
        kind = str if mcp else Annotated[str, Field(**(spec.items or _NAME).options())]
    else:
        kind = first
    return kind | None if nullable else kind


def _mapping(kind: Any, *, strict: bool) -> Any:
    """A JSON object: of flat labels when the protocol says so (strict on REST), else any."""
    args = typing.get_args(kind)
    if len(args) == 2 and args[1] is not Any:
        return dict[str, MetaValue] if strict else dict[str, args[1]]  # type: ignore[valid-type]
    return dict[str, Any]
