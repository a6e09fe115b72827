"""Context keys: an episode is found by the conversation around it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from omoide import ManualClock, Memory
from omoide.layers.episodic.context_keys import date_words, key_texts, thread_of
from omoide.layers.episodic.rows import EpisodicRows
from omoide.storage import SqliteDatabase
from omoide.storage.migrations import MIGRATIONS
from omoide.storage.rebuilds import CONTEXT_KEYS_REBUILD

pytestmark = pytest.mark.both_engines

T = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def turns(mem: Memory, texts: list[tuple[str, str]], thread: str = "s1", **extra: object) -> None:
    mem.episodic.record_many(
        [
            {
                "agent_name": who,
                "event_type": "message",
                "description": text,
                "timestamp": T + timedelta(seconds=i),
                "context": {"thread": thread},
                "id": f"{thread}-{i}",
                **extra,
            }
            for i, (who, text) in enumerate(texts)
        ]
    )


def keys(mem: Memory) -> dict[str, tuple[str, str, str]]:
    assert mem.db is not None
    rows = mem.db.query(
        "SELECT e.id, k.self, k.near, k.far FROM episode_keys_fts k "
        "JOIN episodes e ON e.rowid = k.rowid"
    )
    return {r[0]: (r[1], r[2], r[3]) for r in rows}


CONVERSATION = [
    ("mel", "How was the trip to Kyoto?"),
    ("caro", "Amazing, we saw the temples"),
    ("mel", "Did you try the food?"),
    ("caro", "Yes, matcha everything"),
    ("mel", "Nice"),
]


def test_thread_of() -> None:
    assert thread_of({"thread": "a"}) == "a"
    assert thread_of({"session_id": "s"}) == "s"
    assert thread_of({"thread": 3}) == "3"
    assert thread_of({}) is None
    assert thread_of({"thread": ""}) is None


def test_date_words_cover_english_and_japanese() -> None:
    words = date_words(T)
    assert "2023-05-08" in words and "May" in words and "Monday" in words
    assert "2023年5月8日" in words and "月曜日" in words


def test_neighbours_enter_the_key(mem: Memory) -> None:
    turns(mem, CONVERSATION)
    k = keys(mem)
    assert "kyoto" in k["s1-1"][1]  # near: the question before the answer
    assert "food" in k["s1-1"][1]
    assert "matcha" in k["s1-1"][2]  # far: two places away
    assert "kyoto" not in k["s1-3"][1] and "kyoto" not in k["s1-3"][2]
    assert "may" in k["s1-1"][0]  # its date, in words


def test_key_texts_hold_every_column(mem: Memory) -> None:
    turns(mem, CONVERSATION)
    assert mem.db is not None
    rowids = {r[1]: int(r[0]) for r in mem.db.query("SELECT rowid, id FROM episodes")}
    texts = key_texts(mem.db, [rowids["s1-1"], rowids["s1-4"], 10_000])
    assert set(texts) == {rowids["s1-1"], rowids["s1-4"]}  # an unknown rowid has no key
    answer = texts[rowids["s1-1"]].split()
    assert {"amazing", "kyoto", "food", "matcha", "caro", "may"} <= set(answer)
    assert "kyoto" not in texts[rowids["s1-4"]]


def test_answer_found_by_its_question(mem: Memory) -> None:
    turns(mem, CONVERSATION)
    found = mem.episodic.candidates("trip to Kyoto temples")
    best = max(found, key=lambda c: c.key_score)
    assert best.episode.id in ("s1-0", "s1-1")
    scores = {c.episode.id: c.key_score for c in found}
    assert scores["s1-1"] > scores.get("s1-3", 0.0)  # the answer, by its neighbour


def test_later_turns_update_earlier_keys(mem: Memory) -> None:
    turns(mem, CONVERSATION[:2])
    assert "food" not in keys(mem)["s1-1"][1]
    mem.episodic.record(
        "mel",
        "message",
        "Did you try the food?",
        id="s1-2",
        timestamp=T + timedelta(seconds=2),
        context={"thread": "s1"},
    )
    assert "food" in keys(mem)["s1-1"][1]


def test_deleted_episode_leaves_neighbour_keys(mem: Memory) -> None:
    turns(mem, CONVERSATION)
    mem.episodic.delete("s1-2")
    k = keys(mem)
    assert "s1-2" not in k
    assert all("food" not in part for key in k.values() for part in key)
    assert "matcha" in k["s1-1"][1]  # s1-3 is now its neighbour


def test_archived_episode_leaves_neighbour_keys_until_restored(mem: Memory) -> None:
    turns(mem, CONVERSATION)
    mem.lifecycle.apply("episodic", "s1-2", "archive", policy="test", reason="old", run_id="r")
    k = keys(mem)
    assert "s1-2" not in k
    assert all("food" not in part for key in k.values() for part in key)
    mem.restore("s1-2")
    k = keys(mem)
    assert "food" in k["s1-2"][0]
    assert "food" in k["s1-1"][1]


def test_threads_do_not_mix(mem: Memory) -> None:
    turns(mem, CONVERSATION[:2], thread="a")
    turns(mem, [("x", "unrelated billing chat")], thread="b")
    k = keys(mem)
    assert "billing" not in k["a-1"][1]
    assert k["b-0"][1] == ""


def test_private_neighbour_does_not_leak_into_a_shared_key(mem: Memory) -> None:
    mem.episodic.record(
        "ceo",
        "message",
        "public question about budget",
        id="p-0",
        timestamp=T,
        context={"thread": "t"},
    )
    mem.episodic.record(
        "ceo",
        "message",
        "secret acquisition target Zeta",
        id="p-1",
        timestamp=T + timedelta(seconds=1),
        context={"thread": "t"},
        scope="private",
    )
    mem.episodic.record(
        "ceo",
        "message",
        "public follow-up",
        id="p-2",
        timestamp=T + timedelta(seconds=2),
        context={"thread": "t"},
    )
    k = keys(mem)
    assert "zeta" not in k["p-0"][1] and "zeta" not in k["p-2"][1]
    assert "budget" in k["p-1"][1]  # global words may enter a private key
    found = {c.episode.id: c for c in mem.episodic.candidates("Zeta", reader="cto")}
    assert "p-1" not in found  # not visible to cto
    assert all(c.key_score == 0.0 for c in found.values())  # nor findable by its words


def test_episode_without_thread_is_searchable(mem: Memory) -> None:
    mem.episodic.record("cto", "note", "standalone note on caching", id="solo")
    assert keys(mem)["solo"][1:] == ("", "")
    assert any(
        c.episode.id == "solo" and c.key_score > 0 for c in mem.episodic.candidates("caching")
    )


def test_update_refreshes_the_key(mem: Memory) -> None:
    mem.episodic.record("cto", "error", "deploy failed", id="e1")
    mem.episodic.update("e1", outcome="fixed by rollback")
    assert "rollback" in keys(mem)["e1"][0]


def test_migration_backfills_existing_episodes(tmp_path: Path, clock: ManualClock) -> None:
    with Memory(tmp_path / "d", clock=clock) as mem:
        turns(mem, CONVERSATION)
        assert mem.db is not None
        with mem.db.transaction() as conn:  # as a database from before the migration
            conn.execute("DELETE FROM episode_keys_fts")
            conn.execute("DELETE FROM episode_threads")
            conn.execute("DELETE FROM migrations WHERE name = '0004_episode_context_keys'")
            conn.execute("DROP TABLE episode_keys_fts")
            conn.execute("DROP TABLE episode_threads")
    db = SqliteDatabase(tmp_path / "d" / "omoide.db", clock=clock, migrations=MIGRATIONS)
    try:
        assert "0004_episode_context_keys" in db.applied_migrations()
        # The migration is SQL only; it requests the rebuild the episodic layer runs on open.
        assert db.pending_rebuilds() == [CONTEXT_KEYS_REBUILD]
        EpisodicRows(db)
        assert db.pending_rebuilds() == []
        assert db.scalar("SELECT COUNT(*) FROM episode_keys_fts") == len(CONVERSATION)
        near = db.scalar(
            "SELECT near FROM episode_keys_fts k JOIN episodes e ON e.rowid = k.rowid "
            "WHERE e.id = 's1-1'"
        )
        assert "kyoto" in near
    finally:
        db.close()
