"""Cosine similarities of a recall: a question against the stored vectors without BLAS's
threads, the found items against each other with them.

A question's vector against the stored ones is a matrix-vector product of ten thousand rows
in a fraction of a millisecond. Handed to NumPy's ``@``, it goes to the BLAS library, which
wakes a thread per core for it; right after the embedder has run (its OpenMP threads keep
spinning for a while after each embedding) those threads wait for the same cores, and a
product of a fraction of a millisecond takes several. Measured on 2 cores at 10,000 episodes
and 10,000 documents: ``Memory.recall`` p50 / p95 45 / 120 ms with ``@``, 34 / 47 ms with
NumPy's own single-threaded loops (``einsum``), which are slower on an idle machine (0.56
against 0.13 ms for 10,000 × 384) and never wait. Unlike limiting BLAS's threads, nothing of
the process's state changes.

The similarities of a few hundred found items with each other (:func:`pairwise`) are a
matrix product, where BLAS's blocked kernels are ten times faster than those loops (0.3
against 3 ms for 600 × 384), the wait for its threads included: a recall about the present
took 58.5 against 60.3 ms p50 with ``@``, alternating the two over 400 questions.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["pairwise", "similarities"]


def similarities(
    matrix: npt.NDArray[np.float32], vector: npt.NDArray[np.float32]
) -> npt.NDArray[np.float32]:
    """Each row of ``matrix`` dotted with ``vector`` (their cosines, for unit vectors)."""
    return np.asarray(np.einsum("ij,j->i", matrix, vector), dtype=np.float32)


def pairwise(matrix: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """Every row of ``matrix`` dotted with every other."""
    return np.asarray(matrix @ matrix.T, dtype=np.float32)
