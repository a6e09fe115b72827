"""Layer 2: the episodic store — what happened, when, to whom, and how much it mattered.

Episodes live in SQLite: one row each (with its embedding as a blob) plus a row in an FTS5
table of its analysed text (see :mod:`omoide.text.fulltext`). :meth:`EpisodicStore.recall`
filters in SQL, gathers candidates by full-text rank and by embedding similarity (an exact
scan over an in-memory matrix: at the store's 10,000-entry scale this is about a millisecond
and needs no approximate index; or a ChromaDB collection, see ``episodic.vector_store``), then
scores each candidate as the article does::

    score = relevance × 0.4 + importance × 0.35 + freshness × 0.25

where relevance fuses the BM25 rank (normalised by the best candidate, weighted by the share
of query terms matched) with the calibrated cosine similarity, and is scaled so that the most
relevant candidate has 1. Returned episodes have their access count and last access updated.

Past ``max_entries`` the episodes with the lowest retention score (importance 0.4,
freshness 0.3, access frequency 0.3) are handed to an overflow sink (the semantic layer)
before they leave the table: nothing is lost on overflow. Never-forget episodes stay.

The episodic layer owns ``episodes``, ``episodes_fts``, ``episode_threads``,
``episode_keys_fts`` and the episodes' vectors: this module validates and writes (through
:class:`~omoide.layers.episodic.rows.EpisodicRows`, which keeps the tables in step),
:mod:`omoide.layers.episodic.search` reads and ranks.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from omoide.clock import Clock, to_timestamp
from omoide.core.config import EpisodicConfig
from omoide.core.freshness import FreshnessCurve, LinearDecay
from omoide.core.models import ESTIMATED, Episode
from omoide.core.scope import normalize_scope, reader_predicate
from omoide.core.validation import (
    check_datetime,
    check_json_mapping,
    check_name,
    check_number,
    check_string_list,
    check_text,
    check_unit_interval,
)
from omoide.core.vector_matrix import VectorMatrix
from omoide.errors import AlreadyExistsError, NotFoundError, ProtectedMemoryError, ValidationError
from omoide.layers.episodic.candidate import Candidate
from omoide.layers.episodic.chroma_vectors import ChromaVectors
from omoide.layers.episodic.rows import LIVE_SQL, EpisodicRows, episode_text
from omoide.layers.episodic.search import EpisodeSearch
from omoide.providers.embeddings import Embedder
from omoide.providers.tokens import TokenCounter
from omoide.storage import Database

__all__ = ["Candidate", "EpisodicStore", "OverflowSink", "embedding_text", "episode_text"]

#: Receives episodes about to leave the table for capacity; must store them durably.
OverflowSink = Callable[[list[Episode]], None]
#: Decides whether an episode is protected by a never-forget rule.
ProtectionRule = Callable[[str, Sequence[str], Mapping[str, Any]], bool]


def embedding_text(agent_name: str, description: str, outcome: str | None) -> str:
    """The text an episode's vector is computed from: who, and what happened.

    The author is part of the meaning ("what did the CTO decide?"); on LoCoMo, embedding
    turns without their speaker drops dense evidence Recall@10 from about 52 to 15.
    """
    return f"{agent_name}: {episode_text(description, outcome)}"


class EpisodicStore(EpisodeSearch):
    """Layer 2 on SQLite; obtain it as ``Memory.episodic``."""

    def __init__(
        self,
        db: Database,
        *,
        embedder: Embedder,
        clock: Clock,
        config: EpisodicConfig | None = None,
        freshness: FreshnessCurve | None = None,
        default_scope: str = "global",
        overflow: OverflowSink | None = None,
        protection: ProtectionRule | None = None,
        teams: Mapping[str, Iterable[str]] | None = None,
        token_counter: TokenCounter | None = None,
        vectors: ChromaVectors | None = None,
    ) -> None:
        self._db = db
        #: The row API of the episodic tables, for the pipelines (lifecycle, transfer). It
        #: counts the tokens of each episode's text with ``token_counter`` (the memory's).
        self.rows = EpisodicRows(db, token_counter)
        self._embedder = embedder
        self._clock = clock
        self.config = config or EpisodicConfig()
        self.freshness = freshness or LinearDecay()
        self._default_scope = default_scope
        self._overflow = overflow
        self._protection = protection
        #: The configured teams a new scope may name (None: not checked).
        self._teams = teams
        self._index: VectorMatrix | None = None
        #: Where the vectors are searched when not in the matrix (``episodic.vector_store``).
        self._store = vectors
        self._store_synced = False
        self._index_lock = threading.Lock()

    # -- writing -----------------------------------------------------------------------

    def record(
        self,
        agent_name: str,
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
        exist_ok: bool = False,
    ) -> Episode:
        """Record an episode; it is on disk when this returns.

        ``importance`` defaults to the event type's base (decision 0.7, error 0.8, success
        0.5, feedback 0.9, conflict 0.85; other types 0.5). With ``exist_ok`` an existing
        ``id`` returns the stored episode instead of raising :class:`AlreadyExistsError`.
        """
        return self.record_many(
            [
                dict(
                    agent_name=agent_name,
                    event_type=event_type,
                    description=description,
                    context=context,
                    outcome=outcome,
                    importance=importance,
                    tags=tags,
                    references=references,
                    id=id,
                    timestamp=timestamp,
                    decay_rate=decay_rate,
                    scope=scope,
                )
            ],
            exist_ok=exist_ok,
        )[0]

    def record_many(
        self, items: Iterable[Mapping[str, Any]], *, exist_ok: bool = False
    ) -> list[Episode]:
        """Record several episodes in one transaction (embedded in one batch).

        Each item takes :meth:`record`'s arguments as keys. All are validated before any is
        written: one bad item writes nothing.
        """
        rows = [self._validate(i, item) for i, item in enumerate(items)]
        if not rows:
            return []
        ids = [r["id"] for r in rows]
        if len(set(ids)) != len(ids):
            raise ValidationError("id", "the same id appears twice in one call")
        existing = self._existing(ids)
        if existing and not exist_ok:
            raise AlreadyExistsError(f"episode {sorted(existing)[0]!r} already exists")
        fresh = [r for r in rows if r["id"] not in existing]
        vectors = self._embedder.embed_passages(
            [embedding_text(r["agent_name"], r["description"], r["outcome"]) for r in fresh]
        )
        created = to_timestamp(self._clock.now())
        with self._db.transaction() as conn:
            rowids = self.rows.insert(
                conn,
                (
                    {
                        "id": row["id"],
                        "timestamp": row["timestamp"],
                        "agent_name": row["agent_name"],
                        "event_type": row["event_type"],
                        "description": row["description"],
                        "context": json.dumps(row["context"], ensure_ascii=False),
                        "outcome": row["outcome"],
                        "importance": row["importance"],
                        "tags": json.dumps(list(row["tags"]), ensure_ascii=False),
                        "refs": json.dumps(list(row["references"]), ensure_ascii=False),
                        "decay_rate": row["decay_rate"],
                        "scope": row["scope"],
                        "protected": row["protected"],
                        "embedding": vector.astype(np.float32).tobytes(),
                        "created_at": created,
                    }
                    for row, vector in zip(fresh, vectors, strict=True)
                ),
            )
            # Read back in the same transaction: once it commits, another replica's (or
            # thread's) forgetting may delete these episodes before a later read finds them.
            stored: dict[str, Episode] = {}
            for start in range(0, len(ids), 500):
                part = ids[start : start + 500]
                marks = ",".join("?" * len(part))
                stored.update((e.id, e) for e in self.rows.fetch(f"id IN ({marks})", part))
        self._index_add(rowids, vectors)
        self.enforce_capacity()
        return [stored[i] for i in ids]

    def _validate(self, position: int, item: Mapping[str, Any]) -> dict[str, Any]:
        """One item's arguments, checked and normalised before anything is written. Long
        because each field has its own check, in one flat list.
        """

        def field(name: str) -> str:
            return name if position == 0 else f"items[{position}].{name}"

        if not isinstance(item, Mapping):
            raise ValidationError(field("item"), "expected a mapping of record() arguments")
        known = {
            "agent_name",
            "event_type",
            "description",
            "context",
            "outcome",
            "importance",
            "tags",
            "references",
            "id",
            "timestamp",
            "decay_rate",
            "scope",
        }
        unknown = set(item) - known
        if unknown:
            raise ValidationError(field(sorted(unknown)[0]), "unknown episode field")
        agent = check_name(field("agent_name"), item.get("agent_name"))
        event_type = check_name(field("event_type"), item.get("event_type"))
        description = check_text(
            field("description"),
            item.get("description"),
            max_chars=self.config.max_description_chars,
        )
        outcome = item.get("outcome")
        if outcome is not None:
            outcome = check_text(
                field("outcome"),
                outcome,
                max_chars=self.config.max_description_chars,
                allow_empty=True,
            )
            outcome = outcome or None
        importance = item.get("importance")
        if importance is None:
            importance = self.config.base_importance.get(event_type, self.config.default_importance)
        importance = check_unit_interval(field("importance"), importance)
        decay = item.get("decay_rate")
        decay = (
            self.config.decay_rate
            if decay is None
            else check_number(field("decay_rate"), decay, low=0.0, high=1.0)
        )
        context = check_json_mapping(field("context"), item.get("context"))
        tags = check_string_list(field("tags"), item.get("tags"))
        refs = check_string_list(field("references"), item.get("references"))
        episode_id = item.get("id")
        episode_id = (
            f"ep-{uuid.uuid4().hex}" if episode_id is None else check_name(field("id"), episode_id)
        )
        when = item.get("timestamp")
        ts = to_timestamp(
            self._clock.now() if when is None else check_datetime(field("timestamp"), when)
        )
        scope_value = item.get("scope")
        scope = normalize_scope(
            self._default_scope if scope_value is None else scope_value,
            field("scope"),
            teams=self._teams,
        )
        protected = bool(self._protection and self._protection(event_type, tags, context))
        return dict(
            id=episode_id,
            timestamp=ts,
            agent_name=agent,
            event_type=event_type,
            description=description,
            context=context,
            outcome=outcome,
            importance=importance,
            tags=tags,
            references=refs,
            decay_rate=decay,
            scope=scope,
            protected=int(protected),
        )

    def _existing(self, ids: Sequence[str]) -> set[str]:
        return self.rows.present(ids)

    def update(
        self,
        episode_id: str,
        *,
        outcome: str | None = None,
        importance: float | None = None,
        tags: Sequence[str] | None = None,
    ) -> Episode:
        """Record what came of an episode (its outcome), or change its importance or tags (an
        importance set here is the writer's: an estimated one stops being marked so)."""
        current = self.get(episode_id, touch=False)
        new_outcome = current.outcome
        if outcome is not None:
            new_outcome = (
                check_text("outcome", outcome, max_chars=self.config.max_description_chars) or None
            )
        new_importance = (
            current.importance
            if importance is None
            else check_unit_interval("importance", importance)
        )
        new_tags = current.tags if tags is None else check_string_list("tags", tags)
        protect = bool(
            self._protection and self._protection(current.event_type, new_tags, current.context)
        )
        vector = None
        if new_outcome != current.outcome:
            vector = self._embedder.embed_passages(
                [embedding_text(current.agent_name, current.description, new_outcome)]
            )
        with self._db.transaction() as conn:
            row = self.rows.require(conn, episode_id)
            rowid = int(row["rowid"])
            columns: dict[str, Any] = {
                "outcome": new_outcome,
                "importance": new_importance,
                "tags": json.dumps(list(new_tags), ensure_ascii=False),
                "protected": max(int(row["protected"]), int(protect)),
            }
            if vector is not None:
                columns["embedding"] = vector[0].tobytes()
            if importance is not None and current.context.get("importance") == ESTIMATED:
                # A caller chose it: from now on it is the writer's importance and ranks.
                chosen = {k: v for k, v in current.context.items() if k != "importance"}
                columns["context"] = json.dumps(chosen, ensure_ascii=False)
            self.rows.change(conn, rowid, columns)
        if vector is not None:
            self._index_add([rowid], vector)
        return self.get(episode_id, touch=False)

    def delete(self, episode_id: str) -> Episode:
        """Remove an episode for good; never-forget episodes are refused."""
        episode = self.get(episode_id, touch=False)
        if episode.protected:
            raise ProtectedMemoryError(
                f"episode {episode_id!r} is protected by a never-forget rule and cannot be deleted"
            )
        self._remove_rows([episode_id])
        return episode

    def _remove_rows(self, ids: Sequence[str]) -> None:
        if not ids:
            return
        with self._db.transaction() as conn:
            marks = ",".join("?" * len(ids))
            rowids = [
                r[0]
                for r in conn.execute(
                    f"SELECT rowid FROM episodes WHERE id IN ({marks}) AND protected = 0", list(ids)
                )
            ]
            if not rowids:
                return
            self.rows.remove(conn, rowids)
        self._index_remove(rowids)

    # -- reading -----------------------------------------------------------------------

    def get(
        self,
        episode_id: str,
        *,
        touch: bool = False,
        reader: str | None = None,
        reader_teams: Iterable[str] = (),
    ) -> Episode:
        """The episode with this id (NotFoundError if absent or not visible to ``reader``)."""
        check_name("id", episode_id)
        scope_sql, scope_params = reader_predicate(reader, reader_teams)
        found = self.rows.fetch(f"id = ? AND {scope_sql}", [episode_id, *scope_params])
        if not found:
            raise NotFoundError("episode", episode_id)
        if touch:
            self._touch([found[0].id])
            return self.rows.fetch("id = ?", [episode_id])[0]
        return found[0]

    def count(self, *, agent_name: str | None = None, state: str | None = "active") -> int:
        """Number of episodes (by default the active ones), optionally of one agent."""
        where, params = ["1 = 1"], []
        if state is not None:
            where.append("state = ?")
            params.append(state)
        if agent_name is not None:
            where.append("agent_name = ?")
            params.append(agent_name)
        return int(
            self._db.scalar(f"SELECT COUNT(*) FROM episodes WHERE {' AND '.join(where)}", params)
        )

    def touch(self, ids: Sequence[str], now: datetime | None = None) -> None:
        """Count one access of each episode (a ranker outside :meth:`recall` returned them)."""
        self._touch([check_name(f"ids[{i}]", x) for i, x in enumerate(ids)], now)

    # -- capacity ----------------------------------------------------------------------

    def retention_scores(self, now: datetime | None = None) -> list[tuple[float, str]]:
        """(retention score, id) of every removable episode (live and not protected),
        lowest first."""
        now_ts = to_timestamp(now or self._clock.now())
        rows = self._db.query(
            "SELECT id, importance, timestamp, decay_rate, access_count FROM episodes "
            f"WHERE protected = 0 AND {LIVE_SQL}"
        )
        c = self.config
        scored = []
        for r in rows:
            fresh = self.freshness((now_ts - r["timestamp"]) / 86400, r["decay_rate"])
            access = min(r["access_count"] / 10, 1.0)
            score = (
                c.retention_importance_weight * r["importance"]
                + c.retention_freshness_weight * fresh
                + c.retention_access_weight * access
            )
            scored.append((score, r["id"]))
        scored.sort()
        return scored

    def enforce_capacity(self) -> int:
        """Move the lowest-retention episodes out while over ``max_entries``; return how many.

        They are handed to the overflow sink (durably) before they are deleted, so a crash in
        between leaves them in place and a later run hands them over again (the sink's ids
        are derived from the episode ids, so nothing is duplicated).
        """
        total = int(self._db.scalar(f"SELECT COUNT(*) FROM episodes WHERE {LIVE_SQL}"))
        limit = self.config.max_entries
        if total <= limit:
            return 0
        target = int(limit * (1 - self.config.eviction_fraction))
        victims = [i for _, i in self.retention_scores()[: max(0, total - target)]]
        moved = 0
        for start in range(0, len(victims), 256):
            ids = victims[start : start + 256]
            batch = self.rows.fetch(f"id IN ({','.join('?' * len(ids))})", ids)
            if self._overflow is not None:
                self._overflow(batch)
            self._remove_rows([e.id for e in batch])
            moved += len(batch)
        return moved
