"""``SemanticStore.query`` ranks by words and meaning (its default) or by meaning alone.

By relevance, a document found by its words alone, beyond the nearest chunks by meaning,
is a candidate too; every filter applies to it as to the nearest, and what a reader may not
read stays absent.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from omoide import Memory
from omoide.errors import ValidationError
from omoide.layers.semantic import hits, query

pytestmark = pytest.mark.both_engines

#: The document only its words find: its wording is unlike the question's.
TARGET = "Zebra-7734 ships the invoice module to the warehouse staff."
QUESTION = "What is project Zebra-7734?"


def _lookalikes(count: int) -> list[str]:
    """Documents closer to the question in meaning than :data:`TARGET` (another project's
    name, one letter apart) that share only its commonest word."""
    return [f"What is project Zebre-{8000 + i}? It is a codename." for i in range(count)]


@pytest.fixture
def crowded(mem: Memory) -> Iterator[Memory]:
    """A collection where more than a query's nearest hundred chunks are closer to
    :data:`QUESTION` in meaning than :data:`TARGET` is."""
    mem.semantic.store("knowledge", _lookalikes(120), [{"team": "ops"}] * 120)
    yield mem


def test_relevance_finds_what_only_words_find(crowded: Memory) -> None:
    mem = crowded
    [target] = mem.semantic.store("knowledge", [TARGET], [{"team": "hr"}])
    nearest = mem.semantic.query("knowledge", QUESTION, n_results=5, rank="meaning")
    assert target not in [h.doc_id for h in nearest]
    assert all(h.relevance is None for h in nearest)
    assert [h.distance for h in nearest] == sorted(h.distance for h in nearest)
    hits = mem.semantic.query("knowledge", QUESTION, n_results=5)
    assert hits[0].doc_id == target
    scores = [h.relevance for h in hits]
    assert all(s is not None and 0.0 <= s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    # Its distance is its own, computed from its stored vector, and farther than the others'.
    assert hits[0].distance > max(h.distance for h in nearest)


def test_filters_apply_to_what_words_find(crowded: Memory) -> None:
    mem = crowded
    [target] = mem.semantic.store(
        "knowledge", [TARGET], [{"team": "hr"}], agent_name="hr-bot", scope="private"
    )

    def found(**kwargs: object) -> bool:
        hits = mem.semantic.query("knowledge", QUESTION, n_results=5, **kwargs)  # type: ignore[arg-type]
        return target in [h.doc_id for h in hits]

    assert found() and found(reader="hr-bot") and found(where={"team": "hr"})
    assert not found(reader="ops-bot")  # private to its author
    assert not found(where={"team": "ops"})
    assert not found(where_document={"$contains": "payroll"})
    assert found(where_document={"$contains": "invoice"})
    assert not found(author="ops-bot") and found(author="hr-bot")
    assert not found(ids=["someone-else"]) and found(ids=[target])
    mem.semantic.delete("knowledge", [target])
    assert not found()


def test_an_unknown_ranking_is_refused(mem: Memory) -> None:
    mem.semantic.store("knowledge", ["Deploys happen on Tuesdays."])
    with pytest.raises(ValidationError) as raised:
        mem.semantic.query("knowledge", "deploys", rank="bm25")
    assert raised.value.field == "rank"


def test_a_question_without_words_ranks_by_meaning(mem: Memory) -> None:
    docs = ["Vector databases search by cosine similarity.", "Lunch is at noon."]
    mem.semantic.store("knowledge", docs)
    # Only stop words: no full-text terms, so relevance is meaning alone, in the same order.
    by_relevance = mem.semantic.query("knowledge", "what is it?", n_results=2)
    by_meaning = mem.semantic.query("knowledge", "what is it?", n_results=2, rank="meaning")
    assert [h.doc_id for h in by_relevance] == [h.doc_id for h in by_meaning]
    assert all(h.relevance is not None for h in by_relevance)


def test_what_only_words_find_is_read_only_when_it_could_rank(
    crowded: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A document found by words alone is read from ChromaDB only if its words, with the
    meaning of the farthest of the nearest chunks, could still place it among the results;
    the results are those of reading every one."""
    mem = crowded
    mem.semantic.store("knowledge", [TARGET], [{"team": "hr"}])
    notes = [f"Notes {i}: the invoice module and the warehouse, Zebra-77{i:02d}." for i in range(8)]
    mem.semantic.store("knowledge", notes)
    read: list[list[str]] = []
    chunks_of = hits.chunks_of

    def counted(*args: Any, **kwargs: Any) -> Any:
        read.append(list(args[3]))  # the documents asked for
        return chunks_of(*args, **kwargs)

    monkeypatch.setattr(query, "chunks_of", counted)
    pruned = mem.semantic.query("knowledge", QUESTION, n_results=1)
    ranked = hits.ranked
    monkeypatch.setattr(query, "ranked", lambda *a, **k: ranked(*a, **{**k, "farthest": None}))
    every = mem.semantic.query("knowledge", QUESTION, n_results=1)
    assert [(h.doc_id, h.relevance) for h in pruned] == [(h.doc_id, h.relevance) for h in every]
    assert pruned[0].document == TARGET
    assert 1 <= len(read[0]) < len(read[1])  # fewer read, the same results
