"""A document's chunks in Chroma, written after its registry row and recorded conditionally.

A write of the semantic store changes the registry first (the row goes *pending*, in the
database, where the never-forget triggers check it), then replaces the document's chunks in
Chroma, then marks the row *active* (or *compressed*). Two writes of one id can interleave
their Chroma steps — two replicas writing it at once, or a replica recovering a document
another one is still writing — and the slower one's chunks may land last. So the last step is
a check, in one write transaction: the row is marked only while it still holds what the chunks
were made from (content, metadata, owner, scope) and is live. A write that finds it changed
writes the chunks again from the row as it now is; one that finds it archived or gone removes
what it wrote. The last chunk write to land is thus always followed by a check that it is
current, and the chunks end as the registry says.

Part of the semantic layer, which owns ``semantic_docs``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from omoide.core.filters import reader_flags
from omoide.layers.semantic.counts import chunk_counts
from omoide.providers.tokens import TokenCounter
from omoide.storage import Database
from omoide.storage.chroma import chroma_errors

__all__ = ["LIVE_STATES", "MAX_REWRITES", "Plan", "Written", "write_chunks"]

#: States in which a document has chunks in Chroma (or is about to).
LIVE_STATES = ("pending", "active", "compressed")
#: How many times one write follows a document that keeps changing under it; past that the
#: writes still changing it are the ones left to check (each one does).
MAX_REWRITES = 3


class Plan(NamedTuple):
    """One document's write: its id, text, metadata, chunks, and never-forget protection."""

    doc_id: str
    content: str
    metadata: dict[str, Any]
    chunks: list[str]
    protected: bool


class Written(NamedTuple):
    """What :func:`write_chunks` found when recording: documents changed since their chunks
    were made (to be written again), and documents no longer live (whose chunks it removed)."""

    changed: list[str]
    gone: list[str]


def write_chunks(
    db: Database,
    coll: Any,
    collection: str,
    plans: Sequence[Plan],
    vectors: np.ndarray,
    counter: TokenCounter,
    *,
    owner: str,
    scope: str,
    created: float,
    expires: float | None = None,
) -> Written:
    """Replace the chunks of these documents in Chroma, then mark each one active where the
    registry still holds what was written (see the module's docstring)."""
    expiry: dict[str, Any] = {} if expires is None else {"_expiring": True, "_expires": expires}
    chunk_ids: list[str] = []
    chunk_docs: list[str] = []
    chunk_metas: list[dict[str, Any]] = []
    stale: list[str] = []
    for plan in plans:
        row = db.query_one(
            "SELECT chunk_count, superseded_by FROM semantic_docs WHERE collection=? AND id=?",
            (collection, plan.doc_id),
        )
        previous = int(row["chunk_count"]) if row is not None else 0
        current = row is None or row["superseded_by"] is None
        # Chroma's upsert merges metadata into an existing chunk, which would keep keys the
        # new version no longer has: drop every earlier chunk, then write afresh.
        stale.extend(f"{plan.doc_id}#{i}" for i in range(previous))
        for i, chunk in enumerate(plan.chunks):
            chunk_ids.append(f"{plan.doc_id}#{i}")
            chunk_docs.append(chunk)
            chunk_metas.append(
                {
                    **plan.metadata,
                    **reader_flags(owner, scope),
                    "_doc": plan.doc_id,
                    "_chunk": i,
                    "_chunks": len(plan.chunks),
                    "_created": created,
                    "_current": current,
                    **expiry,
                }
            )
    with chroma_errors("metadatas"):
        for start in range(0, len(stale), 1000):
            coll.delete(ids=stale[start : start + 1000])
        for start in range(0, len(chunk_ids), 1000):
            end = start + 1000
            coll.upsert(
                ids=chunk_ids[start:end],
                documents=chunk_docs[start:end],
                metadatas=chunk_metas[start:end],
                embeddings=vectors[start:end],
            )
    return _record(db, coll, collection, plans, counter, owner, scope)


def _record(
    db: Database,
    coll: Any,
    collection: str,
    plans: Sequence[Plan],
    counter: TokenCounter,
    owner: str,
    scope: str,
) -> Written:
    """Mark the documents whose rows still hold what was written; report the others."""
    counts = [chunk_counts(counter, plan.chunks) for plan in plans]
    written = Written([], [])
    with db.transaction() as conn:  # no other write can come between the check and the mark
        for plan, tokens in zip(plans, counts, strict=True):
            row = conn.execute(
                "SELECT state, content, metadata, agent_name, scope FROM semantic_docs "
                "WHERE collection=? AND id=?",
                (collection, plan.doc_id),
            ).fetchone()
            if row is None or row["state"] not in LIVE_STATES:
                written.gone.append(plan.doc_id)
            elif (
                row["content"] != plan.content
                or json.loads(row["metadata"]) != plan.metadata
                or (row["agent_name"], row["scope"]) != (owner, scope)
            ):
                written.changed.append(plan.doc_id)
            else:
                conn.execute(
                    "UPDATE semantic_docs SET chunk_count=?, chunk_tokens=?, state=CASE WHEN "
                    "compressed_at IS NULL THEN 'active' ELSE 'compressed' END "
                    "WHERE collection=? AND id=?",
                    (len(plan.chunks), tokens, collection, plan.doc_id),
                )
    gone = set(written.gone)
    orphans = [
        f"{plan.doc_id}#{i}"
        for plan in plans
        if plan.doc_id in gone
        for i in range(len(plan.chunks))
    ]
    if orphans:  # archived or deleted while its chunks were on their way: not kept
        with chroma_errors("ids"):
            coll.delete(ids=orphans)
    return written
