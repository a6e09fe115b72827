"""The concurrency harness at a bounded size: REST and MCP clients in their own processes
against one server that maintains its store meanwhile, and processes racing to open one
directory. ``python -m bench.concurrency`` runs 24 clients."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench import concurrency


@pytest.mark.slow
def test_clients_and_maintenance_share_one_server_without_errors_or_loss(
    tmp_path: Path,
) -> None:
    result = concurrency.ConcurrencyResult()
    concurrency.run_server(4, 10, tmp_path / "data", result)
    assert result.errors == []
    assert result.locked_errors == 0
    assert result.lost == []
    assert result.clients == 4 and result.rest_clients == 2 and result.mcp_clients == 2
    assert result.ops == 40
    assert result.writes >= 16
    assert result.maintenance_runs > 0
    assert result.maintenance_errors == []


@pytest.mark.slow
def test_exactly_one_process_wins_an_open_race(tmp_path: Path) -> None:
    result = concurrency.ConcurrencyResult()
    concurrency.run_race(1, 3, tmp_path / "data", result)
    assert result.race_winners == [1]
    assert result.race_problems == []
