"""The MCP server: in-process with the SDK's Client, over streamable HTTP with a key, and
once over a real stdio subprocess."""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from conftest import LiveServer
from omoide import Memory
from omoide.server.mcp_server import create_mcp_server, local_operations
from omoide.service.local import Caller

pytestmark = pytest.mark.both_engines

TOOLS = {
    "remember",
    "search_episodes",
    "store_knowledge",
    "search_knowledge",
    "pin",
    "get_procedure",
    "report_outcome",
    "recall",
    "recent_episodes",
    "update_episode",
    "delete_episode",
    "add_messages",
    "cache_information",
    "get_cached_information",
}


def run(server: Any, scenario: Callable[[Client], Awaitable[Any]]) -> Any:
    async def main() -> Any:
        async with Client(server) as client:
            return await scenario(client)

    return anyio.run(main)


def text(result: Any) -> str:
    return "\n".join(part.text for part in result.content if hasattr(part, "text"))


@pytest.fixture
def ceo_server(mem: Memory) -> Any:
    return create_mcp_server(local_operations(mem, Caller.for_agent(mem, "ceo")))


# -- in process --------------------------------------------------------------------------


def test_tools_are_described_for_an_llm(ceo_server: Any) -> None:
    listed = run(ceo_server, lambda c: c.list_tools())
    tools = {t.name: t for t in listed.tools}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert tool.description and len(tool.description) > 40, tool.name
        for name, prop in tool.input_schema["properties"].items():
            assert prop.get("description"), f"{tool.name}.{name} has no description"
    assert tools["search_knowledge"].annotations.read_only_hint is True
    assert tools["remember"].annotations.read_only_hint is False

    async def instructions(c: Client) -> str | None:
        return c.instructions

    assert "remember" in (run(ceo_server, instructions) or "")


def test_remember_then_search_in_japanese(ceo_server: Any, mem: Memory) -> None:
    async def scenario(c: Client) -> tuple[Any, Any]:
        stored = await c.call_tool(
            "remember",
            {
                "description": "価格設定は¥500からスタートして",
                "event_type": "feedback",
                "tags": ["pricing"],
            },
        )
        found = await c.call_tool("search_episodes", {"query": "価格はいくらから？"})
        return stored, found

    stored, found = run(ceo_server, scenario)
    assert not stored.is_error
    episode = stored.structured_content
    assert episode["agent_name"] == "ceo" and episode["importance"] == 0.9
    assert mem.episodic.get(episode["id"]).description == "価格設定は¥500からスタートして"
    hits = found.structured_content["result"]
    assert hits[0]["id"] == episode["id"] and hits[0]["score"] > 0
    assert "価格設定" in text(found)  # the text content carries the same, unescaped


def test_knowledge_pin_and_procedures(ceo_server: Any, mem: Memory) -> None:
    mem.procedural.register("write_article", "write_article|~記事", "見出し → 下書き")

    async def scenario(c: Client) -> dict[str, Any]:
        out = {}
        out["store"] = await c.call_tool(
            "store_knowledge",
            {
                "content": "ChromaDBはコサイン類似度のHNSWで近傍検索を行う。",
                "metadata": {"topic": "db"},
            },
        )
        out["search"] = await c.call_tool(
            "search_knowledge", {"query": "how does vector search work?", "where": {"topic": "db"}}
        )
        out["pin"] = await c.call_tool(
            "pin", {"key": "floor", "content": "¥500未満にしない", "reason": "operator"}
        )
        out["procedure"] = await c.call_tool("get_procedure", {"task": "技術記事を書く"})
        out["outcome"] = await c.call_tool(
            "report_outcome", {"name": "write_article", "quality_score": 9, "success": True}
        )
        return out

    out = run(ceo_server, scenario)
    assert all(not r.is_error for r in out.values()), {k: text(v) for k, v in out.items()}
    doc_id = out["store"].structured_content["ids"][0]
    assert out["search"].structured_content["result"][0]["doc_id"] == doc_id
    assert mem.semantic.get("knowledge", doc_id).agent_name == "ceo"
    assert [p.content for p in mem.working("ceo").pins] == ["¥500未満にしない"]
    assert out["procedure"].structured_content["best"]["name"] == "write_article"
    assert out["outcome"].structured_content["execution_count"] == 1


def test_bad_arguments_and_refusals_are_tool_errors(ceo_server: Any, mem: Memory) -> None:
    mem.episodic.record("cto", "decision", "the cto's private plan", scope="private")

    async def scenario(c: Client) -> dict[str, Any]:
        return {
            "importance": await c.call_tool("remember", {"description": "x", "importance": 5}),
            "collection": await c.call_tool(
                "store_knowledge", {"content": "x", "collection": "nope"}
            ),
            "blank": await c.call_tool("remember", {"description": "   "}),
            "missing": await c.call_tool(
                "report_outcome", {"name": "nope", "quality_score": 5, "success": True}
            ),
            "private": await c.call_tool("search_episodes", {"query": "private plan"}),
        }

    out = run(ceo_server, scenario)
    assert out["importance"].is_error and "importance" in text(out["importance"])
    assert out["collection"].is_error and "collection" in text(out["collection"])
    assert out["blank"].is_error and "description" in text(out["blank"])
    assert out["missing"].is_error and "NotFoundError" in text(out["missing"])
    assert out["private"].structured_content["result"] == []
    assert mem.episodic.count() == 1


def test_recall_gives_a_budgeted_context(ceo_server: Any, mem: Memory) -> None:
    mine = mem.episodic.record("ceo", "decision", "価格は月額500円からに決めた")
    hidden = mem.episodic.record("cto", "decision", "価格の内部メモ（非公開）", scope="private")
    mem.semantic.store("knowledge", ["The price list is reviewed every quarter."])

    result = run(
        ceo_server, lambda c: c.call_tool("recall", {"query": "価格", "budget_tokens": 400})
    )
    assert not result.is_error, text(result)
    context = result.structured_content
    assert context["agent_name"] == "ceo" and context["tokens"] <= 400
    ids = [i["id"] for i in context["items"]]
    assert mine.id in ids and hidden.id not in ids
    assert "月額500円" in context["context"] and "内部メモ" not in context["context"]
    assert {i["layer"] for i in context["items"]} <= {"episodic", "semantic", "working"}


def test_forgetting_has_no_agent_tool_and_its_preview_stays_scoped(
    ceo_server: Any, mem: Memory, clock: Any
) -> None:
    """Forgetting is the operator's job, so MCP offers no tool for it (issue 19); the preview
    an agent gets elsewhere (REST, the CLI) still shows only what it may read."""
    from omoide.service.local import LocalOperations

    stale = mem.episodic.record("ceo", "note", "an unimportant note", importance=0.1)
    other = mem.episodic.record("cto", "note", "cto's own note", importance=0.1, scope="private")
    mem.episodic.record("ceo", "feedback", "人間からの意見", context={"source": "human"})
    clock.advance(days=400)

    listed = run(ceo_server, lambda c: c.list_tools())
    assert not any("forget" in t.name for t in listed.tools)
    plan = LocalOperations(mem, Caller.for_agent(mem, "ceo")).forget(dry_run=True)
    assert plan["dry_run"] is True
    acted = {a["item_id"] for p in plan["policies"] for a in p["acted"]}
    assert stale.id in acted and other.id not in acted
    assert mem.episodic.count() == 3 and mem.audit() == []


def test_cache_information_then_get_it_while_fresh(
    ceo_server: Any, mem: Memory, clock: Any
) -> None:
    async def scenario(c: Client) -> dict[str, Any]:
        out = {}
        out["put"] = await c.call_tool(
            "cache_information",
            {
                "key": "https://example.com/rates",
                "content": "1 USD は 150.2 円",
                "source": "example.com",
                "ttl_days": 1,
            },
        )
        out["get"] = await c.call_tool(
            "get_cached_information", {"key": "https://example.com/rates"}
        )
        out["bad"] = await c.call_tool(
            "cache_information", {"key": "k", "content": "x", "source": "s", "ttl_days": 0}
        )
        return out

    out = run(ceo_server, scenario)
    assert not out["put"].is_error and out["put"].structured_content["agent_name"] == "ceo"
    assert out["get"].structured_content["document"] == "1 USD は 150.2 円"
    assert out["bad"].is_error and "ttl_days" in text(out["bad"])
    clock.advance(days=2)
    gone = run(
        ceo_server,
        lambda c: c.call_tool("get_cached_information", {"key": "https://example.com/rates"}),
    )
    assert gone.is_error and "NotFoundError" in text(gone)


def test_layer_statistics_are_resources(ceo_server: Any, mem: Memory) -> None:
    mem.episodic.record("ceo", "decision", "one")

    async def scenario(c: Client) -> dict[str, Any]:
        listed = await c.list_resources()
        templates = await c.list_resource_templates()
        whole = await c.read_resource("omoide://stats")
        layer = await c.read_resource("omoide://stats/episodic")
        try:
            await c.read_resource("omoide://stats/nope")
            unknown = None
        except Exception as exc:
            unknown = str(exc)
        return {
            "listed": listed,
            "templates": templates,
            "whole": whole,
            "layer": layer,
            "unknown": unknown,
        }

    out = run(ceo_server, scenario)
    assert "omoide://stats" in {str(r.uri) for r in out["listed"].resources}
    assert "omoide://stats/{layer}" in {t.uri_template for t in out["templates"].resource_templates}
    stats = json.loads(out["whole"].contents[0].text)
    assert stats["layers"]["episodic"]["episodes"] == 1
    assert json.loads(out["layer"].contents[0].text)["episodes"] == 1
    assert out["unknown"] is not None and "unknown layer" in out["unknown"]


def test_without_an_agent_every_tool_call_is_refused(mem: Memory) -> None:
    server = create_mcp_server(local_operations(mem))
    result = run(server, lambda c: c.call_tool("remember", {"description": "x"}))
    assert result.is_error and "AuthenticationError" in text(result)
    assert mem.episodic.count() == 0


# -- streamable HTTP, in the REST server's process -----------------------------------------


def http_client(live_server: LiveServer, agent: str) -> Any:
    headers = {"Authorization": f"Bearer {live_server.keys[agent]}"}
    return streamable_http_client(
        f"{live_server.url}/mcp", http_client=create_mcp_http_client(headers=headers)
    )


def test_mcp_over_http_shares_the_rest_servers_memory(live_server: LiveServer) -> None:
    async def remember(c: Client) -> Any:
        return await c.call_tool(
            "remember", {"description": "MCP経由の決定: 藍色をブランド色に", "scope": "private"}
        )

    stored = run(http_client(live_server, "designer"), remember)
    assert not stored.is_error, text(stored)
    episode = stored.structured_content
    assert episode["agent_name"] == "designer"
    with live_server.client("designer") as designer, live_server.client("cto") as cto:
        assert designer.get(f"/v1/episodes/{episode['id']}").json()["description"].startswith("MCP")
        assert cto.get(f"/v1/episodes/{episode['id']}").status_code == 404

    async def search(c: Client) -> Any:
        return await c.call_tool("search_episodes", {"query": "ブランド色", "top_k": 50})

    as_cto = run(http_client(live_server, "cto"), search).structured_content["result"]
    assert episode["id"] not in {e["id"] for e in as_cto}
    as_designer = run(http_client(live_server, "designer"), search).structured_content["result"]
    assert episode["id"] in {e["id"] for e in as_designer}


def test_mcp_over_http_needs_a_key(live_server: LiveServer) -> None:
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
        },
    }
    headers = {"Accept": "application/json, text/event-stream"}
    for auth in ({}, {"Authorization": "Bearer omk_000000000000_" + "y" * 43}):
        response = httpx.post(
            f"{live_server.url}/mcp", json=initialize, headers={**headers, **auth}, timeout=30
        )
        assert response.status_code == 401
        assert response.json()["error"] == "AuthenticationError"


# -- real subprocesses -------------------------------------------------------------------


def stdio(*args: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "omoide", "mcp", *args])


def test_stdio_subprocess_remembers_into_its_directory(tmp_path: Path) -> None:
    data = tmp_path / "data"

    async def scenario(c: Client) -> Any:
        names = {t.name for t in (await c.list_tools()).tools}
        stored = await c.call_tool(
            "remember", {"description": "stdio経由で記録", "event_type": "success"}
        )
        return names, stored

    names, stored = run(stdio("--path", str(data), "--agent", "ceo"), scenario)
    assert names == TOOLS
    assert not stored.is_error, text(stored)
    with Memory(data) as mem:
        episode = mem.episodic.get(stored.structured_content["id"])
    assert (episode.agent_name, episode.description) == ("ceo", "stdio経由で記録")


def test_stdio_subprocess_can_go_through_a_running_server(live_server: LiveServer) -> None:
    async def scenario(c: Client) -> Any:
        return await c.call_tool("remember", {"description": "proxy through the server"})

    params = stdio("--url", live_server.url, "--key", live_server.keys["cto"])
    stored = run(params, scenario)
    assert not stored.is_error, text(stored)
    with live_server.client("cto") as cto:
        got = cto.get(f"/v1/episodes/{stored.structured_content['id']}").json()
    assert got["agent_name"] == "cto"


def test_standalone_streamable_http_server(mem: Memory) -> None:
    """``omoide mcp --transport http``: the MCP endpoint alone, keys required."""
    from conftest import run_uvicorn
    from omoide.server.mcp_server import create_mcp_app
    from omoide.service.keys import KeyStore

    assert mem.db is not None
    _, key = KeyStore(mem.db, clock=mem.clock).add("cto")
    with run_uvicorn(create_mcp_app(mem)) as url:
        assert httpx.get(f"{url}/healthz", timeout=30).json()["status"] == "ok"
        assert httpx.post(f"{url}/mcp", json={}, timeout=30).status_code == 401
        transport = streamable_http_client(
            f"{url}/mcp",
            http_client=create_mcp_http_client(headers={"Authorization": f"Bearer {key}"}),
        )
        stored = run(transport, lambda c: c.call_tool("remember", {"description": "over HTTP"}))
    assert not stored.is_error, text(stored)
    assert mem.episodic.get(stored.structured_content["id"]).agent_name == "cto"
