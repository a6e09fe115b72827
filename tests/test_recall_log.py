"""Recall provenance: which memories went into which context, with retention."""

from __future__ import annotations

import dataclasses
import sqlite3
from pathlib import Path

import pytest

from omoide import Config, ManualClock, Memory
from omoide.core.config import RouterConfig
from omoide.errors import ConfigError, NotFoundError, ValidationError

pytestmark = pytest.mark.both_engines


@pytest.fixture
def logged(mem: Memory) -> Memory:
    mem.episodic.record("cto", "decision", "Use PostgreSQL for billing", id="ep-pg")
    mem.episodic.record("cto", "decision", "請求はPostgreSQLで管理する", id="ep-pg-ja")
    return mem


# SQLite's migration by name; PostgreSQL's schema has its own (tests/test_postgres.py).
@pytest.mark.embedded_only
def test_migration_is_recorded(mem: Memory) -> None:
    assert mem.db is not None
    assert "0003_recall_log" in mem.db.applied_migrations()


def test_entries_get_and_containing(logged: Memory, clock: ManualClock) -> None:
    first = logged.recall("billing database", agent_name="cto", budget_tokens=500)
    clock.advance(minutes=1)
    second = logged.recall("PostgreSQL", agent_name="ceo")
    assert first.recall_id and second.recall_id
    entries = logged.recall_log.entries()
    assert [e.id for e in entries] == [second.recall_id, first.recall_id]  # newest first
    record = logged.recall_log.get(first.recall_id)
    assert record.budget_tokens == 500
    assert [i.id for i in record.items] == first.ids()
    assert [i.position for i in record.items] == list(range(len(first.items)))
    assert record.layers == ("working", "episodic", "semantic", "procedural")
    with_pg = logged.recall_log.containing("ep-pg", layer="episodic")
    assert {r.id for r in with_pg} == {first.recall_id, second.recall_id}
    assert logged.recall_log.containing("ep-pg", reader="ceo")[0].id == second.recall_id
    assert logged.recall_log.entries(agent_name="cto")[0].id == first.recall_id
    assert logged.recall_log.entries(since=clock.now()) == entries[:1]


def test_time_range_is_logged(logged: Memory) -> None:
    context = logged.recall("what did we decide yesterday?", agent_name="cto")
    record = logged.recall_log.get(context.recall_id or "")
    assert context.time_range is not None
    assert record.time_range == context.time_range.as_tuple()


def test_retention_prunes_old_entries(logged: Memory, clock: ManualClock) -> None:
    old = logged.recall("billing", agent_name="cto")
    clock.advance(days=31)
    new = logged.recall("billing", agent_name="cto")  # an hour has passed: prunes
    ids = {e.id for e in logged.recall_log.entries()}
    assert new.recall_id in ids and old.recall_id not in ids
    with pytest.raises(NotFoundError):
        logged.recall_log.get(old.recall_id or "")


def test_prune_keeps_entries_within_retention(logged: Memory, clock: ManualClock) -> None:
    logged.recall("billing", agent_name="cto")
    clock.advance(days=29)
    assert logged.recall_log.prune() == 0
    clock.advance(days=2)
    assert logged.recall_log.prune() == 1
    assert logged.recall_log.count() == 0


def test_zero_retention_logs_nothing(tmp_path: Path, clock: ManualClock) -> None:
    config = Config(router=RouterConfig(recall_log_retention_days=0))
    with Memory(tmp_path / "d", clock=clock, config=config) as mem:
        mem.episodic.record("cto", "note", "something")
        context = mem.recall("something", agent_name="cto")
        assert context.recall_id is None
        assert mem.recall_log.count() == 0


def test_retention_is_validated() -> None:
    with pytest.raises(ConfigError):
        Config(router=RouterConfig(recall_log_retention_days=-1))
    with pytest.raises(ConfigError):
        Config.from_dict({"router": {"recall_log_retention_days": "30"}})
    config = Config.from_dict({"router": {"recall_log_retention_days": 7}})
    assert config.router.recall_log_retention_days == 7


def test_log_survives_reopen(tmp_path: Path, clock: ManualClock) -> None:
    with Memory(tmp_path / "d", clock=clock) as mem:
        mem.episodic.record("cto", "note", "durable fact", id="ep-1")
        recall_id = mem.recall("durable", agent_name="cto").recall_id
    with Memory(tmp_path / "d", clock=clock) as mem:
        record = mem.recall_log.get(recall_id or "")
        assert record.items[0].id == "ep-1"


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda log: log.get(""), "recall_id"),
        (lambda log: log.entries(limit=0), "limit"),
        (lambda log: log.entries(since="yesterday"), "since"),
        (lambda log: log.containing("ep-1", layer="dreams"), "layer"),
    ],
)
def test_reader_api_validates(logged: Memory, call: object, field: str) -> None:
    with pytest.raises(ValidationError) as info:
        call(logged.recall_log)  # type: ignore[operator]
    assert info.value.field == field


def test_config_is_frozen_dataclass() -> None:
    assert dataclasses.is_dataclass(RouterConfig)


def _commit_settings(mem: Memory) -> str:
    """The engine's setting for waiting on the disk at commit, outside any transaction."""
    assert mem.db is not None
    if mem.db.dialect.name == "sqlite":
        return str(mem.db.scalar("PRAGMA synchronous"))  # 2: FULL
    return str(mem.db.scalar("SHOW synchronous_commit"))


def test_bookkeeping_is_committed_at_once_and_leaves_writes_durable(logged: Memory) -> None:
    """A recall's log entry commits with the disk sync off for its own transaction only:
    it is there the moment the recall returns, and the next write waits for the disk."""
    durable = _commit_settings(logged)
    assert durable in {"2", "on"}
    context = logged.recall("billing database", agent_name="cto")
    assert logged.recall_log.get(context.recall_id or "").items
    assert _commit_settings(logged) == durable


@pytest.mark.embedded_only
def test_a_recall_commits_without_a_sync_and_a_write_with_one(logged: Memory) -> None:
    assert logged.db is not None
    logged.recall("billing", agent_name="cto")  # prunes the log (a durable delete, hourly)
    seen: list[str] = []
    logged.db._conn.set_trace_callback(seen.append)  # the statements the engine runs
    try:
        logged.recall("billing database", agent_name="cto")
        recalled = list(seen)
        seen.clear()
        logged.episodic.record("cto", "decision", "Invoices go out on the 5th", id="ep-inv")
        written = list(seen)
    finally:
        logged.db._conn.set_trace_callback(None)
    assert recalled[recalled.index("PRAGMA synchronous=NORMAL") + 1] == "BEGIN IMMEDIATE"
    assert recalled[-2:] == ["COMMIT", "PRAGMA synchronous=FULL"]
    assert "COMMIT" in written
    assert not any("synchronous" in s for s in written)


@pytest.mark.embedded_only
def test_bookkeeping_that_cannot_begin_leaves_writes_durable(logged: Memory) -> None:
    """Another process holds the write lock: the bookkeeping transaction fails to begin, and
    the connection waits for the disk again for the writes after it."""
    assert logged.db is not None and logged.db.path is not None
    other = sqlite3.connect(str(logged.db.path), isolation_level=None)
    logged.db._conn.execute("PRAGMA busy_timeout=0")
    try:
        other.execute("BEGIN IMMEDIATE")
        with pytest.raises(sqlite3.OperationalError), logged.db.transaction(durable=False):
            pass
    finally:
        other.execute("ROLLBACK")
        other.close()
        logged.db._conn.execute("PRAGMA busy_timeout=30000")
    assert logged.db.scalar("PRAGMA synchronous") == 2
