"""The full text of the semantic layer's documents: what each is found by (its rows of
``semantic_docs_fts``, analysed by :func:`omoide.text.fulltext.index_text`).

Written inside the transactions that write the documents (:mod:`.registry`, :mod:`.store`),
read by :mod:`.matches`. Part of the semantic layer, which owns the table.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable
from typing import Any

from omoide.text.fulltext import index_text

__all__ = ["INDEXED_VERSIONS", "later_versions", "rebuild_fulltext", "sync_fulltext"]

#: Earlier versions of a fact whose words its current version's full text also holds.
INDEXED_VERSIONS = 5


def sync_fulltext(conn: sqlite3.Connection, rowids: Iterable[int]) -> None:
    """Write the full-text rows of ``rowids`` from their current content (a row that is gone
    loses its full text). Call inside the transaction that wrote or deleted the rows.

    A version of a fact is also found by its ``subject`` (``policy.deploy_window``: "policy
    deploy window") and by the words of its writer's :data:`INDEXED_VERSIONS` earlier
    versions, archived or not: a question worded as the fact once was still finds its
    current value once maintenance has archived the wordings it matched."""
    for rowid in dict.fromkeys(rowids):
        conn.execute("DELETE FROM semantic_docs_fts WHERE rowid = ?", (rowid,))
        row = conn.execute(
            "SELECT content, collection, subject, scope, agent_name, version "
            "FROM semantic_docs WHERE rowid = ?",
            (rowid,),
        ).fetchone()
        if row is None:
            continue
        text = str(row[0])
        if row[2] is not None:
            older = conn.execute(
                "SELECT content FROM semantic_docs WHERE collection = ? AND subject = ? "
                "AND scope = ? AND agent_name = ? AND version < ? ORDER BY version DESC LIMIT ?",
                (row[1], row[2], row[3], row[4], row[5] or 0, INDEXED_VERSIONS),
            )
            subject = re.sub(r"[._:/-]+", " ", str(row[2]))
            text = "\n".join([text, subject, *(str(r[0]) for r in older)])
        conn.execute(
            "INSERT INTO semantic_docs_fts(rowid, body) VALUES (?, ?)", (rowid, index_text(text))
        )


def later_versions(conn: sqlite3.Connection, row: Any) -> list[int]:
    """The rowids of the later versions of the document registry ``row`` describes (its
    writer's, of its subject), whose full text holds its words."""
    if row["subject"] is None or row["version"] is None:
        return []
    return [
        int(r[0])
        for r in conn.execute(
            "SELECT rowid FROM semantic_docs WHERE collection = ? AND subject = ? AND scope = ? "
            "AND agent_name = ? AND version > ?",
            (
                row["collection"],
                row["subject"],
                row["scope"],
                row["agent_name"],
                row["version"],
            ),
        )
    ]


def rebuild_fulltext(conn: sqlite3.Connection) -> None:
    """Index the full text of every document (the rebuild migrations 0007 and 0013 request)."""
    conn.execute("DELETE FROM semantic_docs_fts")
    sync_fulltext(conn, [int(r[0]) for r in conn.execute("SELECT rowid FROM semantic_docs")])
