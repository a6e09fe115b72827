"""The registry of semantic documents: the SQLite side of layer 3.

ChromaDB holds the chunk vectors of each document; the ``semantic_docs`` table holds the
whole document, its owner, scope, lifecycle state, versions and access statistics, and is
the truth when the two disagree (:mod:`omoide.layers.semantic.store` brings Chroma in line). Its
full
text is indexed in ``semantic_docs_fts`` (kept in step by triggers), so documents are found
by their words as well as by their meaning.

:class:`DocumentRegistry` reads that table for
:class:`~omoide.layers.semantic.store.SemanticStore`; it
does not validate its arguments (the store does, at its boundary).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from omoide.clock import Clock, from_timestamp, to_timestamp
from omoide.core.models import SemanticDocument
from omoide.core.scope import reader_predicate
from omoide.storage import Database

__all__ = ["DocumentRegistry", "document"]

#: The states in which a document is searchable.
SEARCHABLE = ("active", "compressed")


class DocumentRegistry:
    """Reads of ``semantic_docs``, and the access counts it keeps."""

    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    def rows(self, collection: str, doc_ids: Sequence[str]) -> list[Any]:
        """The registry rows of these documents (those that exist), in batches of 500."""
        rows: list[Any] = []
        for start in range(0, len(doc_ids), 500):
            part = list(doc_ids[start : start + 500])
            rows.extend(
                self._db.query(
                    f"SELECT * FROM semantic_docs WHERE collection=? AND id IN "
                    f"({','.join('?' * len(part))})",
                    (collection, *part),
                )
            )
        return rows

    def live_versions(self, collection: str, doc_ids: Sequence[str]) -> dict[str, bool]:
        """For the documents that are searchable, whether each is the current version of its
        subject."""
        return {
            r["id"]: r["superseded_by"] is None
            for r in self.rows(collection, list(dict.fromkeys(doc_ids)))
            if r["state"] in SEARCHABLE
        }

    def get(
        self, collection: str, doc_id: str, reader: str | None, reader_teams: Iterable[str]
    ) -> SemanticDocument | None:
        """The document, unless absent, pending or not visible to ``reader``."""
        scope_sql, params = reader_predicate(reader, reader_teams)
        row = self._db.query_one(
            f"SELECT * FROM semantic_docs WHERE collection=? AND id=? AND state != 'pending' "
            f"AND {scope_sql}",
            (collection, doc_id, *params),
        )
        return None if row is None else document(row)

    def documents(
        self,
        collection: str,
        *,
        limit: int,
        offset: int,
        reader: str | None,
        reader_teams: Iterable[str],
        state: str,
    ) -> list[SemanticDocument]:
        """Documents of a collection in one state, newest first."""
        scope_sql, params = reader_predicate(reader, reader_teams)
        return [
            document(r)
            for r in self._db.query(
                f"SELECT * FROM semantic_docs WHERE collection=? AND state=? AND {scope_sql} "
                "ORDER BY updated_at DESC, id LIMIT ? OFFSET ?",
                (collection, state, *params, limit, offset),
            )
        ]

    def count(self, collection: str, state: str) -> int:
        return int(
            self._db.scalar(
                "SELECT COUNT(*) FROM semantic_docs WHERE collection=? AND state=?",
                (collection, state),
            )
        )

    def counts(self) -> dict[tuple[str, str], int]:
        """Documents per (collection, state)."""
        return {
            (r["collection"], r["state"]): int(r["n"])
            for r in self._db.query(
                "SELECT collection, state, COUNT(*) AS n FROM semantic_docs "
                "GROUP BY collection, state"
            )
        }

    def expired_counts(self) -> dict[str, int]:
        """Active documents past their expiry, per collection."""
        return {
            r["collection"]: int(r["n"])
            for r in self._db.query(
                "SELECT collection, COUNT(*) AS n FROM semantic_docs WHERE expires_at IS NOT NULL "
                "AND expires_at <= ? AND state='active' GROUP BY collection",
                (to_timestamp(self._clock.now()),),
            )
        }

    def current_subjects(self, collection: str) -> list[str]:
        """The subjects of ``collection`` that have a live current version, sorted."""
        return [
            r["subject"]
            for r in self._db.query(
                "SELECT DISTINCT subject FROM semantic_docs WHERE collection = ? "
                "AND subject IS NOT NULL AND superseded_by IS NULL "
                "AND state IN ('active', 'compressed') ORDER BY subject",
                (collection,),
            )
        ]

    def authors(self, collection: str) -> list[str]:
        """The agents that wrote the searchable documents of ``collection``, sorted."""
        return [
            r["agent_name"]
            for r in self._db.query(
                "SELECT DISTINCT agent_name FROM semantic_docs WHERE collection = ? "
                "AND agent_name != '' AND state IN ('active', 'compressed') ORDER BY agent_name",
                (collection,),
            )
        ]

    def search_text(
        self,
        collection: str,
        expression: str,
        *,
        limit: int,
        among: Sequence[str] | None,
        reader: str | None,
        reader_teams: Iterable[str],
    ) -> dict[str, float]:
        """Searchable, unexpired documents matching an FTS5 ``expression``
        (:func:`omoide.text.fulltext.match_expression`), each with its BM25 (higher is better),
        best first."""
        scope_sql, params = reader_predicate(
            reader, reader_teams, owner_column="d.agent_name", scope_column="d.scope"
        )
        # CROSS JOIN keeps the full-text index the outer loop: SQLite would otherwise probe
        # it once per document of the collection.
        sql = (
            "SELECT d.id, -bm25(semantic_docs_fts) FROM semantic_docs_fts f "
            "CROSS JOIN semantic_docs d ON d.rowid = f.rowid "
            "WHERE semantic_docs_fts MATCH ? AND d.collection = ? "
            "AND d.state IN ('active', 'compressed') "
            "AND (d.expires_at IS NULL OR d.expires_at > ?) "
            f"AND {scope_sql}"
        )
        args: list[Any] = [expression, collection, to_timestamp(self._clock.now()), *params]
        if among is not None:
            wanted = list(dict.fromkeys(among))
            if not wanted:
                return {}
            sql += f" AND d.id IN ({', '.join('?' * len(wanted))})"
            args.extend(wanted)
        sql += " ORDER BY bm25(semantic_docs_fts) LIMIT ?"
        return {str(r[0]): max(0.0, float(r[1])) for r in self._db.query(sql, [*args, limit])}

    def archived_versions(
        self,
        collection: str,
        expression: str,
        *,
        limit: int,
        reader: str | None,
        reader_teams: Iterable[str],
    ) -> list[SemanticDocument]:
        """Archived versions matching an FTS5 ``expression`` whose version chain
        (subject, scope and owner) still has a searchable version, best first: earlier
        statements of facts that are current."""
        scope_sql, params = reader_predicate(
            reader, reader_teams, owner_column="d.agent_name", scope_column="d.scope"
        )
        marks = ", ".join("?" * len(SEARCHABLE))
        sql = (
            "SELECT d.* FROM semantic_docs_fts f "
            "CROSS JOIN semantic_docs d ON d.rowid = f.rowid "
            "WHERE semantic_docs_fts MATCH ? AND d.collection = ? AND d.state = 'archived' "
            "AND d.subject IS NOT NULL "
            "AND EXISTS (SELECT 1 FROM semantic_docs c WHERE c.collection = d.collection "
            "AND c.subject = d.subject AND c.scope = d.scope AND c.agent_name = d.agent_name "
            f"AND c.state IN ({marks})) "
            f"AND {scope_sql} ORDER BY bm25(semantic_docs_fts) LIMIT ?"
        )
        args = [expression, collection, *SEARCHABLE, *params, limit]
        return [document(r) for r in self._db.query(sql, args)]

    def touch(self, collection: str, doc_ids: Sequence[str]) -> None:
        """Count one access of each document, now."""
        now = to_timestamp(self._clock.now())
        with self._db.transaction() as conn:
            conn.executemany(
                "UPDATE semantic_docs SET access_count = access_count + 1, last_accessed = ? "
                "WHERE collection = ? AND id = ?",
                [(now, collection, d) for d in dict.fromkeys(doc_ids)],
            )


def document(row: Any) -> SemanticDocument:
    """A registry row as a :class:`SemanticDocument`."""

    def ts(value: Any) -> datetime | None:
        return None if value is None else from_timestamp(value)

    return SemanticDocument(
        id=row["id"],
        collection=row["collection"],
        document=row["content"],
        metadata=json.loads(row["metadata"]),
        agent_name=row["agent_name"],
        scope=row["scope"],
        created_at=from_timestamp(row["created_at"]),
        updated_at=from_timestamp(row["updated_at"]),
        chunk_count=int(row["chunk_count"]),
        access_count=int(row["access_count"]),
        last_accessed=ts(row["last_accessed"]),
        state=row["state"],
        protected=bool(row["protected"]),
        subject=row["subject"],
        version=row["version"],
        superseded_by=row["superseded_by"],
        superseded_at=ts(row["superseded_at"]),
        expires_at=ts(row["expires_at"]),
    )
