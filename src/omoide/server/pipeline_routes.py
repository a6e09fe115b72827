"""Response models of the pipelines' REST routes: recall, distill, forget, maintain, audit,
restore and index (the routes themselves are generated from the operation table by
:mod:`omoide.server.routing`; a route's ``response`` names its model here or in
:mod:`omoide.server.schemas`).

Whole-store jobs (distill, forget, maintain, index) need an admin key; ``POST /v1/forget``
with ``dry_run`` is open to every key and shows only what its agent may read, as does the
audit log (its entries hold snapshots of the items).
"""

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

__all__ = [
    "AuditEntry",
    "DistillReport",
    "ForgetReport",
    "IndexReport",
    "MaintenanceReport",
    "RecallResponse",
    "RestoreResponse",
    "RetentionReport",
]

# -- models ------------------------------------------------------------------------------


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
    signals: dict[str, float]


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


class RestoreResponse(BaseModel):
    layer: str
    collection: str | None
    item: dict[str, Any]
    kept: bool = Field(False, description="kept against forgetting for good (keep)")


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
