"""The REST and MCP frictions of issue 19, and ``add`` on both (issue 22): against a real
server (the live-server fixture), through the MCP SDK's client, and one stdio subprocess."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from conftest import LiveServer, mcp_call
from omoide import Memory
from omoide.server.mcp_server import create_mcp_server, local_operations
from omoide.service.local import Caller

pytestmark = pytest.mark.both_engines

# -- REST ------------------------------------------------------------------------------------


def test_docs_pages_are_served_without_a_cdn(live_server: LiveServer) -> None:
    with live_server.client() as anyone:
        for page in ("/docs", "/redoc"):
            answer = anyone.get(page)
            assert answer.status_code == 200 and "text/html" in answer.headers["content-type"]
            assert "cdn." not in answer.text and "/openapi.json" in answer.text
        assert "swagger-ui-bundle.js" in anyone.get("/docs").text  # the interactive page
        assert "redoc.standalone.js" in anyone.get("/redoc").text
        for asset in ("swagger-ui-bundle.js", "swagger-ui.css", "redoc.standalone.js"):
            assert anyone.get(f"/docs-assets/{asset}").status_code == 200, asset


def test_collections_query_takes_query_like_episode_search(live_server: LiveServer) -> None:
    with live_server.client("ceo") as ceo:
        stored = ceo.post(
            "/v1/collections/knowledge/documents", json={"documents": ["FastAPI の依存性注入"]}
        )
        assert stored.status_code == 201
        for field in ("query", "query_text"):
            found = ceo.post("/v1/collections/knowledge/query", json={field: "依存性注入"})
            assert found.status_code == 200 and found.json(), (field, found.text)
        both = ceo.post("/v1/collections/knowledge/query", json={"query": "a", "query_text": "b"})
        assert both.status_code == 422
    schema = live_server.client().get("/openapi.json").json()
    assert "query" in schema["components"]["schemas"]["QueryRequest"]["properties"]


def test_every_error_has_one_body(live_server: LiveServer) -> None:
    shapes = []
    with live_server.client("ceo") as ceo, live_server.client() as nobody:
        shapes.append(nobody.get("/v1/episodes"))  # 401
        shapes.append(ceo.post("/v1/episodes", json={"event_type": "x"}))  # 422 (FastAPI)
        shapes.append(ceo.post("/v1/episodes", json={"event_type": "x", "description": " "}))
        shapes.append(ceo.get("/v1/episodes/ep-absent"))  # 404
        shapes.append(ceo.get("/v1/no-such-route"))  # 404 (routing)
    assert [r.status_code for r in shapes] == [401, 422, 422, 404, 404]
    for answer in shapes:
        body = answer.json()
        assert set(body) == {"error", "detail", "field", "problems"}, body
        assert isinstance(body["detail"], str) and body["error"]
    assert shapes[1].json()["field"] == "description" and shapes[1].json()["problems"]


def test_a_request_is_logged_with_its_agent(
    live_server: LiveServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="omoide.server")
    with live_server.client("cto") as cto:
        assert cto.get("/v1/whoami").status_code == 200
    lines = [r.getMessage() for r in caplog.records if r.name == "omoide.server"]
    assert any(line.startswith("GET /v1/whoami 200 ") and "agent=cto" in line for line in lines)


def test_messages_are_added_as_the_keys_agent(live_server: LiveServer) -> None:
    body = {
        "session_id": "chat-1",
        "messages": [
            {"role": "user", "content": "来週のリリースは金曜にしよう"},
            {"role": "assistant", "content": "了解、金曜で進めます", "name": "helper"},
        ],
    }
    with live_server.client("designer") as designer:
        added = designer.post("/v1/messages", json=body)
        assert added.status_code == 201, added.text
        report = added.json()
        assert report["agent_name"] == "designer" and len(report["episode_ids"]) == 2
        again = designer.post("/v1/messages", json=body).json()
        assert again["episode_ids"] == [] and len(again["duplicates"]) == 2
        named = designer.post("/v1/messages", json={**body, "agent_name": "ceo"})
        assert named.status_code == 422  # the key decides the agent
        too_many = {"session_id": "s", "messages": [{"content": "x"}] * 1001}
        assert designer.post("/v1/messages", json=too_many).status_code == 422
    episode = live_server.mem.episodic.get(report["episode_ids"][0])
    assert episode.agent_name == "designer"


# -- MCP -------------------------------------------------------------------------------------


def run(server: Any, scenario: Any) -> Any:
    async def main() -> Any:
        async with Client(server) as client:
            return await scenario(client)

    return anyio.run(main)


def text(result: Any) -> str:
    return "\n".join(part.text for part in result.content if hasattr(part, "text"))


def test_recall_answers_with_the_rendered_memories(mem: Memory) -> None:
    server = create_mcp_server(local_operations(mem, Caller.for_agent(mem, "ceo")))
    mem.episodic.record("ceo", "decision", "価格は月額500円からに決めた")
    result = run(server, lambda c: c.call_tool("recall", {"query": "価格"}))
    assert text(result).startswith("<memories") and "月額500円" in text(result)
    assert result.structured_content["items"]


def test_agents_remember_list_update_and_delete_their_own(mem: Memory) -> None:
    ceo = create_mcp_server(local_operations(mem, Caller.for_agent(mem, "ceo")))
    cto = create_mcp_server(local_operations(mem, Caller.for_agent(mem, "cto")))
    stored = run(ceo, lambda c: c.call_tool("remember", {"description": "ビルドが落ちた"}))
    episode_id = stored.structured_content["id"]
    assert text(stored).startswith(f"remembered {episode_id}") and "\n" not in text(stored)
    recent = run(cto, lambda c: c.call_tool("recent_episodes", {}))
    assert episode_id in text(recent)
    fix = {"episode_id": episode_id, "outcome": "キャッシュを消して直った"}
    assert run(cto, lambda c: c.call_tool("update_episode", fix)).is_error
    updated = run(ceo, lambda c: c.call_tool("update_episode", fix))
    assert not updated.is_error and mem.episodic.get(episode_id).outcome == fix["outcome"]
    assert run(cto, lambda c: c.call_tool("delete_episode", {"episode_id": episode_id})).is_error
    deleted = run(ceo, lambda c: c.call_tool("delete_episode", {"episode_id": episode_id}))
    assert not deleted.is_error and mem.episodic.count() == 0


def test_add_messages_over_http_is_the_keys_agent(live_server: LiveServer) -> None:
    result = mcp_call(
        live_server,
        "cto",
        "add_messages",
        {"session_id": "mcp-chat", "messages": [{"role": "user", "content": "DBはPostgresに"}]},
    )
    assert not result.is_error, text(result)
    assert text(result).startswith("cto/mcp-chat: 1 recorded")
    (episode_id,) = result.structured_content["episode_ids"]
    assert live_server.mem.episodic.get(episode_id).agent_name == "cto"


def test_mcp_through_a_server_without_a_key_fails_at_start(tmp_path: Any) -> None:
    env = {"PATH": "", "PYTHONPATH": ":".join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-m", "omoide", "mcp", "--url", "http://127.0.0.1:9"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1 and "API key" in done.stderr, done.stderr


def test_the_server_says_when_it_stops(mem: Memory, caplog: pytest.LogCaptureFixture) -> None:
    from conftest import run_uvicorn
    from omoide.server.rest import create_app

    caplog.set_level(logging.INFO, logger="omoide.server")
    with run_uvicorn(create_app(mem, mcp=False, dashboard=False)) as url:
        import httpx

        assert httpx.get(f"{url}/healthz").status_code == 200
    messages = [r.getMessage() for r in caplog.records if r.name == "omoide.server"]
    assert any(m.startswith("GET /healthz 200") for m in messages)
    assert any("server stopped" in m for m in messages)


def test_start_lines_have_the_logs_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The lines ``omoide serve`` prints before uvicorn starts carry the log's ISO time."""
    import re

    from omoide.cli.commands import _say, _warn_about_keys

    with Memory(tmp_path / "m") as memory:
        _warn_about_keys(memory, "0.0.0.0")
        _say(memory, "INFO", "serving")
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 3
    iso = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4} (INFO|WARNING) omoide\.server: "
    assert all(re.match(iso, line) for line in lines), lines
    assert "no API keys yet" in lines[0] and "reachable beyond this machine" in lines[1]
