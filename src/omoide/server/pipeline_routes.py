"""REST routes of the pipelines: recall, distill, forget, maintain, audit, restore, index and
the information cache (``/v1/...``, mounted by :func:`omoide.server.rest.create_app`).

Whole-store jobs (distill, forget, maintain, index) need an admin key; ``POST /v1/forget``
with ``dry_run`` is open to every key and shows only what its agent may read, as does the
audit log (its entries hold snapshots of the items).
"""

from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Path, Query
from pydantic import BaseModel, Field, StrictBool

from omoide.server import schemas as s
from omoide.server.limits import check_request_text
from omoide.server.routing import route
from omoide.service.protocol import AuditQuery

__all__ = ["pipeline_routers"]

Name = s.Name
Layer = Literal["working", "episodic", "semantic", "procedural"]
AuditLayer = Literal["episodic", "semantic"]


# -- models ------------------------------------------------------------------------------


class RecallRequest(s._Request):
    query: Annotated[str, Field(min_length=1, max_length=10_000)]
    session_id: Name | None = Field(None, description="add this session's pins and messages")
    budget_tokens: Annotated[int, Field(ge=1, le=1_000_000)] | None = Field(
        None, description="token budget of the context (default: router.default_budget_tokens)"
    )
    layers: Annotated[list[Layer], Field(min_length=1, max_length=4)] | None = None


class ContextItem(BaseModel):
    layer: str
    id: str
    text: str
    score: float
    why: str
    author: str
    timestamp: datetime | None
    tokens: int
    truncated: bool
    metadata: dict[str, Any]


class RecallResponse(BaseModel):
    query: str
    agent_name: str
    context: str = Field(description="the items rendered for a prompt, within the budget")
    tokens: int
    budget_tokens: int
    layers: list[str]
    time_range: dict[str, Any] | None
    recall_id: str | None
    session_id: str | None
    items: list[ContextItem]


class ForgetRequest(s._Request):
    dry_run: StrictBool = Field(False, description="only report what would be done")


class PlannedAction(BaseModel):
    policy: str
    layer: str
    collection: str
    item_id: str
    action: str
    reason: str


class PolicyReport(BaseModel):
    name: str
    layer: str
    action: str
    candidates: int
    acted: list[PlannedAction]
    skipped: list[list[str]]
    failed: list[list[str]]


class ForgetReport(BaseModel):
    dry_run: bool
    run_id: str
    at: datetime
    policies: list[PolicyReport]
    seconds: float
    acted: int
    reason: str = ""


class DistillReport(BaseModel):
    candidates: int
    clusters: int
    knowledge_written: list[str]
    knowledge_existing: list[str]
    knowledge_updated: list[str] = []
    episodes_marked: int
    unclustered: int
    skipped: list[dict[str, Any]]
    seconds: float
    complete: bool
    low_importance: int = 0
    reason: str = ""


class RetentionReport(BaseModel):
    dry_run: bool
    run_id: str
    at: datetime
    actions: list[PlannedAction]
    protected_kept: dict[str, int]
    over_cap: dict[str, int]
    failed: list[list[str]]
    seconds: float


class MaintenanceReport(BaseModel):
    started_at: datetime
    distill: DistillReport
    forget: dict[str, Any]
    seconds: float
    retention: RetentionReport | None


class AuditEntry(BaseModel):
    id: int
    at: datetime
    run_id: str
    policy: str
    layer: str
    collection: str
    item_id: str
    action: str
    reason: str
    snapshot: dict[str, Any] = Field(description="the item before the action (no embedding)")


class RestoreRequest(s._Request):
    id: Name
    layer: AuditLayer | None = None
    collection: Name | None = None
    keep: StrictBool = Field(False, description="also keep it against forgetting for good")


class PurgeRequest(s._Request):
    """Which item to purge, and why (kept in the audit log)."""

    id: Name
    layer: AuditLayer = "episodic"
    collection: Name | None = None
    reason: Annotated[str, Field(min_length=1, max_length=2000)]


class RestoreResponse(BaseModel):
    layer: str
    collection: str | None
    item: dict[str, Any]
    kept: bool = Field(False, description="kept against forgetting for good (keep)")


class IndexRequest(s._Request):
    path: Annotated[str, Field(min_length=1, max_length=4096)] = Field(
        description="a folder or git repository on the server's machine"
    )
    source: Name | None = None
    include: Annotated[list[Name], Field(max_length=100)] | None = None
    exclude: Annotated[list[Name], Field(max_length=100)] | None = None
    max_file_bytes: Annotated[int, Field(ge=1, le=1_000_000_000)] | None = None
    scope: s.Scope | None = None
    use_git: StrictBool | None = None
    dry_run: StrictBool = False


class IndexReport(BaseModel):
    collection: str
    source: str
    root: str
    git: bool
    commit: str | None
    files_seen: int
    files_indexed: int
    files_unchanged: int
    files_removed: int
    files_skipped: int
    skipped: list[dict[str, Any]]
    skipped_by_reason: dict[str, int]
    documents: int
    documents_removed: int
    chunks: int
    seconds: float
    dry_run: bool
    summary: str


class CacheRequest(s._Request):
    key: Annotated[str, Field(min_length=1, max_length=8192)] = Field(
        description="a URL or any key; caching it again replaces the entry"
    )
    content: Annotated[str, Field(min_length=1, max_length=1_000_000)]
    ttl_days: Annotated[float, Field(gt=0, le=36_500)]
    source: Annotated[str, Field(min_length=1, max_length=8192)]
    collection: Name | None = None
    metadata: dict[str, s.MetaValue] | None = None
    scope: s.Scope | None = None


# -- routes ------------------------------------------------------------------------------


def pipeline_routers(ops_dependency: Any) -> list[APIRouter]:
    """The routers, given the dependency that yields the caller's operations."""
    Ops = Annotated[Any, Depends(ops_dependency)]
    recall = APIRouter(tags=["recall"])

    @route(recall, "recall", response_model=RecallResponse)
    def recall_(body: RecallRequest, ops: Ops) -> Any:
        """The key's agent's memories that answer a query, from every layer, ranked and
        packed into a token budget; ``context`` is ready for a prompt."""
        return ops.recall(
            body.query,
            session_id=body.session_id,
            budget_tokens=body.budget_tokens,
            layers=body.layers,
        )

    upkeep = APIRouter(tags=["maintenance"])

    @route(upkeep, "distill", response_model=DistillReport)
    def distill(ops: Ops) -> Any:
        """Turn old, similar episodes into knowledge documents (admin keys only)."""
        return ops.distill()

    @route(upkeep, "forget", response_model=ForgetReport)
    def forget(body: ForgetRequest, ops: Ops) -> Any:
        """Apply the forgetting policies (admin keys only); a dry run only reports, and is
        open to every key (it lists only what the key's agent may read)."""
        return ops.forget(dry_run=body.dry_run)

    @route(upkeep, "maintain", response_model=MaintenanceReport)
    def maintain(ops: Ops) -> Any:
        """Run the daily job now: distill, forget, collection retention/caps/cache expiry
        (admin keys only; 503 while another run holds the maintenance lock)."""
        return ops.maintain()

    @route(upkeep, "enforce_collections", response_model=RetentionReport)
    def enforce_collections(body: ForgetRequest, ops: Ops) -> Any:
        """Apply collection retention, caps and cache expiry alone (admin keys only); a dry
        run only reports."""
        return ops.enforce_collections(dry_run=body.dry_run)

    @route(upkeep, "audit", response_model=list[AuditEntry])
    def audit(
        ops: Ops,
        item_id: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
        policy: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
        layer: AuditLayer | None = None,
        action: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
        run_id: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
        since: Annotated[
            str | None, Query(max_length=64, json_schema_extra={"format": "date-time"})
        ] = None,
        until: Annotated[
            str | None, Query(max_length=64, json_schema_extra={"format": "date-time"})
        ] = None,
        limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    ) -> Any:
        """What forgetting, retention, overflow and restores did, newest first (entries of
        items the key's agent may read)."""
        query = AuditQuery(
            item_id,
            policy=policy,
            layer=layer,
            action=action,
            run_id=run_id,
            since=since,
            until=until,
            limit=limit,
        )
        return ops.audit(query)

    @route(upkeep, "restore", response_model=RestoreResponse)
    def restore(body: RestoreRequest, ops: Ops) -> Any:
        """Bring an archived or compressed item back (admin keys, or the item's owner)."""
        return ops.restore(body.id, layer=body.layer, collection=body.collection, keep=body.keep)

    @route(upkeep, "purge", response_model=AuditEntry)
    def purge(body: PurgeRequest, ops: Ops) -> Any:
        """Remove an item for good, never-forget ones included (admin keys only); audited
        with the item's snapshot, the admin and the reason."""
        return ops.purge(
            body.id, reason=body.reason, layer=body.layer, collection=body.collection or ""
        )

    knowledge = APIRouter(tags=["semantic"])

    @route(knowledge, "index", response_model=IndexReport)
    def index(
        collection: Annotated[str, Path(min_length=1, max_length=200)],
        body: IndexRequest,
        ops: Ops,
    ) -> Any:
        """Index a folder or git repository on the server's machine (admin keys only);
        incremental: unchanged files are skipped, deleted files' documents removed."""
        return ops.index(
            body.path,
            collection,
            source=body.source,
            include=body.include or (),
            exclude=body.exclude or (),
            max_file_bytes=body.max_file_bytes,
            scope=body.scope,
            use_git=body.use_git,
            dry_run=body.dry_run,
        )

    @route(knowledge, "cache", response_model=s.Document)
    def cache(body: CacheRequest, ops: Ops) -> Any:
        """Cache outside information (an API answer, a web page) with its source and a time
        to live; caching the same key again replaces the entry."""
        check_request_text(ops, ("content", body.content))
        return ops.cache(
            body.key,
            body.content,
            body.ttl_days,
            body.source,
            collection=body.collection,
            metadata=body.metadata,
            scope=body.scope,
        )

    @route(knowledge, "cached", response_model=s.Document)
    def cached(
        ops: Ops,
        key: Annotated[str, Query(min_length=1, max_length=8192)],
        collection: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
    ) -> Any:
        """The live entry cached under a key (404 when absent or expired)."""
        return ops.cached(key, collection=collection)

    return [recall, upkeep, knowledge]
