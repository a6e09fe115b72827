"""Layer 2: the episodic store — what happened, when, to whom, and how much it mattered.

Episodes live in SQLite: one row each (with its embedding as a blob) plus a row in an FTS5
table of its analysed text (see :mod:`omoide.text.fulltext`). :meth:`EpisodicStore.recall`
filters in SQL, gathers candidates by full-text rank and by embedding similarity (an exact
scan over an in-memory matrix: at the store's 10,000-entry scale this is about a millisecond
and needs no approximate index), then scores each candidate as the article does::

    score = relevance × 0.4 + importance × 0.35 + freshness × 0.25

where relevance fuses the BM25 rank (normalised by the best candidate, weighted by the share
of query terms matched) with the calibrated cosine similarity, and is scaled so that the most
relevant candidate has 1. Returned episodes have their access count and last access updated.

Past ``max_entries`` the episodes with the lowest retention score (importance 0.4,
freshness 0.3, access frequency 0.3) are handed to an overflow sink (the semantic layer)
before they leave the table: nothing is lost on overflow. Never-forget episodes stay.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import numpy as np

from omoide.clock import Clock, from_timestamp, to_timestamp
from omoide.core.config import EpisodicConfig
from omoide.core.filters import MAX_FILTER_TERMS
from omoide.core.freshness import FreshnessCurve, LinearDecay
from omoide.core.models import Episode
from omoide.core.scope import normalize_scope, reader_predicate
from omoide.core.validation import (
    check_datetime,
    check_json_mapping,
    check_name,
    check_number,
    check_positive_int,
    check_string_list,
    check_text,
    check_time_range,
    check_unit_interval,
)
from omoide.errors import AlreadyExistsError, NotFoundError, ProtectedMemoryError, ValidationError
from omoide.layers.episodic.context_keys import (
    DEFAULT_COLUMN_WEIGHTS,
    key_texts,
    refresh_keys,
    remove_keys,
    search_keys,
)
from omoide.layers.episodic.vectors import VectorMatrix
from omoide.providers.embeddings import Embedder
from omoide.storage import Database
from omoide.text.fulltext import coverage, index_text, match_expression, query_terms

__all__ = ["Candidate", "EpisodicStore", "OverflowSink", "embedding_text", "episode_text"]

#: Receives episodes about to leave the table for capacity; must store them durably.
OverflowSink = Callable[[list[Episode]], None]
#: Decides whether an episode is protected by a never-forget rule.
ProtectionRule = Callable[[str, Sequence[str], Mapping[str, Any]], bool]

#: Episodes that recall and search see: active and compressed (archived ones are out of both).
_LIVE_SQL = "state IN ('active', 'compressed')"

_COLUMNS = (
    "rowid, id, timestamp, agent_name, event_type, description, context, outcome, importance, "
    "tags, refs, access_count, last_accessed, decay_rate, scope, protected, state, distilled_at"
)


@dataclass(frozen=True)
class Candidate:
    """An episode that may answer a query, with the raw signals that found it."""

    episode: Episode
    #: BM25 of its context key (0 when the key does not match); higher is better.
    key_score: float
    #: Cosine similarity of the query and the episode's embedding.
    cosine: float
    #: Analysed words of its context key (the episode and its neighbours in the thread), for
    #: checking how many of the query's words it holds (:func:`omoide.text.fulltext.coverage`);
    #: empty when the key does not match.
    key: str = ""


def episode_text(description: str, outcome: str | None) -> str:
    """The text an episode is embedded as: what happened, and its outcome if known."""
    return f"{description}\n→ {outcome}" if outcome else description


def embedding_text(agent_name: str, description: str, outcome: str | None) -> str:
    """The text an episode's vector is computed from: who, and what happened.

    The author is part of the meaning ("what did the CTO decide?"); on LoCoMo, embedding
    turns without their speaker drops dense evidence Recall@10 from about 52 to 15.
    """
    return f"{agent_name}: {episode_text(description, outcome)}"


def _fts_body(
    agent_name: str, event_type: str, description: str, outcome: str | None, tags: Sequence[str]
) -> str:
    return index_text(" ".join([description, outcome or "", agent_name, event_type, *tags]))


class EpisodicStore:
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
    ) -> None:
        self._db = db
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
        rowids: list[int] = []
        with self._db.transaction() as conn:
            for row, vector in zip(fresh, vectors, strict=True):
                cur = conn.execute(
                    "INSERT INTO episodes(id, timestamp, agent_name, event_type, description, "
                    "context, outcome, importance, tags, refs, decay_rate, scope, protected, "
                    "embedding, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (
                        row["id"],
                        row["timestamp"],
                        row["agent_name"],
                        row["event_type"],
                        row["description"],
                        json.dumps(row["context"], ensure_ascii=False),
                        row["outcome"],
                        row["importance"],
                        json.dumps(list(row["tags"]), ensure_ascii=False),
                        json.dumps(list(row["references"]), ensure_ascii=False),
                        row["decay_rate"],
                        row["scope"],
                        row["protected"],
                        vector.astype(np.float32).tobytes(),
                        created,
                    ),
                )
                rowid = int(cur.lastrowid or 0)
                conn.execute(
                    "INSERT INTO episodes_fts(rowid, body) VALUES (?, ?)",
                    (
                        rowid,
                        _fts_body(
                            row["agent_name"],
                            row["event_type"],
                            row["description"],
                            row["outcome"],
                            row["tags"],
                        ),
                    ),
                )
                rowids.append(rowid)
            refresh_keys(conn, rowids)
        if rowids:
            # Checked under the lock, so an index being built now cannot miss these rows.
            with self._index_lock:
                if self._index is not None:
                    self._index.add(rowids, vectors)
        stored: dict[str, Episode] = {}
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            stored.update(
                (e.id, e) for e in self._fetch(f"id IN ({','.join('?' * len(part))})", part)
            )
        self.enforce_capacity()
        return [stored[i] for i in ids]

    def _validate(self, position: int, item: Mapping[str, Any]) -> dict[str, Any]:
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
        found: set[str] = set()
        for start in range(0, len(ids), 500):
            part = list(ids[start : start + 500])
            found.update(
                r[0]
                for r in self._db.query(
                    f"SELECT id FROM episodes WHERE id IN ({','.join('?' * len(part))})", part
                )
            )
        return found

    def update(
        self,
        episode_id: str,
        *,
        outcome: str | None = None,
        importance: float | None = None,
        tags: Sequence[str] | None = None,
    ) -> Episode:
        """Record what came of an episode (its outcome), or change its importance or tags."""
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
            rowid = conn.execute("SELECT rowid FROM episodes WHERE id=?", (episode_id,)).fetchone()[
                0
            ]
            conn.execute(
                "UPDATE episodes SET outcome=?, importance=?, tags=?, protected=MAX(protected, ?)"
                + (", embedding=?" if vector is not None else "")
                + " WHERE rowid=?",
                (
                    new_outcome,
                    new_importance,
                    json.dumps(list(new_tags), ensure_ascii=False),
                    int(protect),
                    *([vector[0].tobytes()] if vector is not None else []),
                    rowid,
                ),
            )
            conn.execute("DELETE FROM episodes_fts WHERE rowid=?", (rowid,))
            conn.execute(
                "INSERT INTO episodes_fts(rowid, body) VALUES (?, ?)",
                (
                    rowid,
                    _fts_body(
                        current.agent_name,
                        current.event_type,
                        current.description,
                        new_outcome,
                        new_tags,
                    ),
                ),
            )
            refresh_keys(conn, [rowid])
        if vector is not None:
            with self._index_lock:
                if self._index is not None:
                    self._index.add([rowid], vector)
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
            rmarks = ",".join("?" * len(rowids))
            remove_keys(conn, rowids)
            conn.execute(f"DELETE FROM episodes_fts WHERE rowid IN ({rmarks})", rowids)
            conn.execute(f"DELETE FROM episodes WHERE rowid IN ({rmarks})", rowids)
        with self._index_lock:
            if self._index is not None:
                self._index.remove(rowids)

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
        found = self._fetch(f"id = ? AND {scope_sql}", [episode_id, *scope_params])
        if not found:
            raise NotFoundError("episode", episode_id)
        if touch:
            self._touch([found[0].id])
            return self._fetch("id = ?", [episode_id])[0]
        return found[0]

    def count(self, *, agent_name: str | None = None, state: str | None = "active") -> int:
        """Number of episodes (by default the active ones), optionally of one agent."""
        where, params = ["1"], []
        if state is not None:
            where.append("state = ?")
            params.append(state)
        if agent_name is not None:
            where.append("agent_name = ?")
            params.append(agent_name)
        return int(
            self._db.scalar(f"SELECT COUNT(*) FROM episodes WHERE {' AND '.join(where)}", params)
        )

    def count_holding(self, phrase: str, *, limit: int) -> int:
        """Number of active episodes whose text holds ``phrase`` (its words, in order),
        counted up to ``limit``: enough to tell a rare identifier from a common one."""
        phrase = check_text("phrase", phrase, max_chars=self.config.max_description_chars)
        limit = check_positive_int("limit", limit, maximum=10_000)
        words = index_text(phrase).split()
        if not words:
            return 0
        expression = '"' + " ".join(w.replace('"', '""') for w in words) + '"'
        # CROSS JOIN keeps the full-text match as the outer loop: planned the other way round,
        # SQLite probes the index once per active episode (seconds on a large store).
        return int(
            self._db.scalar(
                "SELECT COUNT(*) FROM (SELECT f.rowid FROM episodes_fts f "
                "CROSS JOIN episodes ON episodes.rowid = f.rowid "
                "WHERE episodes_fts MATCH ? AND episodes.state = 'active' LIMIT ?)",
                [expression, limit],
            )
        )

    def browse(
        self,
        *,
        agent_name: str | None = None,
        event_type: str | None = None,
        time_range: Sequence[datetime | str | None] | None = None,
        limit: int = 100,
        offset: int = 0,
        reader: str | None = None,
        reader_teams: Iterable[str] = (),
    ) -> list[Episode]:
        """Episodes newest first, filtered (``reader``: what it may see), without scoring."""
        where, params = self._filters(agent_name, event_type, time_range, None)
        check_positive_int("limit", limit)
        scope_sql, scope_params = reader_predicate(reader, reader_teams)
        return self._fetch(
            f"{where} AND {scope_sql} ORDER BY timestamp DESC LIMIT ? OFFSET ?",
            [*params, *scope_params, limit, max(0, int(offset))],
        )

    def freshness_of(self, episode: Episode, now: datetime | None = None) -> float:
        """Freshness of ``episode`` now (or at ``now``) on the configured curve."""
        age = ((now or self._clock.now()) - episode.timestamp).total_seconds() / 86400
        return float(self.freshness(age, episode.decay_rate))

    def recall(
        self,
        query: str,
        agent_name: str | None = None,
        event_type: str | None = None,
        time_range: Sequence[datetime | str | None] | None = None,
        tags: Sequence[str] | None = None,
        top_k: int = 10,
        *,
        reader: str | None = None,
        reader_teams: Iterable[str] = (),
        touch: bool = True,
    ) -> list[Episode]:
        """The episodes that best answer ``query``, best first, each with its ``score``.

        Filters (the agent that recorded it, event type, ``(start, end)`` time range, tags —
        all of them must be present) apply before scoring. ``reader`` limits results to what
        that agent may see. An empty query ranks the filtered episodes by importance and
        freshness alone.
        """
        query = check_text(
            "query", query, max_chars=self.config.max_description_chars, allow_empty=True
        )
        top_k = check_positive_int("top_k", top_k, maximum=10_000)
        where, params = self._filters(agent_name, event_type, time_range, tags)
        filtered = bool(params) or reader is not None
        scope_sql, scope_params = reader_predicate(reader, reader_teams)
        where = f"{where} AND {scope_sql}"
        params = [*params, *scope_params]
        pool = max(self.config.candidate_pool, top_k)
        now = self._clock.now()

        text_scores: dict[int, float] = {}
        dense: dict[int, float] = {}
        if query.strip():
            expression = match_expression(query)
            if expression:
                for rowid, rank in self._db.query(
                    "SELECT f.rowid, -bm25(episodes_fts) FROM episodes_fts f "
                    "JOIN episodes ON episodes.rowid = f.rowid "
                    f"WHERE episodes_fts MATCH ? AND {where} "
                    "ORDER BY bm25(episodes_fts) LIMIT ?",
                    [expression, *params, pool],
                ):
                    text_scores[int(rowid)] = max(0.0, float(rank))
            dense = self._dense_candidates(
                query, where if filtered else None, params, pool, extra=text_scores.keys()
            )
            candidates = set(text_scores) | {
                r for r, _ in sorted(dense.items(), key=lambda kv: -kv[1])[:pool]
            }
        else:
            candidates = {
                int(r[0])
                for r in self._db.query(
                    f"SELECT rowid FROM episodes WHERE {where} ORDER BY timestamp DESC LIMIT ?",
                    [*params, pool],
                )
            }
            candidates |= {
                int(r[0])
                for r in self._db.query(
                    f"SELECT rowid FROM episodes WHERE {where} ORDER BY importance DESC LIMIT ?",
                    [*params, pool],
                )
            }
        if not candidates:
            return []
        episodes = self._fetch_rowids(candidates)
        best_text = max(text_scores.values(), default=0.0)
        terms = query_terms(query)
        tw = self.config.text_weight
        relevance: dict[int, float] = {}
        if query.strip():
            for rowid, episode in episodes.items():
                text_part = 0.0
                if best_text > 0 and rowid in text_scores:
                    body = " ".join(
                        (
                            episode.description,
                            episode.outcome or "",
                            episode.agent_name,
                            episode.event_type,
                            *episode.tags,
                        )
                    )
                    text_part = text_scores[rowid] / best_text * coverage(terms, body)
                dense_part = float(self._embedder.calibrate(dense.get(rowid, 0.0), "query"))
                relevance[rowid] = tw * text_part + (1 - tw) * dense_part
        # Relevance is scaled so that the best candidate has 1: calibrated similarities of a
        # small model span a narrow band, and unscaled they would carry far less than their
        # 40 % of the score next to importance and freshness.
        top_relevance = max(relevance.values(), default=0.0)
        scored: list[tuple[float, Episode]] = []
        for rowid, episode in episodes.items():
            rel = relevance.get(rowid, 0.0) / top_relevance if top_relevance > 0 else 0.0
            score = (
                self.config.relevance_weight * rel
                + self.config.importance_weight * episode.importance
                + self.config.freshness_weight * self.freshness_of(episode, now)
            )
            scored.append((score, episode))
        scored.sort(key=lambda pair: (-pair[0], -pair[1].timestamp.timestamp(), pair[1].id))
        chosen = scored[:top_k]
        if touch and chosen:
            self._touch([e.id for _, e in chosen], now)
            return [
                replace(e, score=s, access_count=e.access_count + 1, last_accessed=now)
                for s, e in chosen
            ]
        return [replace(e, score=s) for s, e in chosen]

    def candidates(
        self,
        query: str,
        *,
        pool: int = 200,
        time_range: Sequence[datetime | str | None] | None = None,
        reader: str | None = None,
        reader_teams: Iterable[str] = (),
        key_weights: Sequence[float] = DEFAULT_COLUMN_WEIGHTS,
    ) -> list[Candidate]:
        """Candidates for ``query`` with their raw signals, for rankers other than
        :meth:`recall` (the router): the best ``pool`` by context-key BM25 (see
        :mod:`omoide.layers.episodic.context_keys`) and the best ``pool`` by embedding similarity,
        among the
        active episodes ``reader`` may see. Nothing is touched."""
        query = check_text("query", query, max_chars=self.config.max_description_chars)
        pool = check_positive_int("pool", pool, maximum=10_000)
        where, params = self._filters(None, None, time_range, None)
        scope_sql, scope_params = reader_predicate(
            None if reader is None else check_name("reader", reader), reader_teams
        )
        where = f"{where} AND {scope_sql}"
        params = [*params, *scope_params]
        filtered = len(params) > 0
        keys = search_keys(self._db, query, where, params, pool, key_weights)
        dense = self._dense_candidates(
            query, where if filtered else None, params, pool, extra=keys.keys()
        )
        episodes = self._fetch_rowids(set(keys) | set(dense))
        texts = key_texts(self._db, keys)  # coverage matters only where the words match
        return [
            Candidate(episode, keys.get(rowid, 0.0), dense.get(rowid, 0.0), texts.get(rowid, ""))
            for rowid, episode in episodes.items()
        ]

    def touch(self, ids: Sequence[str], now: datetime | None = None) -> None:
        """Count one access of each episode (a ranker outside :meth:`recall` returned them)."""
        self._touch([check_name(f"ids[{i}]", x) for i, x in enumerate(ids)], now)

    def _dense_candidates(
        self, query: str, where: str | None, params: Sequence[Any], pool: int, extra: Iterable[int]
    ) -> dict[int, float]:
        """Cosine similarity of the best ``pool`` episodes matching ``where`` (None: all
        active ones), plus of the ``extra`` ones."""
        vector = self._embedder.embed_query(query)
        index = self._vector_index()
        with self._index_lock:
            rowids, sims = index.similarities(vector)
            rowids, sims = rowids.copy(), sims.copy()
        if where is not None:
            allowed = np.fromiter(
                (r[0] for r in self._db.query(f"SELECT rowid FROM episodes WHERE {where}", params)),
                dtype=np.int64,
            )
            mask = np.isin(rowids, allowed)
            rowids, sims = rowids[mask], sims[mask]
        result: dict[int, float] = {}
        if len(rowids):
            k = min(pool, len(rowids))
            top = np.argpartition(-sims, k - 1)[:k]
            result = {int(rowids[i]): float(sims[i]) for i in top}
        wanted = [r for r in extra if r not in result]
        if wanted:
            position = {int(r): i for i, r in enumerate(rowids)}
            for r in wanted:
                if r in position:
                    result[r] = float(sims[position[r]])
        return result

    def forget_vectors(self, rowids: Iterable[int] | None = None) -> None:
        """Drop episodes that left the active state from the in-memory index (None: all;
        the index is then rebuilt from the table on the next recall)."""
        with self._index_lock:
            if rowids is None or self._index is None:
                self._index = None
            else:
                self._index.remove(rowids)

    def _vector_index(self) -> VectorMatrix:
        with self._index_lock:
            if self._index is None:
                index = VectorMatrix(self._embedder.dimension)
                rows = self._db.query(f"SELECT rowid, embedding FROM episodes WHERE {_LIVE_SQL}")
                if rows:
                    matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32)
                    index.add([r[0] for r in rows], matrix.reshape(len(rows), -1))
                self._index = index
            return self._index

    def _filters(
        self,
        agent_name: str | None,
        event_type: str | None,
        time_range: Sequence[datetime | str | None] | None,
        tags: Sequence[str] | None,
    ) -> tuple[str, list[Any]]:
        where = [_LIVE_SQL]
        params: list[Any] = []
        if agent_name is not None:
            where.append("agent_name = ?")
            params.append(check_name("agent_name", agent_name))
        if event_type is not None:
            where.append("event_type = ?")
            params.append(check_name("event_type", event_type))
        start, end = check_time_range("time_range", time_range)
        if start is not None:
            where.append("timestamp >= ?")
            params.append(to_timestamp(start))
        if end is not None:
            where.append("timestamp <= ?")
            params.append(to_timestamp(end))
        for tag in check_string_list("tags", tags, max_items=MAX_FILTER_TERMS):
            where.append("EXISTS (SELECT 1 FROM json_each(episodes.tags) WHERE value = ?)")
            params.append(tag)
        return " AND ".join(where), params

    def _fetch(self, where: str, params: Sequence[Any]) -> list[Episode]:
        return [
            _episode(r)
            for r in self._db.query(f"SELECT {_COLUMNS} FROM episodes WHERE {where}", params)
        ]

    def _fetch_rowids(self, rowids: Iterable[int]) -> dict[int, Episode]:
        ids = list(rowids)
        out: dict[int, Episode] = {}
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            for row in self._db.query(
                f"SELECT {_COLUMNS} FROM episodes WHERE rowid IN ({','.join('?' * len(part))})",
                part,
            ):
                out[int(row["rowid"])] = _episode(row)
        return out

    def _touch(self, ids: Sequence[str], now: datetime | None = None) -> None:
        stamp = to_timestamp(now or self._clock.now())
        with self._db.transaction() as conn:
            conn.executemany(
                "UPDATE episodes SET access_count = access_count + 1, last_accessed = ? "
                "WHERE id = ?",
                [(stamp, i) for i in ids],
            )

    # -- capacity ----------------------------------------------------------------------

    def retention_scores(self, now: datetime | None = None) -> list[tuple[float, str]]:
        """(retention score, id) of every removable episode (live and not protected),
        lowest first."""
        now_ts = to_timestamp(now or self._clock.now())
        rows = self._db.query(
            "SELECT id, importance, timestamp, decay_rate, access_count FROM episodes "
            f"WHERE protected = 0 AND {_LIVE_SQL}"
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
        total = int(self._db.scalar(f"SELECT COUNT(*) FROM episodes WHERE {_LIVE_SQL}"))
        limit = self.config.max_entries
        if total <= limit:
            return 0
        target = int(limit * (1 - self.config.eviction_fraction))
        victims = [i for _, i in self.retention_scores()[: max(0, total - target)]]
        moved = 0
        for start in range(0, len(victims), 256):
            ids = victims[start : start + 256]
            batch = self._fetch(f"id IN ({','.join('?' * len(ids))})", ids)
            if self._overflow is not None:
                self._overflow(batch)
            self._remove_rows([e.id for e in batch])
            moved += len(batch)
        return moved


def _episode(row: Any) -> Episode:
    return Episode(
        id=row["id"],
        timestamp=from_timestamp(row["timestamp"]),
        agent_name=row["agent_name"],
        event_type=row["event_type"],
        description=row["description"],
        context=json.loads(row["context"]),
        outcome=row["outcome"],
        importance=float(row["importance"]),
        tags=tuple(json.loads(row["tags"])),
        references=tuple(json.loads(row["refs"])),
        access_count=int(row["access_count"]),
        last_accessed=from_timestamp(row["last_accessed"]) if row["last_accessed"] else None,
        decay_rate=float(row["decay_rate"]),
        scope=row["scope"],
        protected=bool(row["protected"]),
        state=row["state"],
        distilled_at=from_timestamp(row["distilled_at"]) if row["distilled_at"] else None,
    )
