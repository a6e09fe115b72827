"""Working memory changed by two replicas at once: one PostgreSQL database, one Chroma server.

Each replica is a :class:`Memory` with a data directory of its own, as two hosts would have.
A :class:`WorkingMemory` obtained before the other replica wrote must still decide on what is
stored: no slot lost, no budget overrun, no message evicted twice or lost, no pin missed.
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from chroma_server import ChromaServer
from omoide import Config, ManualClock, Memory
from omoide.errors import NotFoundError, TokenBudgetError
from omoide.layers.working import Eviction, session_usage
from omoide.layers.working_rules import TEXT_SLOTS

AGENT, SESSION = "ops", "s1"
#: A small session: recent_msgs 200 tokens, pinned 40, system 20, scratchpad 40.
SMALL = 320
IMPORTANT, ORDINARY = 0.9, 0.2


@pytest.fixture
def replicas(
    tmp_path: Path,
    teams_config: Config,
    chroma_server: ChromaServer,
    postgres_db_url: str,
    clock: ManualClock,
    embedder: Any,
    counter: Any,
) -> Iterator[tuple[Memory, Memory]]:
    """Two Memories over one PostgreSQL database and one Chroma server."""
    config = chroma_server.config(teams_config, vector_store="chroma")
    config = replace(config, storage=replace(config.storage, url=postgres_db_url))
    a, b = (
        Memory(
            tmp_path / name, clock=clock, embedder=embedder, token_counter=counter, config=config
        )
        for name in ("a", "b")
    )
    try:
        yield a, b
    finally:
        a.close()
        b.close()
        chroma_server.drop(config.semantic.chroma_prefix)


def stored_messages(memory: Memory) -> list[str]:
    """The session's messages as stored (read directly: opening a WorkingMemory evicts)."""
    rows = memory.db.query(
        "SELECT content FROM working_messages WHERE agent_name = ? AND session_id = ? ORDER BY id",
        (AGENT, SESSION),
    )
    return [str(r[0]) for r in rows]


def check_messages(memory: Memory, added: list[str], evictions: list[Eviction]) -> None:
    """Every message is stored or reported evicted exactly once, the stored ones fit the
    budget, and every evicted important message is one episode (the others none)."""
    budget = memory.working(AGENT, SESSION).budgets["recent_msgs"]
    stored = stored_messages(memory)
    evicted = [e.message.content for e in evictions]
    assert len(evicted) == len(set(evicted)), "a message was reported evicted twice"
    assert sorted(stored + evicted) == sorted(added)
    assert session_usage(memory.db, AGENT)[AGENT][1] <= budget
    episodes = memory.episodic.rows.fetch("agent_name = ?", [AGENT])
    copies = Counter(e.description for e in episodes)
    ids = {e.description: e.id for e in episodes}
    for eviction in evictions:
        content = eviction.message.content
        if eviction.message.importance > memory.config.working.promote_threshold:
            assert copies[content] == 1 and ids[content] == eviction.episode_id
        else:
            assert not eviction.promoted and copies[content] == 0
    assert all(copies[content] == 0 for content in stored)


def text(counter: Any, words: str, tokens: int) -> str:
    """``words`` repeated to about ``tokens`` tokens."""
    out = words
    while counter.count(out + " " + words) <= tokens:
        out += " " + words
    return out


def test_slots_set_by_two_replicas_are_both_kept(replicas: tuple[Memory, Memory]) -> None:
    a, b = replicas
    wa = a.working(AGENT, SESSION)
    wb = b.working(AGENT, SESSION)  # read before A writes
    wa.set_slot("system", "You are the operations agent.")
    wb.set_slot("scratchpad", "order 12: refund pending")
    seen = a.working(AGENT, SESSION)
    assert seen.get_slot("system") == "You are the operations agent."
    assert seen.get_slot("scratchpad") == "order 12: refund pending"
    assert wb.get_slot("system") == "You are the operations agent."  # B now holds what is stored
    # A budget follows the stored max_tokens, not the one B read.
    a.working(AGENT, SESSION, max_tokens=SMALL)
    with pytest.raises(TokenBudgetError):
        wb.set_slot("system", text(b.token_counter, "Answer briefly.", 60))
    assert wb.max_tokens == SMALL
    assert a.working(AGENT, SESSION).get_slot("system") == "You are the operations agent."


def test_messages_from_two_replicas_keep_the_budget_and_lose_nothing(
    replicas: tuple[Memory, Memory],
) -> None:
    a, b = replicas
    wa = a.working(AGENT, SESSION, max_tokens=SMALL)
    wb = b.working(AGENT, SESSION)  # neither object is obtained again
    budget = wa.budgets["recent_msgs"]
    added: list[str] = []
    evictions: list[Eviction] = []
    for i in range(24):
        content = f"Update {i}: the shipment for order {100 + i} left the Osaka warehouse"
        importance = IMPORTANT if i % 3 == 0 else ORDINARY
        evictions += (wa if i % 2 else wb).add_message(content, importance=importance)
        added.append(content)
        assert session_usage(a.db, AGENT)[AGENT][1] <= budget
    assert any(e.promoted for e in evictions) and any(not e.promoted for e in evictions)
    check_messages(a, added, evictions)


def test_clearing_from_an_old_object_clears_what_the_other_replica_added(
    replicas: tuple[Memory, Memory],
) -> None:
    a, b = replicas
    wb = b.working(AGENT, SESSION)
    wa = a.working(AGENT, SESSION)
    added = [f"Note {i} about the quarterly stock count" for i in range(3)]
    for content in added:
        wa.add_message(content, importance=IMPORTANT)
    evictions = wb.clear_messages()
    assert [e.message.content for e in evictions] == added
    assert stored_messages(a) == []
    check_messages(a, added, evictions)


def test_pins_are_seen_and_budgeted_across_replicas(replicas: tuple[Memory, Memory]) -> None:
    a, b = replicas
    wa = a.working(AGENT, SESSION, max_tokens=SMALL)
    wb = b.working(AGENT, SESSION)  # read before A pins
    wa.pin("deadline", "Ship the replacement parts by Friday", reason="customer promise")
    assert wb.unpin("deadline").content == "Ship the replacement parts by Friday"
    assert a.working(AGENT, SESSION).pins == []
    budget = wa.budgets["pinned"]
    big = text(a.token_counter, "Refunds above 500 need a second approval.", budget * 2 // 3)
    wa.pin("refunds", big)
    with pytest.raises(TokenBudgetError):
        wb.pin("refunds-too", big)  # B's object read no pins, the stored session has one
    assert [p.key for p in a.working(AGENT, SESSION).pins] == ["refunds"]
    wb.pin("refunds", "Refunds need a second approval.")  # a re-pin replaces: it fits
    assert session_usage(a.db, AGENT)[AGENT][2] <= budget


def test_a_message_promoted_by_both_replicas_is_one_episode(
    replicas: tuple[Memory, Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    """B evicts the message A is evicting: B looked for its episode before A recorded it, so
    B's insert of the same id loses, and B returns A's episode."""
    a, b = replicas
    wa = a.working(AGENT, SESSION, max_tokens=SMALL)
    wa.add_message("The operator said: never deploy on Fridays", importance=IMPORTANT)
    evictions: list[Eviction] = []
    for i in range(40):  # until the first message is evicted
        evictions += wa.add_message(f"Status {i}: the nightly build is green", importance=0.1)
        if evictions:
            break
    promoted = [e for e in evictions if e.promoted]
    assert len(promoted) == 1
    rows = b.episodic.rows
    looked = iter([None])  # B's first look for the episode: before A recorded it
    monkeypatch.setattr(
        rows, "row", lambda conn, episode_id, real=rows.row: next(looked, real(conn, episode_id))
    )
    monkeypatch.setattr(rows, "present", lambda ids: set())
    assert b._promotion(AGENT, SESSION, promoted[0].message) == promoted[0].episode_id
    monkeypatch.undo()
    episodes = a.episodic.rows.fetch("agent_name = ?", [AGENT])
    assert [e.id for e in episodes] == [promoted[0].episode_id]


def test_threads_on_two_replicas_hammering_one_session_keep_every_invariant(
    replicas: tuple[Memory, Memory],
) -> None:
    a, b = replicas
    counter = a.token_counter
    a.working(AGENT, SESSION, max_tokens=SMALL)
    budgets = a.working(AGENT, SESSION).budgets
    pin_texts = {
        key: text(counter, f"Keep {key} in mind.", budgets["pinned"] * 9 // 20)
        for key in ("alpha", "beta", "gamma")
    }
    assert sum(counter.count(t) for t in pin_texts.values()) > budgets["pinned"]  # not all fit
    written: dict[str, set[str]] = {slot: set() for slot in TEXT_SLOTS}
    added: list[str] = []
    evictions: list[Eviction] = []
    failures: list[BaseException] = []
    start = threading.Barrier(4)

    def hammer(memory: Memory, name: str) -> None:
        rng = random.Random(name)
        old = memory.working(AGENT, SESSION)  # obtained once, before the others write
        start.wait()
        for i in range(12):
            wm = old if i % 2 else memory.working(AGENT, SESSION)
            choice = rng.random()
            try:
                if choice < 0.55:
                    content = f"{name} message {i}: pallet {rng.randint(1, 999)} checked in"
                    importance = IMPORTANT if rng.random() < 0.4 else ORDINARY
                    added.append(content)
                    evictions.extend(wm.add_message(content, importance=importance))
                elif choice < 0.7:
                    slot = rng.choice(["system", "scratchpad"])
                    value = f"{name} {slot} {i}"
                    written[slot].add(value)
                    wm.set_slot(slot, value)
                elif choice < 0.9:
                    key = rng.choice(list(pin_texts))
                    wm.pin(key, pin_texts[key])
                else:
                    wm.unpin(rng.choice(list(pin_texts)))
            except (TokenBudgetError, NotFoundError):
                pass  # a full pinned slot, a pin already gone: refusals, not failures
            except BaseException as exc:  # reported below
                failures.append(exc)

    threads = [
        threading.Thread(target=hammer, args=(memory, f"{memory_name}{n}"))
        for memory, memory_name in ((a, "a"), (b, "b"))
        for n in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not any(thread.is_alive() for thread in threads)
    assert failures == []
    check_messages(a, added, evictions)
    seen = b.working(AGENT, SESSION)
    assert session_usage(a.db, AGENT)[AGENT][2] <= budgets["pinned"]
    assert sum(p.tokens for p in seen.pins) <= budgets["pinned"]
    for slot in ("system", "scratchpad"):
        assert seen.get_slot(slot) in written[slot] | {None}
