"""The hits of ``SemanticStore.query``: chunks turned into hits, and, by relevance, the words
that find and rank them.

By relevance (the default), a query's candidates are the nearest chunks by meaning (its
ChromaDB query, every filter applied) and the documents whose words match best (one FTS5
query, within the reader's scope and unexpired); the chunks of the documents found by words
alone are read in one ChromaDB read that applies the caller's filters, or from the copy held
in the process when there are none. Each hit is then rated as ``Memory.recall`` rates a
document (:func:`omoide.text.relevance.rate`). Part of the semantic layer, which owns the
tables it reads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from omoide.clock import to_timestamp
from omoide.core.filters import public_metadata
from omoide.core.models import QueryHit
from omoide.errors import ValidationError
from omoide.layers.semantic.counts import decode_counts
from omoide.layers.semantic.matches import matches
from omoide.layers.semantic.mirror import MirroredCollection, chunk_flags
from omoide.layers.semantic.registry import SEARCHABLE
from omoide.providers.embeddings import Embedder
from omoide.storage import Database
from omoide.storage.chroma import chroma_errors, query_collection
from omoide.text.fulltext import match_expression
from omoide.text.relevance import languages, rate, relevance, scripts_present

__all__ = [
    "Chunk",
    "Words",
    "all_of",
    "chunks_of",
    "document_of",
    "held_nearest",
    "hits",
    "live_of",
    "nearest_chunks",
    "ranked",
    "words_of",
]

#: How many times ``fetch`` chunks a query scoped to a reader reads unfiltered
#: (:func:`nearest_chunks`).
UNFILTERED_READ = 2

#: A chunk as a query returns it: id, text, metadata, distance.
Chunk = tuple[str, "str | None", "Mapping[str, Any] | None", float]


@dataclass(frozen=True)
class Words:
    """What a query by relevance asks of the words: its text, the filters ChromaDB applies
    (metadata and author; text), the ids it is limited to, and its reader."""

    query_text: str
    where: Mapping[str, Any] | None
    where_document: Mapping[str, Any] | None
    ids: Sequence[str] | None
    reader: str | None
    teams: Sequence[str]
    now: datetime


def all_of(clauses: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """One ChromaDB filter requiring every clause (None: no clause)."""
    if not clauses:
        return None
    return dict(clauses[0]) if len(clauses) == 1 else {"$and": list(clauses)}


def document_of(chunk_id: str, metadata: Mapping[str, Any] | None) -> str:
    """The document a chunk belongs to."""
    return str((metadata or {}).get("_doc", chunk_id.split("#")[0]))


def held_nearest(
    coll: Any,
    vector: npt.NDArray[np.float32],
    fetch: int,
    reader: str | None,
    teams: Sequence[str],
    now: datetime,
) -> list[Chunk] | None:
    """The nearest chunk of each of the ``fetch`` documents nearest ``vector`` that ``reader``
    may read at ``now`` (unexpired, in its scope), nearest first, from the copy of the
    collection held in the process: an exact search and no ChromaDB call, where ChromaDB
    would filter every chunk by scope and expiry. None when no copy is held (ask ChromaDB)."""
    if not isinstance(coll, MirroredCollection):
        return None
    stamp = to_timestamp(now)
    copied = coll.nearest(vector, fetch, lambda f: f.readable(reader, teams, stamp))
    if copied is None:
        return None
    return [
        (f"{doc_id}#{meta.get('_chunk', 0)}", text, meta, 1.0 - cosine)
        for doc_id, text, cosine, meta, _ in copied
    ]


def nearest_chunks(
    coll: Any,
    vector: npt.NDArray[np.float32],
    fetch: int,
    where: Mapping[str, Any] | None,
    where_document: Mapping[str, Any] | None,
    *,
    scope: tuple[str | None, Sequence[str], datetime] | None = None,
) -> list[Chunk]:
    """The ``fetch`` chunks nearest ``vector`` that pass the filters, nearest first: a
    ChromaDB query.

    ``scope`` (reader, teams, now) is given when the filters are only the reader's scope and
    expiry (``where`` then holds their clauses). ChromaDB answers a query filtered by a
    reader's flags many times slower than an unfiltered one (it evaluates the ``$or`` over
    every chunk's metadata), so the nearest :data:`UNFILTERED_READ` × ``fetch`` chunks are
    read unfiltered, and the first ``fetch`` that reader may read at that time
    (:meth:`~.mirror.ChunkFlags.readable`, the filter's rule) are the filtered query's
    answer. Only when fewer are readable (most of the nearest belong to others) is the
    filtered query asked."""
    if scope is not None:
        reader, teams, now = scope
        stamp = to_timestamp(now)
        asked = fetch * UNFILTERED_READ
        nearest = _query(coll, vector, asked, None, None)
        kept = [c for c in nearest if chunk_flags(c[2]).readable(reader, teams, stamp)]
        if len(kept) >= fetch or len(nearest) < asked:  # enough, or all there is
            return kept[:fetch]
    return _query(coll, vector, fetch, where, where_document)


def _query(
    coll: Any,
    vector: npt.NDArray[np.float32],
    n_results: int,
    where: Mapping[str, Any] | None,
    where_document: Mapping[str, Any] | None,
) -> list[Chunk]:
    """ChromaDB's ``n_results`` chunks nearest ``vector`` that pass the filters."""
    try:
        raw = query_collection(
            coll,
            "where",
            query_embeddings=[vector],
            n_results=n_results,
            where=where,
            where_document=where_document,
            include=["documents", "metadatas", "distances"],
        )
    except ValidationError as exc:  # Chroma's own validation of filters (a bad regex)
        about = exc.message.lower()
        field = "where_document" if "regex" in about or "document" in about else "where"
        raise ValidationError(field, exc.message) from None
    return list(
        zip(
            raw["ids"][0],
            raw["documents"][0],
            raw["metadatas"][0],
            raw["distances"][0],
            strict=True,
        )
    )


def words_of(
    db: Database, collection: str, asked: Words, nearest: Sequence[str], fetch: int
) -> dict[str, tuple[float, str]]:
    """Each candidate document's BM25 and analysed text: the ``nearest`` by meaning and the
    ``fetch`` best by words, in one full-text query (within the reader's scope, unexpired,
    among the asked ids)."""
    expression = match_expression(asked.query_text)
    if expression is None:
        return {}
    return matches(
        db,
        collection,
        expression,
        fetch,
        None if asked.ids is None else list(asked.ids),
        asked.reader,
        asked.teams,
        asked.now,
        also=list(dict.fromkeys(nearest)),
    )


def chunks_of(
    coll: Any,
    asked: Words,
    vector: npt.NDArray[np.float32],
    chunk_counts: Mapping[str, int],
    *,
    dedupe: bool,
) -> list[Chunk]:
    """The chunks of documents found by their words alone (``chunk_counts``: how many chunks
    each has) that pass the caller's filters
    (metadata, author, text: ChromaDB's), nearest first, their distances computed from the
    stored vectors: from the copy held in the process when there are no such filters, else
    in one ChromaDB read by chunk id (``doc#i``: faster than filtering every chunk)."""
    unfiltered = asked.where is None and asked.where_document is None
    if isinstance(coll, MirroredCollection) and dedupe and unfiltered:
        stamp = to_timestamp(asked.now)
        copied = coll.chunks_of(
            vector, chunk_counts, lambda f: f.readable(asked.reader, asked.teams, stamp)
        )
        if copied is not None:  # each document's nearest chunk
            return [
                (f"{doc_id}#{meta.get('_chunk', 0)}", text, meta, 1.0 - cosine)
                for doc_id, text, cosine, meta, _ in copied
            ]
    chunk_ids = [f"{doc_id}#{i}" for doc_id, n in chunk_counts.items() for i in range(n)]
    if not chunk_ids:
        return []
    with chroma_errors("where"):
        got = coll.get(
            ids=chunk_ids,
            where=asked.where,
            where_document=asked.where_document,
            include=["documents", "metadatas", "embeddings"],
        )
    more = [
        (cid, doc, meta, 1.0 - float(np.asarray(emb, dtype=np.float32) @ vector))
        for cid, doc, meta, emb in zip(
            got["ids"], got["documents"], got["metadatas"], got["embeddings"], strict=True
        )
    ]
    more.sort(key=lambda c: c[3])  # nearest chunk first, as a query returns them
    return more


def live_of(rows: Iterable[Any]) -> dict[str, tuple[bool, tuple[int, ...]]]:
    """For the registry ``rows`` of searchable documents, whether each is the current version
    of its subject, and its chunks' stored token counts (:mod:`.counts`)."""
    return {
        r["id"]: (r["superseded_by"] is None, decode_counts(r["chunk_tokens"]))
        for r in rows
        if r["state"] in SEARCHABLE
    }


def hits(
    collection: str,
    chunks: Sequence[Chunk],
    *,
    live_of: Mapping[str, tuple[bool, tuple[int, ...]]],
    dedupe: bool,
) -> list[QueryHit]:
    """The hits of ``chunks`` whose documents are live (``live_of``: whether each is current,
    its chunks' token counts), each document once with ``dedupe`` (its first chunk)."""
    found: list[QueryHit] = []
    seen: set[str] = set()
    for cid, doc, raw_meta, dist in chunks:
        meta = dict(raw_meta or {})
        doc_id = document_of(cid, meta)
        if doc_id not in live_of or (dedupe and doc_id in seen):
            continue
        seen.add(doc_id)
        current, counts = live_of[doc_id]
        chunk = int(meta.get("_chunk", 0))
        found.append(
            QueryHit(
                id=cid,
                document=doc or "",
                metadata=public_metadata(meta),
                distance=float(dist),
                collection=collection,
                doc_id=doc_id,
                chunk_index=chunk,
                current=current,
                tokens=counts[chunk] if chunk < len(counts) else None,
            )
        )
    return found


def ranked(
    embedder: Embedder,
    text_weight: float,
    query_text: str,
    found: Sequence[QueryHit],
    words: Mapping[str, tuple[float, str]],
    more: Callable[[list[str]], list[QueryHit]],
    *,
    farthest: float | None,
    n_results: int,
    current_first: bool,
) -> list[QueryHit]:
    """The ``n_results`` best of ``found`` (the nearest by meaning) and of the documents
    ``words`` found alone, by relevance (:func:`omoide.text.relevance.rate`; ``text_weight``
    the words' share), each with it; current versions first with ``current_first``.

    A document found by words alone is farther in meaning than the nearest chunks
    (``farthest``: the similarity of the last of them, None when they were all there were),
    so its relevance is at most its words' with that meaning: ``more`` reads the chunks of
    those that could still rank among the ``n_results`` best, and only of those."""
    dense_weight = (1 - text_weight) / text_weight if text_weight > 0 else 1e9
    shown = {h.doc_id for h in found}
    others = [d for d in words if d not in shown]

    def rated(
        hits_: Sequence[QueryHit], rest_meaning: float
    ) -> tuple[list[float], dict[str, float]]:
        """The relevance of ``hits_``, and the words signal of the other documents (rated
        with ``rest_meaning``): every document of ``words`` is rated, so the words are
        relative to the same best match each time."""
        named = {h.doc_id for h in hits_}
        rest = [d for d in others if d not in named]
        meanings = embedder.calibrate(np.array([h.similarity for h in hits_]), "query")
        ratings = rate(
            query_text,
            [words.get(h.doc_id, (0.0, ""))[0] for h in hits_] + [words[d][0] for d in rest],
            [words.get(h.doc_id, (0.0, ""))[1] for h in hits_] + [words[d][1] for d in rest],
            [float(m) for m in meanings] + [rest_meaning] * len(rest),
            [h.document for h in hits_] + [""] * len(rest),
            dense_weight=dense_weight,
        )
        return (
            [rel for _, rel in ratings[: len(hits_)]],
            {d: w for d, (w, _) in zip(rest, ratings[len(hits_) :], strict=True)},
        )

    if others:
        cap = 1.0 if farthest is None else float(embedder.calibrate(farthest, "query"))
        scores, rest = rated(found, cap)
        rivals = sorted(
            (s for h, s in zip(found, scores, strict=True) if h.current or not current_first),
            reverse=True,
        )
        floor = rivals[n_results - 1] if len(rivals) >= n_results else -1.0
        asked = languages(query_text)

        def bound(doc_id: str) -> float:
            # Rated in the question's language unless the document holds letters of another
            # script: then a chunk of it may be rated by its meaning squared.
            same = not asked or scripts_present(words[doc_id][1]) <= asked
            return relevance(rest[doc_id], cap, dense_weight=dense_weight, comparable=same)

        could = [d for d in others if bound(d) >= floor]
        found = [*found, *(more(could) if could else [])]
    scores, _ = rated(found, 0.0)
    order = sorted(
        range(len(found)), key=lambda i: (current_first and not found[i].current, -scores[i])
    )
    return [replace(found[i], relevance=scores[i]) for i in order[:n_results]]
