"""The registry of semantic documents: the SQLite side of layer 3.

Owner of the ``semantic_docs`` and ``semantic_docs_fts`` tables (with
:mod:`omoide.layers.semantic.store`): no module outside the semantic layer runs SQL on them.

ChromaDB holds the chunk vectors of each document; the ``semantic_docs`` table holds the
whole document, its owner, scope, lifecycle state, versions and access statistics, and is
the truth when the two disagree (:mod:`omoide.layers.semantic.store` brings Chroma in line).
Its full text is indexed in ``semantic_docs_fts``, analysed in Python
(:func:`omoide.text.fulltext.index_text`) and written by
:func:`~omoide.layers.semantic.fulltext_rows.sync_fulltext` in the transaction that writes
the document, so documents are found by their words as well as by their meaning.

:class:`DocumentRegistry` reads and writes that table for
:class:`~omoide.layers.semantic.store.SemanticStore` and for the pipelines (lifecycle,
retention, transfer); it does not validate its arguments (the store does, at its boundary).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from omoide.clock import Clock, from_timestamp, to_timestamp
from omoide.core.models import SemanticDocument
from omoide.core.scope import reader_predicate
from omoide.layers.semantic.fulltext_rows import rebuild_fulltext, sync_fulltext
from omoide.layers.semantic.matches import matches
from omoide.storage import Database
from omoide.storage.rebuilds import SEMANTIC_FULLTEXT_REBUILD

__all__ = ["DocumentRegistry", "document"]

#: The states in which a document is searchable.
SEARCHABLE = ("active", "compressed")
#: The columns a search reads of a document's row: not its contents (a hit's text is its
#: chunk nearest the question, and a long document's contents are long).
SEARCH_COLUMNS = (
    "id",
    "state",
    "superseded_by",
    "chunk_count",
    "agent_name",
    "updated_at",
    "chunk_tokens",
)


class DocumentRegistry:
    """Reads of ``semantic_docs``, and the access counts it keeps."""

    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock
        db.run_rebuild(SEMANTIC_FULLTEXT_REBUILD, rebuild_fulltext)

    # -- rows for the pipelines ------------------------------------------------------------

    def row(self, conn: Any, collection: str, doc_id: str) -> Any:
        """The registry row of one document, or None (``conn``: a connection or the db)."""
        return conn.execute(
            "SELECT * FROM semantic_docs WHERE collection = ? AND id = ?", (collection, doc_id)
        ).fetchone()

    def collections_of(self, doc_id: str, collection: str | None = None) -> list[str]:
        """The collections holding a document with this id (in ``collection`` only if given)."""
        sql = "SELECT collection FROM semantic_docs WHERE id = ?"
        params: list[Any] = [doc_id]
        if collection is not None:
            sql += " AND collection = ?"
            params.append(collection)
        return [str(r[0]) for r in self._db.query(sql, params)]

    def holder(
        self, collection: str, doc_id: str, reader: str | None, reader_teams: Iterable[str]
    ) -> tuple[str, bool] | None:
        """Who holds ``doc_id`` in ``collection`` and whether ``reader`` may read it (None:
        no such document), for the service's owner checks."""
        scope_sql, params = reader_predicate(reader, reader_teams)
        row = self._db.query_one(
            f"SELECT agent_name, {scope_sql} AS readable FROM semantic_docs "
            "WHERE collection=? AND id=?",
            (*params, collection, doc_id),
        )
        return None if row is None else (str(row["agent_name"]), bool(row["readable"]))

    def owned_collections(
        self, doc_id: str, agent_name: str, collection: str | None = None
    ) -> list[str]:
        """The collections where ``agent_name`` wrote a document with this id."""
        sql = "SELECT collection FROM semantic_docs WHERE id = ? AND agent_name = ?"
        params: list[Any] = [doc_id, agent_name]
        if collection is not None:
            sql += " AND collection = ?"
            params.append(collection)
        return [str(r[0]) for r in self._db.query(sql, params)]

    def visible_count(self, collection: str, reader: str | None, teams: Iterable[str]) -> int:
        """Active documents of ``collection`` that ``reader`` may read."""
        scope_sql, params = reader_predicate(reader, teams)
        count = self._db.scalar(
            f"SELECT COUNT(*) FROM semantic_docs WHERE collection=? AND state='active' "
            f"AND {scope_sql}",
            (collection, *params),
        )
        return int(count or 0)

    def is_visible(
        self, collection: str, doc_id: str, reader: str | None, teams: Iterable[str]
    ) -> bool:
        """Whether ``reader`` may read the document, whatever its state."""
        found = self.holder(collection, doc_id, reader, teams)
        return found is not None and found[1]

    def live(self) -> list[Any]:
        """Every searchable document (its row without content hash or chunk bookkeeping),
        by collection, oldest first."""
        return self._db.query(
            "SELECT collection, id, content, metadata, agent_name, scope, state, protected, "
            "subject, version, superseded_by, superseded_at, access_count, last_accessed, "
            "created_at FROM semantic_docs WHERE state IN ('active', 'compressed') "
            "ORDER BY collection, created_at, id"
        )

    def expired(self, collection: str, now: float) -> list[Any]:
        """id and protection of the active documents of ``collection`` past their expiry,
        soonest expired first."""
        return self._db.query(
            "SELECT id, protected FROM semantic_docs WHERE collection=? AND state='active' "
            "AND expires_at IS NOT NULL AND expires_at <= ? ORDER BY expires_at, id",
            (collection, now),
        )

    def unwritten_since(self, collection: str, before: float) -> list[Any]:
        """id and protection of the active documents of ``collection`` last written before
        ``before``, oldest first."""
        return self._db.query(
            "SELECT id, protected FROM semantic_docs WHERE collection=? AND state='active' "
            "AND updated_at < ? ORDER BY updated_at, id",
            (collection, before),
        )

    def least_accessed(self, collection: str, limit: int) -> list[Any]:
        """Rows (``id``, ``access_count``, ``used``: last access else write, ``metadata``) of
        the active unprotected documents read no more than the ``limit``-th least read one."""
        where = "FROM semantic_docs WHERE collection=? AND state='active' AND protected=0"
        nth = self._db.query_one(
            f"SELECT access_count {where} ORDER BY access_count LIMIT 1 OFFSET ?",
            (collection, max(0, limit - 1)),
        )
        bound = "" if nth is None else f" AND access_count <= {int(nth[0])}"
        return self._db.query(
            "SELECT id, access_count, COALESCE(last_accessed, updated_at) AS used, metadata "
            f"{where}{bound}",
            (collection,),
        )

    def unprotected(self) -> list[Any]:
        """rowid, collection and metadata of every document not protected yet."""
        return self._db.query(
            "SELECT rowid, collection, metadata FROM semantic_docs WHERE protected = 0"
        )

    def raise_protection(self, conn: sqlite3.Connection, rowids: Sequence[int]) -> None:
        """Protect these documents by a never-forget rule (protection is never lowered)."""
        conn.executemany(
            "UPDATE semantic_docs SET protected = 1 WHERE rowid = ?", [(r,) for r in rowids]
        )

    def usage(
        self,
        reader: str | None = None,
        reader_teams: Iterable[str] = (),
        *,
        collection: str | None = None,
    ) -> dict[str, tuple[int, int]]:
        """Per agent: the active documents ``reader`` may see (of one collection unless
        None) and the bytes of their content and metadata."""
        pred, params = reader_predicate(reader, reader_teams)
        where, args = ("", []) if collection is None else (" AND collection=?", [collection])
        size = " + ".join(map(self._db.dialect.byte_length, ("content", "metadata")))
        rows = self._db.query(
            f"SELECT agent_name, COUNT(*), SUM({size}) "
            f"FROM semantic_docs WHERE state='active'{where} AND {pred} GROUP BY agent_name",
            [*args, *params],
        )
        return {str(r[0] or ""): (int(r[1] or 0), int(r[2] or 0)) for r in rows}

    def ids_starting(
        self, prefix: str, collection: str | None, reader: str | None, teams: Iterable[str]
    ) -> list[str]:
        """Up to 11 ids starting with ``prefix`` of documents ``reader`` may see (a short id)."""
        pred, params = reader_predicate(reader, teams)
        where, args = ("", []) if collection is None else (" AND collection=?", [collection])
        sql = f"SELECT DISTINCT id FROM semantic_docs WHERE id >= ? AND id < ?{where} AND {pred}"
        end = prefix + "\U0010ffff"
        rows = self._db.query(sql + " ORDER BY id LIMIT 11", (prefix, end, *args, *params))
        return [str(r[0]) for r in rows]

    def exists(self, collection: str, doc_id: str) -> bool:
        return self.row(self._db, collection, doc_id) is not None

    def rowid(self, conn: Any, collection: str, doc_id: str) -> int:
        """The rowid of an existing document."""
        return int(
            conn.execute(
                "SELECT rowid FROM semantic_docs WHERE collection = ? AND id = ?",
                (collection, doc_id),
            ).fetchone()[0]
        )

    def move(self, conn: sqlite3.Connection, collection: str, doc_id: str, state: str) -> None:
        """Set a document's state (``archiving`` also stamps ``archived_at``):
        :meth:`SemanticStore.settle` brings Chroma in line."""
        conn.execute(
            "UPDATE semantic_docs SET state = ?, "
            "archived_at = CASE WHEN ? = 'archiving' THEN ? ELSE archived_at END "
            "WHERE collection = ? AND id = ?",
            (state, state, to_timestamp(self._clock.now()), collection, doc_id),
        )

    def unarchive(self, conn: sqlite3.Connection, collection: str, doc_id: str) -> None:
        """Take a document out of the archive: ``pending`` until its chunks are written."""
        conn.execute(
            "UPDATE semantic_docs SET state = 'pending', archived_at = NULL "
            "WHERE collection = ? AND id = ?",
            (collection, doc_id),
        )

    def rewrite(
        self,
        conn: sqlite3.Connection,
        row: Any,
        content: str,
        metadata: Mapping[str, Any],
        *,
        compressed_at: float | None,
    ) -> None:
        """Replace a document's content and metadata (compression and its undoing); it goes
        back to ``pending`` so that :meth:`SemanticStore.settle` rewrites its chunks."""
        conn.execute(
            "UPDATE semantic_docs SET content = ?, metadata = ?, content_hash = ?, "
            "compressed_at = ?, state = 'pending' WHERE collection = ? AND id = ?",
            (
                content,
                json.dumps(dict(metadata), ensure_ascii=False),
                hashlib.sha256(content.encode()).hexdigest(),
                compressed_at,
                row["collection"],
                row["id"],
            ),
        )
        sync_fulltext(conn, [int(row["rowid"])])

    def supersede(
        self,
        conn: sqlite3.Connection,
        collection: str,
        doc_id: str,
        meta: Mapping[str, Any],
        scope: str,
        now: float,
    ) -> list[str]:
        """Make ``doc_id`` the current version of its ``subject``; return the ids it supersedes.

        A document whose metadata has a ``subject`` supersedes every current document with the
        same subject in the same collection and scope *written by the same owner*: they get
        ``superseded_by`` and ``superseded_at``, and rank after current versions in queries.
        Each owner has its own version chain, so a subject that two agents (an admin
        included) both use gives two current facts, never a takeover of another agent's
        fact (which the ``superseded_decisions`` policy would archive). Runs inside the
        registration transaction, so a crash leaves both or neither.
        """
        owner = conn.execute(
            "SELECT agent_name FROM semantic_docs WHERE collection=? AND id=?", (collection, doc_id)
        ).fetchone()["agent_name"]
        subject = meta.get("subject")
        if not isinstance(subject, str):
            conn.execute(
                "UPDATE semantic_docs SET subject=NULL, version=NULL WHERE collection=? AND id=?",
                (collection, doc_id),
            )
            return []
        row = conn.execute(
            "SELECT subject, version, superseded_by FROM semantic_docs WHERE collection=? AND id=?",
            (collection, doc_id),
        ).fetchone()
        if row["subject"] == subject and row["superseded_by"] is None and row["version"]:
            version = int(row["version"])
        else:
            latest = conn.execute(
                "SELECT MAX(version) FROM semantic_docs WHERE collection=? AND subject=? "
                "AND scope=? AND agent_name=?",
                (collection, subject, scope, owner),
            ).fetchone()[0]
            version = int(latest or 0) + 1
        conn.execute(
            "UPDATE semantic_docs SET subject=?, version=?, superseded_by=NULL, "
            "superseded_at=NULL WHERE collection=? AND id=?",
            (subject, version, collection, doc_id),
        )
        older = [
            r[0]
            for r in conn.execute(
                "SELECT id FROM semantic_docs WHERE collection=? AND subject=? AND scope=? "
                "AND agent_name=? AND id != ? AND superseded_by IS NULL",
                (collection, subject, scope, owner, doc_id),
            )
        ]
        conn.executemany(
            "UPDATE semantic_docs SET superseded_by=?, superseded_at=? WHERE collection=? AND id=?",
            [(doc_id, now, collection, old) for old in older],
        )
        sync_fulltext(conn, [self.rowid(conn, collection, doc_id)])  # its version's words
        return older

    def insert_rows(self, conn: sqlite3.Connection, rows: Iterable[Mapping[str, Any]]) -> None:
        """Insert whole registry rows (an import), with their full text."""
        inserted = []
        for row in rows:
            names = list(row)
            cur = conn.execute(
                f"INSERT INTO semantic_docs({', '.join(names)}) "
                f"VALUES ({', '.join('?' * len(names))}) RETURNING rowid",
                [row[n] for n in names],
            )
            inserted.append(int(cur.fetchall()[0][0]))
        sync_fulltext(conn, inserted)  # once all are in: a version's text holds the earlier

    def rows(
        self, collection: str, doc_ids: Sequence[str], columns: Sequence[str] = ()
    ) -> list[Any]:
        """The registry rows of these documents (those that exist), in batches of 500: every
        column, or ``columns`` only (a recall's candidates need not read their contents)."""
        rows: list[Any] = []
        selected = ", ".join(columns) if columns else "*"
        for start in range(0, len(doc_ids), 500):
            part = list(doc_ids[start : start + 500])
            rows.extend(
                self._db.query(
                    f"SELECT {selected} FROM semantic_docs WHERE collection=? AND id IN "
                    f"({','.join('?' * len(part))})",
                    (collection, *part),
                )
            )
        return rows

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

    def has(self, collection: str, state: str) -> bool:
        """Whether the collection holds a document in ``state`` (without counting them all)."""
        sql = "SELECT 1 FROM semantic_docs WHERE collection=? AND state=? LIMIT 1"
        return self._db.query_one(sql, (collection, state)) is not None

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
        wanted = None if among is None else list(dict.fromkeys(among))
        if wanted is not None and not wanted:
            return {}
        found = matches(
            self._db,
            collection,
            expression,
            limit,
            wanted,
            reader,
            sorted(reader_teams),
            self._clock.now(),
        )
        return {doc_id: score for doc_id, (score, _) in found.items()}

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
        match = self._db.dialect.fulltext("semantic_docs_fts", "f")
        sql = (
            f"SELECT d.* FROM {match.source} "
            f"{match.driver} semantic_docs d ON d.rowid = f.rowid "
            f"WHERE {match.condition} AND d.collection = ? AND d.state = 'archived' "
            "AND d.subject IS NOT NULL "
            "AND EXISTS (SELECT 1 FROM semantic_docs c WHERE c.collection = d.collection "
            "AND c.subject = d.subject AND c.scope = d.scope AND c.agent_name = d.agent_name "
            f"AND c.state IN ({marks})) "
            f"AND {scope_sql} ORDER BY {match.order} LIMIT ?"
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
