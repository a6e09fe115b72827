"""Shared fixtures: a manual clock and a Memory in a temporary data directory."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from omoide import ManualClock, Memory


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(datetime(2026, 1, 1, tzinfo=UTC))


@pytest.fixture
def mem(tmp_path: Path, clock: ManualClock) -> Iterator[Memory]:
    with Memory(tmp_path / "data", clock=clock) as memory:
        yield memory
