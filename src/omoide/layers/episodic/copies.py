"""Copies: one text by one writer, recorded again and again.

An agent that writes the same note every day ("昼休憩のローテーションは通常どおり。") leaves
copies with one vector and one set of words. Among a question's candidates they would take a
place of each pool for every day they were written, and push out the texts that answer it.
The episodic search (:mod:`omoide.layers.episodic.search`) reads its pools again
:data:`COPIES` times as deep when copies came among them, and keeps one of each.
"""

from __future__ import annotations

__all__ = ["COPIES", "one_per_text"]

#: How many times deeper than each pool candidates are read again when copies of one note
#: came among them, so that the pool holds as many distinct texts.
COPIES = 4


def one_per_text(
    keys: dict[int, float], dense: dict[int, float], pool: int, nearest: int
) -> tuple[dict[int, float], dict[int, float]]:
    """The best ``pool`` by words and ``nearest`` by meaning (and the meaning of those found by
    words), one episode per vector: copies of one note by one writer, written every day, have
    one, and would otherwise take a place of each pool for every day. The newest copy (the
    highest row id) stands for its copies, with the best words any of them had read."""
    newest: dict[float, int] = {}
    for rowid, cosine in dense.items():
        newest[cosine] = max(newest.get(cosine, rowid), rowid)
    words: dict[int, float] = {}
    for rowid, bm25 in keys.items():
        kept = newest.get(dense.get(rowid, float("nan")), rowid)
        words[kept] = max(words.get(kept, 0.0), bm25)
    best_words = dict(sorted(words.items(), key=lambda pair: -pair[1])[:pool])
    by_meaning = sorted(newest.items(), reverse=True)[:nearest]
    meaning = {r: c for c, r in by_meaning}
    meaning.update({r: dense[r] for r in best_words if r in dense})
    return best_words, meaning
