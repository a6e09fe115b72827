"""BLAS on one thread while the main thread recalls: its products are small, and threads
that wait for a core after them slow the next question's embedding.

A question about the present compares its candidates with each other as matrices (a few
hundred by 384 dimensions, and their words as rows of 0/1: :mod:`omoide.recall.restatements`).
NumPy hands each product to its BLAS, which splits it over every core, and BLAS's threads
then spin, waiting for more work, for about a tenth of a second. A recall begins by
embedding its question on every core too (the embedder's OpenMP threads), so the next
recall's embedding waited for cores the spinning threads held: on two cores, 150 such
questions one after the other took 58.7 ms p50 and 135 ms p95, the embedding 33 ms of the
p50 and up to 115 ms of the slowest (10-14 ms alone). With BLAS on one thread: 43.5-46.4
and 60.3-62.7 ms (``bench/RESULTS.md``, change 22).

:func:`single_threaded` runs BLAS on one thread inside its scope, through ``threadpoolctl``
(scikit-learn does the same around its OpenMP code), and restores the count after. The count
is the process's, and ``threadpoolctl`` lets one thread at a time control it, so the scope
limits it in the main thread only — where a single-threaded application recalls — and
leaves it alone elsewhere (a server's worker threads: a server may limit BLAS for its whole
process). Products the application computes in other threads while a recall runs in the
main one run on one thread too: slower, never wrong.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

from threadpoolctl import ThreadpoolController

__all__ = ["single_threaded"]


@contextmanager
def single_threaded() -> Iterator[None]:
    """BLAS on one thread inside the scope, in the main thread (the module's docstring)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    with _blas().limit(limits=1):
        yield


@cache
def _blas() -> Any:
    """The BLAS libraries loaded when the first scope opens (NumPy's: omoide imports NumPy
    first), found once: looking through the process's libraries takes 0.5 ms."""
    return ThreadpoolController().select(user_api="blas")
