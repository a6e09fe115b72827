"""A real Chroma server for the tests: ``chroma run`` on a free port of 127.0.0.1.

The server starts in about a second (a few tenths of a second of CPU) and idles at no CPU,
so one serves the whole session; each test's stores get collection names of their own
(``semantic.chroma_prefix``), so tests sharing it never see each other's data.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from omoide import Config

#: Longest wait for a new server's heartbeat (a busy two-core machine can be slow to start it).
START_TIMEOUT = 60.0

#: Run a test on every backend: ``@ON_BOTH_BACKENDS`` (see conftest's ``chroma_backend``): the
#: embedded default, a Chroma server, and PostgreSQL with a Chroma server.
ON_BOTH_BACKENDS = pytest.mark.parametrize(
    "chroma_backend", ["embedded", "server", "postgres"], indirect=True
)


def chroma_command() -> str:
    """The ``chroma`` command of this interpreter's environment (else the one on PATH); a
    missing one fails the test that needs it, loudly, rather than skipping it."""
    beside = Path(sys.executable).parent / "chroma"
    found = str(beside) if beside.exists() else shutil.which("chroma")
    if found is None:
        pytest.fail(
            f"the `chroma` command was not found (looked beside {sys.executable} and on PATH); "
            "the server tests need ChromaDB's CLI: pip install chromadb",
            pytrace=False,
        )
    return found


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class ChromaServer:
    """A ``chroma run`` process serving ``url`` from ``path``; its output goes to ``log``."""

    url: str
    port: int
    path: Path
    log: Path
    process: subprocess.Popen[bytes]

    _client: Any = field(default=None, repr=False, compare=False)

    def client(self) -> Any:
        """A client of this server, made once (each costs tens of milliseconds, loading the
        certificates of an HTTP client that could speak TLS)."""
        import chromadb
        from chromadb.config import Settings

        if self._client is None:
            self._client = chromadb.HttpClient(
                host="127.0.0.1", port=self.port, settings=Settings(anonymized_telemetry=False)
            )
        return self._client

    def config(self, base: Config, prefix: str | None = None, **episodic: Any) -> Config:
        """``base`` pointed at this server, under a collection prefix of its own (a new one
        unless given); ``episodic`` changes fields of the episodic section."""
        semantic = replace(base.semantic, chroma_url=self.url, chroma_prefix=prefix or new_prefix())
        return replace(base, semantic=semantic, episodic=replace(base.episodic, **episodic))

    def drop(self, prefix: str) -> None:
        """Delete the collections whose names start with ``prefix``."""
        client = self.client()
        for coll in client.list_collections():
            if coll.name.startswith(prefix):
                client.delete_collection(coll.name)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)


def new_prefix() -> str:
    """A collection-name prefix no other test uses."""
    return f"t{uuid.uuid4().hex[:10]}-"


def start_chroma_server(path: Path, timeout: float = START_TIMEOUT) -> ChromaServer:
    """Start ``chroma run`` on a free port of 127.0.0.1, persisting under ``path``, and
    return once its heartbeat answers (failing the test if it exits or never answers)."""
    command = chroma_command()
    port = free_port()
    path.mkdir(parents=True, exist_ok=True)
    log = path.parent / "chroma-server.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [command, "run", "--path", str(path), "--port", str(port), "--host", "127.0.0.1"],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    server = ChromaServer(f"http://127.0.0.1:{port}", port, path, log, process)
    deadline = time.monotonic() + timeout
    while True:
        try:
            server.client().heartbeat()
            return server
        except Exception as exc:  # not listening yet: the client raises on connect
            failure = exc
        if process.poll() is not None or time.monotonic() > deadline:
            server.stop()
            tail = log.read_text(encoding="utf-8", errors="replace")[-2000:]
            pytest.fail(
                f"the Chroma server on port {port} did not answer its heartbeat "
                f"(exit code {process.returncode}, last error {failure!r}):\n{tail}",
                pytrace=False,
            )
        time.sleep(0.05)
