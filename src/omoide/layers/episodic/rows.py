"""The rows of layer 2, with the invariants that tie them together.

The episodic layer owns ``episodes``, ``episodes_fts`` (the analysed text of each episode),
``episode_threads`` and ``episode_keys_fts`` (context keys, :mod:`.context_keys`) and the
in-memory vector matrix of :class:`~omoide.layers.episodic.store.EpisodicStore`: no module
outside ``omoide.layers.episodic`` runs SQL on those tables. An episode row is kept in step,
in the transaction that writes it, with its full-text row (analysed in Python by
:func:`omoide.text.fulltext.index_text`: there is no trigger calling Python, so any SQLite
client may write the table), its context key and its place in its thread. The vector matrix
is updated by the store after the transaction commits (:meth:`EpisodicStore.forget_vectors`).
Its ``tokens`` column holds the tokens of the episode's text as a context renders it
(:func:`episode_text`, :func:`omoide.providers.tokens.count_rendered`), counted when the text is
written by the memory's counter, whose name the ``meta`` key :data:`TOKENS_META` records: rows
counted by another counter (or before counts were stored) are recounted when the store opens.

:class:`EpisodicRows` is the row API the store and the pipelines (lifecycle, transfer,
capacity overflow) use; its writes take the caller's connection, so that a change and its
audit record commit together. It does not validate (the store does, at its boundary).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from omoide.clock import from_timestamp
from omoide.core.models import Episode
from omoide.core.scope import reader_predicate
from omoide.errors import NotFoundError
from omoide.layers.episodic.context_keys import backfill, refresh_keys, remove_keys
from omoide.providers.tokens import TokenCounter, count_rendered, default_token_counter
from omoide.storage import Database
from omoide.storage.database import timeline
from omoide.storage.ranking import passing
from omoide.storage.rebuilds import (
    CONTEXT_KEYS_REBUILD,
    EPISODE_FULLTEXT_REBUILD,
    EPISODE_TOKENS_REBUILD,
)
from omoide.text.fulltext import index_text

__all__ = [
    "BROWSE_STATES",
    "COLUMNS",
    "LIVE_SQL",
    "TOKENS_META",
    "EpisodicRows",
    "episode",
    "episode_text",
    "fts_body",
]

#: Episodes that recall and search see: active and compressed (archived ones are out of both).
LIVE_SQL = "state IN ('active', 'compressed')"

#: The columns an :class:`Episode` is read from.
COLUMNS = (
    "rowid, id, timestamp, agent_name, event_type, description, context, outcome, importance, "
    "tags, refs, access_count, last_accessed, decay_rate, scope, protected, state, distilled_at, "
    "tokens"
)
#: The ``meta`` key naming the token counter that made the stored counts.
TOKENS_META = "tokens.episodes"


def episode_text(description: str, outcome: str | None) -> str:
    """The text of an episode in a context (and in its embedding): what happened, and its
    outcome if known."""
    return f"{description}\n→ {outcome}" if outcome else description


def fts_body(
    agent_name: str, event_type: str, description: str, outcome: str | None, tags: Sequence[str]
) -> str:
    """The analysed text of an episode in ``episodes_fts``."""
    return index_text(" ".join([description, outcome or "", agent_name, event_type, *tags]))


def _batches(items: Sequence[Any], size: int = 500) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


class EpisodicRows:
    """Reads and writes of the episodic tables that keep every invariant in one place."""

    def __init__(self, db: Database, counter: TokenCounter | None = None) -> None:
        self._db = db
        self._counter = counter or default_token_counter()
        db.run_rebuild(EPISODE_FULLTEXT_REBUILD, self.reindex)
        db.run_rebuild(CONTEXT_KEYS_REBUILD, backfill)
        db.run_rebuild(EPISODE_TOKENS_REBUILD, self.recount)
        if db.get_meta(TOKENS_META) != self._counter.name:
            with db.transaction() as conn:
                self.recount(conn)

    def reindex(self, conn: sqlite3.Connection) -> None:
        """Write the full text of every episode again (after the analysis changed)."""
        self._write_text(conn, [int(r[0]) for r in conn.execute("SELECT rowid FROM episodes")])

    def recount(self, conn: sqlite3.Connection) -> None:
        """Count the tokens of every episode with this store's counter, and record its name."""
        rows = conn.execute("SELECT rowid, description, outcome FROM episodes").fetchall()
        conn.executemany(
            "UPDATE episodes SET tokens = ? WHERE rowid = ?",
            [(self.count(r["description"], r["outcome"]), r["rowid"]) for r in rows],
        )
        self._db.set_meta(TOKENS_META, self._counter.name)

    def count(self, description: str, outcome: str | None) -> int:
        """Tokens of an episode's text as a context renders it."""
        return count_rendered(self._counter, episode_text(description, outcome))

    # -- reads --------------------------------------------------------------------------

    def row(self, conn: Any, episode_id: str) -> sqlite3.Row | None:
        """The whole row of an episode, or None (``conn``: a connection or the database)."""
        row: sqlite3.Row | None = conn.execute(
            "SELECT * FROM episodes WHERE id = ?", (episode_id,)
        ).fetchone()
        return row

    def require(self, conn: Any, episode_id: str) -> sqlite3.Row:
        """The whole row of an episode; :class:`NotFoundError` if there is none."""
        row = self.row(conn, episode_id)
        if row is None:
            raise NotFoundError("episode", episode_id)
        return row

    def exists(self, episode_id: str) -> bool:
        return self._db.scalar("SELECT 1 FROM episodes WHERE id = ?", (episode_id,)) is not None

    def is_visible(self, episode_id: str, reader: str | None, teams: Iterable[str]) -> bool:
        """Whether ``reader`` may read the episode, whatever its state."""
        scope_sql, params = reader_predicate(reader, teams)
        sql = f"SELECT 1 FROM episodes WHERE id = ? AND {scope_sql} LIMIT 1"
        return self._db.scalar(sql, (episode_id, *params)) is not None

    def owned_by(self, episode_id: str, agent_name: str) -> bool:
        """Whether ``agent_name`` wrote the episode with this id."""
        sql = "SELECT 1 FROM episodes WHERE id = ? AND agent_name = ?"
        return self._db.scalar(sql, (episode_id, agent_name)) is not None

    def undistilled_span(self) -> tuple[int, float | None]:
        """How many live episodes are not distilled yet, and the oldest one's timestamp."""
        row = self._db.query_one(
            "SELECT COUNT(*) AS n, MIN(timestamp) AS oldest FROM episodes "
            "WHERE distilled_at IS NULL AND state IN ('active', 'compressed')"
        )
        if row is None or not row["n"]:
            return 0, None
        return int(row["n"]), float(row["oldest"])

    def browse(
        self,
        reader: str | None,
        teams: Iterable[str],
        conditions: Mapping[str, Any],
        *,
        limit: int,
        offset: int,
    ) -> list[str]:
        """Ids of episodes of every state that ``reader`` may read, newest first, matching
        ``conditions``: ``text`` (in the description or outcome), ``agent_name``,
        ``event_type``, ``tag``, ``state`` (one of :data:`BROWSE_STATES`), ``since`` and
        ``until`` (timestamps) — each optional."""
        pred, params = reader_predicate(reader, teams)
        where, args = [pred], list(params)
        text = conditions.get("text")
        if text:
            pattern = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            like = self._db.dialect.like()
            where.append(
                f"(description {like} ? ESCAPE '\\' OR COALESCE(outcome, '') {like} ? ESCAPE '\\')"
            )
            args += [pattern, pattern]
        for column in ("agent_name", "event_type"):
            if conditions.get(column):
                where.append(f"{column} = ?")
                args.append(conditions[column])
        if conditions.get("tag"):
            tags = self._db.dialect.json_elements("episodes.tags", "j")
            where.append(f"EXISTS (SELECT 1 FROM {tags} WHERE j.value = ?)")
            args.append(conditions["tag"])
        if conditions.get("state"):
            where.append(BROWSE_STATES[conditions["state"]])
        for key, op in (("since", ">="), ("until", "<")):
            if conditions.get(key) is not None:
                where.append(f"timestamp {op} ?")
                args.append(conditions[key])
        rows = self._db.query(
            f"SELECT id FROM episodes WHERE {' AND '.join(where)} "
            "ORDER BY timestamp DESC, rowid DESC LIMIT ? OFFSET ?",
            [*args, limit, offset],
        )
        return [str(r["id"]) for r in rows]

    def facets(
        self, reader: str | None, teams: Iterable[str]
    ) -> tuple[list[str], list[str], list[str]]:
        """The agents, event types and tags (up to 200) of the episodes ``reader`` may read."""
        pred, params = reader_predicate(reader, teams)
        column = "SELECT DISTINCT {} FROM episodes WHERE " + pred + " ORDER BY 1"
        agents = [r[0] for r in self._db.query(column.format("agent_name"), params)]
        types = [r[0] for r in self._db.query(column.format("event_type"), params)]
        tags = [
            r[0]
            for r in self._db.query(
                f"SELECT DISTINCT j.value FROM episodes, "
                f"{self._db.dialect.json_elements('episodes.tags', 'j')} WHERE {pred} "
                "ORDER BY 1 LIMIT 200",
                params,
            )
        ]
        return agents, types, tags

    def distilled_into_of(self, episode_id: str) -> str | None:
        """The knowledge document the episode was distilled into, if any."""
        value = self._db.scalar("SELECT distilled_into FROM episodes WHERE id = ?", (episode_id,))
        return None if value is None else str(value)

    def timeline(
        self, reader: str | None, teams: Iterable[str], since: float
    ) -> tuple[int, list[float]]:
        """Episodes ``reader`` may read, any state: how many are older than ``since``, and the
        timestamps of the others."""
        return timeline(self._db, "episodes", "timestamp", reader, teams, since)

    def present(self, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` are stored."""
        found: set[str] = set()
        for part in _batches(ids):
            found.update(
                r[0]
                for r in self._db.query(
                    f"SELECT id FROM episodes WHERE id IN ({','.join('?' * len(part))})", part
                )
            )
        return found

    def unprotected(self) -> list[sqlite3.Row]:
        """rowid, event_type, tags and context of every episode not protected yet."""
        return self._db.query(
            "SELECT rowid, event_type, tags, context FROM episodes WHERE protected = 0"
        )

    def distilled_into(self, ids: Sequence[str]) -> list[sqlite3.Row]:
        """id, description and ``distilled_into`` of those of ``ids`` that were distilled."""
        rows: list[sqlite3.Row] = []
        for part in _batches(ids):
            rows.extend(
                self._db.query(
                    "SELECT id, description, distilled_into FROM episodes "
                    f"WHERE id IN ({','.join('?' * len(part))}) AND distilled_into IS NOT NULL",
                    part,
                )
            )
        return rows

    def live(self) -> list[sqlite3.Row]:
        """Every live episode (its row without the embedding), oldest first."""
        return self._db.query(
            "SELECT id, timestamp, agent_name, event_type, description, context, outcome, "
            "importance, tags, access_count, last_accessed, decay_rate, scope, protected, "
            f"state, distilled_at FROM episodes WHERE {LIVE_SQL} ORDER BY timestamp, id"
        )

    def undistilled(self) -> list[sqlite3.Row]:
        """rowid, id and embedding of every live episode not distilled yet."""
        return self._db.query(
            f"SELECT rowid, id, embedding FROM episodes WHERE distilled_at IS NULL AND {LIVE_SQL}"
        )

    def distilled(self) -> list[sqlite3.Row]:
        """id, embedding, description, outcome, scope, agent_name and ``distilled_into`` of
        every live distilled episode, in rowid order."""
        return self._db.query(
            "SELECT id, embedding, description, outcome, scope, agent_name, distilled_into "
            f"FROM episodes WHERE distilled_at IS NOT NULL AND {LIVE_SQL} ORDER BY rowid"
        )

    def sources_of(self, doc_id: str, limit: int) -> list[str]:
        """The newest ``limit`` live episodes distilled into ``doc_id``."""
        return [
            r[0]
            for r in self._db.query(
                f"SELECT id FROM episodes WHERE distilled_into = ? AND {LIVE_SQL} "
                "ORDER BY timestamp DESC LIMIT ?",
                (doc_id, limit),
            )
        ]

    def usage(
        self, reader: str | None = None, reader_teams: Iterable[str] = ()
    ) -> dict[str, tuple[int, int]]:
        """Per agent: the active episodes ``reader`` may see and their bytes (text, JSON
        fields and vector)."""
        pred, params = reader_predicate(reader, reader_teams)
        text = ("description", "COALESCE(outcome, '')", "context", "tags", "refs")
        size = " + ".join([*map(self._db.dialect.byte_length, text), "LENGTH(embedding)"])
        rows = self._db.query(
            f"SELECT agent_name, COUNT(*), SUM({size}) FROM episodes "
            f"WHERE state='active' AND {pred} GROUP BY agent_name",
            params,
        )
        return {str(r[0] or ""): (int(r[1] or 0), int(r[2] or 0)) for r in rows}

    def states(self, reader: str | None = None, reader_teams: Iterable[str] = ()) -> dict[str, int]:
        """How many episodes ``reader`` may see are in each state (active, compressed, ...)."""
        pred, params = reader_predicate(reader, reader_teams)
        rows = self._db.query(
            f"SELECT state, COUNT(*) FROM episodes WHERE {pred} GROUP BY state", params
        )
        return {str(r[0]): int(r[1]) for r in rows}

    def ids_starting(
        self, prefix: str, reader: str | None, reader_teams: Iterable[str], limit: int = 11
    ) -> list[str]:
        """The ids starting with ``prefix`` of the episodes ``reader`` may see, any state
        (a range of the primary key), for a short id standing for a whole one."""
        pred, params = reader_predicate(reader, reader_teams)
        return [
            str(r[0])
            for r in self._db.query(
                f"SELECT id FROM episodes WHERE id >= ? AND id < ? AND {pred} ORDER BY id LIMIT ?",
                (prefix, prefix + "\U0010ffff", *params, limit),
            )
        ]

    # -- episodes ---------------------------------------------------------------------

    def matching(self, rowids: Sequence[int], where: str, params: Sequence[Any]) -> set[int]:
        """Those of ``rowids`` whose episodes match ``where`` (indexed reads, 500 at a time)."""
        return passing(self._db, rowids, "episodes", "episodes.rowid", where, params)

    def rowids_where(self, where: str, params: Sequence[Any] = ()) -> set[int]:
        """The row ids of the episodes matching ``where``."""
        sql = f"SELECT rowid FROM episodes WHERE {where}"
        return {int(r[0]) for r in self._db.query(sql, list(params))}

    def count_where(self, where: str, params: Sequence[Any]) -> int:
        """How many episodes match ``where``."""
        return int(self._db.scalar(f"SELECT COUNT(*) FROM episodes WHERE {where}", list(params)))

    def vectors(self, rowids: Sequence[int]) -> dict[int, npt.NDArray[np.float32]]:
        """The stored embeddings of those of ``rowids`` that exist, by rowid."""
        found: dict[int, npt.NDArray[np.float32]] = {}
        for part in _batches(rowids):
            marks = ",".join("?" * len(part))
            sql = f"SELECT rowid, embedding FROM episodes WHERE rowid IN ({marks})"
            for r in self._db.query(sql, part):
                found[int(r[0])] = np.frombuffer(r[1], dtype=np.float32)
        return found

    def vectors_where(
        self, where: str, params: Sequence[Any] = ()
    ) -> tuple[list[int], npt.NDArray[np.float32]]:
        """The row ids and embeddings (one row each) of the episodes matching ``where``."""
        rows = self._db.query(f"SELECT rowid, embedding FROM episodes WHERE {where}", list(params))
        if not rows:
            return [], np.zeros((0, 0), dtype=np.float32)
        matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32)
        return [int(r[0]) for r in rows], matrix.reshape(len(rows), -1)

    def fetch(self, where: str, params: Sequence[Any]) -> list[Episode]:
        """The episodes matching a WHERE clause over ``episodes``."""
        return [
            episode(r)
            for r in self._db.query(f"SELECT {COLUMNS} FROM episodes WHERE {where}", params)
        ]

    def fetch_rowids(self, rowids: Iterable[int]) -> dict[int, Episode]:
        """The episodes of these rowids (those that exist), by rowid."""
        out: dict[int, Episode] = {}
        for part in _batches(list(rowids)):
            for row in self._db.query(
                f"SELECT {COLUMNS} FROM episodes WHERE rowid IN ({','.join('?' * len(part))})",
                part,
            ):
                out[int(row["rowid"])] = episode(row)
        return out

    def touch(self, ids: Sequence[str], at: float) -> None:
        """Count one access of each episode, at ``at``."""
        with self._db.transaction() as conn:
            conn.executemany(
                "UPDATE episodes SET access_count = access_count + 1, last_accessed = ? "
                "WHERE id = ?",
                [(at, i) for i in ids],
            )

    # -- writes (inside the caller's transaction) ---------------------------------------

    def insert(self, conn: sqlite3.Connection, rows: Iterable[Mapping[str, Any]]) -> list[int]:
        """Insert whole rows (JSON columns as text, the embedding as bytes) with their full
        text and context keys (and their neighbours' keys); return their rowids."""
        rowids: list[int] = []
        for row in rows:
            names = list(row)
            cur = conn.execute(
                f"INSERT INTO episodes({', '.join(names)}) VALUES ({', '.join('?' * len(names))}) "
                "RETURNING rowid",
                [row[n] for n in names],
            )
            rowids.append(int(cur.fetchall()[0][0]))
        self._write_text(conn, rowids)
        refresh_keys(conn, rowids)
        return rowids

    def change(self, conn: sqlite3.Connection, rowid: int, columns: Mapping[str, Any]) -> None:
        """Set columns of one episode (a trusted name list), then re-index its full text and
        context keys from what it now holds."""
        assignments = ", ".join(f"{name} = ?" for name in columns)
        conn.execute(
            f"UPDATE episodes SET {assignments} WHERE rowid = ?", [*columns.values(), rowid]
        )
        self._write_text(conn, [rowid])
        refresh_keys(conn, [rowid])

    def raise_protection(self, conn: sqlite3.Connection, rowids: Sequence[int]) -> None:
        """Protect these episodes by a never-forget rule (protection is never lowered)."""
        conn.executemany(
            "UPDATE episodes SET protected = 1 WHERE rowid = ?", [(r,) for r in rowids]
        )

    def mark_distilled(
        self, conn: sqlite3.Connection, ids: Sequence[str], doc_id: str, at: float
    ) -> int:
        """Mark those of ``ids`` not distilled yet as distilled into ``doc_id``; how many."""
        marked = 0
        for part in _batches(ids):
            cur = conn.execute(
                "UPDATE episodes SET distilled_at = ?, distilled_into = ? "
                f"WHERE distilled_at IS NULL AND id IN ({','.join('?' * len(part))})",
                [at, doc_id, *part],
            )
            marked += cur.rowcount
        return marked

    def archive(self, conn: sqlite3.Connection, rowid: int, at: float) -> None:
        """Out of recall and search, and out of its neighbours' context keys."""
        conn.execute(
            "UPDATE episodes SET state = 'archived', archived_at = ? WHERE rowid = ?", (at, rowid)
        )
        remove_keys(conn, [rowid])

    def unarchive(self, conn: sqlite3.Connection, rowid: int) -> None:
        """Back from the archive, in the state it had (compressed or active)."""
        conn.execute(
            "UPDATE episodes SET archived_at = NULL, state = CASE WHEN compressed_at "
            "IS NULL THEN 'active' ELSE 'compressed' END WHERE rowid = ?",
            (rowid,),
        )
        refresh_keys(conn, [rowid])

    def remove(self, conn: sqlite3.Connection, rowids: Sequence[int]) -> None:
        """Delete episodes with their full text, keys and place in their threads."""
        if not rowids:
            return
        marks = ",".join("?" * len(rowids))
        remove_keys(conn, rowids)
        conn.execute(f"DELETE FROM episodes WHERE rowid IN ({marks})", list(rowids))
        conn.execute(f"DELETE FROM episodes_fts WHERE rowid IN ({marks})", list(rowids))

    def _write_text(self, conn: sqlite3.Connection, rowids: Sequence[int]) -> None:
        """Write the full text and the token count of these episodes from what they hold."""
        for part in _batches(rowids):
            for r in conn.execute(
                "SELECT rowid, agent_name, event_type, description, outcome, tags FROM episodes "
                f"WHERE rowid IN ({','.join('?' * len(part))})",
                part,
            ).fetchall():
                conn.execute("DELETE FROM episodes_fts WHERE rowid = ?", (r["rowid"],))
                conn.execute(
                    "INSERT INTO episodes_fts(rowid, body) VALUES (?, ?)",
                    (
                        r["rowid"],
                        fts_body(
                            r["agent_name"],
                            r["event_type"],
                            r["description"],
                            r["outcome"],
                            json.loads(r["tags"]),
                        ),
                    ),
                )
                conn.execute(
                    "UPDATE episodes SET tokens = ? WHERE rowid = ?",
                    (self.count(r["description"], r["outcome"]), r["rowid"]),
                )


def episode(row: Any) -> Episode:
    """A row of ``episodes`` (:data:`COLUMNS`) as an :class:`Episode`."""
    return Episode(
        id=row["id"],
        timestamp=from_timestamp(row["timestamp"]),
        agent_name=row["agent_name"],
        event_type=row["event_type"],
        description=row["description"],
        context={} if row["context"] == "{}" else json.loads(row["context"]),
        outcome=row["outcome"],
        importance=float(row["importance"]),
        tags=_strings(row["tags"]),
        references=_strings(row["refs"]),
        access_count=int(row["access_count"]),
        last_accessed=from_timestamp(row["last_accessed"]) if row["last_accessed"] else None,
        decay_rate=float(row["decay_rate"]),
        scope=row["scope"],
        protected=bool(row["protected"]),
        state=row["state"],
        distilled_at=from_timestamp(row["distilled_at"]) if row["distilled_at"] else None,
        tokens=None if row["tokens"] is None else int(row["tokens"]),
    )


def _strings(stored: str) -> tuple[str, ...]:
    """A stored JSON list of strings (tags, references) as a tuple; most are empty, which
    needs no parsing (recall reads every candidate's row)."""
    return () if stored == "[]" else tuple(json.loads(stored))


#: The states :meth:`EpisodicRows.browse` filters by (``distilled`` and ``protected`` are flags
#: that combine with the lifecycle state).
BROWSE_STATES: dict[str, str] = {
    "active": "state = 'active'",
    "distilled": "distilled_at IS NOT NULL",
    "compressed": "state = 'compressed'",
    "archived": "state = 'archived'",
    "protected": "protected = 1",
}
