"""The operations of :mod:`omoide.service.local`, against a running ``omoide serve``.

A server owns its data directory, so the CLI (``--url``) and a stdio MCP server
(``omoide mcp --url``) reach it over HTTP. :class:`RemoteOperations` implements
:class:`~omoide.service.protocol.Operations` as :class:`~omoide.service.local.LocalOperations`
does; the key decides the agent, and the
server's refusals come back as the same :mod:`omoide.errors` exceptions. It uses only the
standard library, so the base install can talk to a server.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from omoide.errors import (
    AlreadyExistsError,
    AuthenticationError,
    CapacityError,
    LLMError,
    NotFoundError,
    OmoideError,
    PermissionDeniedError,
    ProtectedMemoryError,
    StorageError,
    StoreLockedError,
    ValidationError,
)
from omoide.ingest.indexing import ProgressCallback
from omoide.service.protocol import AuditQuery
from omoide.service.transfer import Progress

__all__ = ["RemoteOperations"]

_ERRORS: dict[str, type[OmoideError]] = {
    cls.__name__: cls
    for cls in (
        AlreadyExistsError,
        AuthenticationError,
        CapacityError,
        LLMError,
        PermissionDeniedError,
        ProtectedMemoryError,
        StorageError,
        StoreLockedError,
    )
}


def _error(status: int, body: bytes) -> OmoideError:
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    if status == 422 and isinstance(data, dict) and isinstance(data.get("detail"), list):
        first = data["detail"][0] if data["detail"] else {}
        loc = [str(p) for p in first.get("loc", []) if p not in ("body", "query", "path")]
        return ValidationError(".".join(loc) or "request", str(first.get("msg", "invalid")))
    detail = data.get("detail") if isinstance(data, dict) else None
    message = str(detail) if detail else body.decode("utf-8", "replace")[:500]
    name = data.get("error") if isinstance(data, dict) else None
    if status == 404:
        missing = NotFoundError("item", message)
        missing.args = (message,)  # keep the server's wording
        return missing
    if isinstance(name, str) and name in _ERRORS:
        return _ERRORS[name](message)
    if status == 401:
        return AuthenticationError(message)
    if status == 403:
        return PermissionDeniedError(message)
    return OmoideError(f"server answered {status}: {message}")


def _clean(fields: Mapping[str, Any]) -> dict[str, Any]:
    return {
        k: (v.isoformat() if isinstance(v, datetime) else v)
        for k, v in fields.items()
        if v is not None
    }


class RemoteOperations:
    """The operations over HTTP, as the agent of ``key``."""

    def __init__(self, url: str, key: str | None, *, timeout: float = 300.0) -> None:
        parsed = urllib.parse.urlparse(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValidationError("url", f"expected http(s)://host:port, got {url!r}")
        self.url = url.rstrip("/")
        self.key = key
        self.timeout = timeout

    # -- transport ---------------------------------------------------------------------

    def _open(
        self,
        method: str,
        path: str,
        *,
        body: bytes | None = None,
        content_type: str = "application/json",
        query: Mapping[str, Any] | None = None,
    ) -> Any:
        url = self.url + path
        if query:
            url += "?" + urllib.parse.urlencode(
                {
                    k: (str(v).lower() if isinstance(v, bool) else v)
                    for k, v in _clean(query).items()
                }
            )
        headers = {"Accept": "application/json", "Content-Type": content_type}
        if self.key:
            headers["Authorization"] = f"Bearer {self.key}"
        request = urllib.request.Request(url, data=body, method=method, headers=headers)
        try:
            return urllib.request.urlopen(request, timeout=self.timeout)
        except urllib.error.HTTPError as exc:
            raise _error(exc.code, exc.read()) from None
        except urllib.error.URLError as exc:
            raise OmoideError(
                f"cannot reach the omoide server at {self.url}: {exc.reason}"
            ) from None

    def _call(
        self,
        method: str,
        path: str,
        payload: Any = None,
        *,
        query: Mapping[str, Any] | None = None,
    ) -> Any:
        body = None if payload is None else json.dumps(payload, ensure_ascii=False).encode()
        with self._open(method, path, body=body, query=query) as response:
            return json.loads(response.read())

    @staticmethod
    def _q(value: str) -> str:
        return urllib.parse.quote(value, safe="")

    # -- identity and episodic ---------------------------------------------------------

    def whoami(self) -> dict[str, Any]:
        result: dict[str, Any] = self._call("GET", "/v1/whoami")
        return result

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
        payload = _clean(
            {
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
        )
        result: dict[str, Any] = self._call("POST", "/v1/episodes", payload)
        return result

    def record_many(self, items: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        payload = {"episodes": [_clean(i) for i in items]}
        result: list[dict[str, Any]] = self._call("POST", "/v1/episodes/batch", payload)
        return result

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
        result: list[dict[str, Any]] = self._call("POST", "/v1/episodes/search", _clean(payload))
        return result

    def get_episode(self, episode_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._call("GET", f"/v1/episodes/{self._q(episode_id)}")
        return result

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
        result: list[dict[str, Any]] = self._call("GET", "/v1/episodes", query=filters)
        return result

    def update_episode(
        self,
        episode_id: str,
        *,
        outcome: str | None = None,
        importance: float | None = None,
        tags: Sequence[str] | None = None,
    ) -> dict[str, Any]:
        fields = _clean({"outcome": outcome, "importance": importance, "tags": tags})
        path = f"/v1/episodes/{self._q(episode_id)}"
        result: dict[str, Any] = self._call("PATCH", path, fields)
        return result

    def delete_episode(self, episode_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._call("DELETE", f"/v1/episodes/{self._q(episode_id)}")
        return result

    # -- semantic ----------------------------------------------------------------------

    def collections(self) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self._call("GET", "/v1/collections")
        return result

    def store(
        self,
        collection: str,
        documents: Sequence[str],
        metadatas: Sequence[Mapping[str, Any] | None] | None = None,
        ids: Sequence[str] | None = None,
        *,
        scope: str | Sequence[str] | None = None,
    ) -> dict[str, Any]:
        payload = _clean(
            {
                "documents": list(documents),
                "metadatas": None if metadatas is None else list(metadatas),
                "ids": None if ids is None else list(ids),
                "scope": scope if scope is None or isinstance(scope, str) else ",".join(scope),
            }
        )
        path = f"/v1/collections/{self._q(collection)}/documents"
        result: dict[str, Any] = self._call("POST", path, payload)
        return result

    def query(
        self,
        collection: str,
        query_text: str,
        n_results: int = 5,
        where: Mapping[str, Any] | None = None,
        where_document: Mapping[str, Any] | None = None,
    ) -> list[dict[str, Any]]:
        payload = _clean(
            {
                "query_text": query_text,
                "n_results": n_results,
                "where": where,
                "where_document": where_document,
            }
        )
        path = f"/v1/collections/{self._q(collection)}/query"
        result: list[dict[str, Any]] = self._call("POST", path, payload)
        return result

    def get_document(self, collection: str, doc_id: str) -> dict[str, Any]:
        path = f"/v1/collections/{self._q(collection)}/documents/{self._q(doc_id)}"
        result: dict[str, Any] = self._call("GET", path)
        return result

    def list_documents(
        self, collection: str, *, limit: int = 50, offset: int = 0
    ) -> list[dict[str, Any]]:
        path = f"/v1/collections/{self._q(collection)}/documents"
        result: list[dict[str, Any]] = self._call(
            "GET", path, query={"limit": limit, "offset": offset}
        )
        return result

    def delete_document(self, collection: str, doc_id: str) -> dict[str, Any]:
        path = f"/v1/collections/{self._q(collection)}/documents/{self._q(doc_id)}"
        result: dict[str, Any] = self._call("DELETE", path)
        return result

    # -- procedural --------------------------------------------------------------------

    def procedures(self) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self._call("GET", "/v1/procedures")
        return result

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
        fields = {
            "description": description,
            "success_rate": success_rate,
            "avg_quality_score": avg_quality_score,
            "scope": scope,
        }
        payload = _clean({"name": name, "trigger": trigger, "template": template, **fields})
        result: dict[str, Any] = self._call("POST", "/v1/procedures", payload)
        return result

    def get_procedure(self, name: str) -> dict[str, Any]:
        result: dict[str, Any] = self._call("GET", f"/v1/procedures/{self._q(name)}")
        return result

    def match_procedure(self, task: str) -> dict[str, Any]:
        result: dict[str, Any] = self._call("POST", "/v1/procedures/match", {"task": task})
        return result

    def report_outcome(self, name: str, quality_score: float, success: bool) -> dict[str, Any]:
        payload = {"quality_score": quality_score, "success": success}
        result: dict[str, Any] = self._call(
            "POST", f"/v1/procedures/{self._q(name)}/outcomes", payload
        )
        return result

    def evolve_procedure(
        self, name: str, template: str, *, trigger: str | None = None
    ) -> dict[str, Any]:
        payload = _clean({"template": template, "trigger": trigger})
        result: dict[str, Any] = self._call(
            "POST", f"/v1/procedures/{self._q(name)}/versions", payload
        )
        return result

    def procedure_history(self, name: str) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self._call("GET", f"/v1/procedures/{self._q(name)}/history")
        return result

    def rollback_procedure(self, name: str, version: int) -> dict[str, Any]:
        result: dict[str, Any] = self._call(
            "POST", f"/v1/procedures/{self._q(name)}/rollback", {"version": version}
        )
        return result

    # -- working memory ----------------------------------------------------------------

    def working(
        self, session_id: str, *, create: bool = False, max_tokens: int | None = None
    ) -> dict[str, Any]:
        path = f"/v1/working/{self._q(session_id)}"
        if create or max_tokens is not None:
            payload = None if max_tokens is None else {"max_tokens": max_tokens}
            result: dict[str, Any] = self._call("PUT", path, payload or {})
        else:
            result = self._call("GET", path)
        return result

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
        fields = {"role": role, "importance": importance, "pinned": pinned, "metadata": metadata}
        result: dict[str, Any] = self._call(
            "POST",
            f"/v1/working/{self._q(session_id)}/messages",
            _clean({"content": content, **fields}),
        )
        return result

    def set_slot(self, session_id: str, slot: str, value: str | None) -> dict[str, Any]:
        path = f"/v1/working/{self._q(session_id)}/slots/{self._q(slot)}"
        result: dict[str, Any] = self._call("PUT", path, {"value": value})
        return result

    def pin(self, session_id: str, key: str, content: str, reason: str = "") -> dict[str, Any]:
        path = f"/v1/working/{self._q(session_id)}/pins/{self._q(key)}"
        result: dict[str, Any] = self._call("PUT", path, {"content": content, "reason": reason})
        return result

    def unpin(self, session_id: str, key: str) -> dict[str, Any]:
        path = f"/v1/working/{self._q(session_id)}/pins/{self._q(key)}"
        result: dict[str, Any] = self._call("DELETE", path)
        return result

    def clear_messages(self, session_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._call("POST", f"/v1/working/{self._q(session_id)}/clear")
        return result

    # -- whole store -------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        result: dict[str, Any] = self._call("GET", "/v1/stats")
        return result

    def export_lines(
        self, *, embeddings: bool = True, progress: Progress | None = None
    ) -> Iterator[str]:
        response = self._open("GET", "/v1/export", query={"embeddings": embeddings})

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
        with self._open(
            "POST",
            "/v1/import",
            body=body,
            content_type="application/x-ndjson",
            query={"reembed": reembed},
        ) as response:
            result: dict[str, Any] = json.loads(response.read())
        if progress is not None:
            progress("upload", 1, 1)
        return result

    # -- pipelines -----------------------------------------------------------------------

    def recall(
        self,
        query: str,
        *,
        session_id: str | None = None,
        budget_tokens: int | None = None,
        layers: Sequence[str] | None = None,
    ) -> dict[str, Any]:
        payload = _clean(
            {
                "query": query,
                "session_id": session_id,
                "budget_tokens": budget_tokens,
                "layers": None if layers is None else list(layers),
            }
        )
        result: dict[str, Any] = self._call("POST", "/v1/recall", payload)
        return result

    def distill(self) -> dict[str, Any]:
        result: dict[str, Any] = self._call("POST", "/v1/distill")
        return result

    def forget(self, *, dry_run: bool = False) -> dict[str, Any]:
        result: dict[str, Any] = self._call("POST", "/v1/forget", {"dry_run": dry_run})
        return result

    def maintain(self) -> dict[str, Any]:
        result: dict[str, Any] = self._call("POST", "/v1/maintain")
        return result

    def enforce_collections(self, *, dry_run: bool = False) -> dict[str, Any]:
        result: dict[str, Any] = self._call("POST", "/v1/enforce-collections", {"dry_run": dry_run})
        return result

    def audit(self, query: AuditQuery | None = None) -> list[dict[str, Any]]:
        params = (query or AuditQuery()).params()
        result: list[dict[str, Any]] = self._call("GET", "/v1/audit", query=params)
        return result

    def restore(
        self, item_id: str, *, layer: str | None = None, collection: str | None = None
    ) -> dict[str, Any]:
        payload = _clean({"id": item_id, "layer": layer, "collection": collection})
        result: dict[str, Any] = self._call("POST", "/v1/restore", payload)
        return result

    def purge(
        self, item_id: str, *, reason: str, layer: str = "episodic", collection: str = ""
    ) -> dict[str, Any]:
        payload = _clean({"id": item_id, "reason": reason, "layer": layer})
        if collection:
            payload["collection"] = collection
        result: dict[str, Any] = self._call("POST", "/v1/admin/purge", payload)
        return result

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
        options = {
            "source": source,
            "include": list(include) or None,
            "exclude": list(exclude) or None,
            "max_file_bytes": max_file_bytes,
            "scope": scope,
            "use_git": use_git,
            "dry_run": dry_run,
        }
        payload = _clean({"path": str(path), **options})
        route = f"/v1/collections/{self._q(collection)}/index"
        result: dict[str, Any] = self._call("POST", route, payload)
        return result

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
        fields = {"collection": collection, "metadata": metadata, "scope": scope}
        payload = _clean(
            {"key": key, "content": content, "ttl_days": ttl_days, "source": source, **fields}
        )
        result: dict[str, Any] = self._call("PUT", "/v1/cache", payload)
        return result

    def cached(self, key: str, *, collection: str | None = None) -> dict[str, Any]:
        result: dict[str, Any] = self._call(
            "GET", "/v1/cache", query={"key": key, "collection": collection}
        )
        return result

    # -- API keys ------------------------------------------------------------------------

    def add_key(self, agent_name: str, *, admin: bool = False, label: str = "") -> dict[str, Any]:
        payload = {"agent_name": agent_name, "admin": admin, "label": label}
        result: dict[str, Any] = self._call("POST", "/v1/keys", payload)
        return result

    def list_keys(self, *, include_revoked: bool = False) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self._call(
            "GET", "/v1/keys", query={"include_revoked": include_revoked}
        )
        return result

    def revoke_key(self, key_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self._call("DELETE", f"/v1/keys/{self._q(key_id)}")
        return result
