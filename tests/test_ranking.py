"""Full-text matches ranked before they are filtered give what the join gives, wide filter
or narrow (``omoide.storage.ranking``), on real SQLite FTS5."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from omoide import ManualClock
from omoide.storage import SqliteDatabase
from omoide.storage.migrations import Migration
from omoide.storage.ranking import best_matches, passing

TABLES = Migration(
    "0001_docs",
    "CREATE TABLE docs (rowid INTEGER PRIMARY KEY, owner TEXT NOT NULL, state TEXT NOT NULL);\n"
    "CREATE INDEX docs_owner ON docs (owner, state);\n"
    "CREATE VIRTUAL TABLE docs_fts USING fts5(body);",
)


class Counted:
    """The database, counting the reads that join the full-text index to its rows."""

    def __init__(self, db: SqliteDatabase) -> None:
        self.db = db
        self.dialect = db.dialect
        self.joins = 0

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        self.joins += "ON docs.rowid = f.rowid" in sql
        return self.db.query(sql, params)


@pytest.fixture
def db(tmp_path: Path, clock: ManualClock) -> Iterator[Counted]:
    """200 documents: ``owner`` a (every tenth), b (the rest); ``state`` active but every
    seventh; a body of "pallet" and "dock" words in varying counts, so scores tie and differ."""
    store = SqliteDatabase(tmp_path / "r.db", clock=clock, migrations=[TABLES])
    with store.transaction() as conn:
        for i in range(1, 201):
            owner = "a" if i % 10 == 0 else "b"
            state = "archived" if i % 7 == 0 else "active"
            conn.execute("INSERT INTO docs VALUES (?, ?, ?)", (i, owner, state))
            body = " ".join(["pallet"] * (1 + i % 4) + ["dock"] * (i % 3) + ["filler"] * (i % 5))
            conn.execute("INSERT INTO docs_fts (rowid, body) VALUES (?, ?)", (i, body))
    try:
        yield Counted(store)
    finally:
        store.close()


def reference(
    db: Counted, where: str, params: Sequence[Any], limit: int
) -> list[tuple[int, float]]:
    """Every match that passes, scored by FTS5 and filtered in Python: the best ``limit``."""
    rows = db.db.query(
        "SELECT rowid, -bm25(docs_fts) FROM docs_fts WHERE docs_fts MATCH ?", ['"pallet" OR "dock"']
    )
    allowed = passing(db, [int(r[0]) for r in rows], "docs", "docs.rowid", where, params)
    kept = sorted(
        ((int(r[0]), float(r[1])) for r in rows if r[0] in allowed), key=lambda r: (-r[1], r[0])
    )
    return kept[:limit]


def search(
    db: Counted, where: str, params: Sequence[Any], limit: int, **kw: Any
) -> list[tuple[int, float]]:
    return best_matches(
        db,
        "docs_fts",
        '"pallet" OR "dock"',
        rows="docs",
        key="docs.rowid",
        where=where,
        params=params,
        limit=limit,
        **kw,
    )


def test_a_wide_filter_is_decided_by_the_index_alone(db: Counted) -> None:
    where, params = "docs.state = ?", ["active"]
    found = search(db, where, params, 10)
    assert found == reference(db, where, params, 10)
    assert len(found) == 10 and db.joins == 0
    scores = [s for _, s in found]
    assert scores == sorted(scores, reverse=True)
    ties = [(a, b) for a, b in pairwise(found) if a[1] == b[1]]
    assert ties and all(a[0] < b[0] for a, b in ties)  # ties by rowid


def test_a_narrow_filter_falls_back_to_the_join_with_the_same_answer(db: Counted) -> None:
    where, params = "docs.owner = ? AND docs.state = ?", ["a", "active"]
    found = search(db, where, params, 10)
    assert found == reference(db, where, params, 10)
    assert db.joins == 1
    assert all(rowid % 10 == 0 and rowid % 7 for rowid, _ in found)


def test_fewer_matches_than_asked_are_all_returned_without_a_join(db: Counted) -> None:
    where, params = "docs.state = ?", ["active"]
    found = search(db, where, params, 500)
    assert found == reference(db, where, params, 500)
    assert db.joins == 0 and len(found) == sum(1 for i in range(1, 201) if i % 7)


def test_also_adds_the_other_matches_it_names_best_first(db: Counted) -> None:
    where, params = "docs.state = ?", ["active"]
    best = search(db, where, params, 5)
    named = [199, 7, 2, best[0][0]]  # 7 is archived: it does not pass
    found = search(db, where, params, 5, also=named)
    assert found[:5] == best
    rest = found[5:]
    assert {r for r, _ in rest} == {199, 2} - {r for r, _ in best}
    assert [s for _, s in rest] == sorted((s for _, s in rest), reverse=True)
    narrow = search(db, where, params, 5, also=named, narrow=True)
    assert narrow == found


def test_passing_keeps_the_listed_rows_the_filter_selects(db: Counted) -> None:
    assert passing(
        db,
        [10, 20, 70, 3],
        "docs",
        "docs.rowid",
        "docs.owner = ? AND docs.state = ?",
        ["a", "active"],
    ) == {10, 20}
    assert passing(db, [], "docs", "docs.rowid", "1 = 1", []) == set()


def test_passing_reads_a_long_list_in_batches(db: Counted) -> None:
    listed = list(range(1, 1201))  # more than one batch; most name no row
    found = passing(db, listed, "docs", "docs.rowid", "docs.owner = ?", ["a"])
    assert found == {i for i in range(10, 201, 10)}
