"""Episode embeddings in a ChromaDB collection, for ``episodic.vector_store = "chroma"``.

The default matrix (:class:`~omoide.core.vector_matrix.VectorMatrix`) holds every live
episode's vector in the process. With this store they live in the collection
``omoide.episodes`` (after ``semantic.chroma_prefix``) of the semantic layer's ChromaDB (the
``semantic.chroma_url`` server, else the directory's own), and a search asks it for the
nearest. SQLite keeps every
vector (``episodes.embedding``) and stays the truth:

- A search asks for the ``4 × pool`` nearest and keeps those the SQL filter (live state,
  scope, agent, time, tags) allows, in one ``rowid IN (...)`` read, as the matrix search does.
  When too few pass, a filter allowing at most :data:`EXACT_BELOW` episodes is searched
  exactly over their vectors in SQLite, and a wider one by asking for four times as many
  neighbours until enough pass. The similarities are computed from SQLite's vectors, so the
  scores are the matrix's; only what HNSW's approximation misses can differ.
- A write reaches Chroma after it commits in SQLite. One that cannot (the server is down)
  does not fail the write: it marks the collection stale in ``meta``, and the next search —
  in this process or after a restart — writes every live vector again.
- The first search of a process brings the collection in line with the table: vectors of live
  episodes it lacks are added from SQLite (an older store, a write lost in a crash), those of
  episodes no longer live removed.
- Replicas over one shared database see each other's marks: the mark is a counter that only
  grows, a sync records the count it started from (:data:`SYNCED_KEY`), and every search of a
  replica checks the two, so a write one replica could not bring to Chroma is repaired by the
  next search of any replica, and a sync never clears a mark made while it ran. A sync reads
  the collection before the table (a vector reaches Chroma only after its episode commits, so
  nothing it reads is newer than the table) and checks again, just before removing a vector,
  that its episode is still not live.

Part of the episodic layer, which owns the ``episodes`` table read here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from omoide.core.config import EpisodicConfig, SemanticConfig
from omoide.layers.episodic.rows import LIVE_SQL, EpisodicRows
from omoide.storage import Database
from omoide.storage.chroma import chroma_errors, open_collection, query_collection, store_id

__all__ = [
    "EPISODES_COLLECTION",
    "EXACT_BELOW",
    "STALE_KEY",
    "SYNCED_KEY",
    "ChromaVectors",
    "episode_vectors",
    "store_candidates",
]

#: The collection's name after the prefix (a dot, which no semantic collection name has).
EPISODES_COLLECTION = "omoide.episodes"
#: A filter allowing at most this many episodes is searched exactly, over SQLite's vectors.
EXACT_BELOW = 2000
#: ``meta`` key counting the times the collection was found to disagree with the table (a
#: write Chroma could not take, a forgotten index): it may lack vectors SQLite has, or hold
#: old ones, while this count is above :data:`SYNCED_KEY`'s. (Stores written before the
#: count held "1" or "0", which read as the same numbers.)
STALE_KEY = "episode_vectors_stale"
#: ``meta`` key holding the :data:`STALE_KEY` count that the last completed sync started from.
SYNCED_KEY = "episode_vectors_synced"
_BATCH = 500


def episode_vectors(
    client: Any, semantic: SemanticConfig, episodic: EpisodicConfig, db: Database
) -> ChromaVectors | None:
    """The ChromaDB store of the episodes' vectors when ``episodic.vector_store`` asks for
    one (None: the in-memory matrix). Cosine whatever ``semantic.hnsw_space`` says: the
    episodic ranker compares cosine similarities."""
    if episodic.vector_store != "chroma":
        return None
    config = dataclasses.replace(semantic, hnsw_space="cosine")
    purpose = "episode vectors of omoide's episodic layer"
    return ChromaVectors(
        open_collection(client, config, EPISODES_COLLECTION, purpose, store_id(db))
    )


class ChromaVectors:
    """Episode embeddings in one ChromaDB collection, by rowid: :class:`VectorMatrix`'s
    ``add``, ``remove``, ``nearest`` and ``len``, and :meth:`sync` with the table."""

    def __init__(self, collection: Any) -> None:
        self._coll = collection

    def __len__(self) -> int:
        with chroma_errors("collection"):
            return int(self._coll.count())

    def add(self, rowids: Sequence[int], vectors: npt.NDArray[np.float32]) -> None:
        """Store (or replace) the vectors of ``rowids``."""
        for start in range(0, len(rowids), _BATCH):
            ids = [str(int(r)) for r in rowids[start : start + _BATCH]]
            chunk = np.asarray(vectors[start : start + _BATCH], dtype=np.float32)
            with chroma_errors("embeddings"):
                self._coll.upsert(ids=ids, embeddings=chunk)

    def remove(self, rowids: Iterable[int]) -> None:
        ids = [str(int(r)) for r in rowids]
        for start in range(0, len(ids), _BATCH):
            with chroma_errors("ids"):
                self._coll.delete(ids=ids[start : start + _BATCH])

    def nearest(
        self, query: npt.NDArray[np.float32], k: int
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """Row ids and cosine similarity of the ``k`` stored vectors nearest ``query``,
        nearest first (fewer when the collection holds fewer)."""
        if k <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        raw = query_collection(
            self._coll, "query", query_embeddings=[query], n_results=k, include=["distances"]
        )
        rowids = np.array([int(x) for x in raw["ids"][0]], dtype=np.int64)
        return rowids, (1.0 - np.asarray(raw["distances"][0], dtype=np.float32))

    def rowids(self) -> set[int]:
        """Every row id the collection holds (read page by page)."""
        found: set[int] = set()
        page = 10_000
        while True:
            with chroma_errors("collection"):
                got = self._coll.get(include=[], limit=page, offset=len(found))["ids"]
            found.update(int(x) for x in got)
            if len(got) < page:
                return found

    def sync(self, db: Database, rows: EpisodicRows) -> None:
        """Bring the collection in line with the live episodes of ``db``: add the vectors it
        lacks (all of them if it was marked stale), remove those of episodes gone."""
        marks, synced = _counts(db)
        stored = self.rowids()  # before the table: see the module's docstring
        live = rows.rowids_where(LIVE_SQL)
        gone = stored - live
        if gone:  # not live when read; one restored since by another process keeps its vector
            gone -= rows.matching(sorted(gone), LIVE_SQL, ())
            self.remove(sorted(gone))
        missing = sorted(live if marks > synced else live - stored)
        for start in range(0, len(missing), _BATCH):
            part = rows.vectors(missing[start : start + _BATCH])
            if part:
                self.add(list(part), np.stack(list(part.values())))
        if marks > synced:
            with db.transaction():  # the larger count wins: a slower sync never lowers it
                if marks > _counts(db)[1]:
                    db.set_meta(SYNCED_KEY, str(marks))

    @staticmethod
    def is_stale(db: Database) -> bool:
        """Whether a mark was made since the last sync started (by any process)."""
        marks, synced = _counts(db)
        return marks > synced

    @staticmethod
    def mark_stale(db: Database) -> None:
        """Record that the collection may disagree with the table (see :meth:`sync`)."""
        with db.transaction():
            db.set_meta(STALE_KEY, str(_counts(db)[0] + 1))


def _counts(db: Database) -> tuple[int, int]:
    """The :data:`STALE_KEY` and :data:`SYNCED_KEY` counts (0 when unset)."""
    return int(db.get_meta(STALE_KEY) or 0), int(db.get_meta(SYNCED_KEY) or 0)


def store_candidates(
    rows: EpisodicRows,
    store: ChromaVectors,
    query: npt.NDArray[np.float32],
    where: str | None,
    params: Sequence[Any],
    pool: int,
    extra: Iterable[int],
) -> tuple[dict[int, float], dict[int, npt.NDArray[np.float32]]]:
    """The episodic search's dense candidates from ``store``: cosine similarity to ``query``
    of the best ``pool`` live episodes matching ``where`` (None: all live ones), plus of the
    ``extra`` ones; and the vectors of all of them (from SQLite)."""
    nearest = _nearest_allowed(rows, store, query, where or LIVE_SQL, params, pool)
    vectors = rows.vectors(sorted(set(nearest) | {int(r) for r in extra}))
    return {r: float(v @ query) for r, v in vectors.items()}, vectors


def _nearest_allowed(
    rows: EpisodicRows,
    store: ChromaVectors,
    query: npt.NDArray[np.float32],
    where: str,
    params: Sequence[Any],
    pool: int,
) -> list[int]:
    """The ``pool`` episodes nearest ``query`` that match ``where`` (see the module)."""
    k = 4 * pool
    counted = False
    while True:
        rowids, _ = store.nearest(query, k)
        allowed = rows.matching([int(r) for r in rowids], where, params)
        kept = [int(r) for r in rowids if int(r) in allowed]
        if len(kept) >= pool or len(rowids) < k:  # enough, or nothing more to ask for
            return kept[:pool]
        if not counted:
            counted = True
            if rows.count_where(where, params) <= EXACT_BELOW:
                return _exact(rows, query, where, params, pool)
        k *= 4


def _exact(
    rows: EpisodicRows,
    query: npt.NDArray[np.float32],
    where: str,
    params: Sequence[Any],
    pool: int,
) -> list[int]:
    """The ``pool`` episodes matching ``where`` nearest ``query``, by an exact scan of their
    vectors in SQLite (a narrow filter: few of them)."""
    rowids, matrix = rows.vectors_where(where, params)
    if not rowids:
        return []
    sims = matrix @ query
    n = min(pool, len(rowids))
    return [rowids[i] for i in np.argpartition(-sims, n - 1)[:n]]
