"""The logistics fleet: deterministic with a seed, bilingual, prose-only facts, questions that
paraphrase their answers, time expressions that hold them, and the runner able to play it."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import pytest
from bench.scenarios import SCENARIOS, make
from bench.scenarios.logistics import START, LogisticsScenario
from bench.scenarios.logistics_words import AGENTS, FACTS

from omoide.simulation import FleetScenario, answers, is_current
from omoide.simulation.runner import simulate
from omoide.simulation.scenario import Event, Question
from omoide.testing import HashEmbedder
from omoide.text.timeexpr import find_time_range

DAYS = 70
QUESTION_HOUR = 20


def _play(seed: int, days: int = DAYS) -> list[tuple[int, list[Event], list[Question]]]:
    return list(LogisticsScenario(seed).days(days))


@pytest.fixture(scope="module")
def played() -> list[tuple[int, list[Event], list[Question]]]:
    return _play(7)


def _events(played: list[tuple[int, list[Event], list[Question]]]) -> dict[str, Event]:
    return {e.id: e for _, events, _ in played for e in events}


def _is_ja(text: str) -> bool:
    return any("\u3040" <= c <= "\u30ff" or "\u4e00" <= c <= "\u9fff" for c in text)


def _words(text: str) -> list[str]:
    """Words for the paraphrase check: Latin words and digits, and runs of one Japanese
    script (kanji, hiragana, katakana) — so a quoted Japanese clause counts word by word."""
    return re.findall(
        r"[A-Za-z0-9#%.:°-]+|[\u4e00-\u9fff]+|[\u3040-\u309f]+|[\u30a0-\u30ff]+", text
    )


def _runs(words: list[str], n: int) -> set[tuple[str, ...]]:
    lowered = [w.casefold() for w in words]
    return {tuple(lowered[i : i + n]) for i in range(len(lowered) - n + 1)}


def test_same_seed_same_days_other_seed_other_days(played: list) -> None:
    assert _play(7, 30) == played[:30]
    assert _play(8, 30) != played[:30]
    events = _events(played)
    assert len(events) == sum(len(e) for _, e, _ in played)  # ids unique
    assert {e.agent for e in events.values()} == set(AGENTS) and 10 <= len(AGENTS) <= 14
    per_day = [len(e) for _, e, _ in played]
    assert 40 <= sum(per_day) / len(per_day) <= 60


def test_both_languages_event_kinds_and_never_forget(played: list) -> None:
    events = list(_events(played).values())
    share = sum(_is_ja(e.description) for e in events) / len(events)
    assert 0.35 < share < 0.65
    assert {"observation", "error", "success", "decision", "feedback", "payment"} <= {
        e.event_type for e in events
    }
    assert {e.protected for e in events if e.protected} == {
        "human_feedback",
        "compliance_events",
        "financial_records",
        "security_incidents",
    }
    # Identifiers of this fleet's own shapes, none of the first fleet's.
    text = " ".join(e.description for e in events)
    for shape in (r"PO#\d{4}", r"rack [A-E]\d", r"HX-\d+", r"v\d+\.\d+\.\d+", r"truck T-\d+"):
        assert re.search(shape, text), shape
    assert not re.search(r"E-\d{5}|\bQ[1-4]\b|INV-", text)


def test_facts_change_in_prose_by_different_agents(played: list) -> None:
    events = _events(played)
    questions = [q for _, _, qs in played for q in qs if q.kind == "current_fact"]
    changed = [q for q in questions if q.forbidden]
    assert len(changed) >= 10
    for q in questions:
        statement = events[q.source]
        assert is_current(statement.description, q)
        assert statement.fact is None and "subject" not in statement.context
        assert not any(f.key in statement.tags for f in FACTS)
    # A fact's statements come from more than one agent.
    by_value = {}
    for f in FACTS:
        writers = {e.agent for e in events.values() if any(v in e.description for v in f.values)}
        by_value[f.key] = writers
    assert sum(len(w) > 1 for w in by_value.values()) >= len(FACTS) // 2


def test_questions_paraphrase_in_both_languages_and_across(played: list) -> None:
    events = _events(played)
    questions = [q for _, _, qs in played for q in qs]
    kinds = {q.kind for q in questions}
    assert kinds == {"current_fact", "error_fix", "decision", "feedback"}
    for q in questions:
        gold = events[q.source]
        assert answers(gold.description, q), (q, gold.description)
        shared = _runs(_words(q.text), 6) & _runs(_words(gold.description), 6)
        assert not shared, (q.text, gold.description)
    ja = [q for q in questions if _is_ja(q.text)]
    assert 0.3 < len(ja) / len(questions) < 0.7
    across = [q for q in questions if _is_ja(q.text) != _is_ja(events[q.source].description)]
    assert len(across) >= len(questions) // 4


def test_time_expressions_hold_their_gold(played: list) -> None:
    events = _events(played)
    timed = 0
    for day, _, questions in played:
        now = START + timedelta(days=day, hours=QUESTION_HOUR)
        for q in questions:
            found = find_time_range(q.text, now)
            if q.kind == "current_fact":
                assert found is None, q.text
                continue
            if found is None:
                continue
            timed += 1
            gold = events[q.source]
            assert START + timedelta(days=gold.day, minutes=gold.minute) in found, q.text
    assert timed >= 10
    texts = " ".join(q.text for _, _, qs in played for q in qs)
    assert "先月" in texts or "last month" in texts
    assert re.search(r"週間前|weeks ago", texts)


def test_registry_makes_either_fleet() -> None:
    assert set(SCENARIOS) == {"fleet", "logistics"}
    assert isinstance(make("fleet", 3), FleetScenario)
    assert isinstance(make("logistics", 3), LogisticsScenario)
    with pytest.raises(KeyError, match="logistics"):
        make("nope", 3)


def test_runner_plays_the_logistics_fleet(tmp_path: Path) -> None:
    seen: list[int] = []
    run = simulate(
        tmp_path,
        days=7,
        seed=2,
        embedder=HashEmbedder(),
        scenario=lambda: LogisticsScenario(2, events_per_agent=0.3),
        scenario_name="logistics",
        observe=lambda day, stores, given: seen.append(day),
    )
    assert run.scenario == "logistics" and seen == [6]
    written = sum(run.events)
    assert run.runs["baseline"].days[-1].episodes == written
    asked = run.runs["baseline"].days[6].by_kind
    assert asked.keys() == run.runs["forgetting"].days[6].by_kind.keys()
    assert "current_fact" in asked
    # No semantic documents: the facts are prose only.
    assert run.runs["baseline"].days[-1].documents == 0
