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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from omoide.clock import to_timestamp
from omoide.core.filters import public_metadata
from omoide.core.models import QueryHit
from omoide.layers.semantic.matches import matches
from omoide.layers.semantic.mirror import MirroredCollection
from omoide.layers.semantic.registry import DocumentRegistry
from omoide.providers.embeddings import Embedder
from omoide.storage import Database
from omoide.storage.chroma import chroma_errors
from omoide.text.fulltext import match_expression
from omoide.text.relevance import rate

__all__ = ["Chunk", "Words", "all_of", "by_words", "document_of", "hits", "relevance"]

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


def by_words(
    db: Database,
    registry: DocumentRegistry,
    coll: Any,
    collection: str,
    asked: Words,
    vector: npt.NDArray[np.float32],
    chunks: Sequence[Chunk],
    *,
    fetch: int,
    dedupe: bool,
) -> tuple[dict[str, tuple[float, str]], list[Chunk]]:
    """Each candidate document's BM25 and analysed text (the nearest by meaning, ``chunks``,
    and the ``fetch`` best by words, in one full-text query), and the chunks of the documents
    found by their words alone that pass every filter, with their distances computed from the
    stored vectors."""
    expression = match_expression(asked.query_text)
    if expression is None:
        return {}, []
    nearest = list(dict.fromkeys(document_of(cid, meta) for cid, _, meta, _ in chunks))
    words = matches(
        db,
        collection,
        expression,
        fetch,
        None if asked.ids is None else list(asked.ids),
        asked.reader,
        asked.teams,
        asked.now,
        also=nearest,
    )
    known = set(nearest)
    others = [d for d in words if d not in known]
    if not others:
        return words, []
    # The full-text query kept what the reader may read, unexpired, among the ids; the
    # caller's filters (metadata, author, text) are ChromaDB's.
    unfiltered = asked.where is None and asked.where_document is None
    if isinstance(coll, MirroredCollection) and dedupe and unfiltered:
        stamp = to_timestamp(asked.now)
        copied = coll.chunks_of(
            vector, others, lambda f: f.readable(asked.reader, asked.teams, stamp)
        )
        if copied is not None:  # each document's nearest chunk
            return words, [
                (f"{doc_id}#{meta.get('_chunk', 0)}", text, meta, 1.0 - cosine)
                for doc_id, text, cosine, meta, _ in copied
            ]
    # Read by chunk id (``doc#i``): faster than ChromaDB filtering every chunk by document.
    chunk_ids = [
        f"{r['id']}#{i}"
        for r in registry.rows(collection, others)
        for i in range(int(r["chunk_count"]))
    ]
    if not chunk_ids:
        return words, []
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
    return words, more


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


def relevance(
    embedder: Embedder,
    text_weight: float,
    query_text: str,
    found: Sequence[QueryHit],
    words: Mapping[str, tuple[float, str]],
) -> list[float]:
    """The relevance of each hit (:func:`omoide.text.relevance.rate`; ``text_weight`` the
    words' share)."""
    if not found:
        return []
    meanings = embedder.calibrate(np.array([h.similarity for h in found]), "query")
    rated = rate(
        query_text,
        [words.get(h.doc_id, (0.0, ""))[0] for h in found],
        [words.get(h.doc_id, (0.0, ""))[1] for h in found],
        [float(m) for m in meanings],
        [h.document for h in found],
        dense_weight=(1 - text_weight) / text_weight if text_weight > 0 else 1e9,
    )
    return [rel for _, rel in rated]
