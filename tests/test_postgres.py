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
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from chroma_server import ChromaServer, new_prefix
from conftest import run_uvicorn
from omoide import Config, ManualClock, Memory
from omoide.errors import (
    AlreadyExistsError,
    AuthenticationError,
    BackendError,
    ConfigError,
    ProtectedMemoryError,
    StorageError,
    StoreLockedError,
)
from omoide.layers.episodic.chroma_vectors import ChromaVectors
from omoide.layers.semantic import chunks as chunks_module
from omoide.pipelines.scheduler import Scheduler
from omoide.server.rest import create_app
from omoide.server.ui import sessions as sessions_module
from omoide.server.ui.sessions import SessionStore
from omoide.service.caller import Caller
from omoide.service.keys import KeyStore
from omoide.service.local import LocalOperations
from omoide.service.transfer import export_jsonl, import_jsonl
from omoide.storage.opening import maintenance_lock
from omoide.storage.pg_bm25 import BM25_QUERY_LEXEMES_ONLY
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
        names = [m.name for m in PG_MIGRATIONS]
        assert first.applied_migrations() == second.applied_migrations() == names
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


@pytest.fixture
def local(
    tmp_path: Path, clock: ManualClock, embedder: Any, counter: Any, teams_config: Config
) -> Iterator[Memory]:
    """An embedded store (SQLite) configured as the replicas are, to compare them with."""
    memory = Memory(
        tmp_path / "sqlite",
        clock=clock,
        embedder=embedder,
        token_counter=counter,
        config=teams_config,
    )
    try:
        yield memory
    finally:
        memory.close()


def test_japanese_full_text_matches_as_on_sqlite(replicas: list[Memory], local: Memory) -> None:
    """The same documents and questions give the same full-text matches on both engines."""
    pg, _ = replicas
    for memory in (pg, local):
        memory.semantic.store("knowledge", JAPANESE, ids=[f"d{i}" for i in range(4)])
        for text in JAPANESE:
            memory.episodic.record("ops", "note", text)
    for question in ("会議は何曜日", "価格はいつ変わる", "倉庫の鍵", "integration tests"):
        holding = [m.episodic.count_holding(question, limit=10) for m in (pg, local)]
        assert holding[0] == holding[1]
        top = [m.recall(question, agent_name="ops", layers=["semantic"]).items for m in (pg, local)]
        assert top[0] and top[1] and top[0][0].text == top[1][0].text
        found = [m.episodic.recall(question, top_k=1) for m in (pg, local)]
        assert found[0][0].description == found[1][0].description
    assert pg.episodic.count_holding("価格改定", limit=10) == 1
    assert pg.episodic.count_holding("改定価格", limit=10) == 0  # a phrase, in order


#: Texts with versions, codes and hyphenated words, in both languages.
SCORED = [
    "The e-mail gateway was upgraded to v2.14.3 after the outage",
    "Mail delivery is slow: the gateway queue holds 4,000 messages",
    "倉庫管理システムの本番はv2.14.3で稼働中",
    "定例会議は毎週月曜日に開きます。会議室はB-204です",
    "The weekly meeting moved to room C-310",
]


def test_full_text_scores_are_sqlites_on_postgresql(replicas: list[Memory], local: Memory) -> None:
    """BM25 of documents and of episodes' context keys is FTS5's, number for number, for a
    question's terms; an expression holding a phrase is scored as before ``pg-0006``."""
    pg, _ = replicas
    for memory in (pg, local):
        memory.semantic.store("knowledge", SCORED, ids=[f"d{i}" for i in range(len(SCORED))])
        memory.episodic.record_many(
            {"agent_name": "ops", "event_type": "note", "description": text} for text in SCORED
        )
    for question in ("mail gateway", "v2.14.3", "e-mail upgraded", "会議室", "weekly meeting"):
        scores = [m.semantic.search_text("knowledge", question) for m in (pg, local)]
        assert scores[0] and scores[0].keys() == scores[1].keys(), question
        for doc_id, score in scores[1].items():
            assert scores[0][doc_id] == pytest.approx(score, rel=1e-9), (question, doc_id)
        keys = [
            {c.episode.description: c.key_score for c in m.episodic.candidates(question)}
            for m in (pg, local)
        ]
        matched = {text: score for text, score in keys[1].items() if score > 0}
        assert matched, question
        for text, score in matched.items():
            assert keys[0][text] == pytest.approx(score, rel=1e-9), (question, text)
    # An expression holding a phrase (a question's analysed terms never make one) is scored as
    # the previous version of the function scored it: by its words, over the whole table.
    previous = BM25_QUERY_LEXEMES_ONLY.replace("omoide_bm25(", "omoide_bm25_previous(", 1)
    with pg.db.locked() as conn:
        conn.execute(previous)
    for expression in ('"mail delivery" OR "gateway"', '"毎週 週月" OR "会議"'):
        now, before = (
            dict(
                pg.db.query(
                    f"SELECT rowid, score FROM {name}('semantic_docs_fts', ?)", [expression]
                )
            )
            for name in ("omoide_bm25", "omoide_bm25_previous")
        )
        assert now and now.keys() == before.keys()
        for rowid, score in before.items():
            assert now[rowid] == pytest.approx(score, rel=1e-9), (expression, rowid)


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


def test_replicas_writing_at_once_each_read_every_write(replicas: list[Memory]) -> None:
    """Two threads per replica write episodes and documents at the same time; afterwards
    each replica reads every write of the other, and recalls find them."""
    a, b = replicas
    episodes: dict[str, str] = {}
    documents: dict[str, str] = {}
    failures: list[BaseException] = []
    start = threading.Barrier(4)

    def write(memory: Memory, name: str) -> None:
        try:
            start.wait(timeout=60)
            for i in range(8):
                text = f"{name} moved pallet {i} to aisle {i + 3}"
                episodes[memory.episodic.record("ops", "note", text).id] = text
                if i % 3 == 0:
                    doc = f"{name} note {i}: aisle {i + 3} holds pallet {i}"
                    documents[memory.semantic.store("knowledge", [doc])[0]] = doc
        except BaseException as exc:  # reported below
            failures.append(exc)

    threads = [
        threading.Thread(target=write, args=(memory, f"{side}{n}"))
        for side, memory in (("a", a), ("b", b))
        for n in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not failures, failures
    assert len(episodes) == 4 * 8 and len(documents) == 4 * 3
    for memory in (a, b):
        for episode_id, text in episodes.items():
            assert memory.episodic.get(episode_id).description == text
        for doc_id, doc in documents.items():
            assert memory.semantic.get("knowledge", doc_id).document == doc
    found = b.episodic.recall("a1 moved pallet 5", top_k=3)
    assert any(episodes[e.id] == "a1 moved pallet 5 to aisle 8" for e in found)


def test_maintenance_runs_once_across_replicas(replicas: list[Memory]) -> None:
    a, b = replicas
    with (
        maintenance_lock(a.db, a.path, "m", a.clock),
        pytest.raises(StoreLockedError, match="another replica"),
    ):
        b.maintain()  # while a replica is mid-run
    assert b.maintain().distill is not None  # free again once the run ended


def test_a_batch_another_replica_deletes_at_once_is_still_acknowledged(
    replicas: list[Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: record_many read its episodes back after committing them, so another
    replica's forgetting (old, unimportant episodes are deleted by ``stale_episodes``) that
    ran in between made a committed write fail with KeyError."""
    a, b = replicas
    index_add = a.episodic._index_add

    def then_deleted_elsewhere(rowids: Any, vectors: Any) -> None:
        index_add(rowids, vectors)  # committed: another replica deletes it now
        for row in b.db.query("SELECT id FROM episodes"):
            b.episodic.delete(row[0])

    monkeypatch.setattr(a.episodic, "_index_add", then_deleted_elsewhere)
    texts = ["Reminder about the team lunch", "棚卸しの連絡"]
    written = a.episodic.record_many(
        [{"agent_name": "ops", "event_type": "message", "description": t} for t in texts]
    )
    assert [e.description for e in written] == texts
    assert b.db.query("SELECT id FROM episodes") == []


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
        move = ["migrate", "--path", str(store), "--to", postgres_db_url]
        move += ["--chroma", chroma_server.url]
        code = main([*move, "--json"])
        assert code == 0
        report = json.loads(capsys.readouterr().out)
        assert report["source"] == report["target"]
        assert report["target"]["episodes"] == 4 and report["target"]["semantic_docs"] == 4
        assert report["sampled"] >= 1 and report["found"] == report["sampled"]
        # Moving again into the same database is refused: it is not empty.
        assert main(move) != 0
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


# -- what one replica does to another's view ------------------------------------------------


def test_a_vector_one_replica_could_not_store_is_restored_by_another(
    replicas: list[Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Replica B commits an episode whose vector the Chroma server refuses: B marks the
    collection stale in the database, and replica A's next search (A synced long before)
    sees the mark and puts the vector back from the table."""
    a, b = replicas
    first = a.episodic.record("ops", "note", "The north depot inventory is complete")
    assert a.episodic.recall("inventory", top_k=1)[0].id == first.id  # A's first sync

    def refused(self: ChromaVectors, rowids: Any, vectors: Any) -> None:
        raise BackendError("the vector store cannot be reached: connection refused")

    with monkeypatch.context() as patch:
        patch.setattr(ChromaVectors, "add", refused)
        late = b.episodic.record("ops", "note", "The data center moves to Osaka in June")
    assert ChromaVectors.is_stale(a.db)
    late_row = a.episodic.rows.rowids_where("id = ?", [late.id])
    assert a.episodic._store is not None
    assert not late_row <= a.episodic._store.rowids()
    a.episodic.recall("Where is the data center moving?", top_k=1)
    assert late_row <= a.episodic._store.rowids()
    assert not ChromaVectors.is_stale(b.db)


def test_a_mark_made_during_a_sync_outlives_it(
    replicas: list[Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sync clears only the marks made before it started: one another replica makes while
    it runs (for a write the sync may not have seen) still asks for the next sync."""
    a, b = replicas
    a.episodic.record("ops", "note", "Shipment 1 left the north depot")
    ChromaVectors.mark_stale(a.db)
    rows = a.episodic.rows
    read_live = type(rows).rowids_where

    def marked_meanwhile(self: Any, where: str, params: Any = ()) -> set[int]:
        ChromaVectors.mark_stale(b.db)  # replica B, while A's sync reads the table
        return read_live(self, where, params)

    with monkeypatch.context() as patch:
        patch.setattr(type(rows), "rowids_where", marked_meanwhile)
        assert a.episodic._store is not None
        a.episodic._store.sync(a.db, rows)
    assert ChromaVectors.is_stale(a.db)
    a.episodic._store.sync(a.db, rows)
    assert not ChromaVectors.is_stale(a.db)


def test_maintenance_and_its_parts_run_in_one_replica_at_a_time(
    replicas: list[Memory], clock: ManualClock
) -> None:
    """Distillation and forgetting take the maintenance lock too; a scheduler whose run
    another replica completed after its check does not run again."""
    a, b = replicas
    with maintenance_lock(a.db, a.path, "m", a.clock):
        for job in (b.distill, b.forget, b.enforce_collections):
            with pytest.raises(StoreLockedError):
                job()
        assert b.forget(dry_run=True).dry_run  # a dry run writes nothing: no lock
    scheduler = Scheduler(a)
    clock.advance(timedelta(days=1))  # past its first slot: a run is due
    checked = scheduler.due

    def due_then_another_replica_runs(now: Any = None) -> Any:
        when = checked(now)
        b.maintain()  # completes between A's check and A's lock
        return when

    scheduler.due = due_then_another_replica_runs  # type: ignore[method-assign]
    assert scheduler.run_pending() is None
    assert scheduler.skipped == 1 and not scheduler.reports


def test_an_owner_check_holds_until_the_write_across_replicas(
    replicas: list[Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Agent cto's store on replica B has passed every owner check made before its write;
    then, before B's write transaction, an admin on replica A puts a private document under
    the same id. The store checks again inside its write transaction and refuses: the
    admin's document is untouched."""
    a, b = replicas
    cto = LocalOperations(b, Caller.for_agent(b, "cto"))
    admin = LocalOperations(a, Caller.for_agent(a, "admin", admin=True))
    vectors = b.semantic._chunk_vectors  # the store's last step before its transaction

    def admin_writes_meanwhile(chunks: Any, embedded: Any) -> Any:
        admin.store("knowledge", ["admin's own notes"], ids=["cto:plan"], scope="private")
        return vectors(chunks, embedded)

    monkeypatch.setattr(b.semantic, "_chunk_vectors", admin_writes_meanwhile)
    with pytest.raises(AlreadyExistsError):
        cto.store("knowledge", ["cto's plan"], ids=["plan"])
    assert a.semantic.get("knowledge", "cto:plan").document == "admin's own notes"


@pytest.mark.parametrize("meanwhile", ["rewritten", "deleted"])
def test_a_document_written_by_two_replicas_at_once_ends_as_registered(
    replicas: list[Memory], monkeypatch: pytest.MonkeyPatch, meanwhile: str
) -> None:
    """Replica B's chunks of a document reach Chroma after replica A has rewritten (or
    deleted) it: B's record step finds the registry changed and writes the chunks again as
    they now are (or removes its own), so Chroma ends as the registry says."""
    a, b = replicas
    b.semantic.store("knowledge", ["Version one: the depot opens at 8"], ids=["plan"])
    real = chunks_module.chroma_errors
    fired: list[str] = []

    @contextmanager
    def late(what: str) -> Iterator[None]:
        if what == "metadatas" and not fired:  # B's chunk write, before it lands
            fired.append(what)
            if meanwhile == "rewritten":
                a.semantic.store("knowledge", ["Version three: the depot opens at 7"], ids=["plan"])
            else:
                a.semantic.delete("knowledge", ["plan"])
        with real(what):
            yield

    monkeypatch.setattr(chunks_module, "chroma_errors", late)
    b.semantic.store("knowledge", ["Version two: the depot opens at 9"], ids=["plan"])
    assert fired
    stored = a.semantic._collection("knowledge").get(ids=["plan#0"], include=["documents"])
    if meanwhile == "rewritten":
        assert a.semantic.get("knowledge", "plan").document.startswith("Version three")
        assert stored["documents"] == ["Version three: the depot opens at 7"]
    else:
        assert a.semantic.registry.rows("knowledge", ["plan"]) == []
        assert stored["ids"] == []


def test_any_replica_answers_an_mcp_client_of_another(replicas: list[Memory]) -> None:
    """Over a shared database the MCP endpoint keeps no session: a client that initialized
    with replica A is answered by replica B (a load balancer needs no sticky routing)."""
    a, b = replicas
    key = KeyStore(a.db, clock=a.clock).add("cto")[1]
    headers = {
        "Authorization": f"Bearer {key}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "mcp-protocol-version": "2025-06-18",
    }
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}}
    hello["clientInfo"] = {"name": "test", "version": "1"}
    with run_uvicorn(create_app(a)) as url_a, run_uvicorn(create_app(b)) as url_b:
        first = httpx.post(
            f"{url_a}/mcp",
            headers=headers,
            json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello},
        )
        assert first.status_code == 200 and '"capabilities"' in first.text
        session = first.headers.get("mcp-session-id")
        more = dict(headers, **({"mcp-session-id": session} if session else {}))
        call = {"name": "remember", "arguments": {"event_type": "note"}}
        call["arguments"]["description"] = "Replica B took this call"
        second = httpx.post(
            f"{url_b}/mcp",
            headers=more,
            json={"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call},
        )
    assert second.status_code == 200, second.text
    assert '"isError":false' in second.text.replace(" ", "")
    assert a.episodic.count_holding("Replica B took this call", limit=5) == 1


def test_a_dashboard_session_is_known_to_every_replica(
    replicas: list[Memory], clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Signed in on replica A, the browser is known to replica B (no sticky routing); signing
    out on B ends it on A; the oldest sessions past the cap go first; idle ones expire."""
    a, b = replicas
    key = KeyStore(a.db, clock=a.clock).add("ceo")[1]
    on_a, on_b = SessionStore(a.db, a.clock), SessionStore(b.db, b.clock)
    token, record = on_a.sign_in(key)
    session, seen = on_b.resolve(token)
    assert seen.id == record.id and on_b.csrf_ok(session, session.csrf)
    on_b.sign_out(token)
    with pytest.raises(AuthenticationError):
        on_a.resolve(token)
    monkeypatch.setattr(sessions_module, "MAX_SESSIONS", 2)
    tokens = []
    for _ in range(3):
        clock.advance(timedelta(minutes=1))
        tokens.append(on_a.sign_in(key)[0])
    assert len(on_b) == 2
    with pytest.raises(AuthenticationError):
        on_b.resolve(tokens[0])  # the least recently seen went
    on_b.resolve(tokens[2])
    clock.advance(sessions_module.IDLE + timedelta(minutes=1))
    with pytest.raises(AuthenticationError, match="expired"):
        on_a.resolve(tokens[2])
