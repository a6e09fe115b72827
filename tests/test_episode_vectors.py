"""Episode vectors in ChromaDB (``episodic.vector_store = "chroma"``), on the session's Chroma
server and in a directory's own ChromaDB: the answers of the in-memory matrix, scope filters
narrow and wide, forgetting, reopening, and vectors ChromaDB lacks coming back from SQLite.
(The scope and recall tests marked ``@ON_BOTH_BACKENDS`` run on this store too.)"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from chroma_server import ChromaServer
from conftest import TOPICS
from omoide import Config, ManualClock, Memory
from omoide.errors import BackendError
from omoide.layers.episodic import chroma_vectors
from omoide.layers.episodic.chroma_vectors import ChromaVectors

ON_THE_SERVER = pytest.mark.parametrize("chroma_backend", ["server"], indirect=True)

QUESTIONS = (
    "Why did the deployment fail?",
    "Which currency does the customer want on the invoice?",
    "プランの料金はいくらに決めた？",
    "When is lunch?",
)


def record_topics(memory: Memory) -> None:
    """TOPICS under fixed ids, by cto, and a private note of the ceo."""
    memory.episodic.record_many(
        [
            {
                "agent_name": "cto",
                "event_type": event_type,
                "description": text,
                "importance": 0.4 + 0.01 * i,
                "id": f"{topic}-{i}",
            }
            for topic, (event_type, texts) in TOPICS.items()
            for i, text in enumerate(texts)
        ]
    )
    memory.episodic.record(
        "ceo", "error", "Deploy of the payroll service failed", id="secret", scope="private"
    )


def stored_rowids(memory: Memory) -> set[int]:
    store = memory.episodic._store
    assert isinstance(store, ChromaVectors)
    return store.rowids()


def live_rowids(memory: Memory) -> set[int]:
    rows = memory.db.query("SELECT rowid FROM episodes WHERE state IN ('active', 'compressed')")
    return {int(r[0]) for r in rows}


@pytest.mark.parametrize("where", ["server", "embedded"])
def test_the_same_answers_as_the_in_memory_matrix(
    open_memory: Any, chroma_server: ChromaServer, teams_config: Config, where: str
) -> None:
    matrix = open_memory("matrix", teams_config)
    if where == "server":
        config = chroma_server.config(teams_config, vector_store="chroma")
    else:
        episodic = dataclasses.replace(teams_config.episodic, vector_store="chroma")
        config = dataclasses.replace(teams_config, episodic=episodic)
    chroma = open_memory("chroma", config)
    for memory in (matrix, chroma):
        record_topics(memory)
    assert stored_rowids(chroma) == live_rowids(chroma)
    filters: list[dict[str, Any]] = [
        {},
        {"agent_name": "cto"},
        {"event_type": "error"},
        {"reader": "intern"},
        {"reader": "ceo"},
    ]
    for question in QUESTIONS:
        for given in filters:
            expected = matrix.episodic.recall(question, top_k=5, touch=False, **given)
            found = chroma.episodic.recall(question, top_k=5, touch=False, **given)
            assert [e.id for e in found] == [e.id for e in expected], (question, given)
            # Both compute the cosine in float32, by different code (ChromaDB's SIMD distance,
            # numpy's matrix product): the scores agree to float32 precision, not to 1e-6.
            assert [e.score for e in found] == pytest.approx([e.score for e in expected], abs=1e-5)
            if given.get("reader") == "intern":
                assert "secret" not in {e.id for e in found}
        asked = {"agent_name": "intern", "layers": ["episodic"], "top_k": 5}
        assert chroma.recall(question, **asked).ids() == matrix.recall(question, **asked).ids()
    assert chroma.recall(QUESTIONS[0], agent_name="ceo").ids()[0] == "secret"
    if where == "server":
        chroma_server.drop(config.semantic.chroma_prefix)


@ON_THE_SERVER
def test_others_nearest_episodes_hide_nothing_readable(
    mem: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The nearest episodes belong to another agent: the readable one further away is found
    by the exact scan of a narrow filter and by a widened query alike, and the others'
    never are."""
    mem.episodic.record_many(
        [
            {
                "agent_name": "ceo",
                "event_type": "decision",
                "description": f"Plan {i} is priced at {500 + i} yen from next quarter",
                "scope": "private",
            }
            for i in range(40)
        ]
    )
    mine = mem.episodic.record(
        "intern", "note", "Hotels for the offsite are booked", scope="private"
    )
    question = "how are the plans priced"
    vector = mem.embedder.embed_query(question)
    for exact_below in (chroma_vectors.EXACT_BELOW, 0):  # the exact scan, then widening
        monkeypatch.setattr(chroma_vectors, "EXACT_BELOW", exact_below)
        found = mem.episodic.candidates(question, pool=5, reader="intern", vector=vector)
        assert [c.episode.id for c in found] == [mine.id]
        ceo = mem.episodic.candidates(question, pool=5, reader="ceo", vector=vector)
        assert len(ceo) >= 5 and all(c.episode.agent_name == "ceo" for c in ceo)
        recalled = mem.episodic.recall(question, reader="intern", touch=False)
        assert [e.id for e in recalled] == [mine.id]


@ON_THE_SERVER
def test_forgetting_removes_vectors_and_restoring_brings_them_back(mem: Memory) -> None:
    kept, deleted, archived, compressed = (
        mem.episodic.record("cto", "note", text)
        for text in (
            "The staging database is refreshed every Sunday.",
            "Lunch today was ramen.",
            "The marketing site got a new font.",
            "The release failed because the migration locked the orders table. "
            "We rolled back and reran it at night after the traffic dropped.",
        )
    )
    mem.episodic.delete(deleted.id)
    for episode, action in ((archived, "archive"), (compressed, "compress")):
        mem.lifecycle.apply("episodic", episode.id, action, policy="p", reason="r", run_id="run")
    assert stored_rowids(mem) == live_rowids(mem)
    assert len(stored_rowids(mem)) == 2  # kept and compressed (archived and deleted left)
    rowid = int(mem.db.scalar("SELECT rowid FROM episodes WHERE id = ?", [compressed.id]))
    store = mem.episodic._store
    assert isinstance(store, ChromaVectors)
    [stored] = store._coll.get(ids=[str(rowid)], include=["embeddings"])["embeddings"]
    blob = mem.db.scalar("SELECT embedding FROM episodes WHERE rowid = ?", [rowid])
    assert np.allclose(stored, np.frombuffer(blob, dtype=np.float32))  # the summary's vector
    mem.restore(archived.id)
    assert stored_rowids(mem) == live_rowids(mem) and len(stored_rowids(mem)) == 3
    assert mem.episodic.recall("Which font does the marketing site use?")[0].id == archived.id
    mem.purge(kept.id, reason="spam")
    assert stored_rowids(mem) == live_rowids(mem) and len(stored_rowids(mem)) == 2


@ON_THE_SERVER
def test_a_reopened_store_reuses_its_vectors(
    mem: Memory,
    data_dir: Path,
    clock: ManualClock,
    embedder: Any,
    counter: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    record_topics(mem)
    assert mem.episodic.recall(QUESTIONS[1], top_k=1)[0].id.startswith("invoice-")
    config = mem.config
    mem.close()
    written: list[int] = []
    original = ChromaVectors.add

    def counted(self: ChromaVectors, rowids: Any, vectors: Any) -> None:
        written.extend(rowids)
        original(self, rowids, vectors)

    monkeypatch.setattr(ChromaVectors, "add", counted)
    with Memory(
        data_dir, clock=clock, embedder=embedder, token_counter=counter, config=config
    ) as again:
        assert again.episodic.recall(QUESTIONS[1], top_k=1)[0].id.startswith("invoice-")
        assert stored_rowids(again) == live_rowids(again)
    assert written == []  # nothing written again: the collection held every vector


@ON_THE_SERVER
def test_vectors_chroma_lacks_come_back_from_sqlite(
    mem: Memory,
    data_dir: Path,
    clock: ManualClock,
    embedder: Any,
    counter: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An older store (vectors in memory only) switched to ChromaDB, and a write the server
    could not take: SQLite has every vector, and the next search puts them back."""
    in_memory = dataclasses.replace(mem.config.episodic, vector_store="memory")
    old = dataclasses.replace(mem.config, episodic=in_memory)
    mem.close()
    with Memory(data_dir, clock=clock, embedder=embedder, token_counter=counter, config=old) as m:
        record_topics(m)
    with Memory(
        data_dir, clock=clock, embedder=embedder, token_counter=counter, config=mem.config
    ) as again:
        found = again.episodic.recall(QUESTIONS[0], top_k=1, reader="cto")
        assert found[0].id.startswith("deploy-")
        assert stored_rowids(again) == live_rowids(again)

        def refused(self: ChromaVectors, rowids: Any, vectors: Any) -> None:
            raise BackendError("the vector store cannot be reached: connection refused")

        with monkeypatch.context() as patch:
            patch.setattr(ChromaVectors, "add", refused)
            late = again.episodic.record("cto", "note", "The data center moves to Osaka in June")
        assert again.episodic.get(late.id).description.startswith("The data center")
        assert ChromaVectors.is_stale(again.db)
        question = "Where is the data center moving?"
        assert again.episodic.recall(question, top_k=1)[0].id == late.id
        assert not ChromaVectors.is_stale(again.db)
        assert stored_rowids(again) == live_rowids(again)


def test_the_matrix_and_the_chroma_store_share_an_interface(tmp_path: Path) -> None:
    """add / remove / nearest / len answer alike on both stores (well-separated vectors)."""
    import chromadb
    from chromadb.config import Settings

    from omoide.core.config import SemanticConfig
    from omoide.core.vector_matrix import VectorMatrix
    from omoide.storage.chroma import open_collection

    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(60, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    client = chromadb.PersistentClient(str(tmp_path), settings=Settings(anonymized_telemetry=False))
    chroma = ChromaVectors(open_collection(client, SemanticConfig(), "vectors", "test", "me"))
    matrix = VectorMatrix(16)
    rowids = list(range(100, 160))
    for store in (matrix, chroma):
        store.add(rowids, vectors)
        store.remove([100, 101])
        assert len(store) == 58
    for query in vectors[:5]:
        (m_ids, m_sims), (c_ids, c_sims) = matrix.nearest(query, 5), chroma.nearest(query, 5)
        assert list(m_ids) == list(c_ids) and np.allclose(m_sims, c_sims, atol=1e-5)
    assert len(chroma.nearest(vectors[0], 500)[0]) == 58
    assert chroma.rowids() == set(rowids) - {100, 101}
    client.close()
