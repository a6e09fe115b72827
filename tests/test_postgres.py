"""omoide on PostgreSQL and a Chroma server: what SQLite guarantees, and what replicas need.

Real parts only: a throwaway PostgreSQL cluster (``postgres_server``), the session's Chroma
server, the bundled embedder. Layer, scope and recall behaviour on PostgreSQL is also run by
every ``@ON_BOTH_BACKENDS`` test (its ``postgres`` case).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path
from typing import Any

import psycopg
import pytest

from chroma_server import ChromaServer, new_prefix
from omoide import Config, ManualClock, Memory
from omoide.errors import ConfigError, ProtectedMemoryError, StorageError, StoreLockedError
from omoide.service.transfer import export_jsonl, import_jsonl
from omoide.storage.opening import maintenance_lock
from omoide.storage.pg_schema import PG_MIGRATIONS
from omoide.storage.postgres import PostgresDatabase

JAPANESE = [
    "定例会議は毎週月曜日の朝十時に開きます",
    "価格改定は来月一日から適用されます",
    "新しい倉庫の鍵は受付で受け取ってください",
    "The deployment pipeline runs the integration tests before release",
]


def _config(base: Config, server: ChromaServer, url: str) -> Config:
    config = server.config(base, vector_store="chroma")
    return replace(config, storage=replace(config.storage, url=url))


@pytest.fixture
def pg_config(teams_config: Config, chroma_server: ChromaServer, postgres_db_url: str) -> Any:
    config = _config(teams_config, chroma_server, postgres_db_url)
    yield config
    chroma_server.drop(config.semantic.chroma_prefix)


@pytest.fixture
def replicas(
    tmp_path: Path, clock: ManualClock, embedder: Any, counter: Any, pg_config: Config
) -> Any:
    """Two Memories over one PostgreSQL database and one Chroma server, each with a data
    directory of its own (as two hosts would have)."""
    opened = [
        Memory(
            tmp_path / name, clock=clock, embedder=embedder, token_counter=counter, config=pg_config
        )
        for name in ("a", "b")
    ]
    yield opened
    for memory in opened:
        memory.close()


def test_a_shared_database_needs_shared_vectors(
    tmp_path: Path, teams_config: Config, postgres_db_url: str, embedder: Any, counter: Any
) -> None:
    local = replace(teams_config, storage=replace(teams_config.storage, url=postgres_db_url))
    with pytest.raises(ConfigError, match="chroma_url"):
        Memory(tmp_path / "x", embedder=embedder, token_counter=counter, config=local)
    with pytest.raises(ConfigError, match=r"storage\.url"):
        Config.from_dict({"storage": {"url": "mysql://somewhere/db"}})


def test_migrations_are_recorded_and_run_once(postgres_db_url: str, clock: ManualClock) -> None:
    first = PostgresDatabase(postgres_db_url, clock=clock)
    second = PostgresDatabase(postgres_db_url, clock=clock)  # a second replica starting
    try:
        assert first.applied_migrations() == second.applied_migrations()
        assert first.applied_migrations() == [
            "pg-0001-baseline",
            "pg-0002-truncate-guards",
            "pg-0003-recall-log-rowid",
        ]
        assert second.migrate(PG_MIGRATIONS) == []
        with pytest.raises(StorageError, match="newer omoide"):
            second.migrate([])  # a database ahead of this code is refused, not misread
    finally:
        first.close()
        second.close()


def test_never_forget_and_the_audit_log_are_enforced_by_the_database(
    replicas: list[Memory], postgres_db_url: str
) -> None:
    a, _ = replicas
    kept = a.episodic.record(
        "ceo", "feedback", "Never ship on Fridays", outcome="agreed", context={"source": "human"}
    )
    assert kept.protected
    with pytest.raises(ProtectedMemoryError):
        a.episodic.delete(kept.id)
    a.forget()  # writes audit rows if anything is forgotten; the log exists either way
    with psycopg.connect(postgres_db_url, autocommit=True) as raw:
        with pytest.raises(psycopg.Error, match="omoide-protected"):
            raw.execute("DELETE FROM episodes WHERE id = %s", (kept.id,))
        with pytest.raises(psycopg.Error, match="omoide-protected"):
            raw.execute("UPDATE episodes SET description = 'x' WHERE id = %s", (kept.id,))
        raw.execute(
            "INSERT INTO audit_log(at, run_id, policy, layer, item_id, action, reason) "
            "VALUES (0, 'r', 'p', 'episodic', 'x', 'archive', 'test')"
        )
        for statement in (
            "UPDATE audit_log SET reason = 'y'",
            "DELETE FROM audit_log",
            "TRUNCATE audit_log CASCADE",
        ):
            with pytest.raises(psycopg.Error, match="append-only"):
                raw.execute(statement)
        assert raw.execute(
            "SELECT count(*) FROM episodes WHERE id = %s", (kept.id,)
        ).fetchone() == (1,)


def test_japanese_full_text_matches_as_on_sqlite(
    tmp_path: Path,
    replicas: list[Memory],
    clock: ManualClock,
    embedder: Any,
    counter: Any,
    teams_config: Config,
) -> None:
    """The same documents and questions give the same full-text matches on both engines."""
    pg, _ = replicas
    local = Memory(
        tmp_path / "sqlite",
        clock=clock,
        embedder=embedder,
        token_counter=counter,
        config=teams_config,
    )
    try:
        for memory in (pg, local):
            memory.semantic.store("knowledge", JAPANESE, ids=[f"d{i}" for i in range(4)])
            for text in JAPANESE:
                memory.episodic.record("ops", "note", text)
        for question in ("会議は何曜日", "価格はいつ変わる", "倉庫の鍵", "integration tests"):
            holding = [m.episodic.count_holding(question, limit=10) for m in (pg, local)]
            assert holding[0] == holding[1]
            top = [
                m.recall(question, agent_name="ops", layers=["semantic"]).items for m in (pg, local)
            ]
            assert top[0] and top[1] and top[0][0].text == top[1][0].text
            found = [m.episodic.recall(question, top_k=1) for m in (pg, local)]
            assert found[0][0].description == found[1][0].description
        assert pg.episodic.count_holding("価格改定", limit=10) == 1
        assert pg.episodic.count_holding("改定価格", limit=10) == 0  # a phrase, in order
    finally:
        local.close()


def test_replicas_read_each_others_writes(replicas: list[Memory]) -> None:
    a, b = replicas
    written_by_a = [
        a.episodic.record("ops", "note", f"Shipment {i} left the north depot") for i in range(5)
    ]
    written_by_b = [
        b.episodic.record("ops", "note", f"倉庫{i}の棚卸しが終わりました") for i in range(5)
    ]
    for episode in written_by_a:
        assert b.episodic.get(episode.id).description == episode.description
    for episode in written_by_b:
        assert a.episodic.get(episode.id).description == episode.description
    b.semantic.store("knowledge", ["The north depot closes at 18:00"], ids=["hours"])
    found = a.recall("When does the north depot close?", agent_name="ops", layers=["semantic"])
    assert found.items and "18:00" in found.items[0].text
    ids = {e.id for e in a.episodic.recall("棚卸し", top_k=10)}
    assert {e.id for e in written_by_b} <= ids


def test_maintenance_runs_once_across_replicas(replicas: list[Memory]) -> None:
    a, b = replicas
    with (
        maintenance_lock(a.db, a.path, "m", a.clock),
        pytest.raises(StoreLockedError, match="another replica"),
    ):
        b.maintain()  # while a replica is mid-run
    assert b.maintain().distill is not None  # free again once the run ended


WRITER = textwrap.dedent(
    """
    import sys
    from dataclasses import replace
    from omoide import Config, Memory

    url, chroma, prefix, path = sys.argv[1:5]
    config = Config()
    config = replace(
        config,
        storage=replace(config.storage, url=url),
        semantic=replace(config.semantic, chroma_url=chroma, chroma_prefix=prefix),
        episodic=replace(config.episodic, vector_store="chroma"),
    )
    memory = Memory(path, config=config)
    for i in range(100000):
        episode = memory.episodic.record("ops", "note", f"acknowledged write {i}")
        print(episode.id, flush=True)
    """
)


def test_kill_nine_loses_no_acknowledged_write(
    tmp_path: Path, pg_config: Config, chroma_server: ChromaServer, postgres_db_url: str
) -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            WRITER,
            postgres_db_url,
            chroma_server.url,
            pg_config.semantic.chroma_prefix,
            str(tmp_path / "writer"),
        ],
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout is not None
    acknowledged = []
    for line in proc.stdout:
        acknowledged.append(line.decode().strip())
        if len(acknowledged) >= 30:
            break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    for line in proc.stdout:  # what it printed before it died was acknowledged too
        acknowledged.append(line.decode().strip())
    with psycopg.connect(postgres_db_url, autocommit=True) as raw:
        stored = {r[0] for r in raw.execute("SELECT id FROM episodes").fetchall()}
    assert len(acknowledged) >= 30
    assert set(acknowledged) <= stored


def test_migrate_moves_an_embedded_store_and_verifies_it(
    tmp_path: Path,
    chroma_server: ChromaServer,
    postgres_db_url: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``omoide migrate``: the rows of every table and the recall of a sample arrive."""
    from omoide.cli import main

    prefix = new_prefix()
    store = tmp_path / "embedded"
    store.mkdir()
    (store / "omoide.toml").write_text(f'[semantic]\nchroma_prefix = "{prefix}"\n')
    try:
        with Memory(store) as mem:
            for i, text in enumerate(JAPANESE):
                mem.episodic.record("ops", "note", text, tags=[f"t{i}"])
            mem.semantic.store("knowledge", JAPANESE, ids=[f"d{i}" for i in range(4)])
            mem.procedural.register("deploy", "deploy a service", "1. build 2. test 3. ship")
        code = main(
            [
                "migrate",
                "--path",
                str(store),
                "--to",
                postgres_db_url,
                "--chroma",
                chroma_server.url,
                "--json",
            ]
        )
        assert code == 0
        report = json.loads(capsys.readouterr().out)
        assert report["source"] == report["target"]
        assert report["target"]["episodes"] == 4 and report["target"]["semantic_docs"] == 4
        assert report["sampled"] >= 1 and report["found"] == report["sampled"]
        # Moving again into the same database is refused: it is not empty.
        assert (
            main(
                [
                    "migrate",
                    "--path",
                    str(store),
                    "--to",
                    postgres_db_url,
                    "--chroma",
                    chroma_server.url,
                ]
            )
            != 0
        )
    finally:
        chroma_server.drop(prefix)


def test_replicas_share_working_memory_and_exports(
    replicas: list[Memory],
    tmp_path: Path,
    clock: ManualClock,
    embedder: Any,
    counter: Any,
    teams_config: Config,
) -> None:
    a, b = replicas
    a.working("ops", "s1").add_message("The customer asked for a refund of order 12", role="user")
    b.working("ops", "s1").set_slot("active_task", "refund order 12")
    seen = a.working("ops", "s1")
    assert [m.content for m in seen.messages] == ["The customer asked for a refund of order 12"]
    assert seen.get_slot("active_task") == "refund order 12"
    # An export of the shared store imports into an embedded one, every row intact.
    a.episodic.record("ops", "decision", "Refunds above 500 need a second approval")
    lines = list(export_jsonl(a))
    with Memory(
        tmp_path / "copy",
        clock=clock,
        embedder=embedder,
        token_counter=counter,
        config=teams_config,
    ) as copy:
        report = import_jsonl(copy, lines)
        assert report.imported["episode"] == 1
        assert copy.working("ops", "s1").get_slot("active_task") == "refund order 12"
