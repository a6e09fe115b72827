"""The operations of :mod:`omoide.service.local`, against a running ``omoide serve``.

A server owns its data directory, so the CLI (``--url``) and a stdio MCP server
(``omoide mcp --url``) reach it over HTTP. :class:`RemoteOperations` implements
:class:`~omoide.service.protocol.Operations` as :class:`~omoide.service.local.LocalOperations`
does; each call goes to the method and path the operation table gives it
(:mod:`omoide.service._http`). Most operations are the generic call
(:func:`~omoide.service._http.remote_call`: the arguments go to the route as they are); the
few whose request is shaped otherwise are written out. The key decides the agent, and the
server's refusals come back as the same :mod:`omoide.errors` exceptions. It uses only the
standard library, so the base install can talk to a server.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from omoide.ingest.indexing import ProgressCallback
from omoide.service._http import HttpOperations, clean, remote_call
from omoide.service.protocol import AuditQuery, Operations
from omoide.service.transfer import Progress

__all__ = ["RemoteOperations"]


class RemoteOperations(HttpOperations):
    """The operations over HTTP, as the agent of ``key``."""

    # -- identity and episodic ---------------------------------------------------------

    whoami = remote_call(Operations.whoami)
    record = remote_call(Operations.record)

    def record_many(self, items: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        return self._list("record_many", {"episodes": [clean(i) for i in items]})

    search_episodes = remote_call(Operations.search_episodes)
    get_episode = remote_call(Operations.get_episode)
    list_episodes = remote_call(Operations.list_episodes)
    update_episode = remote_call(Operations.update_episode)
    delete_episode = remote_call(Operations.delete_episode)
    add = remote_call(Operations.add)

    # -- semantic ----------------------------------------------------------------------

    collections = remote_call(Operations.collections)

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

    query = remote_call(Operations.query)
    get_document = remote_call(Operations.get_document)
    list_documents = remote_call(Operations.list_documents)
    delete_document = remote_call(Operations.delete_document)

    # -- procedural --------------------------------------------------------------------

    procedures = remote_call(Operations.procedures)
    register_procedure = remote_call(Operations.register_procedure)
    get_procedure = remote_call(Operations.get_procedure)
    match_procedure = remote_call(Operations.match_procedure)
    report_outcome = remote_call(Operations.report_outcome)
    evolve_procedure = remote_call(Operations.evolve_procedure)
    procedure_history = remote_call(Operations.procedure_history)
    rollback_procedure = remote_call(Operations.rollback_procedure)

    # -- working memory ----------------------------------------------------------------

    def working(
        self, session_id: str, *, create: bool = False, max_tokens: int | None = None
    ) -> dict[str, Any]:
        if create or max_tokens is not None:
            payload = {} if max_tokens is None else {"max_tokens": max_tokens}
            return self._object("working", payload, method="PUT", session_id=session_id)
        return self._object("working", method="GET", session_id=session_id)

    add_message = remote_call(Operations.add_message)

    def set_slot(self, session_id: str, slot: str, value: str | None) -> dict[str, Any]:
        return self._object("set_slot", {"value": value}, session_id=session_id, slot=slot)

    pin = remote_call(Operations.pin)
    unpin = remote_call(Operations.unpin)
    clear_messages = remote_call(Operations.clear_messages)

    # -- whole store -------------------------------------------------------------------

    stats = remote_call(Operations.stats)

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

    add_key = remote_call(Operations.add_key)
    list_keys = remote_call(Operations.list_keys)
    revoke_key = remote_call(Operations.revoke_key)

    # -- pipelines -----------------------------------------------------------------------

    recall = remote_call(Operations.recall)
    distill = remote_call(Operations.distill)
    forget = remote_call(Operations.forget)
    maintain = remote_call(Operations.maintain)
    enforce_collections = remote_call(Operations.enforce_collections)

    def audit(self, query: AuditQuery | None = None) -> list[dict[str, Any]]:
        return self._list("audit", query=(query or AuditQuery()).params())

    restore = remote_call(Operations.restore)

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

    cache = remote_call(Operations.cache)
    cached = remote_call(Operations.cached)
