"""Layer 1: slots, budgets, pins, overflow with promotion, persistence."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from omoide import ManualClock, Memory, Message
from omoide.errors import NotFoundError, TokenBudgetError, ValidationError
from omoide.layers.working_rules import scaled_budgets

pytestmark = pytest.mark.both_engines


def test_budgets_are_the_articles_and_scale_with_max_tokens(mem: Memory) -> None:
    wm = mem.working("ceo", "s1")
    assert wm.max_tokens == 32_000
    assert wm.budgets == {
        "system": 2_000,
        "active_task": 1_000,
        "constraints": 1_000,
        "recent_msgs": 20_000,
        "pinned": 4_000,
        "scratchpad": 4_000,
    }
    small = scaled_budgets(mem.config.working, 3_200)
    assert small["recent_msgs"] == 2_000 and sum(small.values()) <= 3_200


def test_slots_pins_and_context(mem: Memory) -> None:
    wm = mem.working("ceo", "s1")
    wm.set_slot("system", "You are the CEO agent of AEGIS.")
    wm.set_slot("active_task", "価格設定を決める")
    wm.pin("pricing", "Start at ¥500", reason="operator instruction")
    wm.add_message({"role": "user", "content": "新機能の優先順位は？"})
    wm.add_message("Security first, then performance.", role="assistant")
    context = wm.build_context()
    assert context.index("[system]") < context.index("[active_task]")
    assert context.index("[recent_msgs]") < context.index("[pinned]")
    assert "- pricing: Start at ¥500 (pinned: operator instruction)" in context
    assert "user: 新機能の優先順位は？" in context
    assert "assistant: Security first, then performance." in context
    assert "[scratchpad]" not in context  # empty slots are left out
    used = wm.slot_tokens()
    assert used["system"] > 0 and used["pinned"] > 0 and used["scratchpad"] == 0
    assert wm.total_tokens() == sum(used.values())
    wm.set_slot("active_task", None)
    assert wm.get_slot("active_task") is None
    assert wm.unpin("pricing").content == "Start at ¥500"
    with pytest.raises(NotFoundError):
        wm.unpin("pricing")


def test_tokens_are_counted_once_per_message(mem: Memory) -> None:
    calls: list[str] = []
    real = mem.token_counter.count

    def counting(text: str) -> int:
        calls.append(text)
        return real(text)

    mem.token_counter.count = counting  # type: ignore[method-assign]
    try:
        wm = mem.working("ceo", "count")
        wm.add_message("hello there")
        wm.add_message("こんにちは")
        for _ in range(5):
            wm.total_tokens()
            wm.build_context()
    finally:
        del mem.token_counter.count
    assert calls == ["hello there", "こんにちは"]


def test_overflow_promotes_important_and_drops_unimportant(mem: Memory) -> None:
    wm = mem.working("cto", "s1", max_tokens=320)  # recent_msgs budget 200 tokens
    budget = wm.budgets["recent_msgs"]
    first = wm.add_message(
        {"content": "The operator said: never deploy on Fridays. " * 3, "importance": 0.9}
    )
    second = wm.add_message({"content": "ok " * 20, "importance": 0.2})
    assert first == [] and second == []
    evictions = []
    for i in range(30):
        evictions += wm.add_message({"content": f"status update {i} " * 5, "importance": 0.3})
    assert sum(m.tokens for m in wm.messages) <= budget
    promoted = [e for e in evictions if e.promoted]
    dropped = [e for e in evictions if not e.promoted]
    assert [e.message.importance for e in promoted] == [0.9]
    assert any(e.message.content.startswith("ok ") for e in dropped)
    episode = mem.episodic.get(promoted[0].episode_id or "")
    assert episode.description.startswith("The operator said: never deploy on Fridays.")
    assert episode.agent_name == "cto" and episode.importance == 0.9
    assert episode.context["session_id"] == "s1"
    # The unimportant message is gone from both layers: only the promoted one was recorded.
    assert mem.episodic.count() == 1


def test_importance_exactly_at_threshold_is_not_promoted(mem: Memory) -> None:
    wm = mem.working("cto", "edge", max_tokens=160)
    wm.add_message({"content": "borderline " * 10, "importance": 0.7})
    evictions = []
    for i in range(10):
        evictions += wm.add_message({"content": f"filler {i} " * 8, "importance": 0.1})
    assert evictions and not evictions[0].promoted  # "above 0.7", not "at least"


def test_pinned_messages_are_never_evicted(mem: Memory) -> None:
    wm = mem.working("ceo", "pins", max_tokens=320)
    wm.add_message(Message(content="keep me " * 5, pinned=True))
    for i in range(20):
        wm.add_message(f"chatter {i} " * 5)
    assert wm.messages[0].content.startswith("keep me")
    with pytest.raises(TokenBudgetError):
        wm.add_message("x " * 400)  # larger than the whole slot


def test_slot_and_pin_budgets_are_enforced(mem: Memory) -> None:
    wm = mem.working("ceo", "tight", max_tokens=320)
    with pytest.raises(TokenBudgetError) as err:
        wm.set_slot("system", "word " * 200)
    assert err.value.field == "system"
    wm.pin("a", "alpha " * 10)
    with pytest.raises(TokenBudgetError):
        wm.pin("b", "beta " * 40)
    assert [p.key for p in wm.pins] == ["a"]


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda wm: wm.add_message({"content": "x", "importance": 1.5}), "message.importance"),
        (
            lambda wm: wm.add_message({"content": "x", "importance": float("nan")}),
            "message.importance",
        ),
        (lambda wm: wm.add_message({"role": "user"}), "message"),
        (lambda wm: wm.add_message(""), "message.content"),
        (lambda wm: wm.add_message(42), "message"),
        (lambda wm: wm.add_message("\ud800 lone surrogate"), "message.content"),
        (lambda wm: wm.set_slot("recent_msgs", "x"), "name"),
        (lambda wm: wm.set_slot("nonsense", "x"), "name"),
        (lambda wm: wm.pin("", "content"), "key"),
    ],
)
def test_bad_input_is_rejected_and_changes_nothing(mem: Memory, call: Any, field: str) -> None:
    wm = mem.working("ceo", "bad")
    wm.add_message("before")
    before = (wm.build_context(), wm.total_tokens())
    with pytest.raises(ValidationError) as err:
        call(wm)
    assert err.value.field == field
    assert (wm.build_context(), wm.total_tokens()) == before


def test_recent_uses_the_injected_clock(mem: Memory, clock: ManualClock) -> None:
    wm = mem.working("ceo", "time")
    wm.add_message("old news")
    clock.advance(minutes=10)
    wm.add_message("fresh news")
    assert [m.content for m in wm.recent(timedelta(minutes=5))] == ["fresh news"]


def test_session_survives_a_restart_in_a_new_process(
    mem: Memory, data_dir: Path, run_python: Any
) -> None:
    wm = mem.working("designer", "review-7", max_tokens=8_000)
    wm.set_slot("constraints", "ブランドカラーは藍色のみ")
    wm.pin("deadline", "Ship the mockups by Friday", "set by the CEO")
    wm.add_message({"role": "user", "content": "ロゴ案を3つ出して", "importance": 0.6})
    expected = wm.build_context()
    mem.close()
    result = run_python(
        """
        import json, sys
        from omoide import Memory
        with Memory(sys.argv[1]) as mem:
            wm = mem.working("designer", "review-7")
            print(json.dumps({"context": wm.build_context(), "max": wm.max_tokens,
                              "importance": wm.messages[0].importance}, ensure_ascii=False))
        """,
        str(data_dir),
    )
    assert result == {"context": expected, "max": 8_000, "importance": 0.6}
