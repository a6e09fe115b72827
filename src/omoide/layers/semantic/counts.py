"""Token counts of the chunks of semantic documents, made when the chunks are written.

Part of the semantic layer, which owns ``semantic_docs``: its ``chunk_tokens`` column holds,
for a document whose chunks are in ChromaDB, the tokens of each chunk's text as a context
renders it (:func:`omoide.providers.tokens.count_rendered`), as a JSON array by chunk, counted
by the memory's token counter, whose name the ``meta`` key :data:`CHUNK_TOKENS_META` records.
A store opened with another counter (or before counts were stored) recounts every chunk from
its text in ChromaDB (:func:`recount_chunks`).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from omoide.providers.tokens import TokenCounter, count_rendered
from omoide.storage.chroma import chroma_errors

__all__ = ["CHUNK_TOKENS_META", "chunk_counts", "decode_counts", "recount_chunks"]

#: The ``meta`` key naming the token counter that made the stored chunk counts.
CHUNK_TOKENS_META = "tokens.chunks"


def chunk_counts(counter: TokenCounter, chunks: Sequence[str]) -> str:
    """The ``chunk_tokens`` value of a document made of ``chunks``."""
    return json.dumps([count_rendered(counter, c) for c in chunks])


def decode_counts(value: Any) -> tuple[int, ...]:
    """A stored ``chunk_tokens`` value as a tuple (empty when not counted)."""
    if not value:
        return ()
    return _decoded(str(value))


@lru_cache(maxsize=16_384)
def _decoded(value: str) -> tuple[int, ...]:
    """:func:`decode_counts` of a stored value, remembered: every recall reads the counts of
    each of its document candidates, and the candidates of one store recur."""
    counts = json.loads(value)
    return tuple(int(n) for n in counts) if isinstance(counts, list) else ()


def recount_chunks(
    conn: sqlite3.Connection, collections: Mapping[str, Any], counter: TokenCounter
) -> None:
    """Count the chunks of every searchable document of ``collections`` (ChromaDB collections by
    name) from their stored text; other documents' counts are cleared (their chunks are
    counted when they are written again). Inside the caller's transaction."""
    conn.execute("UPDATE semantic_docs SET chunk_tokens = NULL")
    for name, coll in collections.items():
        rows = conn.execute(
            "SELECT id, chunk_count FROM semantic_docs WHERE collection = ? "
            "AND state IN ('active', 'compressed')",
            (name,),
        ).fetchall()
        for start in range(0, len(rows), 500):
            part = rows[start : start + 500]
            ids = [f"{r['id']}#{i}" for r in part for i in range(int(r["chunk_count"]))]
            with chroma_errors("ids"):
                found = coll.get(ids=ids, include=["documents"]) if ids else {"ids": []}
            texts = dict(zip(found["ids"], found.get("documents") or [], strict=True))
            conn.executemany(
                "UPDATE semantic_docs SET chunk_tokens = ? WHERE collection = ? AND id = ?",
                [
                    (
                        chunk_counts(
                            counter,
                            [
                                texts.get(f"{r['id']}#{i}") or ""
                                for i in range(int(r["chunk_count"]))
                            ],
                        ),
                        name,
                        r["id"],
                    )
                    for r in part
                ],
            )
