"""The operation surface, typed once: what the CLI, the REST server and MCP can ask for.

:class:`Operations` lists every operation with its parameters and result;
:class:`~omoide.service.local.LocalOperations` (in-process) and
:class:`~omoide.service.remote.RemoteOperations` (over HTTP) both implement it, so a front end
holds an ``Operations`` and does not know which it has (``tests/test_operations_parity.py``
checks that both match it exactly). Results are the JSON-ready shapes the REST API returns;
the aliases below name them. :class:`AuditQuery` is the one definition of the audit log's
filters, used by every front end.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from omoide.ingest.indexing import ProgressCallback
from omoide.pipelines.audit import AuditQuery
from omoide.service.transfer import Progress

__all__ = ["AuditQuery", "Metadata", "Operations"]

#: A JSON object as the REST API returns it (the shapes are in :mod:`omoide.server.schemas`).
Record = dict[str, Any]
#: A list of JSON objects (episodes, documents, hits, keys, audit entries).
Records = list[dict[str, Any]]
#: When: an aware datetime or an ISO 8601 string (the library parses it).
Instant = datetime | str
#: Who may read an item: 'global', 'private', or a share list.
ScopeArg = str | Sequence[str]
#: A document's metadata: flat labels (the vector store keeps only these values).
Metadata = Mapping[str, str | int | float | bool]


class Operations(Protocol):
    """Every operation of omoide's front ends, as one caller (an agent or the operator)."""

    # -- identity and episodic ---------------------------------------------------------

    def whoami(self) -> Record: ...

    def record(
        self,
        event_type: str,
        description: str,
        *,
        context: Mapping[str, Any] | None = None,
        outcome: str | None = None,
        importance: float | None = None,
        tags: Sequence[str] | None = None,
        references: Sequence[str] | None = None,
        id: str | None = None,
        timestamp: Instant | None = None,
        decay_rate: float | None = None,
        scope: ScopeArg | None = None,
        agent_name: str | None = None,
    ) -> Record: ...

    def record_many(self, items: Sequence[Mapping[str, Any]]) -> Records: ...

    def search_episodes(
        self,
        query: str,
        *,
        agent_name: str | None = None,
        event_type: str | None = None,
        since: Instant | None = None,
        until: Instant | None = None,
        tags: Sequence[str] | None = None,
        top_k: int = 10,
    ) -> Records: ...

    def get_episode(self, episode_id: str) -> Record: ...

    def list_episodes(
        self,
        *,
        agent_name: str | None = None,
        event_type: str | None = None,
        since: Instant | None = None,
        until: Instant | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> Records: ...

    def update_episode(
        self,
        episode_id: str,
        *,
        outcome: str | None = None,
        importance: float | None = None,
        tags: Sequence[str] | None = None,
    ) -> Record: ...

    def delete_episode(self, episode_id: str) -> Record: ...

    def add(
        self,
        session_id: str,
        messages: Sequence[Mapping[str, Any] | str],
        *,
        timestamp: Instant | None = None,
        scope: ScopeArg | None = None,
    ) -> Record: ...

    # -- semantic ----------------------------------------------------------------------

    def collections(self) -> Records: ...

    def store(
        self,
        collection: str,
        documents: Sequence[str],
        metadatas: Sequence[Metadata | None] | None = None,
        ids: Sequence[str] | None = None,
        *,
        scope: ScopeArg | None = None,
    ) -> Record: ...

    def query(
        self,
        collection: str,
        query_text: str,
        n_results: int = 5,
        where: Mapping[str, Any] | None = None,
        where_document: Mapping[str, Any] | None = None,
        rank: str = "relevance",
    ) -> Records: ...

    def get_document(self, collection: str, doc_id: str) -> Record: ...

    def list_documents(self, collection: str, *, limit: int = 50, offset: int = 0) -> Records: ...

    def delete_document(self, collection: str, doc_id: str) -> Record: ...

    # -- procedural --------------------------------------------------------------------

    def procedures(self) -> Records: ...

    def register_procedure(
        self,
        name: str,
        trigger: str,
        template: str,
        *,
        description: str = "",
        success_rate: float | None = None,
        avg_quality_score: float | None = None,
        scope: str | None = None,
    ) -> Record: ...

    def get_procedure(self, name: str) -> Record: ...

    def match_procedure(self, task: str) -> Record: ...

    def report_outcome(self, name: str, quality_score: float, success: bool) -> Record: ...

    def evolve_procedure(
        self, name: str, template: str, *, trigger: str | None = None
    ) -> Record: ...

    def procedure_history(self, name: str) -> Records: ...

    def rollback_procedure(self, name: str, version: int) -> Record: ...

    # -- working memory ----------------------------------------------------------------

    def working(
        self, session_id: str, *, create: bool = False, max_tokens: int | None = None
    ) -> Record: ...

    def add_message(
        self,
        session_id: str,
        content: str,
        *,
        role: str = "user",
        importance: float | None = None,
        pinned: bool = False,
        metadata: Mapping[str, Any] | None = None,
    ) -> Record: ...

    def set_slot(self, session_id: str, slot: str, value: str | None) -> Record: ...

    def pin(self, session_id: str, key: str, content: str, reason: str = "") -> Record: ...

    def unpin(self, session_id: str, key: str) -> Record: ...

    def clear_messages(self, session_id: str) -> Record: ...

    # -- whole store -------------------------------------------------------------------

    def stats(self) -> Record: ...

    def export_lines(
        self, *, embeddings: bool = True, progress: Progress | None = None
    ) -> Iterator[str]: ...

    def import_lines(
        self,
        lines: Iterable[str | bytes],
        *,
        reembed: bool = False,
        progress: Progress | None = None,
    ) -> Record: ...

    def add_key(self, agent_name: str, *, admin: bool = False, label: str = "") -> Record: ...

    def list_keys(self, *, include_revoked: bool = False) -> Records: ...

    def revoke_key(self, key_id: str) -> Record: ...

    # -- pipelines -----------------------------------------------------------------------

    def recall(
        self,
        query: str,
        *,
        session_id: str | None = None,
        budget_tokens: int | None = None,
        layers: Sequence[str] | None = None,
        collections: Sequence[str] | None = None,
        top_k: int | None = None,
        min_score: float | None = None,
        diversity: float | None = None,
    ) -> Record: ...

    def distill(self) -> Record: ...

    def forget(self, *, dry_run: bool = False) -> Record: ...

    def maintain(self) -> Record: ...

    def enforce_collections(self, *, dry_run: bool = False) -> Record: ...

    def audit(self, query: AuditQuery | None = None) -> Records: ...

    def restore(
        self,
        item_id: str,
        *,
        layer: str | None = None,
        collection: str | None = None,
        keep: bool = False,
    ) -> Record: ...

    def purge(
        self, item_id: str, *, reason: str, layer: str = "episodic", collection: str = ""
    ) -> Record: ...

    def index(
        self,
        path: str | os.PathLike[str],
        collection: str,
        *,
        source: str | None = None,
        include: Iterable[str] = (),
        exclude: Iterable[str] = (),
        max_file_bytes: int | None = None,
        scope: ScopeArg | None = None,
        use_git: bool | None = None,
        dry_run: bool = False,
        progress: ProgressCallback | None = None,
    ) -> Record: ...

    def cache(
        self,
        key: str,
        content: str,
        ttl_days: float,
        source: str,
        *,
        collection: str | None = None,
        metadata: Metadata | None = None,
        scope: ScopeArg | None = None,
    ) -> Record: ...

    def cached(self, key: str, *, collection: str | None = None) -> Record: ...
