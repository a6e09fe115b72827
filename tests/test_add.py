"""``Memory.add``: a conversation in one call becomes episodes of its thread and working memory."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from omoide import ManualClock, Memory
from omoide.errors import ValidationError
from omoide.ingest.conversation import importance_of

pytestmark = pytest.mark.both_engines

CHAT = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "I'm planning a trip to Kyoto next month with my sister."},
    {"role": "assistant", "content": "Lovely! Kyoto is beautiful in autumn."},
    {"role": "user", "content": "We decided to stay at a ryokan near Gion for three nights."},
]


def test_turns_become_episodes_of_the_thread_and_working_memory(mem: Memory) -> None:
    report = mem.add(CHAT, agent_name="travel-bot", session_id="s1")
    assert len(report.recorded) == 4 and not report.duplicates and not report.skipped
    episodes = report.recorded
    assert all(e.event_type == "message" and e.agent_name == "travel-bot" for e in episodes)
    assert [e.context["role"] for e in episodes] == ["system", "user", "assistant", "user"]
    assert {e.context["thread"] for e in episodes} == {"s1"}
    assert [e.timestamp for e in episodes] == sorted(e.timestamp for e in episodes)
    wm = mem.working("travel-bot", "s1")
    assert [m.content for m in wm.messages] == [m["content"] for m in CHAT]
    assert report.summary() == "travel-bot/s1: 4 recorded"


def test_adding_the_same_messages_again_records_nothing_twice(mem: Memory) -> None:
    first = mem.add(CHAT, agent_name="travel-bot", session_id="s1")
    again = mem.add(CHAT, agent_name="travel-bot", session_id="s1")
    assert again.recorded == [] and sorted(again.duplicates) == sorted(first.episode_ids)
    assert mem.episodic.count(agent_name="travel-bot") == 4
    assert len(mem.working("travel-bot", "s1").messages) == 4
    other_session = mem.add(CHAT[1], agent_name="travel-bot", session_id="s2")
    assert len(other_session.recorded) == 1  # the same words in another session are new


def test_the_same_text_at_two_given_times_is_two_turns(mem: Memory, clock: ManualClock) -> None:
    now = clock.now()
    turns = [
        {"role": "user", "content": "ok", "timestamp": now},
        {"role": "user", "content": "ok", "timestamp": now + timedelta(minutes=3)},
    ]
    assert len(mem.add(turns, agent_name="a", session_id="s").recorded) == 2
    with_ids = [{"role": "user", "content": "ok", "id": "m-1"}, {"content": "ok", "id": "m-2"}]
    assert len(mem.add(with_ids, agent_name="a", session_id="t").recorded) == 2
    assert len(mem.add(with_ids, agent_name="a", session_id="t").duplicates) == 2


def test_empty_messages_and_recalled_memories_are_skipped_and_reported(mem: Memory) -> None:
    recalled = '<memories query="trip">\n[1] episodic: Kyoto trip\n</memories>'
    report = mem.add(
        [
            {"role": "user", "content": "   "},
            {"role": "user", "content": recalled},
            {"role": "user", "content": f"{recalled}\nWhich ryokan did we pick?"},
            "plain text is a user turn",
        ],
        agent_name="a",
        session_id="s",
    )
    assert report.skipped == [(0, "empty message"), (1, "only recalled memories")]
    assert [e.description for e in report.recorded] == [
        "Which ryokan did we pick?",
        "plain text is a user turn",
    ]


def test_a_malformed_message_writes_nothing(mem: Memory) -> None:
    with pytest.raises(ValidationError, match="role"):
        mem.add([CHAT[1], {"role": "robot", "content": "beep"}], agent_name="a", session_id="s")
    with pytest.raises(ValidationError, match="unknown message key"):
        mem.add([{"content": "x", "speaker": "me"}], agent_name="a", session_id="s")
    with pytest.raises(ValidationError):
        mem.add(42, agent_name="a", session_id="s")
    assert mem.episodic.count() == 0


def test_importance_follows_cues_not_a_human() -> None:
    assert importance_of("user", "hi, how are you?") == (0.3, ())
    assert importance_of("system", "We decided nothing; remember this.") == (0.3, ())
    decided, cues = importance_of("assistant", "We decided to use PostgreSQL from now on.")
    assert decided == pytest.approx(0.45) and cues == ("decision",)
    assert importance_of("user", "デプロイが失敗しました。エラーはタイムアウトです")[0] > 0.3
    assert importance_of("user", "覚えておいて: 私の誕生日は3月3日")[1] == ("remember",)
    assert "feedback" in importance_of("user", "Please don't summarise my emails.")[1]
    assert "feedback" not in importance_of("assistant", "Please don't worry.")[1]


def test_added_turns_are_found_by_recall_with_their_thread(mem: Memory) -> None:
    mem.add(CHAT, agent_name="travel-bot", session_id="s1")
    mem.add(
        [{"role": "user", "content": "My printer keeps jamming on page two."}],
        agent_name="travel-bot",
        session_id="s2",
    )
    context = mem.recall("Where are we staying in Kyoto?", agent_name="travel-bot")
    texts = [item.text for item in context.items if item.layer == "episodic"]
    assert any("ryokan" in text for text in texts)
    assert "Kyoto" in texts[0] and all("printer" not in text for text in texts[:3])


def test_offline_add_extracts_nothing(mem: Memory) -> None:
    report = mem.add(CHAT, agent_name="a", session_id="s")
    assert report.extracted == [] and mem.semantic.count("knowledge") == 0


def test_an_agent_cannot_read_or_collide_with_another_agents_turns(data_dir: Path) -> None:
    with Memory(data_dir, clock=ManualClock()) as memory:
        mine = memory.add(CHAT[1], agent_name="a", session_id="s", scope="private")
        theirs = memory.add(CHAT[1], agent_name="b", session_id="s", scope="private")
        assert mine.episode_ids != theirs.episode_ids
        assert len(theirs.recorded) == 1
        found = memory.episodic.recall("Kyoto trip", reader="b", touch=False)
        assert [e.id for e in found] == theirs.episode_ids


def test_estimated_importance_steers_forgetting_not_ranking(data_dir: Path) -> None:
    """A cue raises what is kept; recall ranks added turns exactly as the same turns recorded
    by hand, until a caller sets an importance, which is then the writer's and ranks."""
    turns = [CHAT[1], CHAT[3], {"role": "user", "content": "Remember this: Gion, three nights."}]
    question = "Where are we staying in Kyoto and for how long?"
    with Memory(data_dir / "added", clock=ManualClock()) as added:
        report = added.add(turns, agent_name="a", session_id="s1")
        stored = [added.episodic.get(e.id, touch=False) for e in report.recorded]
        assert [e.importance for e in stored] == pytest.approx([0.3, 0.45, 0.5])
        assert all(e.context["importance"] == "estimated" for e in stored)
        assert {e.ranking_importance for e in stored} == {0.5}
        by_add = [(e.description, e.score) for e in added.episodic.recall(question, touch=False)]
        chosen = added.episodic.update(stored[0].id, importance=0.9)
        assert "importance" not in chosen.context and chosen.ranking_importance == 0.9
        assert chosen.context["thread"] == "s1"
    with Memory(data_dir / "by-hand", clock=ManualClock()) as by_hand:
        by_hand.episodic.record_many(
            [
                {
                    "agent_name": "a",
                    "event_type": "message",
                    "description": e.description,
                    "timestamp": e.timestamp,
                    "context": {"thread": "s1", "role": "user"},
                }
                for e in stored
            ]
        )
        hand = [(e.description, e.score) for e in by_hand.episodic.recall(question, touch=False)]
    assert [d for d, _ in by_add] == [d for d, _ in hand]
    assert [s for _, s in by_add] == pytest.approx([s for _, s in hand])
