"""Attacks on ids, over HTTP against a real server: squatting the ids the system generates
(working-memory promotion, cache entries, content hashes, ...) and existence oracles (a
route that answers differently for another agent's unreadable item and for no item)."""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

import httpx
import pytest

from conftest import LiveServer, mcp_call
from omoide.core.ids import RESERVED_ID_PREFIXES
from omoide.layers.semantic.store import content_id
from omoide.layers.working_rules import promoted_episode_id
from omoide.storage.secrets import directory_secret

pytestmark = pytest.mark.both_engines


def uid(prefix: str = "t") -> str:
    return f"{prefix}{uuid.uuid4().hex[:12]}"


def same_answer(a: httpx.Response, b: httpx.Response) -> None:
    """Status and body byte for byte equal."""
    assert a.status_code == b.status_code, (a.text, b.text)
    assert a.content == b.content, (a.text, b.text)


# -- finding 2: squatting working-memory promotion ids -----------------------------------


def test_squatting_the_next_promotion_ids_swallows_no_message(live_server: LiveServer) -> None:
    """The attack of the review: plant episodes under the ids the victim's next evicted
    messages would get. Planting is refused, and every important message is promoted into an
    episode of the victim that holds it."""
    session = uid("s-")
    assert live_server.mem.db is not None
    with live_server.client("designer") as attacker, live_server.client("ceo") as victim:
        assert victim.put(f"/v1/working/{session}", json={"max_tokens": 300}).status_code == 200
        first = victim.post(
            f"/v1/working/{session}/messages", json={"content": "warm-up", "importance": 0.1}
        )
        assert first.status_code == 200
        seen = live_server.mem.db.scalar("SELECT MAX(id) FROM working_messages")
        # The old scheme: sha256(agent ␟ session ␟ message id), computable by anyone.
        refused = 0
        for message_id in range(int(seen) + 1, int(seen) + 41):
            digest = hashlib.sha256(f"ceo\x1f{session}\x1f{message_id}".encode()).hexdigest()
            planted = attacker.post(
                "/v1/episodes",
                json={"event_type": "message", "description": "planted", "id": f"wm-{digest[:24]}"},
            )
            assert planted.status_code == 422, planted.text
            assert planted.json()["problems"][0]["loc"] == ["id"]
            refused += 1
        assert refused == 40
        texts = [f"重要な決定 {i}: 予算は {i}00 万円" for i in range(12)]
        promoted: list[str] = []
        for text in texts:
            added = victim.post(
                f"/v1/working/{session}/messages", json={"content": text, "importance": 0.9}
            )
            assert added.status_code == 200, added.text
            promoted += [e["episode_id"] for e in added.json()["evictions"] if e["promoted"]]
        cleared = victim.post(f"/v1/working/{session}/clear").json()
        promoted += [e["episode_id"] for e in cleared["evictions"] if e["promoted"]]
        assert len(promoted) == len(texts)
        held = []
        for episode_id in promoted:
            got = victim.get(f"/v1/episodes/{episode_id}")
            assert got.status_code == 200
            assert got.json()["agent_name"] == "ceo"
            held.append(got.json()["description"])
        assert sorted(held) == sorted(texts)


def test_a_taken_promotion_id_is_never_reused_for_another_agents_episode(
    live_server: LiveServer,
) -> None:
    """Even if an episode already holds the exact id (an import, a store from before the
    fix), the message goes to an episode of its own; the same agent's same message is
    reused (idempotent re-eviction)."""
    mem = live_server.mem
    assert mem.db is not None
    session = uid("s-")
    with live_server.client("ceo") as victim:
        assert victim.put(f"/v1/working/{session}", json={"max_tokens": 300}).status_code == 200
        victim.post(f"/v1/working/{session}/messages", json={"content": "x", "importance": 0.1})
        next_id = int(mem.db.scalar("SELECT MAX(id) FROM working_messages")) + 1
        secret = directory_secret(mem.db, "promotion")
        taken = promoted_episode_id("ceo", session, next_id, secret)
        mem.episodic.record("designer", "message", "planted text", id=taken)
        added = victim.post(
            f"/v1/working/{session}/messages",
            json={"content": "SSOは必須", "importance": 0.9},
        )
        assert added.status_code == 200
        cleared = victim.post(f"/v1/working/{session}/clear").json()
        (eviction,) = [e for e in cleared["evictions"] if e["message"]["content"] == "SSOは必須"]
        assert eviction["promoted"] and eviction["episode_id"] != taken
        stored = victim.get(f"/v1/episodes/{eviction['episode_id']}").json()
        assert stored["description"] == "SSOは必須" and stored["agent_name"] == "ceo"
        assert mem.episodic.get(taken).description == "planted text"
    # Re-evicting the same message (a crash between promotion and deletion) is idempotent.
    wm = mem.working("ceo", uid("s-"), 300)
    wm.add_message("also important", importance=0.9)
    message = wm.messages[-1]
    again = mem._promotion("ceo", wm.session_id, message)
    assert mem._promotion("ceo", wm.session_id, message) == again


@pytest.mark.parametrize("prefix", RESERVED_ID_PREFIXES)
def test_client_chosen_ids_in_reserved_prefixes_are_refused(
    live_server: LiveServer, prefix: str
) -> None:
    assert live_server.mem.db is not None
    reserved = f"{prefix}{uuid.uuid4().hex[:24]}"
    before = live_server.mem.db.scalar("SELECT COUNT(*) FROM episodes") + live_server.mem.db.scalar(
        "SELECT COUNT(*) FROM semantic_docs"
    )
    with live_server.client("designer") as attacker:
        answers = {
            "episode": attacker.post(
                "/v1/episodes", json={"event_type": "note", "description": "x", "id": reserved}
            ),
            "batch": attacker.post(
                "/v1/episodes/batch",
                json={"episodes": [{"event_type": "note", "description": "x", "id": reserved}]},
            ),
            "upper": attacker.post(
                "/v1/episodes",
                json={"event_type": "note", "description": "x", "id": reserved.upper()},
            ),
            "document": attacker.post(
                "/v1/collections/knowledge/documents",
                json={"documents": ["x"], "ids": [reserved]},
            ),
        }
        for name, answer in answers.items():
            assert answer.status_code == 422, (name, answer.text)
            assert "reserved" in answer.json()["problems"][0]["msg"], name
    mcp = mcp_call(live_server, "designer", "store_knowledge", {"content": "x", "id": reserved})
    assert mcp.is_error and "reserved" in "".join(getattr(p, "text", "") for p in mcp.content)
    after = live_server.mem.db.scalar("SELECT COUNT(*) FROM episodes") + live_server.mem.db.scalar(
        "SELECT COUNT(*) FROM semantic_docs"
    )
    assert after == before


def test_cache_key_squatting_neither_blocks_nor_poisons(live_server: LiveServer) -> None:
    """Caching a key first (or planting its id) no longer takes the key from another agent."""
    key = f"https://rates.example/{uid()}"
    body = {"key": key, "ttl_days": 1, "source": "x"}
    with live_server.client("designer") as attacker, live_server.client("ceo") as victim:
        planted = attacker.put("/v1/cache", json={**body, "content": "forged", "scope": "private"})
        assert planted.status_code == 200
        mine = victim.put("/v1/cache", json={**body, "content": "USD/JPY 150"})
        assert mine.status_code == 200, mine.text
        assert victim.get("/v1/cache", params={"key": key}).json()["document"] == "USD/JPY 150"
        # A document that only claims the key in its metadata is not an entry.
        fake = attacker.post(
            "/v1/collections/knowledge/documents",
            json={"documents": ["forged too"], "metadatas": [{"cache_key": key}]},
        )
        assert fake.status_code == 201
        # Guessing which key the victim cached: every guess makes the attacker's own entry.
        guesses = [f"https://rates.example/{uid()}" for _ in range(9)] + [key]
        for guess in guesses:
            put = attacker.put("/v1/cache", json={**body, "key": guess, "content": "probe"})
            assert put.status_code == 200, put.text
            assert put.json()["agent_name"] == "designer"
            assert set(put.json()) == set(planted.json())
    with live_server.client("cto") as reader:
        assert reader.get("/v1/cache", params={"key": key}).json()["document"] == "USD/JPY 150"


# -- finding 4: existence oracles -------------------------------------------------------


def test_restore_guesses_of_another_agents_text_tell_nothing(live_server: LiveServer) -> None:
    """The review's attack: restore the default ids of candidate texts. Every guess, right or
    wrong, gets the same 404 body, and the victim's id is not the hash of its text."""
    pin = f"PIN {uuid.uuid4().int % 10_000 | 1:04d}"  # odd: never one of the wrong guesses
    guesses = [f"PIN {n:04d}" for n in range(0, 10_000, 250)] + [pin]
    with live_server.client("ceo") as victim, live_server.client("designer") as attacker:
        stored = victim.post(
            "/v1/collections/knowledge/documents", json={"documents": [pin], "scope": "private"}
        )
        assert stored.status_code == 201
        (doc_id,) = stored.json()["ids"]
        assert doc_id != content_id(pin)
        for guess in guesses:
            for candidate in (content_id(guess), content_id(guess, "ceo")):
                answer = attacker.post("/v1/restore", json={"id": candidate})
                assert answer.status_code == 404
                assert answer.json() == {
                    "error": "NotFoundError",
                    "detail": f"item {candidate!r} not found",
                    "field": None,
                    "problems": None,
                }
        # Storing the guesses makes the attacker's own documents, whichever is right.
        planted = attacker.post(
            "/v1/collections/knowledge/documents",
            json={"documents": guesses, "scope": "private"},
        )
        assert planted.status_code == 201, planted.text
        assert planted.json()["ids"] == [content_id(g, "designer") for g in guesses]
        assert victim.get(f"/v1/collections/knowledge/documents/{doc_id}").json()["document"] == pin
        assert victim.get(f"/v1/collections/knowledge/documents/{doc_id}").json()["agent_name"] == (
            "ceo"
        )


def _archive(live_server: LiveServer, layer: str, item_id: str) -> None:
    live_server.mem.lifecycle.apply(
        layer,
        item_id,
        "archive",
        collection="knowledge" if layer == "semantic" else "",
        policy="manual",
        reason="test",
        run_id=uid("run-"),
    )


def test_every_route_answers_an_unreadable_item_as_absent(live_server: LiveServer) -> None:
    """Per route: the answer to another agent's private item, then to the same id once the
    item is gone, are byte-identical (404, same body). The items are archived too, so that
    restore is asked of something restorable."""
    mem = live_server.mem
    episode_id, doc_id, name = uid("e"), uid("d"), uid("p")
    with live_server.client("ceo") as victim, live_server.client("designer") as attacker:
        made = [
            victim.post(
                "/v1/episodes",
                json={
                    "event_type": "decision",
                    "description": "秘密の決定",
                    "id": episode_id,
                    "scope": "private",
                },
            ),
            victim.post(
                "/v1/collections/knowledge/documents",
                json={"documents": ["秘密の文書"], "ids": [doc_id], "scope": "private"},
            ),
            victim.post(
                "/v1/procedures",
                json={"name": name, "trigger": name, "template": "v1", "scope": "private"},
            ),
        ]
        assert [m.status_code for m in made] == [201, 201, 201], [m.text for m in made]
        # The attacker names the stored ids (ceo:…) and the short ones the ceo chose.
        short = (episode_id, doc_id, name)
        episode_id, doc_id, name = (
            made[0].json()["id"],
            made[1].json()["ids"][0],
            made[2].json()["name"],
        )
        assert (episode_id, doc_id, name) == tuple(f"ceo:{given}" for given in short)
        cache_key = f"https://intranet/{uid()}"
        cached = victim.put(
            "/v1/cache",
            json={
                "key": cache_key,
                "content": "社内",
                "ttl_days": 1,
                "source": "x",
                "scope": "private",
            },
        )
        assert cached.status_code == 200
        doc = f"/v1/collections/knowledge/documents/{doc_id}"
        asks = {
            "get episode": lambda: attacker.get(f"/v1/episodes/{episode_id}"),
            "patch episode": lambda: attacker.patch(
                f"/v1/episodes/{episode_id}", json={"outcome": "x"}
            ),
            "delete episode": lambda: attacker.delete(f"/v1/episodes/{episode_id}"),
            "get document": lambda: attacker.get(doc),
            "delete document": lambda: attacker.delete(doc),
            "get procedure": lambda: attacker.get(f"/v1/procedures/{name}"),
            "history": lambda: attacker.get(f"/v1/procedures/{name}/history"),
            "outcome": lambda: attacker.post(
                f"/v1/procedures/{name}/outcomes", json={"quality_score": 1, "success": False}
            ),
            "evolve": lambda: attacker.post(
                f"/v1/procedures/{name}/versions", json={"template": "v2"}
            ),
            "rollback": lambda: attacker.post(
                f"/v1/procedures/{name}/rollback", json={"version": 1}
            ),
            "restore episode": lambda: attacker.post("/v1/restore", json={"id": episode_id}),
            "restore episodic": lambda: attacker.post(
                "/v1/restore", json={"id": episode_id, "layer": "episodic"}
            ),
            "restore document": lambda: attacker.post("/v1/restore", json={"id": doc_id}),
            "restore in collection": lambda: attacker.post(
                "/v1/restore", json={"id": doc_id, "collection": "knowledge"}
            ),
            "cache": lambda: attacker.get("/v1/cache", params={"key": cache_key}),
            "audit": lambda: attacker.get("/v1/audit", params={"item_id": doc_id}),
            "get episode by short id": lambda: attacker.get(f"/v1/episodes/{short[0]}"),
            "get document by short id": lambda: attacker.get(
                f"/v1/collections/knowledge/documents/{short[1]}"
            ),
            "get procedure by short name": lambda: attacker.get(f"/v1/procedures/{short[2]}"),
            "restore by short id": lambda: attacker.post("/v1/restore", json={"id": short[0]}),
            "audit by short id": lambda: attacker.get("/v1/audit", params={"item_id": short[1]}),
        }
        present = {route: ask() for route, ask in asks.items()}
        _archive(live_server, "episodic", episode_id)
        _archive(live_server, "semantic", doc_id)
        archived = {route: ask() for route, ask in asks.items()}
        assert mem.db is not None
        mem.episodic.delete(episode_id)
        mem.semantic.delete("knowledge", [doc_id])
        with mem.db.transaction() as conn:
            for table in ("procedures", "procedure_versions"):
                conn.execute(f"DELETE FROM {table} WHERE name = ?", (name,))
        victim_cache = victim.get("/v1/cache", params={"key": cache_key}).json()["id"]
        mem.semantic.delete("knowledge", [victim_cache])
        for route, ask in asks.items():
            absent = ask()
            expected = 200 if route.startswith("audit") else 404
            assert absent.status_code == expected, (route, absent.text)
            same_answer(present[route], absent)
            same_answer(archived[route], absent)


def test_taken_names_answer_the_same_whoever_holds_them(live_server: LiveServer) -> None:
    """An explicit id or a procedure name is the writer's own: taking one another agent
    holds (the ceo or the cto, readable or not) answers exactly as taking a free one — the
    write succeeds as the taker's item, and no holder is named."""
    with (
        live_server.client("ceo") as ceo,
        live_server.client("cto") as cto,
        live_server.client("designer") as attacker,
    ):
        answers: dict[str, list[Any]] = {"episode": [], "document": [], "procedure": []}
        for holder in (ceo, cto, None):
            episode_id, doc_id, name = uid("e"), uid("d"), uid("p")
            if holder is not None:
                made = [
                    holder.post(
                        "/v1/episodes",
                        json={
                            "event_type": "note",
                            "description": "x",
                            "id": episode_id,
                            "scope": "private",
                        },
                    ),
                    holder.post(
                        "/v1/collections/knowledge/documents",
                        json={"documents": ["x"], "ids": [doc_id], "scope": "private"},
                    ),
                    holder.post(
                        "/v1/procedures",
                        json={"name": name, "trigger": name, "template": "x", "scope": "private"},
                    ),
                ]
                assert [m.status_code for m in made] == [201, 201, 201]
            taken = {
                "episode": attacker.post(
                    "/v1/episodes",
                    json={"event_type": "note", "description": "y", "id": episode_id},
                ),
                "document": attacker.post(
                    "/v1/collections/knowledge/documents",
                    json={"documents": ["y"], "ids": [doc_id]},
                ),
                "procedure": attacker.post(
                    "/v1/procedures", json={"name": name, "trigger": name, "template": "y"}
                ),
            }
            for kind, answer in taken.items():
                assert answer.status_code == 201, (kind, answer.text)
                assert "ceo" not in answer.text and "cto" not in answer.text, kind
                given = {"episode": episode_id, "document": doc_id, "procedure": name}[kind]
                answers[kind].append(_without(answer.json(), given))
        for kind, (by_ceo, by_cto, by_nobody) in answers.items():
            assert by_ceo == by_cto == by_nobody, kind


def _without(value: Any, given: str) -> Any:
    """A JSON answer with the chosen name and the moments replaced (they differ by call)."""
    if isinstance(value, dict):
        return {
            k: "T" if k in ("timestamp", "created_at", "last_updated") else _without(v, given)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_without(v, given) for v in value]
    return value.replace(given, "ID") if isinstance(value, str) else value


def test_mcp_cache_of_an_unreadable_key_is_like_no_entry(live_server: LiveServer) -> None:
    key = f"https://intranet/{uid()}"
    with live_server.client("ceo") as victim:
        put = victim.put(
            "/v1/cache",
            json={"key": key, "content": "社内", "ttl_days": 1, "source": "x", "scope": "private"},
        )
        assert put.status_code == 200
    hidden = mcp_call(live_server, "designer", "get_cached_information", {"key": key})
    absent_key = key.replace("intranet", "nowhere")
    absent = mcp_call(live_server, "designer", "get_cached_information", {"key": absent_key})
    assert hidden.is_error and absent.is_error
    text = "".join(getattr(p, "text", "") for p in hidden.content)
    assert text.replace(key, "K") == "".join(
        getattr(p, "text", "") for p in absent.content
    ).replace(absent_key, "K")
    own = mcp_call(
        live_server,
        "designer",
        "cache_information",
        {"key": key, "content": "mine", "source": "x"},
    )
    assert not own.is_error and own.structured_content["agent_name"] == "designer"


def test_default_ids_are_per_writer_and_keep_a_writers_earlier_id(mem: Any) -> None:
    """The same text by two agents is two documents; one agent storing it twice is one,
    also for a document stored before ids included the writer (its content-only id)."""
    ceo = mem.semantic.store("knowledge", ["同じ文章"], agent_name="ceo")
    cto = mem.semantic.store("knowledge", ["同じ文章"], agent_name="cto")
    assert ceo != cto and ceo == mem.semantic.store("knowledge", ["同じ文章"], agent_name="ceo")
    old = mem.semantic.store(
        "knowledge", ["以前の文章"], ids=[content_id("以前の文章")], agent_name="ceo"
    )
    assert mem.semantic.store("knowledge", ["以前の文章"], agent_name="ceo") == old
    assert mem.semantic.store("knowledge", ["以前の文章"], agent_name="cto") != old
    assert mem.semantic.count("knowledge") == 4
