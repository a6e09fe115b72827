"""Migrations are frozen SQL; data derived by code is a recorded rebuild its layer runs."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from omoide import ManualClock, Memory
from omoide.errors import OmoideError
from omoide.storage import SqliteDatabase
from omoide.storage.migrations import MIGRATIONS, Migration

TABLE = Migration("0001_t", "CREATE TABLE t (x INTEGER);", ("fill",))


def test_a_requested_rebuild_runs_once_in_its_own_transaction(
    tmp_path: Path, clock: ManualClock
) -> None:
    db = SqliteDatabase(tmp_path / "x.db", clock=clock, migrations=[TABLE])
    try:
        assert db.pending_rebuilds() == ["fill"]

        def fails(conn: sqlite3.Connection) -> None:
            conn.execute("INSERT INTO t VALUES (1)")
            raise RuntimeError("crash mid-rebuild")

        with pytest.raises(RuntimeError):
            db.run_rebuild("fill", fails)
        assert db.pending_rebuilds() == ["fill"]  # rolled back with its data
        assert db.scalar("SELECT COUNT(*) FROM t") == 0
        assert db.run_rebuild("fill", lambda conn: conn.execute("INSERT INTO t VALUES (2)"))
        assert not db.run_rebuild("fill", fails)  # done: never again
        assert db.pending_rebuilds() == []
        assert db.scalar("SELECT x FROM t") == 2
        assert not db.run_rebuild("never-requested", fails)
    finally:
        db.close()


def test_migrations_are_sql_only(tmp_path: Path, clock: ManualClock) -> None:
    """No migration runs Python, and none leaves a trigger calling a Python function: the
    schema replays on a plain connection, and any SQLite client may write the tables."""
    assert all(set(vars(m)) == {"name", "sql", "rebuilds"} for m in MIGRATIONS)
    db = SqliteDatabase(tmp_path / "x.db", clock=clock)  # registers no SQL function
    try:
        assert db.applied_migrations() == [m.name for m in MIGRATIONS]
        triggers = [r[0] for r in db.query("SELECT sql FROM sqlite_master WHERE type='trigger'")]
        assert triggers and not any("omoide_" in sql for sql in triggers)
    finally:
        db.close()


def test_a_fresh_store_has_run_every_rebuild(tmp_path: Path, clock: ManualClock) -> None:
    with Memory(tmp_path / "d", clock=clock) as mem:
        assert mem.db.pending_rebuilds() == []
        assert {r[0] for r in mem.db.query("SELECT name FROM rebuilds")} == {
            "episode_context_keys",
            "semantic_fulltext",
            "episode_tokens",
            "chunk_tokens",
        }


def test_the_database_of_a_closed_memory_is_refused(tmp_path: Path, clock: ManualClock) -> None:
    mem = Memory(tmp_path / "d", clock=clock)
    assert mem.db.scalar("SELECT 1") == 1
    mem.close()
    with pytest.raises(OmoideError, match="closed"):
        _ = mem.db
