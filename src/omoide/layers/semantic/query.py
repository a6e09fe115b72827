"""Layer 3's reads: similarity queries, full-text search, documents and their statistics.

:class:`DocumentQueries` is the reading half of
:class:`~omoide.layers.semantic.store.SemanticStore` (which adds the writes and keeps
ChromaDB in line with the registry). Part of the semantic layer, which owns the tables it
reads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from omoide.clock import Clock, to_timestamp
from omoide.core.config import SemanticConfig
from omoide.core.filters import (
    DOC_OPERATORS,
    FIELD_OPERATORS,
    WHERE_OPERATORS,
    check_where,
    reader_where,
)
from omoide.core.models import RANKINGS, CollectionStats, QueryHit, SemanticDocument
from omoide.core.validation import (
    check_name,
    check_names,
    check_positive_int,
    check_text,
)
from omoide.errors import (
    NotFoundError,
    UnknownCollectionError,
    ValidationError,
)
from omoide.layers.semantic.candidates import DocumentCandidate, gather
from omoide.layers.semantic.hits import (
    Chunk,
    Words,
    all_of,
    chunks_of,
    document_of,
    held_nearest,
    hits,
    live_of,
    nearest_chunks,
    ranked,
    words_of,
)
from omoide.layers.semantic.registry import SEARCH_COLUMNS, DocumentRegistry
from omoide.providers.embeddings import Embedder
from omoide.storage import Database
from omoide.storage.chroma import chroma_errors
from omoide.storage.database import timeline
from omoide.text.fulltext import match_expression

__all__ = ["QUERY_FETCH_FLOOR", "DocumentQueries"]

#: Fewest neighbours asked of ChromaDB per query (see :meth:`SemanticStore.query`).
QUERY_FETCH_FLOOR = 100


class DocumentQueries:
    """Queries of the semantic layer (the base of ``SemanticStore``)."""

    _db: Database
    _registry: DocumentRegistry
    _embedder: Embedder
    _clock: Clock
    config: SemanticConfig
    chunk_tokens: int
    _count_tokens: Callable[[str], int]
    _collections: dict[str, Any]
    remove_expired: Callable[[str, Sequence[str]], int]

    def timeline(
        self, reader: str | None, teams: Iterable[str], since: float
    ) -> tuple[int, list[float]]:
        """Documents ``reader`` may read, any state: how many were stored before ``since``, and
        when the others were (for growth charts)."""
        return timeline(self._db, "semantic_docs", "created_at", reader, teams, since)

    @property
    def collections(self) -> list[str]:
        """Names of the configured collections."""
        return list(self._collections)

    def _collection(self, name: Any) -> Any:
        if not isinstance(name, str) or name not in self._collections:
            raise UnknownCollectionError(name, list(self._collections))
        return self._collections[name]

    def query(
        self,
        collection: str,
        query_text: str,
        n_results: int = 5,
        where: Mapping[str, Any] | None = None,
        where_document: Mapping[str, Any] | None = None,
        *,
        reader: str | None = None,
        reader_teams: Iterable[str] = (),
        dedupe: bool = True,
        touch: bool = True,
        current_first: bool = True,
        author: str | None = None,
        ids: Sequence[str] | None = None,
        rank: str = "relevance",
    ) -> list[QueryHit]:
        """The chunks that best answer ``query_text``, best first.

        ``rank="relevance"`` (default) ranks by words and meaning together, as
        ``Memory.recall`` rates documents (:func:`omoide.text.relevance.rate`; the words'
        share is ``semantic.text_weight``): the nearest chunks by meaning and the documents
        whose words match best are the candidates, and each hit carries its ``relevance``.
        ``rank="meaning"`` ranks by embedding distance alone, as ChromaDB does. The nearest
        chunks come from the copy of the collection held in the process when one is held and
        nothing but the reader's scope and expiry filters them (an exact search,
        :mod:`.mirror`); else from ChromaDB.
        ``where`` filters on metadata and ``where_document`` on text, as in ChromaDB;
        ``author`` keeps the documents that agent wrote, ``ids`` the documents with these ids.
        ``reader`` limits results to what that agent may read; filters cannot widen it. With
        ``dedupe`` (default) each document appears once, as its best chunk. Current versions
        rank before superseded ones unless ``current_first`` is False.
        Long because the filter checks, the Chroma query, expiry and scope filtering and the
        grouping of chunks into documents are one read path.
        """
        if rank not in RANKINGS:
            raise ValidationError("rank", f"expected one of {', '.join(RANKINGS)}, got {rank!r}")
        coll = self._collection(collection)
        query_text = check_text("query_text", query_text, max_chars=100_000)
        n_results = check_positive_int("n_results", n_results, maximum=10_000)
        # The caller's own filters; the reader's scope, the ids and expiry are added below.
        own: list[dict[str, Any]] = []
        if where is not None:
            own.append(check_where(where, "where", FIELD_OPERATORS | WHERE_OPERATORS))
        if author is not None:
            own.append({"_agent": check_name("author", author)})
        clauses = list(own)
        if reader is not None:
            reader = check_name("reader", reader)
            clauses.append(reader_where(reader, reader_teams))
        if ids is not None:
            ids = check_names("ids", ids)
            if not ids:
                return []
            clauses.append({"_doc": {"$in": ids}})
        expiry = self._expiry_where(collection)
        if expiry is not None:
            clauses.append(expiry)
        doc_filter = None
        if where_document is not None:
            doc_filter = check_where(where_document, "where_document", DOC_OPERATORS)
        combined = all_of(clauses)
        vector = self._embedder.embed_query(query_text)
        # HNSW is approximate: in a large collection full of near-duplicates a narrow search
        # misses the nearest document. ``hnsw_search_ef`` sets its breadth; asking for at
        # least QUERY_FETCH_FLOOR neighbours also leaves room for the dead and the duplicate
        # chunks dropped below.
        fetch = min(10_000, max(QUERY_FETCH_FLOOR, n_results * 4 if dedupe else n_results))
        teams = sorted(reader_teams)
        now = self._clock.now()
        # Filtered by scope and expiry only, a document's best chunks come from the copy held
        # in the process when there is one, else from ChromaDB read unfiltered first
        # (:func:`.hits.nearest_chunks`); other filters are always ChromaDB's.
        scoped = not own and ids is None and doc_filter is None
        held = held_nearest(coll, vector, fetch, reader, teams, now) if scoped and dedupe else None
        chunks: list[Chunk] = (
            held
            if held is not None
            else nearest_chunks(
                coll,
                vector,
                fetch,
                combined,
                doc_filter,
                scope=(reader, teams, now) if scoped and combined is not None else None,
            )
        )
        nearest = [document_of(cid, meta) for cid, _, meta, _ in chunks]
        live = live_of(
            self._registry.rows(collection, list(dict.fromkeys(nearest)), SEARCH_COLUMNS)
        )
        found = hits(collection, chunks, live_of=live, dedupe=dedupe)
        if rank == "meaning":
            found.sort(key=lambda h: (current_first and not h.current, h.distance))
            found = found[:n_results]
        else:
            asked = Words(query_text, all_of(own), doc_filter, ids, reader, teams, now)
            words = words_of(self._db, collection, asked, nearest, fetch)

            def more(doc_ids: list[str]) -> list[QueryHit]:
                rows = self._registry.rows(collection, doc_ids, SEARCH_COLUMNS)  # once, for both
                alive = live_of(rows)
                counts = {r["id"]: int(r["chunk_count"]) for r in rows if r["id"] in alive}
                got = chunks_of(coll, asked, vector, counts, dedupe=dedupe)
                return hits(collection, got, live_of=alive, dedupe=dedupe)

            found = ranked(
                self._embedder,
                self.config.text_weight,
                query_text,
                found,
                words,
                more,
                # Past the nearest chunks when the query returned all it was asked for.
                farthest=1.0 - chunks[-1][3] if len(chunks) == fetch else None,
                n_results=n_results,
                current_first=current_first,
            )
        if touch and found:
            self._registry.touch(collection, [h.doc_id for h in found])
        return found

    def candidates(
        self,
        collection: str,
        vector: npt.NDArray[np.float32],
        expression: str | None,
        *,
        pool: int,
        reader: str | None = None,
        reader_teams: Iterable[str] = (),
    ) -> list[DocumentCandidate]:
        """The documents of ``collection`` that may answer a question, with their raw
        signals, for a ranker (see :mod:`omoide.layers.semantic.candidates`): ``vector`` is
        the question's embedding, ``expression`` its FTS5 expression
        (:func:`~omoide.text.fulltext.match_expression`; None: no words). Nothing is touched."""
        coll = self._collection(collection)
        pool = check_positive_int("pool", pool, maximum=1_000)
        reader = None if reader is None else check_name("reader", reader)
        return gather(
            self._db,
            self._registry,
            coll,
            collection,
            vector=vector,
            expression=expression,
            pool=pool,
            reader=reader,
            reader_teams=reader_teams,
            now=self._clock.now(),
            expiry=self._expiry_where(collection),
        )

    def search_text(
        self,
        collection: str,
        query_text: str,
        *,
        limit: int = 20,
        among: Sequence[str] | None = None,
        reader: str | None = None,
        reader_teams: Iterable[str] = (),
    ) -> dict[str, float]:
        """The searchable documents of ``collection`` that share words with ``query_text``,
        each with its BM25 score (higher is better), best first: the ``limit`` best, of
        those with ids in ``among`` if given.

        Words are analysed as for episodes (:mod:`omoide.text.fulltext`): Japanese as character
        bigrams, English stemmed. Embeddings place "Q1 budget" and "Q1 priority" close
        together; full text tells them apart.
        """
        wanted = None if among is None else check_names("among", among)
        expression, limit, reader = self._words_asked(collection, query_text, limit, reader)
        if expression is None:
            return {}
        return self._registry.search_text(
            collection,
            expression,
            limit=limit,
            among=wanted,
            reader=reader,
            reader_teams=reader_teams,
        )

    def archived_versions(
        self,
        collection: str,
        query_text: str,
        *,
        limit: int = 3,
        reader: str | None = None,
        reader_teams: Iterable[str] = (),
    ) -> list[SemanticDocument]:
        """Archived earlier versions of facts that are still current (their subject has a
        searchable version) sharing words with ``query_text``, best first: archiving takes
        a version out of vector search, but a question may be worded like it (asked in
        Japanese about a fact restated in English), and the router lends its match to the
        current version."""
        expression, limit, reader = self._words_asked(collection, query_text, limit, reader)
        if expression is None:
            return []
        return self._registry.archived_versions(
            collection, expression, limit=limit, reader=reader, reader_teams=reader_teams
        )

    def _words_asked(
        self, collection: str, query_text: Any, limit: Any, reader: Any
    ) -> tuple[str | None, int, str | None]:
        """The checked arguments of a full-text search: its FTS5 expression (None: the
        query has no words), limit and reader."""
        self._collection(collection)
        query_text = check_text("query_text", query_text, max_chars=100_000, allow_empty=True)
        limit = check_positive_int("limit", limit, maximum=10_000)
        reader = None if reader is None else check_name("reader", reader)
        return match_expression(query_text), limit, reader

    def get(
        self,
        collection: str,
        doc_id: str,
        *,
        reader: str | None = None,
        reader_teams: Iterable[str] = (),
    ) -> SemanticDocument:
        """The whole document with this id (NotFoundError if absent or not visible)."""
        self._collection(collection)
        check_name("id", doc_id)
        found = self._registry.get(collection, doc_id, reader, reader_teams)
        if found is None:
            raise NotFoundError("document", f"{collection}/{doc_id}")
        return found

    def _expiry_where(self, collection: str) -> dict[str, Any] | None:
        """A filter hiding expired chunks, or None when the collection holds none (the norm)."""
        now = to_timestamp(self._clock.now())
        expired = self._db.scalar(
            "SELECT 1 FROM semantic_docs WHERE collection=? AND expires_at IS NOT NULL "
            "AND expires_at <= ? LIMIT 1",
            (collection, now),
        )
        if expired is None:
            return None
        # ``$ne`` also matches chunks without the key: documents that never expire.
        return {"$or": [{"_expiring": {"$ne": True}}, {"_expires": {"$gt": now}}]}

    # -- collection policies ----------------------------------------------------------------

    def collection_stats(self) -> list[CollectionStats]:
        """Each collection's declared purpose, retention and cap beside its current usage."""
        counts = self._registry.counts()
        expired = self._registry.expired_counts()
        stats = []
        for name, spec in self.config.collections.items():
            stats.append(
                CollectionStats(
                    name=name,
                    purpose=spec.purpose or name,
                    retention_days=spec.retention_days,
                    max_docs=spec.max_docs,
                    on_full=spec.on_full,
                    update_freq=spec.update_freq,
                    documents=counts.get((name, "active"), 0),
                    pending=counts.get((name, "pending"), 0),
                    archived=counts.get((name, "archived"), 0),
                    compressed=counts.get((name, "compressed"), 0),
                    expired=expired.get(name, 0),
                    chunks=self.count_chunks(name),
                )
            )
        return stats

    def documents(
        self,
        collection: str,
        *,
        limit: int = 100,
        offset: int = 0,
        reader: str | None = None,
        reader_teams: Iterable[str] = (),
        state: str = "active",
    ) -> list[SemanticDocument]:
        """Documents of a collection, newest first."""
        self._collection(collection)
        check_positive_int("limit", limit)
        return self._registry.documents(
            collection,
            limit=limit,
            offset=max(0, int(offset)),
            reader=reader,
            reader_teams=reader_teams,
            state=state,
        )

    def touch(self, collection: str, doc_ids: Sequence[str]) -> None:
        """Count one access of each document (a ranker outside :meth:`query` returned it)."""
        self._collection(collection)
        self._registry.touch(
            collection, [check_name(f"doc_ids[{i}]", d) for i, d in enumerate(doc_ids)]
        )

    def current_subjects(self, collection: str) -> list[str]:
        """The subjects of ``collection`` that have a live current version, sorted."""
        self._collection(collection)
        return self._registry.current_subjects(collection)

    def authors(self, collection: str) -> list[str]:
        """The agents that wrote the searchable documents of ``collection``, sorted."""
        self._collection(collection)
        return self._registry.authors(collection)

    def count(self, collection: str, *, state: str = "active") -> int:
        """Number of documents (not chunks) in a collection."""
        self._collection(collection)
        return self._registry.count(collection, state)

    def is_empty(self, collection: str) -> bool:
        """True when a collection holds no active document (cheaper than :meth:`count`)."""
        self._collection(collection)
        return not self._registry.has(collection, "active")

    def count_chunks(self, collection: str) -> int:
        """Number of chunks ChromaDB holds for a collection."""
        coll = self._collection(collection)
        with chroma_errors("collection"):
            return int(coll.count())
