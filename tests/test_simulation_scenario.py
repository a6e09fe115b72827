"""The fleet scenario: deterministic with a seed, and its known answers are what it intends."""

from __future__ import annotations

from omoide.simulation import AGENTS, FleetScenario, answers, is_current
from omoide.simulation.scenario import FACTS, Question


def _play(seed: int, days: int) -> list[tuple[int, list, list]]:
    return list(FleetScenario(seed).days(days))


def test_same_seed_same_year_other_seed_other_year() -> None:
    first, again, other = _play(3, 40), _play(3, 40), _play(4, 40)
    assert first == again
    assert first != other
    assert len(AGENTS) == 24
    assert {e.agent for _, events, _ in first for e in events} == set(AGENTS)


def test_mix_of_languages_kinds_and_protected_items() -> None:
    events = [e for _, day_events, _ in _play(7, 30) for e in day_events]
    japanese = [e for e in events if any("\u3040" <= c <= "\u30ff" for c in e.description)]
    assert 0.3 < len(japanese) / len(events) < 0.7
    kinds = {e.event_type for e in events}
    assert {
        "decision",
        "error",
        "success",
        "feedback",
        "conflict",
        "observation",
        "security_incident",
        "financial",
    } <= kinds
    protected = {e.protected for e in events if e.protected}
    assert protected == {"human_feedback", "security_incidents", "financial_records"}
    assert len({e.id for e in events}) == len(events)


def test_current_fact_answers_follow_the_latest_decision() -> None:
    scenario = FleetScenario(11)
    latest: dict[str, str] = {}
    changed = 0
    for _, events, questions in scenario.days(200):
        for e in events:
            if e.fact:
                changed += e.fact[0] in latest and latest[e.fact[0]] != e.fact[1]
                latest[e.fact[0]] = e.fact[1]
                assert e.fact[1] in e.description
        for q in questions:
            if q.kind == "current_fact":
                subject = next(f.subject for f in FACTS if q.text in (f.ask_en, f.ask_ja))
                assert q.expected == latest[subject] == scenario.current_value(subject)
                assert q.expected not in q.forbidden
    assert changed >= 5  # facts do change over 200 days


def test_questions_point_at_memories_that_hold_their_answers() -> None:
    by_id = {}
    asked: list[Question] = []
    for _, events, questions in FleetScenario(5).days(120):
        by_id.update({e.id: e for e in events})
        asked += questions
    assert {q.kind for q in asked} == {"current_fact", "error_fix", "decision", "feedback"}
    for q in asked:
        if q.kind == "current_fact":
            continue
        source = by_id[q.source]
        text = f"{source.description} {source.outcome or ''}"
        assert answers(text, q), (q, text)
        assert source.day <= q.day - 7


def test_scoring() -> None:
    q = Question(
        10,
        "cto",
        "Is fastyaml allowed?",
        "current_fact",
        "banned",
        forbidden=("approved", "approved with pinning"),
    )
    assert is_current("Decision: the fastyaml parser dependency is banned.", q)
    assert not is_current("fastyaml is approved for production use.", q)
    assert not is_current("It was approved, then banned.", q)
    pinned = Question(
        10, "cto", "?", "current_fact", "approved with pinning", forbidden=("approved",)
    )
    assert is_current("決定: fastyamlの本番利用は「approved with pinning」。", pinned)
    fix = Question(
        10, "ceo", "How did we fix E-00101?", "error_fix", "added a retry", anchor="E-00101"
    )
    assert answers("Fixed E-00101: we added a retry with backoff.", fix)
    assert not answers("Fixed E-00999: we added a retry with backoff.", fix)
