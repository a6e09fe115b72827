"""The REST API as data: each operation of the clients is a :class:`Call` — method, path,
body, query and the decoder of its answer — built here without any I/O.

:class:`~omoide.client.sync.Client` and :class:`~omoide.client.aio.AsyncClient` send the
same calls through a blocking or an asynchronous transport, so the two clients cannot drift
apart. Errors come back as the :mod:`omoide.errors` class the server names (:func:`error_for`).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import omoide.errors
from omoide.client.decode import decode, decode_context, decode_eviction
from omoide.core.models import Episode, Pin, Procedure, ProcedureVersion, QueryHit
from omoide.core.models import SemanticDocument as Document
from omoide.errors import NotFoundError, OmoideError, PermissionDeniedError, ValidationError
from omoide.ingest.conversation import AddReport
from omoide.ingest.reports import IndexReport
from omoide.layers.working import Eviction
from omoide.pipelines.distill import DistillReport
from omoide.pipelines.forgetting import ForgetReport
from omoide.pipelines.lifecycle import AuditEntry
from omoide.pipelines.scheduler import MaintenanceReport
from omoide.recall.context import Context

__all__ = ["Call", "error_for", "plain"]

T = TypeVar("T")

#: Every error class of :mod:`omoide.errors`, by the name the server's error body gives.
ERRORS: dict[str, type[OmoideError]] = {
    name: cls
    for name, cls in inspect.getmembers(omoide.errors, inspect.isclass)
    if issubclass(cls, OmoideError)
}


@dataclass(frozen=True)
class Call(Generic[T]):
    """One request and how to read its answer."""

    method: str
    path: str
    decode: Callable[[Any], T]
    body: Any = None
    query: Mapping[str, Any] | None = None


def plain(value: Any) -> Any:
    """``value`` as JSON data: datetimes in ISO 8601, tuples as lists, None entries dropped
    from mappings (the API's "not given")."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def _q(value: str) -> str:
    return quote(value, safe="")


def _list(cls: type[T]) -> Callable[[Any], list[T]]:
    return lambda data: [decode(cls, item) for item in data]


def _one(cls: type[T]) -> Callable[[Any], T]:
    return lambda data: decode(cls, data)


def _message(data: Any) -> str:
    return str(data) if data else "no detail"


def error_for(status: int, body: bytes) -> OmoideError:
    """The :mod:`omoide.errors` exception a refusal stands for.

    The error body names the class (``{"error": "PermissionDeniedError", "detail": ...}``);
    a validation problem (``{"detail": [{"loc": [...], "msg": ...}]}``) is a ValidationError
    naming the field. Anything else is an OmoideError with the status and the server's words.
    """
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    detail = data.get("detail") if isinstance(data, dict) else None
    if isinstance(data, dict) and isinstance(data.get("problems"), list):
        detail = data["problems"]  # the one error body: bad input lists its problems
    name = data.get("error") if isinstance(data, dict) else None
    cls = ERRORS.get(name) if isinstance(name, str) else None
    if isinstance(detail, list):
        first = detail[0] if detail and isinstance(detail[0], dict) else {}
        loc = [str(p) for p in first.get("loc", []) if p not in ("body", "query", "path")]
        field = ".".join(loc) or "request"
        message = _message(first.get("msg"))
        if cls is None or not issubclass(cls, ValidationError):
            cls = ValidationError
        return _instance(cls, f"{field}: {message}", field=field, message=message)
    text = _message(detail) if detail is not None else body.decode("utf-8", "replace")[:500]
    if cls is None:
        cls = NotFoundError if status == 404 else None
    if cls is None:
        return OmoideError(f"the server answered {status}: {text}")
    return _instance(cls, text)


def _instance(cls: type[OmoideError], text: str, **attributes: Any) -> OmoideError:
    """An instance of ``cls`` carrying the server's message (the classes' constructors take
    their parts, which the wire does not keep apart)."""
    exc = cls.__new__(cls)
    Exception.__init__(exc, text)
    if issubclass(cls, ValidationError):
        attributes.setdefault("field", "request")
        attributes.setdefault("message", text)
    if issubclass(cls, NotFoundError):
        attributes.update(kind="item", key=text)
    for key, value in attributes.items():
        setattr(exc, key, value)
    return exc


# -- identity and episodic -----------------------------------------------------------------


def whoami() -> Call[dict[str, Any]]:
    return Call("GET", "/v1/whoami", dict)


def record(fields: Mapping[str, Any]) -> Call[Episode]:
    return Call("POST", "/v1/episodes", _one(Episode), plain(fields))


def record_many(items: Sequence[Mapping[str, Any]]) -> Call[list[Episode]]:
    return Call("POST", "/v1/episodes/batch", _list(Episode), {"episodes": plain(list(items))})


def _range(time_range: Sequence[datetime | str | None] | None) -> dict[str, Any]:
    if time_range is None:
        return {}
    if isinstance(time_range, str) or len(time_range) != 2:
        raise ValidationError("time_range", "expected (since, until)")
    return {"since": time_range[0], "until": time_range[1]}


def search(
    query: str,
    agent_name: str | None,
    event_type: str | None,
    time_range: Sequence[datetime | str | None] | None,
    tags: Sequence[str] | None,
    top_k: int,
) -> Call[list[Episode]]:
    body = {
        "query": query,
        "agent_name": agent_name,
        "event_type": event_type,
        "tags": tags,
        "top_k": top_k,
        **_range(time_range),
    }
    return Call("POST", "/v1/episodes/search", _list(Episode), plain(body))


def browse(
    agent_name: str | None,
    event_type: str | None,
    time_range: Sequence[datetime | str | None] | None,
    limit: int,
    offset: int,
) -> Call[list[Episode]]:
    query = {
        "agent_name": agent_name,
        "event_type": event_type,
        "limit": limit,
        "offset": offset,
        **_range(time_range),
    }
    return Call("GET", "/v1/episodes", _list(Episode), query=plain(query))


def get_episode(episode_id: str) -> Call[Episode]:
    return Call("GET", f"/v1/episodes/{_q(episode_id)}", _one(Episode))


def update_episode(episode_id: str, fields: Mapping[str, Any]) -> Call[Episode]:
    return Call("PATCH", f"/v1/episodes/{_q(episode_id)}", _one(Episode), plain(fields))


def delete_episode(episode_id: str) -> Call[Episode]:
    return Call("DELETE", f"/v1/episodes/{_q(episode_id)}", _one(Episode))


# -- semantic ----------------------------------------------------------------------------


def collections() -> Call[list[str]]:
    return Call("GET", "/v1/collections", lambda data: [c["name"] for c in data])


def store(
    collection: str,
    documents: Sequence[str],
    metadatas: Sequence[Mapping[str, Any] | None] | None,
    ids: Sequence[str] | None,
    scope: str | Sequence[str] | None,
) -> Call[list[str]]:
    if scope is not None and not isinstance(scope, str):
        scope = ",".join(scope)
    body = {"documents": documents, "ids": ids, "scope": scope}
    payload = plain(body)
    if metadatas is not None:  # a None entry is "no metadata", kept in place
        payload["metadatas"] = [None if m is None else plain(m) for m in metadatas]
    path = f"/v1/collections/{_q(collection)}/documents"
    return Call("POST", path, lambda data: list(data["ids"]), payload)


def query(
    collection: str,
    query_text: str,
    n_results: int,
    where: Mapping[str, Any] | None,
    where_document: Mapping[str, Any] | None,
    rank: str = "relevance",
) -> Call[list[QueryHit]]:
    body = {
        "query_text": query_text,
        "n_results": n_results,
        "where": where,
        "where_document": where_document,
        "rank": rank,
    }
    path = f"/v1/collections/{_q(collection)}/query"
    return Call("POST", path, _list(QueryHit), plain(body))


def get_document(collection: str, doc_id: str) -> Call[Document]:
    return Call("GET", f"/v1/collections/{_q(collection)}/documents/{_q(doc_id)}", _one(Document))


def delete_document(collection: str, doc_id: str) -> Call[Document]:
    path = f"/v1/collections/{_q(collection)}/documents/{_q(doc_id)}"
    return Call("DELETE", path, _one(Document))


def documents(collection: str, limit: int, offset: int) -> Call[list[Document]]:
    path = f"/v1/collections/{_q(collection)}/documents"
    return Call("GET", path, _list(Document), query={"limit": limit, "offset": offset})


def cache(
    key: str,
    content: str,
    ttl_days: float,
    source: str,
    collection: str | None,
    metadata: Mapping[str, Any] | None,
    scope: str | None,
) -> Call[str]:
    body = {
        "key": key,
        "content": content,
        "ttl_days": ttl_days,
        "source": source,
        "collection": collection,
        "metadata": metadata,
        "scope": scope,
    }
    return Call("PUT", "/v1/cache", lambda data: str(data["id"]), plain(body))


def cached(key: str, collection: str | None) -> Call[Document]:
    return Call(
        "GET", "/v1/cache", _one(Document), query=plain({"key": key, "collection": collection})
    )


# -- procedural --------------------------------------------------------------------------


def procedures() -> Call[list[Procedure]]:
    return Call("GET", "/v1/procedures", _list(Procedure))


def register(fields: Mapping[str, Any]) -> Call[Procedure]:
    return Call("POST", "/v1/procedures", _one(Procedure), plain(fields))


def get_procedure(name: str) -> Call[Procedure]:
    return Call("GET", f"/v1/procedures/{_q(name)}", _one(Procedure))


def matches(task: str) -> Call[list[Procedure]]:
    return Call(
        "POST",
        "/v1/procedures/match",
        lambda data: [decode(Procedure, p) for p in data["matches"]],
        {"task": task},
    )


def outcome(name: str, quality_score: float, success: bool) -> Call[Procedure]:
    body = {"quality_score": quality_score, "success": success}
    return Call("POST", f"/v1/procedures/{_q(name)}/outcomes", _one(Procedure), body)


def evolve(name: str, template: str, trigger: str | None) -> Call[Procedure]:
    body = plain({"template": template, "trigger": trigger})
    return Call("POST", f"/v1/procedures/{_q(name)}/versions", _one(Procedure), body)


def rollback(name: str, version: int) -> Call[Procedure]:
    body = {"version": version}
    return Call("POST", f"/v1/procedures/{_q(name)}/rollback", _one(Procedure), body)


def history(name: str) -> Call[list[ProcedureVersion]]:
    return Call("GET", f"/v1/procedures/{_q(name)}/history", _list(ProcedureVersion))


# -- working memory ------------------------------------------------------------------------


def _identity(data: Any) -> dict[str, Any]:
    return dict(data)


def _evictions(data: Any) -> list[Eviction]:
    return [decode_eviction(e) for e in data["evictions"]]


def session(session_id: str) -> Call[dict[str, Any]]:
    return Call("GET", f"/v1/working/{_q(session_id)}", _identity)


def open_session(session_id: str, max_tokens: int) -> Call[dict[str, Any]]:
    body = {"max_tokens": max_tokens}
    return Call("PUT", f"/v1/working/{_q(session_id)}", _identity, body)


def add_message(session_id: str, fields: Mapping[str, Any]) -> Call[list[Eviction]]:
    path = f"/v1/working/{_q(session_id)}/messages"
    return Call("POST", path, _evictions, plain(fields))


def set_slot(session_id: str, slot: str, value: str | None) -> Call[dict[str, Any]]:
    path = f"/v1/working/{_q(session_id)}/slots/{_q(slot)}"
    return Call("PUT", path, _identity, {"value": value})


def pin(session_id: str, key: str, content: str, reason: str) -> Call[Pin]:
    path = f"/v1/working/{_q(session_id)}/pins/{_q(key)}"
    return Call("PUT", path, _one(Pin), {"content": content, "reason": reason})


def unpin(session_id: str, key: str) -> Call[Pin]:
    return Call("DELETE", f"/v1/working/{_q(session_id)}/pins/{_q(key)}", _one(Pin))


def clear_messages(session_id: str) -> Call[list[Eviction]]:
    return Call("POST", f"/v1/working/{_q(session_id)}/clear", _evictions)


# -- pipelines -----------------------------------------------------------------------------


def recall(
    query: str,
    session_id: str | None,
    budget_tokens: int | None,
    layers: Sequence[str] | None,
    *,
    collections: Sequence[str] | None = None,
    top_k: int | None = None,
    min_score: float | None = None,
    diversity: float | None = None,
) -> Call[Context]:
    body = {
        "query": query,
        "session_id": session_id,
        "budget_tokens": budget_tokens,
        "layers": None if layers is None else list(layers),
        "collections": None if collections is None else list(collections),
        "top_k": top_k,
        "min_score": min_score,
        "diversity": diversity,
    }
    return Call("POST", "/v1/recall", decode_context, plain(body))


def _add_report(data: Any) -> AddReport:
    return AddReport(
        agent_name=str(data["agent_name"]),
        session_id=str(data["session_id"]),
        recorded=[decode(Episode, e) for e in data["recorded"]],
        duplicates=[str(i) for i in data["duplicates"]],
        skipped=[(int(s["position"]), str(s["reason"])) for s in data["skipped"]],
        extracted=[str(i) for i in data["extracted"]],
        notes=[str(n) for n in data["notes"]],
    )


def add(
    session_id: str,
    messages: Any,
    timestamp: datetime | str | None,
    scope: str | Sequence[str] | None,
) -> Call[AddReport]:
    if isinstance(messages, str | Mapping):
        messages = [messages]
    turns = [{"role": "user", "content": m} if isinstance(m, str) else m for m in messages]
    body = {"session_id": session_id, "messages": turns, "timestamp": timestamp, "scope": scope}
    return Call("POST", "/v1/messages", _add_report, plain(body))


def distill() -> Call[DistillReport]:
    return Call("POST", "/v1/distill", _one(DistillReport))


def forget(dry_run: bool) -> Call[ForgetReport]:
    return Call("POST", "/v1/forget", _one(ForgetReport), {"dry_run": dry_run})


def maintain() -> Call[MaintenanceReport]:
    return Call("POST", "/v1/maintain", _one(MaintenanceReport))


def audit(item_id: str | None, filters: Mapping[str, Any]) -> Call[list[AuditEntry]]:
    query = plain({"item_id": item_id, **filters})
    return Call("GET", "/v1/audit", _list(AuditEntry), query=query)


def restore(item_id: str, layer: str | None, collection: str | None) -> Call[str]:
    body = plain({"id": item_id, "layer": layer, "collection": collection})
    return Call("POST", "/v1/restore", lambda data: str(data["layer"]), body)


def purge(item_id: str, reason: str, layer: str, collection: str) -> Call[AuditEntry]:
    body = plain(
        {"id": item_id, "reason": reason, "layer": layer, "collection": collection or None}
    )
    return Call("POST", "/v1/admin/purge", _one(AuditEntry), body)


def index(path: str, collection: str, options: Mapping[str, Any]) -> Call[IndexReport]:
    body = plain({"path": path, **options})
    return Call("POST", f"/v1/collections/{_q(collection)}/index", _one(IndexReport), body)


# -- who writes ----------------------------------------------------------------------------


def check_agent(agent: str | None, given: str, field: str = "agent_name") -> None:
    """Refuse to act as ``given`` when the key stands for ``agent``: on a server the key
    decides who writes (``""`` means the key's agent, as it means "no agent" in the library)."""
    if given in ("", agent):
        return
    raise PermissionDeniedError(
        f"{field}: this client's key acts as {agent!r}, not {given!r} "
        "(on a server the key decides the agent; use that agent's key)"
    )


def unsupported(name: str, value: Any) -> None:
    """Refuse an argument of the library that a server decides itself (its clock, its
    batch size)."""
    if value is not None:
        raise ValidationError(name, "is not available through a server (its own settings apply)")


def message_fields(
    message: Any,
    role: str | None,
    importance: float | None,
    pinned: bool | None,
    metadata: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The body of an added message, from what ``WorkingMemory.add_message`` takes: text, a
    mapping of message fields or a :class:`~omoide.core.models.Message`; keywords win."""
    if isinstance(message, str):
        fields: dict[str, Any] = {"content": message}
    elif isinstance(message, Mapping):
        fields = dict(message)
    elif hasattr(message, "content") and hasattr(message, "role"):
        fields = {
            "content": message.content,
            "role": message.role,
            "importance": message.importance,
            "pinned": message.pinned,
            "metadata": dict(message.metadata),
        }
    else:
        raise ValidationError("message", "expected text, a mapping or a Message")
    given = {"role": role, "importance": importance, "pinned": pinned, "metadata": metadata}
    fields.update({k: v for k, v in given.items() if v is not None})
    return fields
