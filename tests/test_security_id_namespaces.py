"""Ids a client chooses are its own: over HTTP against a real server (REST, and MCP where the
tool takes an id), an agent that writes an explicit id (an episode's id, a document id, a
procedure's name) held by an item it may not read learns nothing: the write succeeds as the
agent's own item, exactly as for a free id, and the other agent's item is untouched."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from conftest import LiveServer, mcp_call
from omoide.service.caller import Caller
from omoide.service.local import LocalOperations

pytestmark = pytest.mark.both_engines

TIMES = ("timestamp", "created_at", "last_updated", "last_accessed", "updated_at")


def uid(prefix: str = "t") -> str:
    return f"{prefix}{uuid.uuid4().hex[:12]}"


def scrubbed(response: httpx.Response, given: str) -> tuple[int, Any]:
    """Status and body with the chosen id and times replaced: what may differ between two
    writes of different ids at different moments."""

    def clean(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: "T" if k in TIMES else clean(v) for k, v in value.items()}
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value.replace(given, "ID") if isinstance(value, str) else value

    return response.status_code, clean(response.json())


def writes(client: httpx.Client, ids: tuple[str, str, str], text: str) -> list[httpx.Response]:
    """An episode, a document and a procedure under the chosen ids, globally readable."""
    episode_id, doc_id, name = ids
    return [
        client.post(
            "/v1/episodes", json={"event_type": "note", "description": text, "id": episode_id}
        ),
        client.post(
            "/v1/collections/knowledge/documents", json={"documents": [text], "ids": [doc_id]}
        ),
        client.post("/v1/procedures", json={"name": name, "trigger": name, "template": text}),
    ]


def test_writing_another_agents_unreadable_id_is_like_writing_a_free_one(
    live_server: LiveServer,
) -> None:
    """The probe of an explicit id: the attacker writes the ids of the ceo's private items
    and ids nobody holds. Both succeed, with the same answers, as the attacker's own items;
    the ceo's items keep their text and owner."""
    mem = live_server.mem
    held = (uid("e"), uid("d"), uid("p"))
    free = (uid("e"), uid("d"), uid("p"))
    with live_server.client("ceo") as victim, live_server.client("designer") as attacker:
        made = [
            victim.post(
                "/v1/episodes",
                json={
                    "event_type": "note",
                    "description": "秘密",
                    "id": held[0],
                    "scope": "private",
                },
            ),
            victim.post(
                "/v1/collections/knowledge/documents",
                json={"documents": ["秘密"], "ids": [held[1]], "scope": "private"},
            ),
            victim.post(
                "/v1/procedures",
                json={"name": held[2], "trigger": held[2], "template": "秘密", "scope": "private"},
            ),
        ]
        assert [m.status_code for m in made] == [201, 201, 201], [m.text for m in made]
        on_held = writes(attacker, held, "probe")
        on_free = writes(attacker, free, "probe")
        for given_held, given_free, a, b in zip(held, free, on_held, on_free, strict=True):
            assert a.status_code == 201, a.text
            assert scrubbed(a, given_held) == scrubbed(b, given_free)
        assert on_held[0].json()["id"] == f"designer:{held[0]}"
        assert on_held[0].json()["agent_name"] == "designer"
        assert on_held[1].json()["ids"] == [f"designer:{held[1]}"]
        assert on_held[2].json()["name"] == f"designer:{held[2]}"
        # Each agent reaches its own item by the short id.
        assert attacker.get(f"/v1/episodes/{held[0]}").json()["description"] == "probe"
        assert victim.get(f"/v1/episodes/{held[0]}").json()["description"] == "秘密"
        doc = f"/v1/collections/knowledge/documents/{held[1]}"
        assert attacker.get(doc).json()["document"] == "probe"
        assert victim.get(doc).json()["document"] == "秘密"
        assert attacker.get(f"/v1/procedures/{held[2]}").json()["template"] == "probe"
        assert victim.get(f"/v1/procedures/{held[2]}").json()["template"] == "秘密"
        # Nothing the ceo wrote changed, and its stored ids are its own.
        episode = mem.episodic.get(f"ceo:{held[0]}")
        assert (episode.description, episode.agent_name) == ("秘密", "ceo")
        document = mem.semantic.get("knowledge", f"ceo:{held[1]}")
        assert (document.document, document.agent_name) == ("秘密", "ceo")
        procedure = mem.procedural.get(f"ceo:{held[2]}")
        assert (procedure.template, procedure.agent_name, procedure.version) == ("秘密", "ceo", 1)
        # The ceo's private items stay as absent to the attacker by their stored ids too.
        for path in (
            f"/v1/episodes/ceo:{held[0]}",
            f"/v1/collections/knowledge/documents/ceo:{held[1]}",
            f"/v1/procedures/ceo:{held[2]}",
        ):
            hidden = attacker.get(path)
            absent = attacker.get(path.replace("ceo:", "nobody:"))
            assert hidden.status_code == absent.status_code == 404
            assert hidden.text.replace("ceo:", "X:") == absent.text.replace("nobody:", "X:")


def test_an_id_in_another_agents_namespace_stays_the_writers_own(
    live_server: LiveServer,
) -> None:
    """Naming another agent's stored id in a write (``ceo:x`` written by the designer) makes
    ``designer:ceo:x``: the ceo's shared item is neither changed nor probed, and the designer
    reads its own item first by that name."""
    shared = uid("d")
    with live_server.client("ceo") as ceo, live_server.client("designer") as designer:
        stored = ceo.post(
            "/v1/collections/knowledge/documents",
            json={"documents": ["共有の文書"], "ids": [shared]},
        )
        assert stored.json()["ids"] == [f"ceo:{shared}"]
        # Another agent who may read it reaches it by its stored id, not by the short one.
        path = f"/v1/collections/knowledge/documents/ceo:{shared}"
        assert designer.get(path).json()["document"] == "共有の文書"
        assert designer.get(f"/v1/collections/knowledge/documents/{shared}").status_code == 404
        refused = designer.delete(path)
        assert refused.status_code == 403, refused.text
        over = designer.post(
            "/v1/collections/knowledge/documents",
            json={"documents": ["上書き"], "ids": [f"ceo:{shared}"]},
        )
        assert over.status_code == 201, over.text
        assert over.json()["ids"] == [f"designer:ceo:{shared}"]
        doc = live_server.mem.semantic.get("knowledge", f"ceo:{shared}")
        assert (doc.document, doc.agent_name) == ("共有の文書", "ceo")
        assert designer.get(path).json()["document"] == "上書き"  # its own comes first
        assert ceo.get(path).json()["document"] == "共有の文書"
        # Writing one's own stored id names the same item as the short id.
        again = ceo.post(
            "/v1/collections/knowledge/documents",
            json={"documents": ["改訂"], "ids": [f"ceo:{shared}"]},
        )
        assert again.json()["ids"] == [f"ceo:{shared}"]
        assert ceo.get(f"/v1/collections/knowledge/documents/{shared}").json()["document"] == "改訂"


def test_the_owner_keeps_todays_semantics_under_the_short_id(live_server: LiveServer) -> None:
    """An agent reads, updates, deletes and restores its items by the ids it chose; writing
    an episode or a procedure name again is its own 409, a document id its own overwrite."""
    episode_id, doc_id, name = uid("e"), uid("d"), uid("p")
    with live_server.client("cto") as cto:
        assert [r.status_code for r in writes(cto, (episode_id, doc_id, name), "v1")] == [201] * 3
        again = writes(cto, (episode_id, doc_id, name), "v2")
        assert [r.status_code for r in again] == [409, 201, 409], [r.text for r in again]
        assert f"cto:{episode_id}" in again[0].text and f"cto:{name}" in again[2].text
        doc = f"/v1/collections/knowledge/documents/{doc_id}"
        assert cto.get(doc).json()["document"] == "v2"
        patched = cto.patch(f"/v1/episodes/{episode_id}", json={"outcome": "done"})
        assert patched.status_code == 200 and patched.json()["id"] == f"cto:{episode_id}"
        assert cto.get(f"/v1/episodes/{episode_id[:6]}").json()["outcome"] == "done"  # a prefix
        evolved = cto.post(f"/v1/procedures/{name}/versions", json={"template": "v3"})
        assert evolved.status_code == 201 and evolved.json()["version"] == 2
        assert len(cto.get(f"/v1/procedures/{name}/history").json()) == 2
        assert cto.post(f"/v1/procedures/{name}/rollback", json={"version": 1}).status_code == 200
        outcome = cto.post(
            f"/v1/procedures/{name}/outcomes", json={"quality_score": 9, "success": True}
        )
        assert outcome.status_code == 200 and outcome.json()["execution_count"] == 1
        live_server.mem.lifecycle.apply(
            "semantic",
            f"cto:{doc_id}",
            "archive",
            collection="knowledge",
            policy="manual",
            reason="test",
            run_id=uid("run-"),
        )
        restored = cto.post("/v1/restore", json={"id": doc_id})
        assert restored.status_code == 200, restored.text
        assert restored.json()["item"]["id"] == f"cto:{doc_id}"
        audit = cto.get("/v1/audit", params={"item_id": doc_id}).json()
        assert {e["action"] for e in audit} >= {"archive", "restore"}
        assert cto.delete(doc).status_code == 200
        assert cto.delete(f"/v1/episodes/{episode_id}").status_code == 200
        assert cto.get(doc).status_code == 404
        assert cto.get(f"/v1/episodes/{episode_id}").status_code == 404


def test_admins_the_operator_and_the_library_write_literal_ids(live_server: LiveServer) -> None:
    """Only agents on a shared front end are qualified: the admin key, the local operator and
    the library store the id as given, and an agent without an item of its own under a name
    reads the literal one it may read."""
    mem = live_server.mem
    by_admin, by_operator, by_library = uid("e"), uid("e"), uid("e")
    with live_server.client("admin") as admin, live_server.client("designer") as designer:
        made = admin.post(
            "/v1/episodes", json={"event_type": "note", "description": "admin", "id": by_admin}
        )
        assert made.status_code == 201 and made.json()["id"] == by_admin
        operator = LocalOperations(mem, Caller.operator(mem, "cto"))
        assert operator.record("note", "operator", id=by_operator)["id"] == by_operator
        name = uid("p")
        assert operator.register_procedure(name, name, "t")["name"] == name
        assert mem.episodic.record("ceo", "note", "library", id=by_library).id == by_library
        for given, text in (
            (by_admin, "admin"),
            (by_operator, "operator"),
            (by_library, "library"),
        ):
            assert designer.get(f"/v1/episodes/{given}").json()["description"] == text
        # The designer's own item under the same name comes first for the designer only.
        own = designer.post(
            "/v1/episodes", json={"event_type": "note", "description": "mine", "id": by_admin}
        )
        assert own.status_code == 201 and own.json()["id"] == f"designer:{by_admin}"
        assert designer.get(f"/v1/episodes/{by_admin}").json()["description"] == "mine"
        assert admin.get(f"/v1/episodes/{by_admin}").json()["description"] == "admin"


@pytest.mark.parametrize(
    ("given", "words"),
    [("x" * 200, "limit is 191"), (" padded", "whitespace"), ("a\tb", "control")],
)
def test_a_chosen_id_that_cannot_be_qualified_is_refused(
    live_server: LiveServer, given: str, words: str
) -> None:
    with live_server.client("designer") as designer:
        answer = designer.post(
            "/v1/episodes", json={"event_type": "note", "description": "x", "id": given}
        )
        assert answer.status_code == 422, answer.text
        assert words in answer.text and answer.json()["problems"][0]["loc"] == ["id"]


def test_a_batch_of_chosen_ids_is_qualified_item_by_item(live_server: LiveServer) -> None:
    ids = [uid("e"), uid("e")]
    with live_server.client("ceo") as ceo, live_server.client("cto") as cto:
        ceo.post(
            "/v1/episodes",
            json={"event_type": "note", "description": "ceo", "id": ids[0], "scope": "private"},
        )
        batch = cto.post(
            "/v1/episodes/batch",
            json={"episodes": [{"event_type": "note", "description": "b", "id": i} for i in ids]},
        )
        assert batch.status_code == 201, batch.text
        assert [e["id"] for e in batch.json()] == [f"cto:{i}" for i in ids]
    assert live_server.mem.episodic.get(f"ceo:{ids[0]}").description == "ceo"


def test_mcp_tools_taking_ids_act_in_the_callers_namespace(live_server: LiveServer) -> None:
    """store with an id another agent holds, update and delete an episode by the short id,
    and report the outcome of a shared procedure by the name matching gave."""
    doc_id, episode_id, name = uid("d"), uid("e"), uid("p")
    with live_server.client("ceo") as ceo:
        ceo.post(
            "/v1/collections/knowledge/documents",
            json={"documents": ["ceoの文書"], "ids": [doc_id], "scope": "private"},
        )
        ceo.post("/v1/procedures", json={"name": name, "trigger": f"{name}_task", "template": "t"})
    held = mcp_call(live_server, "designer", "store_knowledge", {"content": "mine", "id": doc_id})
    free = mcp_call(live_server, "designer", "store_knowledge", {"content": "mine", "id": uid("d")})
    assert not held.is_error and not free.is_error
    assert held.structured_content["ids"] == [f"designer:{doc_id}"]
    assert live_server.mem.semantic.get("knowledge", f"ceo:{doc_id}").document == "ceoの文書"
    with live_server.client("designer") as designer:
        designer.post(
            "/v1/episodes", json={"event_type": "note", "description": "d", "id": episode_id}
        )
    updated = mcp_call(
        live_server, "designer", "update_episode", {"episode_id": episode_id, "outcome": "ok"}
    )
    assert not updated.is_error and updated.structured_content["id"] == f"designer:{episode_id}"
    deleted = mcp_call(live_server, "designer", "delete_episode", {"episode_id": episode_id})
    assert not deleted.is_error
    assert not live_server.mem.episodic.rows.exists(f"designer:{episode_id}")
    matched = mcp_call(live_server, "designer", "get_procedure", {"task": f"{name}_task"})
    assert matched.structured_content["best"]["name"] == f"ceo:{name}"
    reported = mcp_call(
        live_server,
        "designer",
        "report_outcome",
        {"name": f"ceo:{name}", "quality_score": 2, "success": False},
    )
    assert not reported.is_error and reported.structured_content["execution_count"] == 1
