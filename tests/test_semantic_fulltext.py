"""Full-text search of semantic documents: ranking, what it may return, and an index that
stays in step with the registry however the registry changes."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from omoide import ManualClock, Memory
from omoide.errors import UnknownCollectionError, ValidationError
from omoide.layers.semantic.matches import matches
from omoide.layers.semantic.registry import DocumentRegistry
from omoide.storage import SqliteDatabase
from omoide.storage.migrations import MIGRATIONS
from omoide.storage.rebuilds import SEMANTIC_FULLTEXT_REBUILD
from omoide.text.fulltext import match_expression

pytestmark = pytest.mark.both_engines

DECISIONS = {
    "budget": "SUPPORT decided that Q1 budget is a 10% cut to ads.",
    "priority": "SUPPORT decided that Q1 priority is security before performance.",
    "ja-budget": "supportの決定: Q1 budgetは「doubling the events budget」とする。",
    "hiring": "OPS decided that Q1 hiring is two backend engineers.",
}


@pytest.fixture
def decided(mem: Memory) -> Memory:
    mem.semantic.store("decisions", list(DECISIONS.values()), ids=list(DECISIONS))
    return mem


def test_words_rank_documents_by_bm25(decided: Memory) -> None:
    found = decided.semantic.search_text("decisions", "supportはQ1 budgetについて何を決めた？")
    assert set(found) == set(DECISIONS)  # all share "q1"
    assert list(found)[:2] in (["budget", "ja-budget"], ["ja-budget", "budget"])
    assert found["budget"] > found["priority"] > 0
    english = decided.semantic.search_text("decisions", "What was decided on hiring?", limit=1)
    assert list(english) == ["hiring"]


def test_a_question_naming_a_compound_finds_the_text_writing_it_first(mem: Memory) -> None:
    """ "same-day" is rarer than "day": the cutoff that writes it goes above the notes that
    share the question's other words (read apart, it would rank fourth)."""
    notes = {
        "daily": "Every day parcels must go on the last truck.",
        "cutoff": "Same-day parcels: by 16:30.",
        "labels": "Parcels must be labelled.",
        "pallets": "Pallets go out every day.",
        "depot": "The depot opens at 06:00.",
    }
    mem.semantic.store("knowledge", list(notes.values()), ids=list(notes))
    found = mem.semantic.search_text("knowledge", "When must same-day parcels go?")
    assert next(iter(found)) == "cutoff"
    assert found["cutoff"] > 1.5 * max(found["pallets"], found["daily"])


def test_japanese_is_searched_by_bigrams(mem: Memory) -> None:
    mem.semantic.store(
        "knowledge",
        ["本番デプロイは火曜日と木曜日に行う。", "経費精算は月末までに提出する。"],
        ids=["deploy", "expenses"],
    )
    assert list(mem.semantic.search_text("knowledge", "デプロイはいつ？")) == ["deploy"]
    assert list(mem.semantic.search_text("knowledge", "精算の締め切り")) == ["expenses"]


def test_among_limits_the_search_to_given_documents(decided: Memory) -> None:
    found = decided.semantic.search_text("decisions", "Q1 budget", among=["priority", "hiring"])
    assert set(found) == {"priority", "hiring"}
    assert decided.semantic.search_text("decisions", "Q1 budget", among=[]) == {}
    assert decided.semantic.search_text("decisions", "Q1 budget", among=["missing"]) == {}


def test_named_documents_are_scored_beside_the_best_in_one_query(
    decided: Memory, clock: ManualClock
) -> None:
    # The ranker's candidates: the best by words, and the words of those found by meaning.
    assert decided.db is not None
    expression = match_expression("What was decided on the Q1 budget?")
    assert expression is not None
    now = clock.now()
    best = matches(decided.db, "decisions", expression, 1, None, None, [], now)
    named = ["hiring", "priority", "budget", "missing"]
    among = matches(decided.db, "decisions", expression, 10, named, None, [], now)
    both = matches(decided.db, "decisions", expression, 1, None, None, [], now, also=named)
    assert list(best) in (["budget"], ["ja-budget"])
    assert set(among) == {"hiring", "priority", "budget"}
    assert both == {**best, **among}
    assert list(both) == [*best, *(d for d in among if d not in best)]
    scores = [score for score, _ in both.values()]
    assert scores[1:] == sorted(scores[1:], reverse=True)


def test_query_by_ids_returns_those_documents_with_similarities(decided: Memory) -> None:
    hits = decided.semantic.query("decisions", "Q1 budget", n_results=5, ids=["hiring", "budget"])
    assert {h.doc_id for h in hits} == {"hiring", "budget"}
    assert decided.semantic.query("decisions", "Q1 budget", ids=[]) == []
    with pytest.raises(ValidationError) as err:
        decided.semantic.query("decisions", "Q1 budget", ids=["bad#id", 3])
    assert err.value.field == "ids[1]"


def test_only_readable_live_documents_are_found(mem: Memory, clock: ManualClock) -> None:
    mem.semantic.store("knowledge", ["Quarterly budget review notes."], ids=["shared"])
    mem.semantic.store(
        "knowledge",
        ["My private budget worries."],
        ids=["private"],
        agent_name="cfo",
        scope="private",
    )
    mem.semantic.store(
        "knowledge",
        ["Cached budget page."],
        ids=["cached"],
        expires_at=clock.now() + timedelta(days=1),
    )
    assert set(mem.semantic.search_text("knowledge", "budget")) == {"shared", "private", "cached"}
    assert set(mem.semantic.search_text("knowledge", "budget", reader="cto")) == {
        "shared",
        "cached",
    }
    assert "private" in mem.semantic.search_text("knowledge", "budget", reader="cfo")
    assert mem.semantic.search_text("code", "budget") == {}  # other collections stay apart
    clock.advance(days=2)
    assert set(mem.semantic.search_text("knowledge", "budget")) == {"shared", "private"}
    mem.lifecycle.apply(
        "semantic", "shared", "archive", collection="knowledge", policy="p", reason="r", run_id="r"
    )
    assert set(mem.semantic.search_text("knowledge", "budget")) == {"private"}
    mem.restore("shared", collection="knowledge")
    assert "shared" in mem.semantic.search_text("knowledge", "budget")


def test_the_index_follows_replacements_compression_and_deletes(mem: Memory) -> None:
    text = "Plants need water on Mondays. " + "The ficus likes shade and little sunlight. " * 80
    mem.semantic.store("knowledge", [text], ids=["plants"])
    assert "plants" in mem.semantic.search_text("knowledge", "ficus sunlight")
    mem.lifecycle.apply(
        "semantic", "plants", "compress", collection="knowledge", policy="p", reason="r", run_id="r"
    )
    assert mem.semantic.get("knowledge", "plants").state == "compressed"
    assert "plants" in mem.semantic.search_text("knowledge", "plants water")
    mem.semantic.store("knowledge", ["Cacti need no water at all."], ids=["plants"])
    assert mem.semantic.search_text("knowledge", "ficus") == {}
    assert "plants" in mem.semantic.search_text("knowledge", "cacti")
    mem.semantic.delete("knowledge", ["plants"])
    assert mem.semantic.search_text("knowledge", "cacti") == {}
    assert mem.db is not None
    assert mem.db.scalar("SELECT COUNT(*) FROM semantic_docs_fts") == 0


def test_queries_are_never_read_as_fts_syntax(decided: Memory) -> None:
    for query in ('budget" OR "x', "NEAR(budget hiring)", "budget*", "-budget", "？！"):
        found = decided.semantic.search_text("decisions", query)
        assert all(doc_id in DECISIONS for doc_id in found)
    assert decided.semantic.search_text("decisions", "") == {}
    for kwargs, field in (
        ({"limit": 0}, "limit"),
        ({"among": "budget"}, "among"),
        ({"among": ["budget", 7]}, "among[1]"),
        ({"reader": " padded"}, "reader"),
    ):
        with pytest.raises(ValidationError) as err:
            decided.semantic.search_text("decisions", "budget", **kwargs)  # type: ignore[arg-type]
        assert err.value.field == field
    with pytest.raises(UnknownCollectionError):
        decided.semantic.search_text("secrets", "budget")


def test_migration_indexes_existing_documents(tmp_path: Path, clock: ManualClock) -> None:
    with Memory(tmp_path / "d", clock=clock) as mem:
        mem.semantic.store("decisions", list(DECISIONS.values()), ids=list(DECISIONS))
        assert mem.db is not None
        with mem.db.transaction() as conn:  # as a database from before the migration
            conn.execute(
                "DELETE FROM migrations WHERE name IN "
                "('0007_semantic_fulltext', '0010_fulltext_in_python')"
            )
            conn.execute("DROP TABLE semantic_docs_fts")
    db = SqliteDatabase(tmp_path / "d" / "omoide.db", clock=clock, migrations=MIGRATIONS)
    try:
        assert db.applied_migrations()[-2:] == ["0007_semantic_fulltext", "0010_fulltext_in_python"]
        # The migration is SQL only; it requests the rebuild the semantic layer runs on open.
        assert db.pending_rebuilds() == [SEMANTIC_FULLTEXT_REBUILD]
        DocumentRegistry(db, clock)
        assert db.pending_rebuilds() == []
        assert db.scalar("SELECT COUNT(*) FROM semantic_docs_fts") == len(DECISIONS)
    finally:
        db.close()
    with Memory(tmp_path / "d", clock=clock) as mem:
        assert list(mem.semantic.search_text("decisions", "hiring engineers")) == ["hiring"]


def test_imported_documents_are_found_by_their_words(
    decided: Memory, tmp_path: Path, clock: ManualClock
) -> None:
    from omoide.service.transfer import export_jsonl, import_jsonl

    lines = list(export_jsonl(decided))
    with Memory(tmp_path / "copy", clock=clock, embedder=decided.embedder) as target:
        import_jsonl(target, lines)
        assert list(target.semantic.search_text("decisions", "hiring engineers")) == ["hiring"]


def _archive(mem: Memory, doc_id: str, collection: str = "decisions") -> None:
    mem.lifecycle.apply(
        "semantic", doc_id, "archive", collection=collection, policy="p", reason="r", run_id="r"
    )


def test_archived_versions_of_current_facts_are_found_by_their_words(
    mem: Memory, clock: ManualClock
) -> None:
    deploy = {"subject": "policy.deploy_window"}
    mem.semantic.store("decisions", ["本番デプロイは平日15時まで許可する。"], [deploy], ids=["d1"])
    clock.advance(days=1)
    mem.semantic.store(
        "decisions", ["Production deploys: Tuesday and Thursday mornings."], [deploy], ids=["d2"]
    )
    mem.semantic.store(
        "decisions", ["本番デプロイの手順書を更新した。"], ids=["notes"]
    )  # no subject: not a version of anything
    question = "本番デプロイはいつ許可されている？"
    assert mem.semantic.archived_versions("decisions", question) == []  # d1 is not archived
    _archive(mem, "d1")
    _archive(mem, "notes")
    (found,) = mem.semantic.archived_versions("decisions", question)
    assert (found.id, found.state, found.subject) == ("d1", "archived", "policy.deploy_window")
    assert mem.semantic.archived_versions("decisions", "Kubernetes upgrade") == []
    assert mem.semantic.archived_versions("decisions", "？") == []  # no words at all
    _archive(mem, "d2")  # no live version left: the fact is no longer current
    assert mem.semantic.archived_versions("decisions", question) == []


def test_archived_versions_respect_the_readers_scope(mem: Memory) -> None:
    fact = {"subject": "cfo.note"}
    for i, text in enumerate(["予算メモ: 広告費を削減", "Budget memo: cut ads"]):
        mem.semantic.store(
            "decisions", [text], [fact], ids=[f"m{i}"], agent_name="cfo", scope="private"
        )
    _archive(mem, "m0")
    assert [
        d.id for d in mem.semantic.archived_versions("decisions", "予算メモ", reader="cfo")
    ] == ["m0"]
    assert mem.semantic.archived_versions("decisions", "予算メモ", reader="cto") == []


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"limit": 0}, "limit"),
        ({"limit": "3"}, "limit"),
        ({"reader": ""}, "reader"),
        ({"query_text": 5}, "query_text"),
    ],
)
def test_archived_versions_refuse_bad_input(
    mem: Memory, kwargs: dict[str, object], field: str
) -> None:
    args: dict[str, object] = {"query_text": "budget", **kwargs}
    query_text = args.pop("query_text")
    with pytest.raises(ValidationError) as info:
        mem.semantic.archived_versions("decisions", query_text, **args)  # type: ignore[arg-type]
    assert info.value.field == field
    with pytest.raises(UnknownCollectionError):
        mem.semantic.archived_versions("nope", "budget")


def test_a_current_version_is_found_by_its_subject_and_earlier_wordings(
    mem: Memory, clock: ManualClock
) -> None:
    """A fact restated in Japanese keeps the English words of its writer's earlier version
    and its subject in its full text, so an English question still finds it once the earlier
    version is archived; another writer's version of the same subject lends it nothing."""
    target = {"subject": "support.response_target"}
    mem.semantic.store(
        "decisions",
        ["Decision: support must answer customers within 2 hours."],
        [target],
        ids=["v1"],
        agent_name="support",
    )
    clock.advance(days=1)
    mem.semantic.store(
        "decisions",
        ["決定: サポートは4時間以内に返信する。"],
        [target],
        ids=["v2"],
        agent_name="support",
    )
    mem.semantic.store(
        "decisions", ["決定: 返信は翌営業日まで。"], [target], ids=["other"], agent_name="intern"
    )
    _archive(mem, "v1")
    assert list(mem.semantic.search_text("decisions", "answer customers within hours")) == ["v2"]
    assert set(mem.semantic.search_text("decisions", "response target")) == {"v2", "other"}
    v3 = "Decision: support answers within 30 minutes."
    mem.semantic.store("decisions", [v3], [target], ids=["v3"], agent_name="support")
    assert set(mem.semantic.search_text("decisions", "サポート")) == {"v2", "v3"}  # v2's words
    assert set(mem.semantic.search_text("decisions", "customers")) == {"v2", "v3"}  # v1's
    mem.semantic.delete("decisions", ["v1"])  # a deleted version's words leave the later ones
    assert mem.semantic.search_text("decisions", "customers") == {}


def test_migration_indexes_versions_again(tmp_path: Path, clock: ManualClock) -> None:
    """A store indexed before versions held their subject is indexed again on open."""
    with Memory(tmp_path / "d", clock=clock) as mem:
        fact = [{"subject": "policy.deploy_window"}]
        mem.semantic.store("decisions", ["本番デプロイは平日のみ。"], fact, ids=["w"])
        assert list(mem.semantic.search_text("decisions", "deploy window")) == ["w"]
        assert mem.db is not None
        with mem.db.transaction() as conn:  # as a database from before the migration
            conn.execute("DELETE FROM migrations WHERE name = '0013_semantic_fulltext_versions'")
            conn.execute("UPDATE semantic_docs_fts SET body = 'old body'")
    with Memory(tmp_path / "d", clock=clock) as mem:
        assert list(mem.semantic.search_text("decisions", "deploy window")) == ["w"]
