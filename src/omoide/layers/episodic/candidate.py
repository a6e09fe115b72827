"""An episode as a candidate answer: the raw signals that found it, and their rating.

Read by the episodic search (:mod:`omoide.layers.episodic.search`) and by any ranker of its
candidates; one rating (:func:`rate_candidates`, :mod:`omoide.text.relevance`) for every way
an episode is found, so an episode scores the same however it came among the candidates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from omoide.core.models import Episode
from omoide.providers.embeddings import Embedder
from omoide.text.relevance import rate

__all__ = ["Candidate", "rate_candidates"]


@dataclass(frozen=True)
class Candidate:
    """An episode that may answer a query, with the raw signals that found it."""

    episode: Episode
    #: BM25 of its context key (0 when the key does not match); higher is better.
    key_score: float
    #: Cosine similarity of the query and the episode's embedding.
    cosine: float
    #: Analysed words of its context key (the episode and its neighbours in the thread), for
    #: checking how many of the query's words it holds (:func:`omoide.text.relevance.word_share`);
    #: empty when the key does not match.
    key: str = ""
    #: Its embedding (for comparing candidates with each other).
    vector: npt.NDArray[np.float32] | None = None
    #: Its rated signals (:func:`rate_candidates`): words, meaning, and relevance.
    words: float = 0.0
    meaning: float = 0.0
    relevance: float = 0.0

    def rated(self, words: float, meaning: float, relevance: float) -> Candidate:
        """A copy with its rated signals: ``dataclasses.replace`` costs several times a
        constructor call, and every recall rates each of its candidates (a test keeps this
        copying every field)."""
        return Candidate(
            episode=self.episode,
            key_score=self.key_score,
            cosine=self.cosine,
            key=self.key,
            vector=self.vector,
            words=words,
            meaning=meaning,
            relevance=relevance,
        )


def rate_candidates(
    query: str, found: Sequence[Candidate], embedder: Embedder, *, dense_weight: float
) -> list[Candidate]:
    """``found`` with their words, meaning (the cosine calibrated for a query) and relevance
    rated for ``query``."""
    if not found:
        return []
    meanings = [
        float(m)
        for m in embedder.calibrate(np.array([c.cosine for c in found], dtype=np.float32), "query")
    ]
    rated = rate(
        query,
        [c.key_score for c in found],
        [c.key for c in found],
        meanings,
        [c.episode.description for c in found],
        dense_weight=dense_weight,
    )
    return [
        c.rated(words, meaning, rel)
        for c, meaning, (words, rel) in zip(found, meanings, rated, strict=True)
    ]
