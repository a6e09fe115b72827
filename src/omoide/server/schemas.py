"""Request and response models of the REST API (the OpenAPI document is built from them).

Requests forbid unknown fields, so a body that names ``agent_name`` is refused: the key
decides who writes. The bounds here describe the API to its clients; the library validates
everything again (and names the field) when a request reaches it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    model_validator,
)

__all__ = [
    "AddKeyRequest",
    "AddMessageRequest",
    "AddMessagesRequest",
    "AddReport",
    "ApiKeyInfo",
    "Collection",
    "Document",
    "Episode",
    "EpisodeSearch",
    "EpisodeUpdate",
    "ErrorResponse",
    "EvictionsResponse",
    "EvolveRequest",
    "Health",
    "ImportReport",
    "Message",
    "NewApiKey",
    "OutcomeRequest",
    "Pin",
    "PinRequest",
    "Procedure",
    "ProcedureMatch",
    "ProcedureVersion",
    "QueryHit",
    "QueryRequest",
    "RecordRequest",
    "RegisterRequest",
    "RollbackRequest",
    "SessionRequest",
    "SessionView",
    "SlotRequest",
    "Stats",
    "StoreRequest",
    "StoreResponse",
    "WhoAmI",
]

Name = Annotated[str, Field(min_length=1, max_length=200)]
Text = Annotated[str, Field(max_length=100_000)]
Tags = Annotated[list[Name], Field(max_length=1000)]
Scope = Annotated[
    str,
    Field(
        max_length=10_000,
        description="'global', 'private', or a share list such as 'agent:cto,team:leads'",
    ),
]
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


class RecordRequest(_Request):
    event_type: Name = Field(
        description="decision, error, success, feedback, conflict (which set the base "
        "importance) or any other name"
    )
    description: Annotated[str, Field(min_length=1, max_length=100_000)]
    context: dict[str, Any] | None = None
    outcome: Text | None = None
    importance: Annotated[float, Field(ge=0, le=1)] | None = None
    tags: Tags | None = None
    references: Tags | None = None
    id: Name | None = None
    timestamp: datetime | None = None
    decay_rate: Annotated[float, Field(ge=0, le=1)] | None = None
    scope: Scope | None = None


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


class EpisodeSearch(_Request):
    query: Text = Field(description="what to look for (empty: rank by importance and freshness)")
    agent_name: Name | None = Field(None, description="only episodes this agent recorded")
    event_type: Name | None = None
    since: datetime | None = None
    until: datetime | None = None
    tags: Annotated[list[Name], Field(max_length=100)] | None = Field(
        None, description="episodes carrying all of these tags (at most 100: a filter)"
    )
    top_k: Annotated[int, Field(ge=1, le=1000)] = 10


class EpisodeUpdate(_Request):
    outcome: Text | None = None
    importance: Annotated[float, Field(ge=0, le=1)] | None = None
    tags: Tags | None = None


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


class StoreRequest(_Request):
    documents: Annotated[
        list[Annotated[str, Field(min_length=1)]], Field(min_length=1, max_length=1000)
    ]
    metadatas: Annotated[list[dict[str, MetaValue] | None], Field(max_length=1000)] | None = None
    ids: Annotated[list[Name], Field(max_length=1000)] | None = None
    scope: Scope | None = None


class StoreResponse(BaseModel):
    collection: str
    ids: list[str]


QueryText = Annotated[str, Field(min_length=1, max_length=100_000)]


class QueryRequest(_Request):
    """``query`` (as in ``/v1/episodes/search``) or its older name ``query_text``."""

    query: QueryText | None = Field(None, description="what to look for, in any language")
    query_text: QueryText | None = Field(None, description="the same as `query`")
    n_results: Annotated[int, Field(ge=1, le=100)] = 5
    where: dict[str, Any] | None = Field(None, description="a ChromaDB metadata filter")
    where_document: dict[str, Any] | None = Field(None, description="a ChromaDB text filter")

    @model_validator(mode="after")
    def _one_query(self) -> QueryRequest:
        if (self.query is None) == (self.query_text is None):
            raise ValueError("give query (or its older name query_text), once")
        return self

    @property
    def text(self) -> str:
        return self.query if self.query is not None else str(self.query_text)


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


class RegisterRequest(_Request):
    name: Name
    trigger: Annotated[
        str,
        Field(
            min_length=1,
            max_length=10_000,
            description="alternatives joined by '|': exact 'write_article', glob 'deploy:*', "
            "keyword '~記事'",
        ),
    ]
    template: Annotated[str, Field(min_length=1, max_length=200_000)]
    description: Annotated[str, Field(max_length=10_000)] = ""
    success_rate: Annotated[float, Field(ge=0, le=1)] | None = None
    avg_quality_score: Annotated[float, Field(ge=0, le=10)] | None = None
    scope: Scope | None = None


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


class OutcomeRequest(_Request):
    quality_score: Annotated[float, Field(ge=0, le=10)]
    success: StrictBool


class EvolveRequest(_Request):
    template: Annotated[str, Field(min_length=1, max_length=200_000)]
    trigger: Annotated[str, Field(min_length=1, max_length=10_000)] | None = None


class RollbackRequest(_Request):
    version: Annotated[int, Field(ge=1, le=1_000_000)]


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


class SessionRequest(_Request):
    max_tokens: Annotated[int, Field(ge=6, le=10_000_000)]


class AddMessageRequest(_Request):
    content: Annotated[str, Field(min_length=1, max_length=1_000_000)]
    role: Name = "user"
    importance: Annotated[float, Field(ge=0, le=1)] | None = None
    pinned: StrictBool = False
    metadata: dict[str, Any] | None = None


class ChatMessage(_Request):
    role: Literal["user", "assistant", "system", "tool"] = "user"
    content: Annotated[str, Field(min_length=1, max_length=1_000_000)]
    name: Name | None = Field(None, description="who spoke (a speaker, never the owner)")
    timestamp: datetime | None = None
    id: Name | None = Field(None, description="the message's own id (makes a retry exact)")


class AddMessagesRequest(_Request):
    session_id: Name = Field(description="the conversation: its thread and working session")
    messages: Annotated[list[ChatMessage], Field(min_length=1, max_length=1000)]
    timestamp: datetime | None = Field(None, description="when, for messages without one")
    scope: Scope | None = None


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


class SlotRequest(_Request):
    value: Annotated[str, Field(max_length=1_000_000)] | None


class PinRequest(_Request):
    content: Annotated[str, Field(min_length=1, max_length=1_000_000)]
    reason: Annotated[str, Field(max_length=10_000)] = ""


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


class AddKeyRequest(_Request):
    agent_name: Name
    admin: StrictBool = False
    label: Annotated[str, Field(max_length=200)] = ""


class ApiKeyInfo(BaseModel):
    id: str
    agent_name: str
    admin: bool
    label: str
    created_at: datetime
    revoked_at: datetime | None


class NewApiKey(ApiKeyInfo):
    key: str = Field(description="the key itself: shown once, store it now")
