"""What the front ends do — the CLI, the REST server and the MCP server — over one Memory.

Each operation is a thin call into the library with the caller's identity applied:

* writes are recorded as the calling agent, never as an agent named in a request;
* reads see what the caller's scopes allow: its own items, global ones, and those shared with
  it or with one of its teams (``reader=`` / ``reader_teams=`` of the layers);
* changing or deleting an existing item (an episode, a document, a procedure's template) is
  for its owner; reporting an outcome is for anyone who can read the procedure;
* admin callers (admin keys, the local operator) read every scope and may run whole-store
  operations (export, import, API keys);
* an item the caller may not read answers exactly as an absent one; taking an explicit id
  that an unreadable item holds is a 409 that names no owner; ids a client chooses may not
  start with a prefix omoide generates ids with (:mod:`omoide.core.ids`).

Results are plain JSON-ready dicts — the shapes the REST API returns — so a front end runs the
operations in-process (:class:`LocalOperations`) or against a server
(:class:`~omoide.service.remote.RemoteOperations`) without knowing which. Adding an operation of the
library to every front end is one method here, one in ``remote``, one route and one command.
"""

from __future__ import annotations

import dataclasses
import threading
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from omoide.core.ids import check_client_id
from omoide.core.scope import reader_predicate, teams_of
from omoide.core.validation import check_datetime
from omoide.errors import AlreadyExistsError, NotFoundError, PermissionDeniedError, ValidationError
from omoide.layers.semantic.store import content_id
from omoide.layers.working import WorkingMemory, session_usage
from omoide.memory import Memory
from omoide.service.keys import ApiKey, KeyStore
from omoide.service.pipeline_ops import PipelineOperations
from omoide.service.transfer import Progress, export_jsonl, import_jsonl

__all__ = ["Caller", "LocalOperations", "to_json"]

#: How far after the clock an episode's timestamp may be (writers' clocks drift): a later
#: one is refused, since a date in year 9999 would keep an episode's freshness at 1.0 forever.
FUTURE_SKEW = timedelta(minutes=5)


@dataclass(frozen=True)
class Caller:
    """Who is calling, and what that allows.

    ``agent`` is who writes (None: the operator of a local directory, acting as no agent;
    writes then need an agent named explicitly). ``read_all`` callers read every scope,
    ``change_all`` callers may change or delete any item (others only their own), and
    ``admin`` callers may run whole-store operations (export, import, API keys).

    ========================  ========  ==========  =====
    caller                    read_all  change_all  admin
    ========================  ========  ==========  =====
    key of an agent           no        no          no
    admin key                 yes       no          yes
    local operator            yes       yes         yes
    local operator as agent   no        no          yes
    ========================  ========  ==========  =====
    """

    agent: str | None
    teams: frozenset[str] = frozenset()
    admin: bool = False
    read_all: bool = False
    change_all: bool = False
    #: A server's key (REST, MCP over HTTP): the caller is another process, perhaps on another
    #: machine, so what reads this machine's files (indexing) is limited to configured roots.
    remote: bool = False

    @classmethod
    def for_agent(cls, mem: Memory, agent: str, *, admin: bool = False) -> Caller:
        """An agent with the teams the configuration gives it (admins read every scope)."""
        return cls(agent, teams_of(agent, mem.config.teams), admin=admin, read_all=admin)

    @classmethod
    def for_key(cls, mem: Memory, key: ApiKey) -> Caller:
        return replace(cls.for_agent(mem, key.agent_name, admin=key.admin), remote=True)

    @classmethod
    def operator(cls, mem: Memory, agent: str | None = None) -> Caller:
        """The owner of a local directory; with ``agent``, acting and reading as that agent
        would (its scopes, its items), with whole-store operations still allowed."""
        if agent is None:
            return cls(None, admin=True, read_all=True, change_all=True)
        return cls(agent, teams_of(agent, mem.config.teams), admin=True)

    @property
    def reader(self) -> str | None:
        """The ``reader=`` of the layers: None reads every scope."""
        return None if self.read_all else self.agent


def to_json(value: Any) -> Any:
    """A record of the library as JSON-ready data (datetimes as ISO 8601 strings)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    return value


_STORE_LOCKS: weakref.WeakKeyDictionary[Memory, threading.Lock] = weakref.WeakKeyDictionary()
_STORE_LOCKS_GUARD = threading.Lock()


def _store_lock(mem: Memory) -> threading.Lock:
    """Serializes the ownership check of a store with its write (no other store can take the
    same id in between)."""
    with _STORE_LOCKS_GUARD:
        return _STORE_LOCKS.setdefault(mem, threading.Lock())


class LocalOperations(PipelineOperations):
    """The operations over an open :class:`Memory`, as ``caller``."""

    def __init__(self, mem: Memory, caller: Caller) -> None:
        self.mem = mem
        self.caller = caller

    # -- identity ----------------------------------------------------------------------

    @property
    def _reader(self) -> dict[str, Any]:
        return {"reader": self.caller.reader, "reader_teams": self.caller.teams}

    def _writer(self) -> str:
        if self.caller.agent is None:
            raise ValidationError(
                "agent_name", "this needs an agent to act as (writes are recorded as it)"
            )
        return self.caller.agent

    def _check_owner(self, kind: str, key: str, owner: str) -> None:
        if self.caller.change_all or (owner and owner == self.caller.agent):
            return
        raise PermissionDeniedError(
            f"{kind} {key!r} belongs to {owner or 'no agent'}; only its owner may change it"
        )

    def _require_admin(self, what: str) -> None:
        if not self.caller.admin:
            raise PermissionDeniedError(f"{what} needs an admin key")

    def _check_protected_writer(self, categories: Sequence[str], field: str) -> None:
        """Only admins and ``[protection] writers`` may write never-forget items: nobody but
        an admin purge can remove one, so any agent could otherwise fill the store for good."""
        if not categories or self.caller.admin:
            return
        if self.caller.agent in self.mem.config.protection.writers:
            return
        raise PermissionDeniedError(
            f"{field}: the item would be never-forget ({', '.join(categories)}); agent "
            f"{self.caller.agent!r} may not write protected items ([protection] writers)"
        )

    def _check_backdate(self, timestamp: Any, field: str) -> None:
        """Agents that are not admins may date an episode at most
        ``protection.agent_backdate_days`` into the past (the future is refused for all)."""
        if timestamp is None:
            return
        moment = check_datetime(field, timestamp)
        if moment > self.mem.clock.now() + FUTURE_SKEW:
            raise ValidationError(
                field,
                f"{moment.isoformat()} is more than {FUTURE_SKEW.total_seconds() / 60:g} "
                "minutes after the server's clock",
            )
        if self.caller.admin:
            return
        days = self.mem.config.protection.agent_backdate_days
        if moment < self.mem.clock.now() - timedelta(days=days):
            raise ValidationError(
                field, f"agents may date episodes at most {days:g} days into the past"
            )

    def _check_episode_writer(self, fields: Mapping[str, Any], event_type: Any, where: str) -> None:
        tags = fields.get("tags") or ()
        context = fields.get("context") or {}
        if not isinstance(event_type, str) or not isinstance(context, Mapping):
            return  # the store names the bad field
        if isinstance(tags, str) or not isinstance(tags, Sequence):
            return
        categories = self.mem.never_forget.episode_categories(
            event_type, [t for t in tags if isinstance(t, str)], context
        )
        self._check_protected_writer(categories, where)

    def _check_document_writer(
        self, collection: str, metadatas: Sequence[Mapping[str, Any] | None] | None, count: int
    ) -> None:
        if not isinstance(collection, str):
            return
        listed = list(metadatas) if isinstance(metadatas, Sequence) else []
        for i in range(count):
            metadata = listed[i] if i < len(listed) else None
            if metadata is not None and not isinstance(metadata, Mapping):
                continue  # the store names the bad field
            categories = self.mem.never_forget.document_categories(collection, metadata or {})
            self._check_protected_writer(categories, f"metadatas[{i}]")

    def whoami(self) -> dict[str, Any]:
        return {
            "agent": self.caller.agent,
            "teams": sorted(self.caller.teams),
            "admin": self.caller.admin,
        }

    # -- episodic ----------------------------------------------------------------------

    def record(self, event_type: str, description: str, **fields: Any) -> dict[str, Any]:
        """Record an episode as the caller (fields: context, outcome, importance, tags,
        references, id, timestamp, decay_rate, scope)."""
        self._refuse_agent_field(fields, "agent_name")
        check_client_id("id", fields.get("id"))
        self._check_episode_writer(fields, event_type, "event_type")
        self._check_backdate(fields.get("timestamp"), "timestamp")
        episode = self.mem.episodic.record(self._writer(), event_type, description, **fields)
        return _json(episode)

    def record_many(self, items: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        writer = self._writer()
        if isinstance(items, str | bytes) or not isinstance(items, Sequence):
            raise ValidationError("items", "expected a list of episodes")
        prepared = []
        for i, item in enumerate(items):
            if isinstance(item, Mapping):
                self._refuse_agent_field(item, f"items[{i}].agent_name")
                check_client_id("id" if i == 0 else f"items[{i}].id", item.get("id"))
                self._check_episode_writer(item, item.get("event_type"), f"items[{i}]")
                self._check_backdate(item.get("timestamp"), f"items[{i}].timestamp")
                prepared.append({**item, "agent_name": writer})
            else:
                prepared.append(item)
        return [_json(e) for e in self.mem.episodic.record_many(prepared)]

    @staticmethod
    def _refuse_agent_field(fields: Mapping[str, Any], name: str) -> None:
        if "agent_name" in fields:
            raise ValidationError(name, "writes are recorded as the calling agent; drop it")

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
        time_range = None if since is None and until is None else (since, until)
        found = self.mem.episodic.recall(
            query, agent_name, event_type, time_range, tags, top_k, **self._reader
        )
        return [_json(e) for e in found]

    def get_episode(self, episode_id: str) -> dict[str, Any]:
        return _json(self.mem.episodic.get(episode_id, **self._reader))

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
        time_range = None if since is None and until is None else (since, until)
        found = self.mem.episodic.browse(
            agent_name=agent_name,
            event_type=event_type,
            time_range=time_range,
            limit=limit,
            offset=offset,
            **self._reader,
        )
        return [_json(e) for e in found]

    def update_episode(
        self,
        episode_id: str,
        *,
        outcome: str | None = None,
        importance: float | None = None,
        tags: Sequence[str] | None = None,
    ) -> dict[str, Any]:
        current = self.mem.episodic.get(episode_id, **self._reader)
        self._check_owner("episode", episode_id, current.agent_name)
        if tags is not None and not current.protected:
            self._check_episode_writer(
                {"tags": tags, "context": current.context}, current.event_type, "tags"
            )
        updated = self.mem.episodic.update(
            episode_id, outcome=outcome, importance=importance, tags=tags
        )
        return _json(updated)

    def delete_episode(self, episode_id: str) -> dict[str, Any]:
        current = self.mem.episodic.get(episode_id, **self._reader)
        self._check_owner("episode", episode_id, current.agent_name)
        return _json(self.mem.episodic.delete(episode_id))

    # -- semantic ----------------------------------------------------------------------

    def collections(self) -> list[dict[str, Any]]:
        """Each collection's policy beside its usage. ``documents`` counts what the caller
        may read; the whole-store figures (states, expired, chunks, usage) are for callers
        who read everything, and ``full`` (the cap reached) is for all."""
        assert self.mem.db is not None
        scope_sql, params = reader_predicate(self.caller.reader, self.caller.teams)
        out = []
        for stats in self.mem.collection_stats():
            count = self.mem.db.scalar(
                f"SELECT COUNT(*) FROM semantic_docs WHERE collection=? AND state='active' "
                f"AND {scope_sql}",
                (stats.name, *params),
            )
            whole = self.caller.read_all
            out.append(
                {
                    "name": stats.name,
                    "purpose": stats.purpose,
                    "retention_days": stats.retention_days,
                    "max_docs": stats.max_docs,
                    "on_full": stats.on_full,
                    "update_freq": stats.update_freq,
                    "documents": int(count),
                    "full": stats.full,
                    **{
                        key: getattr(stats, key) if whole else None
                        for key in ("pending", "archived", "compressed", "expired", "chunks")
                    },
                    "usage": round(stats.usage, 4) if whole else None,
                }
            )
        return out

    def store(
        self,
        collection: str,
        documents: Sequence[str],
        metadatas: Sequence[Mapping[str, Any] | None] | None = None,
        ids: Sequence[str] | None = None,
        *,
        scope: str | Sequence[str] | None = None,
    ) -> dict[str, Any]:
        writer = self._writer()
        if isinstance(ids, Sequence) and not isinstance(ids, str | bytes):
            for i, doc_id in enumerate(ids):
                check_client_id(f"ids[{i}]", doc_id)
        count = len(documents) if isinstance(documents, Sequence) else 0
        self._check_document_writer(collection, metadatas, count)
        targets = _target_ids(documents, ids, writer)
        self._check_document_owners(collection, targets)  # refuse early, before embedding
        # Embedding is the slow part: done outside the lock, so that one agent's large
        # write does not hold every other agent's store (the store re-checks under it).
        embedded = self.mem.semantic.embed_chunks(collection, documents)
        with _store_lock(self.mem):
            self._check_document_owners(collection, targets)
            stored = self.mem.semantic.store(
                collection,
                documents,
                metadatas,
                ids,
                agent_name=writer,
                scope=scope,
                embedded=embedded,
            )
        return {"collection": collection, "ids": stored}

    def _check_document_owners(self, collection: str, ids: Sequence[Any]) -> None:
        """Refuse to overwrite documents the caller may not change. One it may read answers
        403 naming its owner (the caller can read that); one it may not read answers 409
        "taken" without an owner, the same whoever holds it: an explicit id is a name in a
        collection-wide namespace, and the refusal tells only that the name is in use."""
        assert self.mem.db is not None
        self.mem.semantic.count(collection)  # validates the collection name
        pred, params = reader_predicate(self.caller.reader, self.caller.teams)
        for doc_id in ids:
            if not isinstance(doc_id, str):
                continue  # the store names the bad id
            row = self.mem.db.query_one(
                f"SELECT agent_name, {pred} AS readable FROM semantic_docs "
                "WHERE collection=? AND id=?",
                (*params, collection, doc_id),
            )
            if row is None or self.caller.change_all or row["agent_name"] == self.caller.agent:
                continue
            if not row["readable"]:
                raise AlreadyExistsError(
                    f"document id {doc_id!r} is taken in {collection!r}; choose another id"
                )
            self._check_owner("document", f"{collection}/{doc_id}", row["agent_name"])

    def query(
        self,
        collection: str,
        query_text: str,
        n_results: int = 5,
        where: Mapping[str, Any] | None = None,
        where_document: Mapping[str, Any] | None = None,
    ) -> list[dict[str, Any]]:
        hits = self.mem.semantic.query(
            collection, query_text, n_results, where, where_document, **self._reader
        )
        return [{**_json(h), "similarity": h.similarity} for h in hits]

    def get_document(self, collection: str, doc_id: str) -> dict[str, Any]:
        return _json(self.mem.semantic.get(collection, doc_id, **self._reader))

    def list_documents(
        self, collection: str, *, limit: int = 50, offset: int = 0
    ) -> list[dict[str, Any]]:
        docs = self.mem.semantic.documents(collection, limit=limit, offset=offset, **self._reader)
        return [_json(d) for d in docs]

    def delete_document(self, collection: str, doc_id: str) -> dict[str, Any]:
        with _store_lock(self.mem):
            current = self.mem.semantic.get(collection, doc_id, **self._reader)
            self._check_owner("document", f"{collection}/{doc_id}", current.agent_name)
            self.mem.semantic.delete(collection, [doc_id])
        return _json(current)

    # -- procedural --------------------------------------------------------------------

    def procedures(self) -> list[dict[str, Any]]:
        return [_procedure(p) for p in self.mem.procedural.procedures(**self._reader)]

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
        proc = self.mem.procedural.register(
            name,
            trigger,
            template,
            description=description,
            success_rate=success_rate,
            avg_quality_score=avg_quality_score,
            agent_name=self._writer(),
            scope=scope,
        )
        return _procedure(proc)

    def get_procedure(self, name: str) -> dict[str, Any]:
        return _procedure(self.mem.procedural.get(name, **self._reader))

    def match_procedure(self, task: str) -> dict[str, Any]:
        """The best procedure for a task and every other one whose trigger matches."""
        found = self.mem.procedural.matches(task, **self._reader)
        return {
            "task": task,
            "best": _procedure(found[0]) if found else None,
            "matches": [_procedure(p) for p in found],
        }

    def report_outcome(self, name: str, quality_score: float, success: bool) -> dict[str, Any]:
        self.mem.procedural.get(name, **self._reader)
        proc = self.mem.procedural.update_from_outcome(
            name, quality_score, success, agent_name=self.caller.agent or ""
        )
        return _procedure(proc)

    def evolve_procedure(
        self, name: str, template: str, *, trigger: str | None = None
    ) -> dict[str, Any]:
        current = self.mem.procedural.get(name, **self._reader)
        self._check_owner("procedure", name, current.agent_name)
        return _procedure(self.mem.procedural.evolve(name, template, trigger=trigger))

    def procedure_history(self, name: str) -> list[dict[str, Any]]:
        self.mem.procedural.get(name, **self._reader)
        return [_json(v) for v in self.mem.procedural.history(name)]

    def rollback_procedure(self, name: str, version: int) -> dict[str, Any]:
        current = self.mem.procedural.get(name, **self._reader)
        self._check_owner("procedure", name, current.agent_name)
        return _procedure(self.mem.procedural.rollback(name, version))

    # -- working memory ----------------------------------------------------------------

    def _session(
        self, session_id: str, *, create: bool = True, max_tokens: int | None = None
    ) -> WorkingMemory:
        agent = self._writer()
        if not create:
            assert self.mem.db is not None
            exists = self.mem.db.query_one(
                "SELECT 1 FROM working_sessions WHERE agent_name=? AND session_id=?",
                (agent, session_id),
            )
            if exists is None:
                raise NotFoundError("working session", f"{agent}/{session_id}")
        return self.mem.working(agent, session_id, max_tokens)

    def working(
        self, session_id: str, *, create: bool = False, max_tokens: int | None = None
    ) -> dict[str, Any]:
        """The caller's working memory of ``session_id``: slots, pins, messages, context."""
        return _session_view(self._session(session_id, create=create, max_tokens=max_tokens))

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
        wm = self._session(session_id)
        evictions = wm.add_message(
            content, role=role, importance=importance, pinned=pinned, metadata=metadata
        )
        return {
            "evictions": [_json(e) | {"promoted": e.promoted} for e in evictions],
            "total_tokens": wm.total_tokens(),
        }

    def set_slot(self, session_id: str, slot: str, value: str | None) -> dict[str, Any]:
        wm = self._session(session_id)
        wm.set_slot(slot, value)
        return _session_view(wm)

    def pin(self, session_id: str, key: str, content: str, reason: str = "") -> dict[str, Any]:
        return _json(self._session(session_id).pin(key, content, reason))

    def unpin(self, session_id: str, key: str) -> dict[str, Any]:
        return _json(self._session(session_id, create=False).unpin(key))

    def clear_messages(self, session_id: str) -> dict[str, Any]:
        wm = self._session(session_id, create=False)
        evictions = wm.clear_messages()
        return {
            "evictions": [_json(e) | {"promoted": e.promoted} for e in evictions],
            "total_tokens": wm.total_tokens(),
        }

    # -- whole store -------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """Counts and sizes per layer and per agent, of what the caller may read."""
        return layer_stats(self.mem, self.caller)

    def export_lines(
        self, *, embeddings: bool = True, progress: Progress | None = None
    ) -> Iterator[str]:
        self._require_admin("export")
        return export_jsonl(self.mem, embeddings=embeddings, progress=progress)

    def import_lines(
        self,
        lines: Iterable[str | bytes],
        *,
        reembed: bool = False,
        progress: Progress | None = None,
    ) -> dict[str, Any]:
        self._require_admin("import")
        return import_jsonl(self.mem, lines, reembed=reembed, progress=progress).as_dict()

    def _keys(self) -> KeyStore:
        self._require_admin("managing API keys")
        assert self.mem.db is not None
        return KeyStore(self.mem.db, clock=self.mem.clock)

    def add_key(self, agent_name: str, *, admin: bool = False, label: str = "") -> dict[str, Any]:
        info, secret = self._keys().add(agent_name, admin=admin, label=label)
        return {**_json(info), "key": secret}

    def list_keys(self, *, include_revoked: bool = False) -> list[dict[str, Any]]:
        return [_json(k) for k in self._keys().list_keys(include_revoked=include_revoked)]

    def revoke_key(self, key_id: str) -> dict[str, Any]:
        return _json(self._keys().revoke(key_id))


def _target_ids(documents: Any, ids: Any, writer: str) -> list[Any]:
    """The ids a store call will write: given ones, else the hashes of writer and content
    (another agent's document never has one of these, but an import might)."""
    if ids is not None:
        return list(ids) if isinstance(ids, Sequence) and not isinstance(ids, str | bytes) else []
    if isinstance(documents, Sequence) and not isinstance(documents, str | bytes):
        return [content_id(d, writer) for d in documents if isinstance(d, str)]
    return []


def _json(value: Any) -> dict[str, Any]:
    out: dict[str, Any] = to_json(value)
    return out


def _procedure(proc: Any) -> dict[str, Any]:
    return {**_json(proc), "selection_score": proc.selection_score}


def _session_view(wm: WorkingMemory) -> dict[str, Any]:
    return {
        "agent_name": wm.agent_name,
        "session_id": wm.session_id,
        "max_tokens": wm.max_tokens,
        "total_tokens": wm.total_tokens(),
        "budgets": dict(wm.budgets),
        "slot_tokens": wm.slot_tokens(),
        "slots": {
            slot: wm.get_slot(slot)
            for slot in ("system", "active_task", "constraints", "scratchpad")
        },
        "pins": [_json(p) for p in wm.pins],
        "messages": [_json(m) for m in wm.messages],
        "context": wm.build_context(),
    }


def layer_stats(mem: Memory, caller: Caller) -> dict[str, Any]:
    """Counts and payload sizes per layer and per agent, limited to what ``caller`` reads.

    Sizes are the bytes of what each layer stores (text, JSON fields and episode vectors);
    the files on disk are reported separately, to admins.
    """
    reader, teams = caller.reader, caller.teams
    agents: dict[str, dict[str, int]] = {}

    def per_agent(usage: dict[str, tuple[int, int]], fields: tuple[str, str]) -> None:
        for agent, figures in usage.items():
            entry = agents.setdefault(agent, {})
            for name, value in zip(fields, figures, strict=True):
                entry[name] = entry.get(name, 0) + value

    per_agent(mem.episodic.rows.usage(reader, teams), ("episodes", "episode_bytes"))
    per_agent(mem.semantic.registry.usage(reader, teams), ("documents", "document_bytes"))
    per_agent(mem.procedural.usage(reader, teams), ("procedures", "procedure_bytes"))
    own = None if caller.read_all else caller.agent or ""
    per_agent(session_usage(mem.db, own), ("sessions", "message_tokens"))

    def total(name: str) -> int:
        return sum(a.get(name, 0) for a in agents.values())

    collections = {}
    caps = {c.name: c for c in mem.collection_stats()}
    for name in mem.semantic.collections:
        usage = mem.semantic.registry.usage(reader, teams, collection=name).values()
        collections[name] = {
            "documents": sum(n for n, _ in usage),
            "bytes": sum(b for _, b in usage),
            "max_docs": caps[name].max_docs,
            "full": caps[name].full,
        }
    out: dict[str, Any] = {
        "layers": {
            "working": {"sessions": total("sessions"), "message_tokens": total("message_tokens")},
            "episodic": {"episodes": total("episodes"), "bytes": total("episode_bytes")},
            "semantic": {
                "documents": total("documents"),
                "bytes": total("document_bytes"),
                "collections": collections,
            },
            "procedural": {"procedures": total("procedures"), "bytes": total("procedure_bytes")},
        },
        "agents": [
            {
                "agent": agent,
                **{
                    k: values.get(k, 0)
                    for k in (
                        "episodes",
                        "episode_bytes",
                        "documents",
                        "document_bytes",
                        "procedures",
                        "procedure_bytes",
                        "sessions",
                        "message_tokens",
                    )
                },
            }
            for agent, values in sorted(agents.items())
        ],
        "storage": None,
    }
    if caller.admin:
        whole = mem.stats()
        out["storage"] = {
            "path": whole["path"],
            "database_bytes": whole["database_bytes"],
            "chroma_bytes": whole["chroma_bytes"],
        }
    return out
