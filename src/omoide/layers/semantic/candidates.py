"""The documents of a collection that may answer a question, with their raw signals.

A ranker (:mod:`omoide.recall`) asks one collection on one reader's behalf in batched reads,
never one per hit: the nearest chunks by meaning, then one FTS5 query for the documents its
words find and the full-text rank of the nearest among them, and the chunks of the documents
found only by their words, their similarity computed from the stored vectors. The registry
then gives every candidate's author, time and version in one query. Chunks come from the
copy of the collection held in the process (:mod:`omoide.layers.semantic.mirror`: an exact
search, no ChromaDB call), or, where none is held, from ChromaDB: one query for the nearest
(the reader's scope checked on its result, or in its filter) and one ``get`` by id for the
chunks of the others. Part of the semantic layer, which owns the tables it reads."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from omoide.clock import from_timestamp, to_timestamp
from omoide.core.filters import public_metadata, reader_where
from omoide.layers.semantic.counts import decode_counts
from omoide.layers.semantic.matches import matches
from omoide.layers.semantic.mirror import ChunkFlags, Found, MirroredCollection, chunk_flags
from omoide.layers.semantic.registry import SEARCH_COLUMNS, SEARCHABLE, DocumentRegistry
from omoide.storage import Database
from omoide.storage.chroma import chroma_errors, query_collection

__all__ = ["DocumentCandidate", "gather"]


@dataclass(frozen=True)
class DocumentCandidate:
    """A document that may answer a question: its best chunk and the signals that found it."""

    collection: str
    doc_id: str
    #: The chunk nearest the question (the whole document when it has one chunk).
    text: str
    #: Cosine similarity of that chunk to the question.
    cosine: float
    #: Full-text BM25 of the document (0 when its words do not match; higher is better).
    bm25: float
    #: The document's analysed full text when its words match ("" otherwise).
    terms: str
    metadata: Mapping[str, Any]
    agent_name: str
    updated_at: datetime | None
    #: False when a newer version of the same subject supersedes it.
    current: bool
    #: The id of the current version of its subject when it is superseded.
    superseded_by: str | None
    #: Tokens of the chunk as a context renders it (stored when written; None if unknown).
    tokens: int | None
    vector: npt.NDArray[np.float32]


def gather(
    db: Database,
    registry: DocumentRegistry,
    chroma: Any,
    collection: str,
    *,
    vector: npt.NDArray[np.float32],
    expression: str | None,
    pool: int,
    reader: str | None,
    reader_teams: Iterable[str],
    now: datetime,
    expiry: Mapping[str, Any] | None,
) -> list[DocumentCandidate]:
    """The candidates of ``collection`` (see the module's docstring): the ``pool`` nearest by
    meaning and the ``pool`` best by words (``expression``: the question's FTS5 expression,
    None when it has no words), among what ``reader`` may read."""
    teams = sorted(reader_teams)
    stamp = to_timestamp(now)

    def readable(flags: ChunkFlags) -> bool:
        return flags.readable(reader, teams, stamp)

    held = chroma if isinstance(chroma, MirroredCollection) else None
    copied = None if held is None else held.nearest(vector, pool, readable)
    if copied is None:  # the collection is not held in the process: ChromaDB searches it
        nearest = _nearest(chroma, vector, pool, readable, reader, teams, expiry)
    else:
        nearest = _by_document(copied)
    # The ``pool`` best by words, and the words of the nearest by meaning.
    words = (
        {}
        if expression is None
        else matches(db, collection, expression, pool, None, reader, teams, now, also=[*nearest])
    )
    missing = [d for d in words if d not in nearest]
    rows = {r["id"]: r for r in registry.rows(collection, [*nearest, *missing], SEARCH_COLUMNS)}
    # The current version of every superseded candidate is a candidate too (it may be worded
    # unlike the question: restated in another language); superseding points at the newest.
    successors = {r["superseded_by"] for r in rows.values() if r["superseded_by"] is not None}
    newer = [d for d in successors if d not in rows]
    rows.update({r["id"]: r for r in registry.rows(collection, newer, SEARCH_COLUMNS)})
    missing += [d for d in successors if d not in nearest and d not in missing]
    if missing:
        counts = {d: int(rows[d]["chunk_count"]) for d in missing if d in rows}
        copied = None if held is None else held.chunks_of(vector, counts, readable)
        nearest.update(
            _chunks_of(chroma, vector, counts) if copied is None else _by_document(copied)
        )
    found = []
    for doc_id, (text, cosine, meta, chunk_vector) in nearest.items():
        row = rows.get(doc_id)
        if row is None or row["state"] not in SEARCHABLE:
            continue  # removed or archived since ChromaDB was written
        bm25, terms = words.get(doc_id, (0.0, ""))
        found.append(
            DocumentCandidate(
                collection=collection,
                doc_id=doc_id,
                text=text,
                cosine=cosine,
                bm25=bm25,
                terms=terms,
                metadata=public_metadata(meta),
                agent_name=str(row["agent_name"]),
                updated_at=None if row["updated_at"] is None else from_timestamp(row["updated_at"]),
                current=row["superseded_by"] is None,
                superseded_by=row["superseded_by"],
                tokens=_chunk_tokens(row["chunk_tokens"], meta.get("_chunk", 0)),
                vector=chunk_vector,
            )
        )
    return found


_Chunk = tuple[str, float, dict[str, Any], "npt.NDArray[np.float32]"]


def _nearest(
    chroma: Any,
    vector: npt.NDArray[np.float32],
    pool: int,
    readable: Callable[[ChunkFlags], bool],
    reader: str | None,
    teams: Sequence[str],
    expiry: Mapping[str, Any] | None,
) -> dict[str, _Chunk]:
    """The best chunk of each of the ``pool`` documents nearest ``vector`` that ``reader``
    may read, unexpired (``readable``; one query, two when few of the nearest are readable).

    ChromaDB answers a query filtered by the reader's flags or by expiry several times slower
    than an unfiltered one (it evaluates the filter over every chunk's metadata), so the
    nearest chunks are fetched unfiltered and the readable ones kept (their
    :class:`~.mirror.ChunkFlags`, the filter's rule). Only when they are too few to fill
    ``pool`` — most of the nearest belong to others — is the filtered query asked; the
    outcome is the same either way, and an unreadable chunk is never returned."""
    n_results = max(1, pool * 2)  # documents of several chunks fill it twice
    if reader is not None or expiry is not None:
        raw = query_collection(
            chroma,
            "where",
            query_embeddings=[vector],
            n_results=n_results,
            include=["documents", "metadatas", "distances", "embeddings"],
        )
        found = _best_chunks(raw, pool, lambda meta: readable(chunk_flags(meta)))
        if len(found) >= pool or len(raw["ids"][0]) < n_results:
            return found  # the pool is full, or the collection had nothing more to give
    clauses: list[Mapping[str, Any]] = []
    if reader is not None:
        clauses.append(reader_where(reader, teams))
    if expiry is not None:
        clauses.append(expiry)
    where = None if not clauses else clauses[0] if len(clauses) == 1 else {"$and": clauses}
    raw = query_collection(
        chroma,
        "where",
        query_embeddings=[vector],
        n_results=n_results,
        where=where,
        include=["documents", "metadatas", "distances", "embeddings"],
    )
    return _best_chunks(raw, pool, lambda meta: True)


def _best_chunks(
    raw: Any, pool: int, keep: Callable[[Mapping[str, Any]], bool]
) -> dict[str, _Chunk]:
    """The best chunk of each of the first ``pool`` documents of a query's result whose
    metadata ``keep`` accepts."""
    found: dict[str, _Chunk] = {}
    for cid, doc, meta, dist, emb in zip(
        raw["ids"][0],
        raw["documents"][0],
        raw["metadatas"][0],
        raw["distances"][0],
        raw["embeddings"][0],
        strict=True,
    ):
        meta = dict(meta or {})
        if not keep(meta):
            continue
        doc_id = str(meta.get("_doc", cid.split("#")[0]))
        if doc_id not in found and len(found) < pool:
            found[doc_id] = (doc or "", 1.0 - float(dist), meta, np.asarray(emb, dtype=np.float32))
    return found


def _chunks_of(
    chroma: Any, vector: npt.NDArray[np.float32], chunk_counts: Mapping[str, int]
) -> dict[str, _Chunk]:
    """The chunk of each document nearest ``vector``, from the stored vectors (one read by
    chunk id, ``doc#i`` for each of a document's ``chunk_counts``: a read by id is about
    twice as fast as ChromaDB filtering every chunk's metadata by document)."""
    ids = [f"{doc_id}#{i}" for doc_id, n in chunk_counts.items() for i in range(n)]
    if not ids:
        return {}
    with chroma_errors("ids"):
        raw = chroma.get(ids=ids, include=["documents", "metadatas", "embeddings"])
    found: dict[str, _Chunk] = {}
    for cid, doc, meta, emb in zip(
        raw["ids"], raw["documents"], raw["metadatas"], raw["embeddings"], strict=True
    ):
        meta = dict(meta or {})
        doc_id = str(meta.get("_doc", cid.split("#")[0]))
        chunk_vector = np.asarray(emb, dtype=np.float32)
        cosine = float(chunk_vector @ vector)
        if doc_id not in found or cosine > found[doc_id][1]:
            found[doc_id] = (doc or "", cosine, meta, chunk_vector)
    return found


def _by_document(found: Sequence[Found]) -> dict[str, _Chunk]:
    """The chunks the copy held in the process found, by document."""
    return {doc_id: (text, cos, meta, vec) for doc_id, text, cos, meta, vec in found}


def _chunk_tokens(stored: Any, chunk: Any) -> int | None:
    """The stored token count of chunk ``chunk`` of a document, if known."""
    counts = decode_counts(stored)
    index = int(chunk) if isinstance(chunk, int) else 0
    return counts[index] if 0 <= index < len(counts) else None
