"""Copies: one text by one writer, recorded again and again.

An agent that writes the same note every day ("昼休憩のローテーションは通常どおり。") leaves
copies with one vector and one set of words. Among a question's candidates they would take a
place of each pool for every day they were written, and push out the texts that answer it.
The episodic search (:mod:`omoide.layers.episodic.search`) reads its pools again
:data:`COPIES` times as deep when copies came among them, and keeps one of each.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

__all__ = ["COPIES", "one_per_text"]

#: How many times deeper than each pool candidates are read again when copies of one note
#: came among them, so that the pool holds as many distinct texts.
COPIES = 4


def one_per_text(
    keys: dict[int, float],
    dense: dict[int, float],
    vectors: Mapping[int, npt.NDArray[np.float32]],
    pool: int,
    nearest: int,
) -> tuple[dict[int, float], dict[int, float]]:
    """The best ``pool`` by words and ``nearest`` by meaning (and the meaning of those found by
    words), one episode per vector: copies of one note by one writer, written every day, have
    one, and would otherwise take a place of each pool for every day. The newest copy (the
    highest row id) stands for its copies, with the best words any of them had read.

    Copies are told by their ``vectors``, compared only where two similarities to the query
    are equal: different texts can meet on one float, and neither may stand for the other.
    """
    by_cosine: dict[float, list[list[int]]] = {}  # similarity -> the copies of each vector
    for rowid, cosine in dense.items():
        vectors_here = by_cosine.setdefault(cosine, [])
        for copies in vectors_here:
            if _same_vector(vectors, rowid, copies[0]):
                copies.append(rowid)
                break
        else:
            vectors_here.append([rowid])
    newest: list[tuple[float, int]] = []  # (similarity, the newest copy) of each vector
    stands_for: dict[int, int] = {}  # row id -> the newest copy of its vector
    for cosine, vectors_here in by_cosine.items():
        for copies in vectors_here:
            kept = max(copies)
            newest.append((cosine, kept))
            stands_for.update(dict.fromkeys(copies, kept))
    words: dict[int, float] = {}
    for rowid, bm25 in keys.items():
        kept = stands_for.get(rowid, rowid)
        words[kept] = max(words.get(kept, 0.0), bm25)
    best_words = dict(sorted(words.items(), key=lambda pair: -pair[1])[:pool])
    by_meaning = sorted(newest, reverse=True)[:nearest]
    meaning = {r: c for c, r in by_meaning}
    meaning.update({r: dense[r] for r in best_words if r in dense})
    return best_words, meaning


def _same_vector(vectors: Mapping[int, npt.NDArray[np.float32]], a: int, b: int) -> bool:
    """Whether episodes ``a`` and ``b`` have one vector (unknown vectors are not the same)."""
    va, vb = vectors.get(a), vectors.get(b)
    return va is not None and vb is not None and bool(np.array_equal(va, vb))
