"""Layer 2's search: recall, candidates for other rankers, and the vector index.

:class:`EpisodeSearch` is the reading half of
:class:`~omoide.layers.episodic.store.EpisodicStore` (which adds the writes): it filters in
SQL, gathers candidates by full-text rank (``episodes_fts``) and by embedding similarity (an
exact scan over the in-memory matrix of live episodes: at the store's 10,000-entry scale
about a millisecond, no approximate index needed; or, with ``episodic.vector_store =
"chroma"``, a ChromaDB collection, :mod:`omoide.layers.episodic.chroma_vectors`), then scores
each candidate (see the store's module). It also keeps the index in step with the writes.
Part of the episodic layer, which owns the tables it reads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from omoide.clock import Clock, to_timestamp
from omoide.core.config import EpisodicConfig
from omoide.core.filters import MAX_FILTER_TERMS
from omoide.core.freshness import FreshnessCurve
from omoide.core.models import Episode
from omoide.core.scope import reader_predicate
from omoide.core.validation import (
    check_name,
    check_positive_int,
    check_string_list,
    check_text,
    check_time_range,
)
from omoide.core.vector_matrix import VectorMatrix
from omoide.errors import BackendError
from omoide.layers.episodic.candidate import Candidate, rate_candidates
from omoide.layers.episodic.chroma_vectors import ChromaVectors, store_candidates
from omoide.layers.episodic.context_keys import (
    DEFAULT_COLUMN_WEIGHTS,
    key_texts,
    search_keys,
    search_named,
)
from omoide.layers.episodic.copies import COPIES, one_per_text
from omoide.layers.episodic.rows import LIVE_SQL, EpisodicRows
from omoide.providers.embeddings import Embedder
from omoide.storage import Database
from omoide.text.fulltext import index_text

__all__ = ["EpisodeSearch"]


class EpisodeSearch:
    """Recall and search over the episodic tables (the base of ``EpisodicStore``)."""

    _db: Database
    _embedder: Embedder
    _clock: Clock
    config: EpisodicConfig
    freshness: FreshnessCurve
    rows: EpisodicRows
    _index: VectorMatrix | None
    #: The ChromaDB store of the vectors (``episodic.vector_store = "chroma"``), else None.
    _store: ChromaVectors | None
    #: Whether :meth:`ChromaVectors.sync` has run in this process since it was last needed.
    _store_synced: bool
    _index_lock: threading.Lock

    def count_holding(self, phrase: str, *, limit: int) -> int:
        """Number of active episodes whose text holds ``phrase`` (its words, in order),
        counted up to ``limit``: enough to tell a rare identifier from a common one."""
        phrase = check_text("phrase", phrase, max_chars=self.config.max_description_chars)
        limit = check_positive_int("limit", limit, maximum=10_000)
        words = index_text(phrase, compounds=False).split()  # a phrase: word by word
        if not words:
            return 0
        expression = '"' + " ".join(w.replace('"', '""') for w in words) + '"'
        # CROSS JOIN keeps the full-text match as the outer loop: planned the other way round,
        # SQLite probes the index once per active episode (seconds on a large store).
        match = self._db.dialect.fulltext("episodes_fts", "f")
        return int(
            self._db.scalar(
                f"SELECT COUNT(*) FROM (SELECT f.rowid FROM {match.source} "
                f"{match.driver} episodes ON episodes.rowid = f.rowid "
                f"WHERE {match.condition} AND episodes.state = 'active' LIMIT ?) AS holding",
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
        return self.rows.fetch(
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
        """The episodes that best answer ``query``, best first, each with its ``score``: the
        article's ``relevance × 0.4 + importance × 0.35 + freshness × 0.25`` (the weights are
        ``episodic.*_weight``), relevance rated as every ranker of omoide rates it
        (:mod:`omoide.text.relevance`, over each episode's context key) and scaled so the best
        candidate has 1.

        Filters (the agent that recorded it, event type, ``(start, end)`` time range, tags —
        all of them must be present) apply before scoring. ``reader`` limits results to what
        that agent may see. An empty query ranks the filtered episodes by importance and
        freshness alone.
        """
        query = check_text(
            "query", query, max_chars=self.config.max_description_chars, allow_empty=True
        )
        top_k = check_positive_int("top_k", top_k, maximum=10_000)
        pool = max(self.config.candidate_pool, top_k)
        now = self._clock.now()
        relevance: dict[str, float] = {}
        if query.strip():
            tw = self.config.text_weight
            found = self.scored(
                query,
                pool=pool,
                dense_weight=(1 - tw) / tw if tw > 0 else 1e9,
                agent_name=agent_name,
                event_type=event_type,
                time_range=time_range,
                tags=tags,
                reader=reader,
                reader_teams=reader_teams,
            )
            episodes = [c.episode for c in found]
            relevance = {c.episode.id: c.relevance for c in found}
        else:
            episodes = self._unscored(
                agent_name, event_type, time_range, tags, reader, reader_teams, pool
            )
        # Relevance is scaled so that the best candidate has 1: calibrated similarities of a
        # small model span a narrow band, and unscaled they would carry far less than their
        # 40 % of the score next to importance and freshness.
        top_relevance = max(relevance.values(), default=0.0)
        scored: list[tuple[float, Episode]] = []
        for episode in episodes:
            rel = relevance.get(episode.id, 0.0) / top_relevance if top_relevance > 0 else 0.0
            score = (
                self.config.relevance_weight * rel
                + self.config.importance_weight * episode.ranking_importance
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

    def _unscored(
        self,
        agent_name: str | None,
        event_type: str | None,
        time_range: Sequence[datetime | str | None] | None,
        tags: Sequence[str] | None,
        reader: str | None,
        reader_teams: Iterable[str],
        pool: int,
    ) -> list[Episode]:
        """The newest and the most important filtered episodes (an empty query's candidates)."""
        where, params = self._where(agent_name, event_type, time_range, tags, reader, reader_teams)
        rowids = set()
        for order in ("timestamp", "importance"):
            rowids |= {
                int(r[0])
                for r in self._db.query(
                    f"SELECT rowid FROM episodes WHERE {where} ORDER BY {order} DESC LIMIT ?",
                    [*params, pool],
                )
            }
        return list(self.rows.fetch_rowids(rowids).values())

    def scored(
        self,
        query: str,
        *,
        pool: int,
        meaning_pool: int | None = None,
        dense_weight: float,
        key_weights: Sequence[float] = DEFAULT_COLUMN_WEIGHTS,
        vector: npt.NDArray[np.float32] | None = None,
        agent_name: str | None = None,
        event_type: str | None = None,
        time_range: Sequence[datetime | str | None] | None = None,
        tags: Sequence[str] | None = None,
        reader: str | None = None,
        reader_teams: Iterable[str] = (),
    ) -> list[Candidate]:
        """:meth:`candidates` with their words, meaning and relevance rated
        (:mod:`omoide.text.relevance`): what :meth:`recall` and ``Memory.recall`` rank by."""
        found = self.candidates(
            query,
            pool=pool,
            meaning_pool=meaning_pool,
            key_weights=key_weights,
            vector=vector,
            agent_name=agent_name,
            event_type=event_type,
            time_range=time_range,
            tags=tags,
            reader=reader,
            reader_teams=reader_teams,
        )
        return rate_candidates(query, found, self._embedder, dense_weight=dense_weight)

    def candidates(
        self,
        query: str,
        *,
        pool: int = 200,
        meaning_pool: int | None = None,
        time_range: Sequence[datetime | str | None] | None = None,
        reader: str | None = None,
        reader_teams: Iterable[str] = (),
        key_weights: Sequence[float] = DEFAULT_COLUMN_WEIGHTS,
        vector: npt.NDArray[np.float32] | None = None,
        agent_name: str | None = None,
        event_type: str | None = None,
        tags: Sequence[str] | None = None,
    ) -> list[Candidate]:
        """Candidates for ``query`` with their raw signals, for a ranker: the best ``pool`` by
        context-key BM25 (see :mod:`omoide.layers.episodic.context_keys`), the best ``pool``
        naming the codes the question names (``search_named``), and the best
        ``meaning_pool`` (``pool`` if not given) by embedding similarity (to ``vector``, the
        query's embedding, computed if not given),
        among the active episodes ``reader`` may see that pass the filters; of copies (one
        text by one writer, one vector) the newest stands for all in both pools. Nothing is
        touched."""
        query = check_text("query", query, max_chars=self.config.max_description_chars)
        pool = check_positive_int("pool", pool, maximum=10_000)
        nearest = pool if meaning_pool is None else meaning_pool
        nearest = check_positive_int("meaning_pool", nearest, maximum=10_000)
        where, params = self._where(agent_name, event_type, time_range, tags, reader, reader_teams)
        filtered = len(params) > 0
        named = search_named(self._db, query, where, params, pool, key_weights)
        if vector is None:
            vector = self._embedder.embed_query(query)
        for depth in (1, COPIES):  # deeper only where copies of one text came among them
            keys = search_keys(self._db, query, where, params, depth * pool, key_weights)
            dense, vectors = self._dense_candidates(
                vector, where if filtered else None, params, depth * nearest, extra=keys | named
            )
            if len(set(dense.values())) == len(dense):
                break
        words, meaning = one_per_text(keys, dense, vectors, pool, nearest)
        keys = named | words
        dense = meaning | {r: dense[r] for r in named if r in dense}
        episodes = self.rows.fetch_rowids(set(keys) | set(dense))
        texts = key_texts(self._db, keys)  # word share matters only where the words match
        return [
            Candidate(
                episode,
                keys.get(rowid, 0.0),
                dense.get(rowid, 0.0),
                texts.get(rowid, ""),
                vector=vectors.get(rowid),
            )
            for rowid, episode in episodes.items()
        ]

    def newer_alike(
        self,
        of: Sequence[tuple[npt.NDArray[np.float32], datetime]],
        vector: npt.NDArray[np.float32],
        *,
        pool: int,
        reader: str | None = None,
        reader_teams: Iterable[str] = (),
    ) -> list[Candidate]:
        """For each (embedding, time) in ``of``, the ``pool`` active episodes ``reader`` may
        see, written after that time, nearest that embedding among its ``10 × pool`` nearest:
        the later statements of what an episode said, however worded (one farther away is
        not alike enough to restate it). As candidates of the query whose embedding is
        ``vector``, found by meaning (no words). Nothing is touched."""
        pool = check_positive_int("pool", pool, maximum=10_000)
        where, params = self._where(None, None, None, None, reader, reader_teams)
        vectors: dict[int, npt.NDArray[np.float32]] = {}
        for embedding, when in of:
            near, near_vectors = self._dense_candidates(
                embedding, where if params else None, params, 10 * pool, ()
            )
            later = self.rows.matching(list(near), "timestamp > ?", [to_timestamp(when)])
            for rowid in sorted(later, key=lambda r: -near[r])[:pool]:
                vectors.setdefault(rowid, near_vectors[rowid])
        return [
            Candidate(episode, 0.0, float(vectors[r] @ vector), vector=vectors[r])
            for r, episode in self.rows.fetch_rowids(vectors).items()
        ]

    def _where(
        self,
        agent_name: str | None,
        event_type: str | None,
        time_range: Sequence[datetime | str | None] | None,
        tags: Sequence[str] | None,
        reader: str | None,
        reader_teams: Iterable[str],
    ) -> tuple[str, list[Any]]:
        """The SQL selecting the active episodes that pass the filters and ``reader``'s scope."""
        where, params = self._filters(agent_name, event_type, time_range, tags)
        scope_sql, scope_params = reader_predicate(
            None if reader is None else check_name("reader", reader), reader_teams
        )
        return f"{where} AND {scope_sql}", [*params, *scope_params]

    def _dense_candidates(
        self,
        vector: npt.NDArray[np.float32],
        where: str | None,
        params: Sequence[Any],
        pool: int,
        extra: Iterable[int],
    ) -> tuple[dict[int, float], dict[int, npt.NDArray[np.float32]]]:
        """Cosine similarity to ``vector`` of the best ``pool`` episodes matching ``where``
        (None: all active ones), plus of the ``extra`` ones; and the vectors of all of them."""
        if self._store is not None:
            with self._index_lock:
                # Once per process; on a shared database also after another replica's mark.
                if not self._store_synced or (self._db.shared and self._store.is_stale(self._db)):
                    self._store.sync(self._db, self.rows)
                    self._store_synced = True
            return store_candidates(self.rows, self._store, vector, where, params, pool, extra)
        index = self._vector_index()
        with self._index_lock:
            rowids, sims = index.similarities(vector)
            rowids, sims = rowids.copy(), sims.copy()
        result: dict[int, float] = {}
        if where is not None:
            result = self._nearest_allowed(rowids, sims, where, params, pool)
        elif len(rowids):
            k = min(pool, len(rowids))
            top = np.argpartition(-sims, k - 1)[:k]
            result = {int(rowids[i]): float(sims[i]) for i in top}
        wanted = [r for r in extra if r not in result]  # found by words: they pass the filters
        if wanted:  # located in one vectorised pass, not a dict over every row
            for i in np.flatnonzero(np.isin(rowids, np.asarray(wanted, dtype=rowids.dtype))):
                result[int(rowids[i])] = float(sims[i])
        with self._index_lock:
            stored = index.vectors(list(result))
        return result, {r: stored[i] for i, r in enumerate(result)}

    def _nearest_allowed(
        self,
        rowids: npt.NDArray[np.int64],
        sims: npt.NDArray[np.float32],
        where: str,
        params: Sequence[Any],
        pool: int,
    ) -> dict[int, float]:
        """The ``pool`` most similar episodes that match ``where``. The nearest twice
        ``pool`` are checked first (one indexed read), then the next twice ``pool``; only
        when fewer than ``pool`` of those match — the filter is narrow — is every episode
        matching it read. Each step stops once ``pool`` match: every episode further down is
        less similar than all of them, so the answer is the same either way."""
        if not len(rowids):
            return {}
        k = min(len(rowids), 4 * pool)
        nearest = np.argpartition(-sims, k - 1)[:k] if k < len(rowids) else np.arange(k)
        nearest = nearest[np.argsort(-sims[nearest], kind="stable")]
        allowed: set[int] = set()
        for part in (nearest[: 2 * pool], nearest[2 * pool :]):
            allowed |= self.rows.matching([int(r) for r in rowids[part]], where, params)
            if len(allowed) >= pool:
                break
        if len(allowed) >= pool or k == len(rowids):
            kept = np.array([i for i in nearest if int(rowids[i]) in allowed], dtype=np.int64)
        else:  # a narrow filter: read every episode it lets through
            every = np.fromiter(self.rows.rowids_where(where, params), dtype=np.int64)
            kept = np.flatnonzero(np.isin(rowids, every))
        if not len(kept):
            return {}
        n = min(pool, len(kept))
        top = kept[np.argpartition(-sims[kept], n - 1)[:n]]
        return {int(rowids[i]): float(sims[i]) for i in top}

    def forget_vectors(self, rowids: Iterable[int] | None = None) -> None:
        """Drop episodes that left the active state from the vector index (None: anything
        may have changed; the index is rebuilt from the table on the next recall)."""
        if rowids is not None:
            self._index_remove(list(rowids))
            return
        with self._index_lock:
            self._index = None
            if self._store is not None:
                self._store.mark_stale(self._db)
                self._store_synced = False

    def refresh_vectors(self, rowids: Sequence[int]) -> None:
        """Give the vector index these episodes' vectors as the table now has them (after
        their text or state changed). The matrix is rebuilt on the next recall (its rows then
        keep the table's order, and its scores are a fresh build's to the last bit); the
        ChromaDB store gets the live ones' vectors again and drops the others'."""
        if self._store is None:
            self.forget_vectors(None)
            return
        rowids = [int(r) for r in rowids]
        live = self.rows.vectors(sorted(self.rows.matching(rowids, LIVE_SQL, ())))
        if live:
            self._index_add(list(live), np.stack(list(live.values())))
        self._index_remove([r for r in rowids if r not in live])

    def _index_add(self, rowids: Sequence[int], vectors: npt.NDArray[np.float32]) -> None:
        """Store these episodes' vectors in the index, once they are committed in SQLite
        (under the lock, so an index being built now cannot miss them)."""
        if not len(rowids):
            return
        with self._index_lock:
            if self._store is not None:
                self._write_store(lambda store: store.add(rowids, vectors))
            elif self._index is not None:
                self._index.add(rowids, vectors)

    def _index_remove(self, rowids: Sequence[int]) -> None:
        if not rowids:
            return
        with self._index_lock:
            if self._store is not None:
                self._write_store(lambda store: store.remove(rowids))
            elif self._index is not None:
                self._index.remove(rowids)

    def _write_store(self, change: Callable[[ChromaVectors], None]) -> None:
        """Apply ``change`` to the ChromaDB store. SQLite has committed the write: a server
        that cannot take it now leaves the store stale, to be rewritten from the table by
        the next search, rather than failing a write that is safely on disk."""
        assert self._store is not None
        try:
            change(self._store)
        except BackendError:
            self._store.mark_stale(self._db)
            self._store_synced = False

    def _vector_index(self) -> VectorMatrix:
        with self._index_lock:
            if self._index is None:
                index = VectorMatrix(self._embedder.dimension)
                rowids, matrix = self.rows.vectors_where(LIVE_SQL)
                if rowids:
                    index.add(rowids, matrix)
                self._index = index
            return self._index

    def _filters(
        self,
        agent_name: str | None,
        event_type: str | None,
        time_range: Sequence[datetime | str | None] | None,
        tags: Sequence[str] | None,
    ) -> tuple[str, list[Any]]:
        where = [LIVE_SQL]
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
            elements = self._db.dialect.json_elements("episodes.tags", "j")
            where.append(f"EXISTS (SELECT 1 FROM {elements} WHERE j.value = ?)")
            params.append(tag)
        return " AND ".join(where), params

    def _touch(self, ids: Sequence[str], now: datetime | None = None) -> None:
        self.rows.touch(ids, to_timestamp(now or self._clock.now()))
