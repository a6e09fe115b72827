"""The parts a shared store needs, for the benchmarks: a Chroma server and a fresh PostgreSQL
database, both thrown away afterwards.

``shared_store(server_url, workdir)`` starts ``chroma run`` on a free port of 127.0.0.1 with its
data under ``workdir``, creates a database of its own on ``server_url``'s PostgreSQL server
(whose user may ``CREATE DATABASE``), and yields a :class:`SharedStore` whose
:meth:`~SharedStore.settings` every replica (and the reader checking their writes) opens with,
as the README's ``omoide.toml`` for replicas does. On exit the database is dropped and the
server stopped.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from bench.results import terminate
from omoide import Config

#: Longest wait for a new Chroma server to answer (a busy two-core machine is slow to start it).
CHROMA_START_TIMEOUT = 120.0


@dataclass(frozen=True)
class SharedStore:
    """A PostgreSQL database and a Chroma server (under a collection prefix) to share."""

    database_url: str
    chroma_url: str
    prefix: str

    def settings(self) -> dict[str, dict[str, Any]]:
        """The settings pointing a store here (``Config.from_dict``, or an omoide.toml)."""
        return {
            "storage": {"url": self.database_url},
            "semantic": {"chroma_url": self.chroma_url, "chroma_prefix": self.prefix},
            "episodic": {"vector_store": "chroma"},
        }

    def config(self, base: Config | None = None) -> Config:
        """``base`` (the defaults unless given) on this database and Chroma server."""
        base = base or Config()
        return dataclasses.replace(
            base,
            storage=dataclasses.replace(base.storage, url=self.database_url),
            semantic=dataclasses.replace(
                base.semantic, chroma_url=self.chroma_url, chroma_prefix=self.prefix
            ),
            episodic=dataclasses.replace(base.episodic, vector_store="chroma"),
        )

    def write_toml(self, directory: Path) -> None:
        """Write :meth:`settings` as ``directory/omoide.toml``, as each replica host has it."""
        directory.mkdir(parents=True, exist_ok=True)
        lines = []
        for section, values in self.settings().items():
            lines.append(f"[{section}]")
            lines += [f"{key} = {json.dumps(value)}" for key, value in values.items()]
        (directory / "omoide.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _chroma_command() -> str:
    """The ``chroma`` CLI beside this interpreter, else the one on PATH."""
    beside = Path(sys.executable).parent / "chroma"
    found = str(beside) if beside.exists() else shutil.which("chroma")
    if found is None:
        raise RuntimeError("the `chroma` command was not found: pip install chromadb")
    return found


@contextmanager
def chroma_server(path: Path) -> Iterator[str]:
    """``chroma run`` persisting under ``path``; yields its URL once its heartbeat answers."""
    import chromadb
    from chromadb.config import Settings

    port = _free_port()
    path.mkdir(parents=True, exist_ok=True)
    log = path.parent / "chroma-server.log"
    command = [_chroma_command(), "run", "--path", str(path), "--host", "127.0.0.1"]
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*command, "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    try:
        deadline = time.monotonic() + CHROMA_START_TIMEOUT
        settings = Settings(anonymized_telemetry=False)
        while True:
            try:
                chromadb.HttpClient(host="127.0.0.1", port=port, settings=settings).heartbeat()
                break
            except Exception as exc:  # not listening yet
                if process.poll() is not None or time.monotonic() > deadline:
                    tail = log.read_text(encoding="utf-8", errors="replace")[-2000:]
                    raise RuntimeError(f"the Chroma server did not start ({exc}):\n{tail}") from exc
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        terminate(process, timeout=30)


@contextmanager
def fresh_database(server_url: str) -> Iterator[str]:
    """A new database (``omoide_bench_<hex>``) on ``server_url``'s server; yields its URL and
    drops it afterwards, disconnecting whoever is still in it."""
    import psycopg
    from psycopg import sql

    name = f"omoide_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield urlunsplit(urlsplit(server_url)._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(server_url, autocommit=True) as conn:
            drop = "DROP DATABASE IF EXISTS {} WITH (FORCE)"
            conn.execute(sql.SQL(drop).format(sql.Identifier(name)))


@contextmanager
def shared_store(
    server_url: str, workdir: Path, chroma_url: str | None = None
) -> Iterator[SharedStore]:
    """A fresh database on ``server_url`` and a Chroma server of our own under ``workdir``
    (or the one ``chroma_url`` names, under a new collection prefix)."""
    prefix = f"b{uuid.uuid4().hex[:8]}-"
    with fresh_database(server_url) as database_url:
        if chroma_url is not None:
            yield SharedStore(database_url, chroma_url, prefix)
            return
        with chroma_server(workdir / "chroma" / "db") as url:
            yield SharedStore(database_url, url, prefix)
