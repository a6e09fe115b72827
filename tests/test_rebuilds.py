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
            "episode_fulltext",
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


def test_a_store_indexed_before_compounds_is_analysed_again(
    tmp_path: Path, clock: ManualClock
) -> None:
    """Migration 0014 requests every full-text index analysed again: a store written before
    it holds no compound as one word, and holds each after it opens."""
    with Memory(tmp_path / "d", clock=clock) as mem:
        mem.episodic.record("ops", "decision", "Same-day parcels go by 16:30.")
        mem.semantic.store("knowledge", ["Follow-up calls start at 09:00."], ids=["calls"])
        with mem.db.transaction() as conn:  # as a database from before the migration
            conn.execute("DELETE FROM migrations WHERE name = '0014_hyphenated_compounds'")
            conn.execute("UPDATE episodes_fts SET body = 'old'")
            conn.execute("UPDATE episode_keys_fts SET self = 'old', near = '', far = ''")
            conn.execute("UPDATE semantic_docs_fts SET body = 'old'")
    with Memory(tmp_path / "d", clock=clock) as mem:
        assert mem.db.pending_rebuilds() == []
        assert "sameday" in mem.db.scalar("SELECT body FROM episodes_fts").split()
        assert "sameday" in mem.db.scalar("SELECT self FROM episode_keys_fts").split()
        assert "followup" in mem.db.scalar("SELECT body FROM semantic_docs_fts").split()
        assert list(mem.semantic.search_text("knowledge", "follow-up")) == ["calls"]
