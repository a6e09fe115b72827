"""The operations over the four layers: episodes, documents, procedures, working memory.

A mixin of :class:`~omoide.service.local.LocalOperations` (kept apart for size) on the shared
rules of :class:`~omoide.service.caller.OperationsBase`: writes are recorded as the calling
agent, reads see what its scopes allow, and changing an existing item is for its owner. An
agent's chosen ids (an episode's ``id``, a document's, a procedure's ``name``) are its own:
stored as ``agent:id``, and found again by the short form it chose.
Results are the JSON-ready dicts the REST API returns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from omoide.errors import NotFoundError, ValidationError
from omoide.layers.semantic.store import content_id
from omoide.layers.working import WorkingMemory, session_exists
from omoide.service.caller import OperationsBase, json_dict, store_lock

__all__ = ["LayerOperations"]

_json = json_dict


class LayerOperations(OperationsBase):
    """Episodic, semantic, procedural and working memory, as ``caller``."""

    def whoami(self) -> dict[str, Any]:
        return {
            "agent": self.caller.agent,
            "teams": sorted(self.caller.teams),
            "admin": self.caller.admin,
        }

    # -- episodic ----------------------------------------------------------------------

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
        """Record an episode as the caller; ``agent_name`` is refused (writes are recorded
        as the calling agent), and is a parameter only to be named in the refusal."""
        given: dict[str, Any] = {
            "context": context,
            "outcome": outcome,
            "importance": importance,
            "tags": tags,
            "references": references,
            "id": id,
            "timestamp": timestamp,
            "decay_rate": decay_rate,
            "scope": scope,
            "agent_name": agent_name,
        }
        fields = {k: v for k, v in given.items() if v is not None}
        self._refuse_agent_field(fields, "agent_name")
        if "id" in fields:
            fields["id"] = self._chosen_id("id", fields["id"])
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
                own = dict(item)
                if own.get("id") is not None:
                    own["id"] = self._chosen_id("id" if i == 0 else f"items[{i}].id", own["id"])
                self._check_episode_writer(item, item.get("event_type"), f"items[{i}]")
                self._check_backdate(item.get("timestamp"), f"items[{i}].timestamp")
                prepared.append({**own, "agent_name": writer})
            else:
                prepared.append(item)
        return [_json(e) for e in self.mem.episodic.record_many(prepared)]

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
        episode_id = self._episode_id(episode_id)
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
        episode_id = self._episode_id(episode_id)
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
        episode_id = self._episode_id(episode_id)
        current = self.mem.episodic.get(episode_id, **self._reader)
        self._check_owner("episode", episode_id, current.agent_name)
        return _json(self.mem.episodic.delete(episode_id))

    def add(
        self,
        session_id: str,
        messages: Sequence[Mapping[str, Any] | str],
        *,
        timestamp: datetime | str | None = None,
        scope: str | Sequence[str] | None = None,
    ) -> dict[str, Any]:
        """:meth:`Memory.add` as the caller: the messages become the calling agent's episodes
        (an agent named in a message is its speaker, never the owner)."""
        writer = self._writer()
        if isinstance(messages, str | Mapping):
            messages = [messages]
        self._check_backdate(timestamp, "timestamp")
        for i, message in enumerate(messages if isinstance(messages, Sequence) else ()):
            if isinstance(message, Mapping):
                self._check_backdate(message.get("timestamp"), f"messages[{i}].timestamp")
        report = self.mem.add(
            messages, agent_name=writer, session_id=session_id, timestamp=timestamp, scope=scope
        )
        return {
            "agent_name": report.agent_name,
            "session_id": report.session_id,
            "recorded": [json_dict(e) for e in report.recorded],
            "episode_ids": report.episode_ids,
            "duplicates": list(report.duplicates),
            "skipped": [{"position": p, "reason": why} for p, why in report.skipped],
            "extracted": list(report.extracted),
            "notes": list(report.notes),
            "summary": report.summary(),
        }

    # -- semantic ----------------------------------------------------------------------

    def collections(self) -> list[dict[str, Any]]:
        """Each collection's policy beside its usage. ``documents`` counts what the caller
        may read; the whole-store figures (states, expired, chunks, usage) are for callers
        who read everything, and ``full`` (the cap reached) is for all."""
        out = []
        registry = self.mem.semantic.registry
        for stats in self.mem.collection_stats():
            count = registry.visible_count(stats.name, self.caller.reader, self.caller.teams)
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
            ids = [self._chosen_id(f"ids[{i}]", doc_id) for i, doc_id in enumerate(ids)]
        count = len(documents) if isinstance(documents, Sequence) else 0
        self._check_document_writer(collection, metadatas, count)
        targets = _target_ids(documents, ids, writer)
        self._check_document_owners(collection, targets)  # refuse early, before embedding
        # Embedding is the slow part: done before the write, so that one agent's large
        # write does not hold every other agent's (the store checks again as it writes, in
        # its write transaction, which no other thread, process or replica interleaves).
        embedded = self.mem.semantic.embed_chunks(collection, documents)
        with store_lock(self.mem):  # one write of an id at a time here (its chunks too)
            stored = self.mem.semantic.store(
                collection,
                documents,
                metadatas,
                ids,
                agent_name=writer,
                scope=scope,
                embedded=embedded,
                guard=lambda: self._check_document_owners(collection, targets),
            )
        return {"collection": collection, "ids": stored}

    def query(
        self,
        collection: str,
        query_text: str,
        n_results: int = 5,
        where: Mapping[str, Any] | None = None,
        where_document: Mapping[str, Any] | None = None,
        rank: str = "relevance",
    ) -> list[dict[str, Any]]:
        hits = self.mem.semantic.query(
            collection, query_text, n_results, where, where_document, rank=rank, **self._reader
        )
        return [{**_json(h), "similarity": h.similarity} for h in hits]

    def get_document(self, collection: str, doc_id: str) -> dict[str, Any]:
        doc_id = self._document_id(doc_id, collection)
        return _json(self.mem.semantic.get(collection, doc_id, **self._reader))

    def list_documents(
        self, collection: str, *, limit: int = 50, offset: int = 0
    ) -> list[dict[str, Any]]:
        docs = self.mem.semantic.documents(collection, limit=limit, offset=offset, **self._reader)
        return [_json(d) for d in docs]

    def delete_document(self, collection: str, doc_id: str) -> dict[str, Any]:
        doc_id = self._document_id(doc_id, collection)
        with store_lock(self.mem):
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
            self._chosen_id("name", name),
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
        name = self._procedure_name(name)
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
        name = self._procedure_name(name)
        self.mem.procedural.get(name, **self._reader)
        proc = self.mem.procedural.update_from_outcome(
            name, quality_score, success, agent_name=self.caller.agent or ""
        )
        return _procedure(proc)

    def evolve_procedure(
        self, name: str, template: str, *, trigger: str | None = None
    ) -> dict[str, Any]:
        name = self._procedure_name(name)
        current = self.mem.procedural.get(name, **self._reader)
        self._check_owner("procedure", name, current.agent_name)
        return _procedure(self.mem.procedural.evolve(name, template, trigger=trigger))

    def procedure_history(self, name: str) -> list[dict[str, Any]]:
        name = self._procedure_name(name)
        self.mem.procedural.get(name, **self._reader)
        return [_json(v) for v in self.mem.procedural.history(name)]

    def rollback_procedure(self, name: str, version: int) -> dict[str, Any]:
        name = self._procedure_name(name)
        current = self.mem.procedural.get(name, **self._reader)
        self._check_owner("procedure", name, current.agent_name)
        return _procedure(self.mem.procedural.rollback(name, version))

    # -- working memory ----------------------------------------------------------------

    def _session(
        self, session_id: str, *, create: bool = True, max_tokens: int | None = None
    ) -> WorkingMemory:
        agent = self._writer()
        if not create and not session_exists(self.mem.db, agent, session_id):
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


def _target_ids(documents: Any, ids: Any, writer: str) -> list[Any]:
    """The ids a store call will write: given ones, else the hashes of writer and content
    (another agent's document never has one of these, but an import might)."""
    if ids is not None:
        return list(ids) if isinstance(ids, Sequence) and not isinstance(ids, str | bytes) else []
    if isinstance(documents, Sequence) and not isinstance(documents, str | bytes):
        return [content_id(d, writer) for d in documents if isinstance(d, str)]
    return []


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
