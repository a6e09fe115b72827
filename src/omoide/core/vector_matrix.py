"""Vectors in memory: one growable matrix, keyed by integer ids, searched exactly by cosine.

An exact search over tens of thousands of 384-dimension vectors is one matrix product, a few
milliseconds, and never misses a neighbour as an approximate index can. The episodic store
keeps each episode's vector in SQLite (the truth) and one of these beside it, built on first
use (the default ``episodic.vector_store``; :mod:`omoide.layers.episodic.chroma_vectors` keeps
them in ChromaDB instead); the semantic layer's in-process copy of a collection
(:mod:`omoide.layers.semantic.mirror`) holds its chunks' vectors in another.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

from omoide.core.similarity import similarities

__all__ = ["VectorMatrix"]


class VectorMatrix:
    """Stored vectors, by integer id, in one growable matrix for exact cosine search."""

    def __init__(self, dimension: int) -> None:
        self._dim = dimension
        self._matrix = np.zeros((0, dimension), dtype=np.float32)
        self._rowids = np.zeros(0, dtype=np.int64)
        self._size = 0
        self._position: dict[int, int] = {}

    def __len__(self) -> int:
        return self._size

    def add(self, rowids: Sequence[int], vectors: npt.NDArray[np.float32]) -> None:
        need = self._size + len(rowids)
        if need > len(self._rowids):
            capacity = max(need, 2 * len(self._rowids), 1024)
            matrix = np.zeros((capacity, self._dim), dtype=np.float32)
            matrix[: self._size] = self._matrix[: self._size]
            ids = np.zeros(capacity, dtype=np.int64)
            ids[: self._size] = self._rowids[: self._size]
            self._matrix, self._rowids = matrix, ids
        for i, rowid in enumerate(rowids):
            at = self._position.get(int(rowid))
            if at is None:
                at = self._size
                self._size += 1
                self._position[int(rowid)] = at
                self._rowids[at] = rowid
            self._matrix[at] = vectors[i]

    def remove(self, rowids: Iterable[int]) -> None:
        drop = {int(r) for r in rowids if int(r) in self._position}
        if not drop:
            return
        keep = np.array(
            [i for i in range(self._size) if int(self._rowids[i]) not in drop], dtype=np.int64
        )
        n = len(keep)
        self._matrix[:n] = self._matrix[keep]
        self._rowids[:n] = self._rowids[keep]
        self._size = n
        self._position = {int(self._rowids[i]): i for i in range(n)}

    def similarities(
        self, query: npt.NDArray[np.float32]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """Row ids and cosine similarity of every stored vector to ``query``."""
        return self._rowids[: self._size], similarities(self._matrix[: self._size], query)

    def nearest(
        self, query: npt.NDArray[np.float32], k: int
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """Row ids and cosine similarity of the ``k`` stored vectors nearest ``query``, nearest
        first (the interface :class:`~omoide.layers.episodic.chroma_vectors.ChromaVectors`
        shares)."""
        rowids, sims = self.similarities(query)
        k = min(k, len(rowids))
        if k <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        top = np.argpartition(-sims, k - 1)[:k]
        top = top[np.argsort(-sims[top], kind="stable")]
        return rowids[top].copy(), sims[top].copy()

    def vectors(self, rowids: Sequence[int]) -> npt.NDArray[np.float32]:
        """The stored vectors of ``rowids``, in order (zeros for one not stored)."""
        at = np.fromiter(
            (self._position.get(int(rowid), -1) for rowid in rowids),
            dtype=np.int64,
            count=len(rowids),
        )
        if not len(at) or at.max() < 0:
            return np.zeros((len(rowids), self._dim), dtype=np.float32)
        out = self._matrix[np.maximum(at, 0)]  # one gather (a copy), then the absent zeroed
        out[at < 0] = 0.0
        return out
