"""The replica harness at its smallest: client processes spread over two ``omoide serve``
replicas sharing one PostgreSQL database and the session's Chroma server, each replica
maintaining the store, with no error, no lost write and one maintenance run at a time.
``python -m bench.replicas`` runs 24 clients against 1, 2 and 3 replicas."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench import replicas
from bench.shared_store import SharedStore

from chroma_server import ChromaServer, new_prefix
from omoide import Config


@pytest.mark.slow
def test_clients_spread_over_two_replicas_lose_nothing(
    tmp_path: Path, postgres_db_url: str, chroma_server: ChromaServer
) -> None:
    store = SharedStore(postgres_db_url, chroma_server.url, new_prefix())
    try:
        result = replicas.run_replicas(2, 4, 3, store, tmp_path, old=6)
    finally:
        chroma_server.drop(store.prefix)
    assert result.errors == []
    assert result.lost == [] and result.unindexed == []
    assert result.clients == 4 and result.ops == 12
    assert result.writes >= 4
    assert result.maintenance_runs > 0 and result.maintenance_errors == []
    assert result.maintenance_overlaps == 0


def test_each_replicas_toml_names_the_shared_store(tmp_path: Path) -> None:
    store = SharedStore("postgresql://omoide@db.internal:5432/omoide", "http://c:8000", "b1-")
    store.write_toml(tmp_path)
    assert Config.from_toml(tmp_path / "omoide.toml") == store.config()
