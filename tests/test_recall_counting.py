"""A question that counts things gathers them from several conversations: of one thread's
items, each after its best scores ``router.thread_turns`` to the power of its place."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from omoide import Config, ManualClock, Memory
from omoide.core.settings import RouterConfig
from omoide.errors import ConfigError
from omoide.recall.context import ContextItem
from omoide.recall.route import route
from omoide.recall.scoring import score
from omoide.recall.sources import Found
from omoide.testing import HashEmbedder

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


def test_counting_cues_in_both_languages() -> None:
    assert route("How many bikes do I own?", NOW).counting
    assert route("How often did we restart the queue this month?", NOW).counting
    assert route("大阪には全部で何回行った？", NOW).counting
    assert not route("Which bike do I ride on weekends?", NOW).counting
    assert not route("大阪にはいつ行った？", NOW).counting


def _found(thread: str | None, relevance: float, n: int, author: str = "user") -> Found:
    item = ContextItem(
        layer="episodic",
        id=f"{thread}-{n}",
        text=f"turn {n}",
        score=0.0,
        why="",
        author=author,
        signals={"relevance": relevance, "words": relevance, "meaning": relevance},
    )
    return Found(item, thread=thread)


def _order(question: str, config: RouterConfig, found: list[Found]) -> list[str]:
    scored = score(found, route(question, NOW, config), config)
    return [f.item.id for f in sorted(scored, key=lambda f: -f.item.score)]


def test_a_conversation_s_later_turns_give_way_to_other_conversations() -> None:
    found = [
        _found("a", 0.9, 0),
        _found("a", 0.85, 1),
        _found("a", 0.8, 2),
        _found("b", 0.6, 0),
        _found(None, 0.7, 0),  # an item of no thread keeps its score
    ]
    config = dataclasses.replace(RouterConfig(), thread_turns=0.5)
    assert _order("How many trips did I take?", config, found) == [
        "a-0",
        "None-0",
        "b-0",
        "a-1",
        "a-2",
    ]
    scored = {f.item.id: f for f in score(found, route("How many trips?", NOW, config), config)}
    assert scored["a-2"].item.score == pytest.approx(0.9 * 0.8 * 0.25)  # layer weight 0.9
    assert "item 3 of its conversation" in scored["a-2"].item.why
    # A question that counts nothing, or the setting off: the scores as they were.
    plain = ["a-0", "a-1", "a-2", "None-0", "b-0"]
    assert _order("Which trip did I like?", config, found) == plain
    assert _order("How many trips did I take?", RouterConfig(), found) == plain


def test_recall_of_a_counting_question_reaches_the_other_conversation(tmp_path: Path) -> None:
    clock = ManualClock(NOW)
    turns = [
        ("s1", "A bike trip to the coast, a long bike trip with the club"),
        ("s1", "Planning the next bike trip, a bike trip to the lake"),
        ("s1", "Photos of the bike trip are online now, what a bike trip"),
        ("s2", "Another bike trip in the hills with my sister"),
    ]
    config = Config(router=dataclasses.replace(RouterConfig(), thread_turns=0.5))
    with Memory(tmp_path / "m", embedder=HashEmbedder(), clock=clock, config=config) as mem:
        for i, (thread, text) in enumerate(turns):
            mem.episodic.record(
                "user",
                "message",
                text,
                timestamp=NOW - timedelta(days=10 - i),
                context={"thread": thread},
            )
        counted = mem.recall("How many bike trips did I take?", agent_name="user", top_k=2)
        plain = mem.recall("Which bike trips did I take?", agent_name="user", top_k=2)
    assert [i.text for i in counted.items][1] == turns[3][1]
    assert turns[3][1] not in [i.text for i in plain.items]


def test_thread_turns_is_checked() -> None:
    with pytest.raises(ConfigError, match="thread_turns"):
        Config.from_dict({"router": {"thread_turns": 1.5}})
    with pytest.raises(ConfigError, match="counting_cues"):
        Config.from_dict({"router": {"counting_cues": ["how many", " "]}})


def test_another_writer_under_a_thread_s_name_lowers_none_of_its_items() -> None:
    """A thread's name is its writer's claim: items another agent writes under it make a
    conversation of their own, and the victim's best item keeps its score."""
    found = [
        _found("a", 0.9, 0, author="mallory"),
        _found("a", 0.85, 1, author="mallory"),
        _found("a", 0.8, 2, author="user"),
    ]
    config = dataclasses.replace(RouterConfig(), thread_turns=0.5)
    scored = {f.item.id: f for f in score(found, route("How many trips?", NOW, config), config)}
    assert scored["a-2"].item.score == pytest.approx(0.9 * 0.8)
    assert scored["a-1"].item.score == pytest.approx(0.9 * 0.85 * 0.5)
