"""Tracing where a lost answer went: each fate read back from a real store and its audit log."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench.fates import Fate, Tracer, tally, trace

from omoide.core.config import Config, ForgettingConfig
from omoide.memory import Memory
from omoide.recall.context import ContextItem
from omoide.simulation.runner import Answer
from omoide.simulation.scenario import Question
from omoide.testing import HashEmbedder, ManualClock

NOW = datetime(2026, 3, 2, 12, tzinfo=UTC)


def _question(source: str, kind: str = "error_fix", **more: object) -> Question:
    fields = {"expected": "replaced the cradle cable", "anchor": "HX-88", **more}
    return Question(10, "dispatch", "How was HX-88 sorted out?", kind, source=source, **fields)  # type: ignore[arg-type]


def _item(text: str, layer: str = "episodic", item_id: str = "x", **meta: object) -> ContextItem:
    return ContextItem(layer, item_id, text, 1.0, "test", author="yard", metadata=meta)


def _answer(q: Question, *items: ContextItem, ok: bool = False) -> Answer:
    return Answer(q, tuple(items), ok)


def _mem(tmp_path: Path, clock: ManualClock, **config: object) -> Memory:
    return Memory(tmp_path, clock=clock, embedder=HashEmbedder(), config=Config(**config))  # type: ignore[arg-type]


def _record(mem: Memory, episode_id: str, text: str, when: datetime, **more: object) -> None:
    mem.episodic.record_many(
        [
            {
                "id": episode_id,
                "agent_name": "itops",
                "event_type": "success",
                "description": text,
                "timestamp": when,
                **more,
            }
        ]
    )


def _trace(mem: Memory, q: Question, *items: ContextItem) -> Fate:
    return trace(mem, _answer(q, *items), _answer(q, _item(q.expected), ok=True), day=10)


def test_archived_and_deleted_name_the_policy(tmp_path: Path) -> None:
    clock = ManualClock(NOW - timedelta(days=40))
    policies = (
        {
            "name": "old_tickets",
            "target_layer": "episodic",
            "condition": "tags CONTAINS 'ticket' AND age > 7_days",
            "action": "archive",
        },
        {
            "name": "old_chatter",
            "target_layer": "episodic",
            "condition": "tags CONTAINS 'chatter' AND age > 7_days",
            "action": "delete",
        },
    )
    with _mem(tmp_path, clock, forgetting=ForgettingConfig(policies=policies)) as mem:
        _record(
            mem, "fix-1", "HX-88 closed: replaced the cradle cable", clock.now(), tags=["ticket"]
        )
        _record(mem, "note-1", "HX-88 note: cradle cable", clock.now(), tags=["chatter"])
        clock.set(NOW)
        mem.forget()
        archived = _trace(mem, _question("fix-1"), _item("something else"))
        deleted = _trace(mem, _question("note-1"), _item("something else"))
    assert (archived.cause, deleted.cause) == ("archived", "deleted")
    assert "old_tickets" in archived.detail and "old_chatter" in deleted.detail
    assert "gold rank - (baseline -)" in archived.detail


def test_moved_out_by_capacity_names_the_document(tmp_path: Path) -> None:
    clock = ManualClock(NOW)
    base = Config()
    episodic = dataclasses.replace(base.episodic, max_entries=2, eviction_fraction=0.5)
    with _mem(tmp_path, clock, episodic=episodic) as mem:
        _record(mem, "old", "HX-88 closed: replaced the cradle cable", NOW - timedelta(days=90))
        for n in range(3):
            _record(mem, f"new-{n}", f"routine note {n}", NOW, importance=0.9)
        fate = _trace(mem, _question("old"), _item("routine note 1"))
    assert fate.cause == "moved out by capacity"
    assert "episode-old" in fate.detail


def test_a_moved_document_archived_later_names_both_steps(tmp_path: Path) -> None:
    clock = ManualClock(NOW)
    base = Config()
    episodic = dataclasses.replace(base.episodic, max_entries=2, eviction_fraction=0.5)
    policy = {
        "name": "moved_out_notes",
        "target_layer": "semantic",
        "condition": "source == 'episodic_overflow'",
        "action": "archive",
    }
    forgetting = ForgettingConfig(policies=(policy,))
    with _mem(tmp_path, clock, episodic=episodic, forgetting=forgetting) as mem:
        _record(mem, "old", "HX-88 closed: replaced the cradle cable", NOW - timedelta(days=90))
        for n in range(3):
            _record(mem, f"new-{n}", f"routine note {n}", NOW, importance=0.9)
        before = _trace(mem, _question("old"), _item("routine note 1"))
        mem.forget()
        after = _trace(mem, _question("old"), _item("routine note 1"))
    assert before.cause == "moved out by capacity"
    assert after.cause == "moved out, then archived"
    assert "became episode-old, then archived by moved_out_notes" in after.detail


def test_distilled_summary_without_the_answer(tmp_path: Path) -> None:
    clock = ManualClock(NOW - timedelta(days=120))
    with _mem(tmp_path, clock) as mem:
        for n in range(3):
            _record(
                mem,
                f"fix-{n}",
                "HX-88 closed: replaced the cradle cable on rack B7",
                clock.now() + timedelta(minutes=n),
                importance=0.8,
            )
        clock.set(NOW)
        mem.distill()
        doc = mem.episodic.rows.distilled_into_of("fix-0")
        assert doc is not None
        summary = _item("A recurring rack B7 topic (HX-88)", "semantic", f"decisions/{doc}")
        lacking = _trace(mem, _question("fix-0"), summary)
        neither = _trace(mem, _question("fix-0"), _item("unrelated"))
    assert lacking.cause == "distilled, summary lacks the answer"
    assert doc in lacking.detail and "rack B7 topic" in lacking.detail
    assert neither.cause == "distilled, neither returned"


def test_outranked_names_what_won(tmp_path: Path) -> None:
    clock = ManualClock(NOW)
    with _mem(tmp_path, clock) as mem:
        _record(mem, "new", "Returns are now received at dock D14.", NOW)
        fact = _question(
            "new", "current_fact", expected="dock D14", anchor="", forbidden=("dock D9",)
        )
        older = _trace(mem, fact, _item("Customer returns go to dock D9."), _item("new text"))
        summary = _item("Knowledge: HX-88 topic", "semantic", "decisions/k1", source="distillation")
        by_doc = _trace(mem, _question("new"), summary, _item("other"))
        other = _trace(mem, _question("new"), _item("other"))
    assert older.cause == "outranked by an older statement" and "dock D9" in older.detail
    assert "another agent's" in older.detail  # the winner is yard's, the gold itops'
    assert by_doc.cause == "outranked by a distilled doc"
    assert other.cause == "outranked by another item"


def test_tracer_traces_only_what_the_baseline_answered(tmp_path: Path) -> None:
    clock = ManualClock(NOW)
    with _mem(tmp_path, clock) as mem:
        q = _question("")
        tracer = Tracer()
        given = {
            "forgetting": [_answer(q), _answer(q), _answer(q, ok=True)],
            "baseline": [_answer(q, ok=True), _answer(q), _answer(q, ok=True)],
        }
        tracer(6, {"forgetting": mem, "baseline": mem}, given)
        # What came first instead is named, so a question without a gold item is still traced.
        fate = _trace(mem, q, _item("Customer returns go to dock D9."))
    assert [f.cause for f in tracer.fates] == ["no gold"]
    assert tally(tracer.fates) == [("no gold", 1)]
    assert "nothing returned" in tracer.fates[0].detail
    assert fate.cause == "no gold" and "dock D9" in fate.detail
