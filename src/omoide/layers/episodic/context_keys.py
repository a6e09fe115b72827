"""Context keys: episodes found by the conversation around them.

An episode recorded as one turn of a conversation is often unintelligible alone ("Yes, last
Saturday — it was amazing!"): the question it answers is in the turn before, the details in
the turn after. Episodes whose ``context`` names a thread (``context["thread"]``, else
``context["session_id"]``) are therefore also indexed under a *context key*: a full-text row
with three columns,

* ``self`` — the episode itself: author, description, outcome, tags and its date in words
  (``2023-05-08 8 May 2023 Monday 2023年5月8日``), so dated questions match dated episodes;
* ``near`` — the episodes right before and after it in the same thread;
* ``far`` — the ones two places away,

ranked by FTS5's BM25 with column weights (1, 0.5, 0.25 by default: a word in the episode
counts twice as much as one in its neighbours). Episodes without a thread get a key with the
``self`` column only. Keys are kept in step inside the episode store's own transactions:
recording an episode updates the keys of its neighbours, deleting one removes its words from
theirs.

A neighbour's words enter a key only when every reader of the episode — its owner included —
may also read the neighbour, so a context key never lets an agent find an episode by words it
may not see (an outsider writing a ``team:leads`` turn into a leads' thread does not get the
leads' words into its own key). The check is on the scopes as written, not on today's team
membership, which can change without the keys being rebuilt: the readers of an item are its
owner (``agent:OWNER``) plus its scope's members (``agent:X`` / ``team:T``; none for
``private``, everyone for ``global``), and a neighbour is shared when it is global or its
readers include every reader of the episode.

The analysed text (:mod:`omoide.text.fulltext`) makes this work in Japanese as in English.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from omoide.clock import from_timestamp
from omoide.core.scope import GLOBAL, PRIVATE
from omoide.storage.ranking import best_matches
from omoide.text.fulltext import index_text, match_expression
from omoide.text.identifiers import codes

__all__ = [
    "DEFAULT_COLUMN_WEIGHTS",
    "FAR",
    "NEAR",
    "date_words",
    "key_texts",
    "refresh_keys",
    "remove_keys",
    "search_keys",
    "thread_of",
]

#: Neighbours on each side in the ``near`` and ``far`` columns.
NEAR = 1
FAR = 2
#: BM25 weights of the ``self``, ``near`` and ``far`` columns.
DEFAULT_COLUMN_WEIGHTS = (1.0, 0.5, 0.25)

_WEEKDAYS_JA = "月火水木金土日"


def thread_of(context: Any) -> str | None:
    """The thread an episode belongs to: ``context["thread"]``, else its ``session_id``."""
    if not isinstance(context, dict):
        return None
    for key in ("thread", "session_id"):
        value = context.get(key)
        if isinstance(value, str | int) and not isinstance(value, bool) and str(value):
            return str(value)
    return None


def date_words(when: datetime) -> str:
    """A date written the ways questions write it, in English and Japanese."""
    return (
        f"{when:%Y-%m-%d} {when.day} {when:%B} {when.year} {when:%A} "
        f"{when.year}年{when.month}月{when.day}日 {_WEEKDAYS_JA[when.weekday()]}曜日"
    )


def _self_text(row: sqlite3.Row) -> str:
    tags = json.loads(row["tags"])
    parts = [
        row["agent_name"],
        row["description"],
        row["outcome"] or "",
        *tags,
        date_words(from_timestamp(row["timestamp"])),
    ]
    return " ".join(p for p in parts if p)


def _neighbour_text(row: sqlite3.Row) -> str:
    body = row["description"] + (f" → {row['outcome']}" if row["outcome"] else "")
    return f"{row['agent_name']}: {body}"


def _readers(scope: str, owner: str) -> frozenset[str] | None:
    """Who may read an item, as scope members (``agent:X`` / ``team:T``); None: everyone."""
    if scope == GLOBAL:
        return None
    members = frozenset() if scope == PRIVATE else frozenset(scope.split(","))
    return members | {f"agent:{owner}"}


def _may_share(
    episode: sqlite3.Row | Mapping[str, Any], neighbour: sqlite3.Row | Mapping[str, Any]
) -> bool:
    """True if every reader of ``episode``, its owner included, may also read ``neighbour``
    (see the module's docstring: scopes as written, team membership not consulted)."""
    theirs = _readers(str(neighbour["scope"]), str(neighbour["agent_name"]))
    if theirs is None:
        return True
    ours = _readers(str(episode["scope"]), str(episode["agent_name"]))
    return ours is not None and ours <= theirs


def _neighbours(
    conn: sqlite3.Connection, thread: str, ts: float, rowid: int, n: int
) -> list[tuple[int, int]]:
    """(rowid, distance) of up to ``n`` episodes on each side of ``rowid`` in its thread."""
    before = [
        r[0]
        for r in conn.execute(
            "SELECT rowid FROM episode_threads WHERE thread = ? AND "
            "(timestamp < ? OR (timestamp = ? AND rowid < ?)) "
            "ORDER BY timestamp DESC, rowid DESC LIMIT ?",
            (thread, ts, ts, rowid, n),
        )
    ]
    after = [
        r[0]
        for r in conn.execute(
            "SELECT rowid FROM episode_threads WHERE thread = ? AND "
            "(timestamp > ? OR (timestamp = ? AND rowid > ?)) "
            "ORDER BY timestamp, rowid LIMIT ?",
            (thread, ts, ts, rowid, n),
        )
    ]
    return [(r, i + 1) for i, r in enumerate(before)] + [(r, i + 1) for i, r in enumerate(after)]


def _select_rowids(
    execute: Callable[[str, Sequence[Any]], Iterable[Any]], select: str, rowids: Iterable[int]
) -> Iterator[Any]:
    """The rows of ``select`` (a query without its WHERE) for ``rowids``, 500 at a time."""
    ids = list(dict.fromkeys(rowids))
    for start in range(0, len(ids), 500):
        part = ids[start : start + 500]
        yield from execute(f"{select} WHERE rowid IN ({','.join('?' * len(part))})", part)


def _rows(conn: sqlite3.Connection, rowids: Iterable[int]) -> dict[int, sqlite3.Row]:
    select = (
        "SELECT rowid, timestamp, agent_name, description, outcome, tags, context, scope "
        "FROM episodes"
    )
    return {int(r["rowid"]): r for r in _select_rowids(conn.execute, select, rowids)}


def _rebuild(conn: sqlite3.Connection, rowids: Iterable[int]) -> None:
    """Write the context keys of ``rowids`` from the current table contents."""
    rows = _rows(conn, rowids)
    for rowid, row in rows.items():
        thread = thread_of(json.loads(row["context"]))
        near: list[str] = []
        far: list[str] = []
        if thread is not None:
            around = sorted(
                _neighbours(conn, thread, row["timestamp"], rowid, FAR), key=lambda p: p[1]
            )
            neighbours = _rows(conn, [other for other, _ in around])
            for other, distance in around:
                neighbour = neighbours.get(other)
                if neighbour is None or not _may_share(row, neighbour):
                    continue
                (near if distance <= NEAR else far).append(_neighbour_text(neighbour))
        conn.execute("DELETE FROM episode_keys_fts WHERE rowid = ?", (rowid,))
        conn.execute(
            "INSERT INTO episode_keys_fts(rowid, self, near, far) VALUES (?, ?, ?, ?)",
            (
                rowid,
                index_text(_self_text(row)),
                index_text("\n".join(near)),
                index_text("\n".join(far)),
            ),
        )


def refresh_keys(conn: sqlite3.Connection, rowids: Sequence[int]) -> None:
    """(Re)index the keys of new or changed episodes and of their neighbours.

    Call inside the transaction that wrote the episodes.
    """
    if not rowids:
        return
    affected: dict[int, None] = {}
    rows = _rows(conn, rowids)
    for rowid, row in rows.items():
        thread = thread_of(json.loads(row["context"]))
        if thread is None:
            conn.execute("DELETE FROM episode_threads WHERE rowid = ?", (rowid,))
        else:
            conn.execute(
                "INSERT INTO episode_threads(rowid, thread, timestamp) VALUES (?, ?, ?) "
                "ON CONFLICT(rowid) DO UPDATE SET thread = excluded.thread, "
                "timestamp = excluded.timestamp",
                (rowid, thread, row["timestamp"]),
            )
    for rowid, row in rows.items():
        affected[rowid] = None
        thread = thread_of(json.loads(row["context"]))
        if thread is not None:
            for other, _ in _neighbours(conn, thread, row["timestamp"], rowid, FAR):
                affected[other] = None
    _rebuild(conn, list(affected))


def remove_keys(conn: sqlite3.Connection, rowids: Sequence[int]) -> None:
    """Drop the keys of episodes being deleted and take their words out of their
    neighbours' keys. Call inside the deleting transaction (before or after the rows go)."""
    if not rowids:
        return
    gone = set(rowids)
    neighbours: dict[int, None] = {}
    for rowid in rowids:
        row = conn.execute(
            "SELECT thread, timestamp FROM episode_threads WHERE rowid = ?", (rowid,)
        ).fetchone()
        if row is not None:
            for other, _ in _neighbours(conn, row[0], row[1], rowid, FAR + len(gone)):
                if other not in gone:
                    neighbours[other] = None
    marks = ",".join("?" * len(rowids))
    conn.execute(f"DELETE FROM episode_keys_fts WHERE rowid IN ({marks})", list(rowids))
    conn.execute(f"DELETE FROM episode_threads WHERE rowid IN ({marks})", list(rowids))
    _rebuild(conn, list(neighbours))


def search_keys(
    db: Any,
    query: str,
    where: str,
    params: Sequence[Any],
    limit: int,
    weights: Sequence[float] = DEFAULT_COLUMN_WEIGHTS,
    *,
    narrow: bool = False,
) -> dict[int, float]:
    """BM25 (higher is better) of the best ``limit`` context keys matching ``query`` among
    the episodes selected by ``where`` (``narrow``: a few listed ones;
    :mod:`omoide.storage.ranking`)."""
    expression = match_expression(query)
    if not expression:
        return {}
    found = best_matches(
        db,
        "episode_keys_fts",
        expression,
        rows="episodes",
        key="episodes.rowid",
        where=where,
        params=params,
        limit=limit,
        weights=weights,
        narrow=narrow,
    )
    return dict(found)


def search_named(
    db: Any,
    query: str,
    where: str,
    params: Sequence[Any],
    limit: int,
    weights: Sequence[float] = DEFAULT_COLUMN_WEIGHTS,
) -> dict[int, float]:
    """BM25 for the whole of ``query`` (as :func:`search_keys` rates it) of the best ``limit``
    keys by the codes ``query`` names (letters with digits: ``R-5346``, ``PO#5868``, ``E7``).
    A text naming the very code a question asks about may hold few of its other words — an
    answer in the other language holds none — and fall out of the best by all of them, among
    the many texts naming other codes of the same kind; yet the code is the surest sign of
    what the question is about."""
    named = codes(query)
    if not named:
        return {}
    naming = sorted(search_keys(db, " ".join(named), where, params, limit, weights))
    if not naming:
        return {}
    among = f"{where} AND episodes.rowid IN ({', '.join('?' * len(naming))})"
    return search_keys(db, query, among, [*params, *naming], limit, weights, narrow=True)


def key_texts(db: Any, rowids: Iterable[int]) -> dict[int, str]:
    """The analysed words of the keys of ``rowids`` (all three columns): what a ranker checks
    a question's words against, since an answer often leaves them to the turns around it."""
    rows = _select_rowids(db.query, "SELECT rowid, self, near, far FROM episode_keys_fts", rowids)
    return {int(r[0]): " ".join(column for column in r[1:] if column) for r in rows}


def backfill(conn: sqlite3.Connection) -> None:
    """Index every stored episode (the migration that creates the tables runs this)."""
    rowids = [int(r[0]) for r in conn.execute("SELECT rowid FROM episodes ORDER BY rowid")]
    for start in range(0, len(rowids), 500):
        refresh_keys(conn, rowids[start : start + 500])
