"""BLAS on one thread while the main thread recalls: its products are small, and its
idle threads would hold the cores the next question's embedding needs.

A question about the present compares its candidates with each other as matrices (a few
hundred by 384 dimensions, and their words as rows of 0/1: :mod:`omoide.recall.restatements`).
NumPy hands each product to its BLAS, which splits it over every core; BLAS's threads then
spin for a while, waiting for more work. A recall begins by embedding its question on every
core too (the embedder's OpenMP threads), and the next question's embedding waited for the
cores the spinning threads held. On two cores, 150 such questions asked one after the other
took 55-56 ms p50 and 103-121 ms p95; with BLAS on one thread, 45.6 and 62-67 ms
(``bench/RESULTS.md``, change 22).

:func:`single_threaded` runs BLAS on one thread inside its scope, through ``threadpoolctl``
(scikit-learn does the same around its OpenMP code), and restores the count after. The count
is the process's, and ``threadpoolctl`` lets one thread at a time control it, so the scope
limits it in the main thread only, where a single-threaded application recalls, and leaves
it alone in other threads. A server, whose recalls run in worker threads, owns its process
and limits the count for all of it while it serves (:func:`process_wide`, opened in its main
thread): in three paired measurements of recalls in a worker thread, questions about the
present took 1.4-8 ms less at p50 with it (``bench/RESULTS.md``, change 23). Products the
application computes in other threads while a recall runs in the main one run on one thread
as well: slower, never wrong.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

from threadpoolctl import ThreadpoolController

__all__ = ["process_wide", "single_threaded"]


@contextmanager
def single_threaded() -> Iterator[None]:
    """BLAS on one thread inside the scope, in the main thread (the module's docstring)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    with process_wide():
        yield


@contextmanager
def process_wide() -> Iterator[None]:
    """BLAS on one thread in every thread of the process inside the scope: a server's, around
    its serving. Open it in the main thread (``threadpoolctl`` lets another thread change
    nothing while the main one controls the count)."""
    with _blas().limit(limits=1):
        yield


@cache
def _blas() -> Any:
    """The BLAS libraries loaded when the first scope opens (NumPy's: omoide imports NumPy
    first), found once: looking through the process's libraries takes 0.5 ms."""
    return ThreadpoolController().select(user_api="blas")
