"""The operations of :mod:`omoide.service.local`, against a running ``omoide serve``.

A server owns its data directory, so the CLI (``--url``) and a stdio MCP server
(``omoide mcp --url``) reach it over HTTP. :class:`RemoteOperations` implements
:class:`~omoide.service.protocol.Operations` as :class:`~omoide.service.local.LocalOperations`
does; each call goes to the method and path the operation table gives it
(:mod:`omoide.service._http`), the key decides the agent, and the server's refusals come back
as the same :mod:`omoide.errors` exceptions. It uses only the standard library, so the base
install can talk to a server.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from omoide.ingest.indexing import ProgressCallback
from omoide.service._http import HttpOperations, clean
from omoide.service.protocol import AuditQuery
from omoide.service.transfer import Progress

__all__ = ["RemoteOperations"]


class RemoteOperations(HttpOperations):
    """The operations over HTTP, as the agent of ``key``."""

    # -- identity and episodic ---------------------------------------------------------

    def whoami(self) -> dict[str, Any]:
        return self._object("whoami")

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
        timestamp: datetime | str | None = None,
        decay_rate: float | None = None,
        scope: str | Sequence[str] | None = None,
        agent_name: str | None = None,
    ) -> dict[str, Any]:
        payload = {
            "event_type": event_type,
            "description": description,
            "context": context,
            "outcome": outcome,
            "importance": importance,
            "tags": tags,
            "references": references,
            "id": id,
            "timestamp": timestamp,
            "decay_rate": decay_rate,
            "scope": scope,
            "agent_name": agent_name,  # refused by the server, as by LocalOperations
        }
        return self._object("record", clean(payload))

    def record_many(self, items: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        return self._list("record_many", {"episodes": [clean(i) for i in items]})

    def search_episodes(
        self,
        query: str,
        *,
        agent_name: str | None = None,
        event_type: str | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        tags: Sequence[str] | None = None,
        top_k: int = 10,
    ) -> list[dict[str, Any]]:
        payload = {
            "query": query,
            "agent_name": agent_name,
            "event_type": event_type,
            "since": since,
            "until": until,
            "tags": tags,
            "top_k": top_k,
        }
        return self._list("search_episodes", clean(payload))

    def get_episode(self, episode_id: str) -> dict[str, Any]:
        return self._object("get_episode", episode_id=episode_id)

    def list_episodes(
        self,
        *,
        agent_name: str | None = None,
        event_type: str | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> list[dict[str, Any]]:
        filters = {
            "agent_name": agent_name,
            "event_type": event_type,
            "since": since,
            "until": until,
            "limit": limit,
            "offset": offset,
        }
        return self._list("list_episodes", query=filters)

    def update_episode(
        self,
        episode_id: str,
        *,
        outcome: str | None = None,
        importance: float | None = None,
        tags: Sequence[str] | None = None,
    ) -> dict[str, Any]:
        fields = clean({"outcome": outcome, "importance": importance, "tags": tags})
        return self._object("update_episode", fields, episode_id=episode_id)

    def delete_episode(self, episode_id: str) -> dict[str, Any]:
        return self._object("delete_episode", episode_id=episode_id)

    # -- semantic ----------------------------------------------------------------------

    def collections(self) -> list[dict[str, Any]]:
        return self._list("collections")

    def store(
        self,
        collection: str,
        documents: Sequence[str],
        metadatas: Sequence[Mapping[str, Any] | None] | None = None,
        ids: Sequence[str] | None = None,
        *,
        scope: str | Sequence[str] | None = None,
    ) -> dict[str, Any]:
        payload = {
            "documents": list(documents),
            "metadatas": None if metadatas is None else list(metadatas),
            "ids": None if ids is None else list(ids),
            "scope": scope if scope is None or isinstance(scope, str) else ",".join(scope),
        }
        return self._object("store", clean(payload), collection=collection)

    def query(
        self,
        collection: str,
        query_text: str,
        n_results: int = 5,
        where: Mapping[str, Any] | None = None,
        where_document: Mapping[str, Any] | None = None,
    ) -> list[dict[str, Any]]:
        payload = {
            "query_text": query_text,
            "n_results": n_results,
            "where": where,
            "where_document": where_document,
        }
        return self._list("query", clean(payload), collection=collection)

    def get_document(self, collection: str, doc_id: str) -> dict[str, Any]:
        return self._object("get_document", collection=collection, doc_id=doc_id)

    def list_documents(
        self, collection: str, *, limit: int = 50, offset: int = 0
    ) -> list[dict[str, Any]]:
        page = {"limit": limit, "offset": offset}
        return self._list("list_documents", query=page, collection=collection)

    def delete_document(self, collection: str, doc_id: str) -> dict[str, Any]:
        return self._object("delete_document", collection=collection, doc_id=doc_id)

    # -- procedural --------------------------------------------------------------------

    def procedures(self) -> list[dict[str, Any]]:
        return self._list("procedures")

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
    ) -> dict[str, Any]:
        payload = {
            "name": name,
            "trigger": trigger,
            "template": template,
            "description": description,
            "success_rate": success_rate,
            "avg_quality_score": avg_quality_score,
            "scope": scope,
        }
        return self._object("register_procedure", clean(payload))

    def get_procedure(self, name: str) -> dict[str, Any]:
        return self._object("get_procedure", name=name)

    def match_procedure(self, task: str) -> dict[str, Any]:
        return self._object("match_procedure", {"task": task})

    def report_outcome(self, name: str, quality_score: float, success: bool) -> dict[str, Any]:
        payload = {"quality_score": quality_score, "success": success}
        return self._object("report_outcome", payload, name=name)

    def evolve_procedure(
        self, name: str, template: str, *, trigger: str | None = None
    ) -> dict[str, Any]:
        payload = clean({"template": template, "trigger": trigger})
        return self._object("evolve_procedure", payload, name=name)

    def procedure_history(self, name: str) -> list[dict[str, Any]]:
        return self._list("procedure_history", name=name)

    def rollback_procedure(self, name: str, version: int) -> dict[str, Any]:
        return self._object("rollback_procedure", {"version": version}, name=name)

    # -- working memory ----------------------------------------------------------------

    def working(
        self, session_id: str, *, create: bool = False, max_tokens: int | None = None
    ) -> dict[str, Any]:
        if create or max_tokens is not None:
            payload = {} if max_tokens is None else {"max_tokens": max_tokens}
            return self._object("working", payload, method="PUT", session_id=session_id)
        return self._object("working", method="GET", session_id=session_id)

    def add_message(
        self,
        session_id: str,
        content: str,
        *,
        role: str = "user",
        importance: float | None = None,
        pinned: bool = False,
        metadata: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        payload = {
            "content": content,
            "role": role,
            "importance": importance,
            "pinned": pinned,
            "metadata": metadata,
        }
        return self._object("add_message", clean(payload), session_id=session_id)

    def set_slot(self, session_id: str, slot: str, value: str | None) -> dict[str, Any]:
        return self._object("set_slot", {"value": value}, session_id=session_id, slot=slot)

    def pin(self, session_id: str, key: str, content: str, reason: str = "") -> dict[str, Any]:
        payload = {"content": content, "reason": reason}
        return self._object("pin", payload, session_id=session_id, key=key)

    def unpin(self, session_id: str, key: str) -> dict[str, Any]:
        return self._object("unpin", session_id=session_id, key=key)

    def clear_messages(self, session_id: str) -> dict[str, Any]:
        return self._object("clear_messages", session_id=session_id)

    # -- whole store -------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        return self._object("stats")

    def export_lines(
        self, *, embeddings: bool = True, progress: Progress | None = None
    ) -> Iterator[str]:
        route = self._route("export_lines")
        response = self._open(route.method, route.path, query={"embeddings": embeddings})

        def lines() -> Iterator[str]:
            total, done = 0, 0
            with response:
                for raw in response:
                    line = raw.decode("utf-8").rstrip("\r\n")
                    if not line:
                        continue
                    if total == 0 and progress is not None:
                        head = json.loads(line)
                        total = sum(head.get("counts", {}).values()) if head else 0
                    elif progress is not None:
                        done += 1
                        progress("export", min(done, total), total)
                    yield line

        return lines()

    def import_lines(
        self,
        lines: Iterable[str | bytes],
        *,
        reembed: bool = False,
        progress: Progress | None = None,
    ) -> dict[str, Any]:
        body = b"".join(
            (line if isinstance(line, bytes) else line.encode("utf-8")).rstrip(b"\r\n") + b"\n"
            for line in lines
        )
        if progress is not None:
            progress("upload", 0, 1)
        route = self._route("import_lines")
        with self._open(
            route.method,
            route.path,
            body=body,
            content_type="application/x-ndjson",
            query={"reembed": reembed},
        ) as response:
            result: dict[str, Any] = json.loads(response.read())
        if progress is not None:
            progress("upload", 1, 1)
        return result

    def add_key(self, agent_name: str, *, admin: bool = False, label: str = "") -> dict[str, Any]:
        return self._object("add_key", {"agent_name": agent_name, "admin": admin, "label": label})

    def list_keys(self, *, include_revoked: bool = False) -> list[dict[str, Any]]:
        return self._list("list_keys", query={"include_revoked": include_revoked})

    def revoke_key(self, key_id: str) -> dict[str, Any]:
        return self._object("revoke_key", key_id=key_id)

    # -- pipelines -----------------------------------------------------------------------

    def recall(
        self,
        query: str,
        *,
        session_id: str | None = None,
        budget_tokens: int | None = None,
        layers: Sequence[str] | None = None,
    ) -> dict[str, Any]:
        payload = {
            "query": query,
            "session_id": session_id,
            "budget_tokens": budget_tokens,
            "layers": None if layers is None else list(layers),
        }
        return self._object("recall", clean(payload))

    def distill(self) -> dict[str, Any]:
        return self._object("distill")

    def forget(self, *, dry_run: bool = False) -> dict[str, Any]:
        return self._object("forget", {"dry_run": dry_run})

    def maintain(self) -> dict[str, Any]:
        return self._object("maintain")

    def enforce_collections(self, *, dry_run: bool = False) -> dict[str, Any]:
        return self._object("enforce_collections", {"dry_run": dry_run})

    def audit(self, query: AuditQuery | None = None) -> list[dict[str, Any]]:
        return self._list("audit", query=(query or AuditQuery()).params())

    def restore(
        self, item_id: str, *, layer: str | None = None, collection: str | None = None
    ) -> dict[str, Any]:
        payload = {"id": item_id, "layer": layer, "collection": collection}
        return self._object("restore", clean(payload))

    def purge(
        self, item_id: str, *, reason: str, layer: str = "episodic", collection: str = ""
    ) -> dict[str, Any]:
        payload = {
            "id": item_id,
            "reason": reason,
            "layer": layer,
            "collection": collection or None,
        }
        return self._object("purge", clean(payload))

    def index(
        self,
        path: str | os.PathLike[str],
        collection: str,
        *,
        source: str | None = None,
        include: Iterable[str] = (),
        exclude: Iterable[str] = (),
        max_file_bytes: int | None = None,
        scope: str | Sequence[str] | None = None,
        use_git: bool | None = None,
        dry_run: bool = False,
        progress: ProgressCallback | None = None,
    ) -> dict[str, Any]:
        """Index a folder on the *server's* machine (the path is read there); ``progress``
        is not called (the server reports figures at the end)."""
        payload = {
            "path": str(path),
            "source": source,
            "include": list(include) or None,
            "exclude": list(exclude) or None,
            "max_file_bytes": max_file_bytes,
            "scope": scope,
            "use_git": use_git,
            "dry_run": dry_run,
        }
        return self._object("index", clean(payload), collection=collection)

    def cache(
        self,
        key: str,
        content: str,
        ttl_days: float,
        source: str,
        *,
        collection: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        scope: str | Sequence[str] | None = None,
    ) -> dict[str, Any]:
        payload = {
            "key": key,
            "content": content,
            "ttl_days": ttl_days,
            "source": source,
            "collection": collection,
            "metadata": metadata,
            "scope": scope,
        }
        return self._object("cache", clean(payload))

    def cached(self, key: str, *, collection: str | None = None) -> dict[str, Any]:
        return self._object("cached", query={"key": key, "collection": collection})
