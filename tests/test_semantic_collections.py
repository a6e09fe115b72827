"""Collection policies: declared purpose, retention and cap; the refuse rule; usage figures."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from chroma_server import ON_BOTH_BACKENDS
from omoide import Config, ManualClock, Memory
from omoide.errors import CapacityError

pytestmark = pytest.mark.both_engines


def capped(max_docs: int, name: str = "knowledge") -> Config:
    return Config.from_dict(
        {"semantic": {"collections": {name: {"max_docs": max_docs, "on_full": "refuse"}}}}
    )


def test_default_collections_declare_the_articles_policies(mem: Memory) -> None:
    stats = {s.name: s for s in mem.collection_stats()}
    assert set(stats) == {"knowledge", "code", "decisions", "feedback"}
    summary = {n: (s.retention_days, s.max_docs, s.update_freq) for n, s in stats.items()}
    assert summary == {
        "knowledge": (None, 50_000, "weekly"),
        "code": (None, 30_000, "on_commit"),
        "decisions": (365, 10_000, "on_distill"),
        "feedback": (None, 5_000, "on_receive"),
    }
    assert all(s.purpose for s in stats.values())
    assert all(s.documents == s.chunks == 0 and not s.full for s in stats.values())


def test_refuse_rule_raises_and_writes_nothing(tmp_path: Path, clock: ManualClock) -> None:
    with Memory(tmp_path / "data", clock=clock, config=capped(3)) as mem:
        mem.semantic.store("knowledge", ["one", "two", "three"], ids=["a", "b", "c"])
        stats = {s.name: s for s in mem.collection_stats()}["knowledge"]
        assert (stats.documents, stats.max_docs, stats.usage, stats.full) == (3, 3, 1.0, True)

        with pytest.raises(CapacityError, match=r"'knowledge' holds 3 of 3.*refuse"):
            mem.semantic.store("knowledge", ["four"], ids=["d"])
        with pytest.raises(CapacityError):  # a batch that straddles the cap: all refused
            mem.semantic.store("knowledge", ["one again", "five"], ids=["a", "e"])
        assert mem.semantic.count("knowledge") == 3
        assert mem.semantic.count_chunks("knowledge") == 3
        assert mem.semantic.get("knowledge", "a").document == "one"

        # Replacing a document at the cap adds nothing, so it is allowed.
        mem.semantic.store("knowledge", ["one, revised"], ids=["a"])
        assert mem.semantic.get("knowledge", "a").document == "one, revised"
        # Other collections have their own caps.
        mem.semantic.store("code", ["print('hi')"], ids=["snippet"])
        # Room made, room used.
        mem.semantic.delete("knowledge", ["b"])
        mem.semantic.store("knowledge", ["four"], ids=["d"])
        assert mem.semantic.count("knowledge") == 3


def test_declared_collection_works_end_to_end(tmp_path: Path, clock: ManualClock) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "omoide.toml").write_text(
        "[semantic.collections.runbooks]\n"
        'purpose = "operational runbooks"\n'
        "retention_days = 365\n"
        "max_docs = 4\n"
        'on_full = "refuse"\n'
        'update_freq = "on_commit"\n',
        encoding="utf-8",
    )
    tree = tmp_path / "runbooks"
    tree.mkdir()
    (tree / "restart.md").write_text(
        "# Restart the API\n\nDrain traffic, then restart the service.\n\n"
        "# ディスクが一杯のとき\n\n古いログを削除してから容量を確認する。\n",
        encoding="utf-8",
    )
    with Memory(data, clock=clock) as mem:
        assert "runbooks" in mem.semantic.collections
        report = mem.index(tree, "runbooks")
        assert (report.files_indexed, report.documents) == (1, 2)
        mem.semantic.store("runbooks", ["Rotate the TLS certificate yearly."], ids=["tls"])
        mem.semantic.cache(
            "status:api", "API status: degraded.", 1, "statuspage", collection="runbooks"
        )

        hits = mem.semantic.query("runbooks", "ディスク容量が足りない", n_results=1)
        assert hits[0].metadata["heading"] == "ディスクが一杯のとき"
        assert hits[0].collection == "runbooks"

        stats = {s.name: s for s in mem.collection_stats()}["runbooks"]
        assert (stats.purpose, stats.retention_days, stats.max_docs) == (
            "operational runbooks",
            365,
            4,
        )
        assert (stats.documents, stats.chunks, stats.full) == (4, 4, True)
        with pytest.raises(CapacityError):
            mem.semantic.store("runbooks", ["one too many"])

    with Memory(data, clock=clock) as mem:  # the declaration and the data persist
        assert mem.semantic.count("runbooks") == 4


@ON_BOTH_BACKENDS
def test_restoring_a_document_drops_metadata_it_no_longer_has(mem: Memory) -> None:
    """Regression: Chroma's upsert merges metadata, so old keys used to stay on chunks."""
    mem.semantic.store("knowledge", ["A fact about Kyoto."], [{"topic": "a", "old": 1}], ["d"])
    mem.semantic.store("knowledge", ["A fact about Kyoto."], [{"topic": "b"}], ["d"])
    (hit,) = mem.semantic.query("knowledge", "Kyoto")
    assert hit.metadata == {"topic": "b"}
    assert mem.semantic.query("knowledge", "Kyoto", where={"old": 1}) == []


@ON_BOTH_BACKENDS
def test_a_new_search_breadth_reaches_existing_collections(
    tmp_path: Path, clock: ManualClock, store_config: Config
) -> None:
    """hnsw_search_ef is the HNSW setting that can change after creation: a store created
    narrow gets the configured breadth when opened again."""
    path = tmp_path / "d"

    def breadth(ef: int) -> dict[str, int]:
        semantic = dataclasses.replace(store_config.semantic, hnsw_search_ef=ef)
        config = dataclasses.replace(store_config, semantic=semantic)
        with Memory(path, clock=clock, config=config) as mem:
            return {
                name: mem.semantic._collection(name).configuration["hnsw"]["ef_search"]
                for name in mem.semantic.collections
            }

    assert set(breadth(100).values()) == {100}
    # Each open asks for the change (it shows from the next open on); Chroma may find its
    # database busy and leave it to a later open, so allow a few.
    seen = [breadth(500) for _ in range(4)]
    assert set(seen[-1].values()) == {500}
