"""Gathering the documents worth scoring: what a question names, and what it asks for."""

from __future__ import annotations

from omoide import Memory
from omoide.recall.documents import codes, gather_documents, names_agent, subject_share


def test_names_finds_latin_names_as_whole_words_even_beside_japanese() -> None:
    assert names_agent("hrはQ2 priorityについて何を決めた？", "hr")
    assert names_agent("What did the HR team decide?", "hr")
    assert names_agent("営業のsales担当", "sales")
    assert not names_agent("three options", "hr")
    assert not names_agent("hr2 decided", "hr")
    assert names_agent("田中さんの決定", "田中")


def test_subject_share_reads_the_subjects_last_part() -> None:
    assert subject_share("When are production deploys allowed?", "policy.deploy_window") == 0.5
    assert (
        subject_share("What is the support response-time target?", "support.response_target") == 1
    )
    assert subject_share("Is fastyaml allowed?", "dependency.yaml_parser") == 0.5
    assert subject_share("Which CI do we use?", "tooling.ci") == 1
    assert subject_share("Which city do we fly to?", "tooling.ci") == 0  # not inside words
    assert subject_share("Proプランの今の価格は？", "pricing.pro_plan") == 0.5
    assert subject_share("anything", "x.__") == 0


def test_codes_are_the_first_identifiers_named() -> None:
    assert codes("E-03424 and E-03425, Q1 Q2 Q3 Q4?") == ["E-03424", "E-03425", "Q1", "Q2", "Q3"]
    assert codes("nothing here") == []


def test_gathering_asks_on_the_questions_own_terms(mem: Memory) -> None:
    """Each way of asking brings its documents, once, beside the nearest."""
    mem.semantic.store(
        "decisions",
        ["決定: 本番デプロイは平日15時までに許可する。", "Deploys are allowed on Tuesdays."],
        [{"subject": "policy.deploy_window"}, {"subject": "policy.deploy_window"}],
        ids=["old", "new"],
        agent_name="devops",
    )
    mem.semantic.store("decisions", ["Incident E-04512 was fixed by a rollback."], ids=["fix"])
    mem.semantic.store("decisions", ["Lunch moves to noon."], ids=["lunch"], agent_name="hr")
    found = gather_documents(
        mem.semantic,
        mem.embedder,
        "decisions",
        "What did devops say about deploy windows and E-04512?",
        reader="ceo",
        reader_teams=frozenset(),
        rare_limit=5,
    )
    ids = [h.doc_id for h in found.hits]
    assert sorted(ids) == ["fix", "lunch", "new", "old"] and len(set(ids)) == len(ids)
    assert found.rare == ["E-04512"] and found.authors == ["devops"]
    assert set(found.words) >= {"fix", "new"} and "lunch" not in found.words
    assert list(found.stale) == ["policy.deploy_window"]  # its earlier version is a candidate
    mem.semantic.store(
        "decisions", ["Lunch budget: my own note."], ids=["note"], agent_name="hr", scope="private"
    )

    def readable(reader: str) -> set[str]:
        found = gather_documents(
            mem.semantic,
            mem.embedder,
            "decisions",
            "What did hr note about the lunch budget?",
            reader=reader,
            reader_teams=frozenset(),
            rare_limit=5,
        )
        return {h.doc_id for h in found.hits} | set(found.words)

    assert "note" in readable("hr") and "note" not in readable("ceo")
