"""BLAS on one thread while the main thread recalls (omoide.core.blas): one thread inside
the scope, the application's count back after it, other threads left alone."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

import omoide.core.blas as blas
import omoide.recall.pipeline as pipeline
from omoide import Memory
from omoide.core.blas import single_threaded


def blas_threads() -> list[int]:
    """The thread count of every BLAS library loaded (NumPy's at least)."""
    counts = [int(lib["num_threads"]) for lib in threadpool_info() if lib["user_api"] == "blas"]
    assert counts, "NumPy loaded no BLAS library threadpoolctl can see"
    return counts


@pytest.fixture
def two_threads() -> Iterator[None]:
    """The application runs BLAS on two threads (whatever the machine's cores)."""
    np.ones((2, 2)) @ np.ones((2, 2))  # NumPy's BLAS loaded
    with threadpool_limits(limits=2, user_api="blas"):
        assert set(blas_threads()) == {2}
        yield


def test_one_thread_inside_and_the_count_back_after(two_threads: None) -> None:
    with single_threaded():
        assert set(blas_threads()) == {1}
        with single_threaded():  # nested
            assert set(blas_threads()) == {1}
        assert set(blas_threads()) == {1}
    assert set(blas_threads()) == {2}


def test_another_thread_leaves_the_count_alone(
    two_threads: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The count is the process's and one thread controls it: a worker's scope (a server's
    request) does not touch it."""
    touched: list[str] = []
    monkeypatch.setattr(blas, "_blas", lambda: touched.append("limited"))
    seen: list[list[int]] = []

    def worker() -> None:
        with single_threaded():
            seen.append(blas_threads())

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join(timeout=10)
    assert seen == [[2] * len(seen[0])] and not touched
    assert set(blas_threads()) == {2}


def test_an_error_inside_still_restores(two_threads: None) -> None:
    with pytest.raises(RuntimeError), single_threaded():
        raise RuntimeError("a recall failed")
    assert set(blas_threads()) == {2}


def test_a_recall_multiplies_on_one_thread(
    mem: Memory, two_threads: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem.episodic.record("ops", "decision", "The nightly backup moved to 02:00.")
    during: list[list[int]] = []
    score = pipeline.score

    def watched(*args: Any, **kwargs: Any) -> Any:
        during.append(blas_threads())
        return score(*args, **kwargs)

    monkeypatch.setattr(pipeline, "score", watched)
    context = mem.recall("When does the nightly backup run now?", agent_name="ops")
    assert context.ids("episodic")
    assert during and all(set(counts) == {1} for counts in during)
    assert set(blas_threads()) == {2}


def test_a_server_serves_with_blas_on_one_thread(
    mem: Memory, two_threads: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server's recalls run in worker threads: it limits BLAS for its process while it
    serves, and gives the count back when it stops."""
    import uvicorn

    from omoide.server.rest import serve

    serving: list[list[int]] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **options: serving.append(blas_threads()))
    serve(mem, mcp=False, maintenance=False, dashboard=False)
    assert serving and set(serving[0]) == {1}
    assert set(blas_threads()) == {2}
