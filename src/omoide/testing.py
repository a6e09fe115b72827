"""Fakes for your own tests: a deterministic embedder and a manual clock.

Tests of code that *uses* omoide often need no real model: :class:`HashEmbedder` turns the words
of a text into a fixed vector in microseconds, so the same text always gets the same vector and
texts sharing words are close. Time is injected: a :class:`~omoide.clock.ManualClock` only moves
when the test moves it, so a month of memory takes no time at all::

    from datetime import UTC, datetime

    from omoide import Memory
    from omoide.testing import HashEmbedder, ManualClock

    clock = ManualClock(datetime(2026, 4, 1, tzinfo=UTC))
    with Memory(tmp_path, embedder=HashEmbedder(), clock=clock) as mem:
        mem.episodic.record("ops", "error", "デプロイ失敗: タイムアウト")
        clock.advance(days=30)

Use the real embedder (the default) where the test is about what recall finds.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from omoide.clock import ManualClock
from omoide.providers.embeddings import Embedder, EmbedKind, Vectors

__all__ = ["HashEmbedder", "ManualClock"]

_WORD = re.compile(r"\w+", re.UNICODE)


def _features(text: str) -> list[str]:
    """Lower-cased words, and character bigrams of runs without spaces (Japanese)."""
    features: list[str] = []
    for word in _WORD.findall(text.lower()):
        if word.isascii():
            features.append(word)
        else:
            features.extend(word[i : i + 2] for i in range(max(1, len(word) - 1)))
    return features


class HashEmbedder(Embedder):
    """A deterministic bag-of-features embedder: each word (or Japanese character bigram)
    adds one signed unit to a hashed dimension. Not a model of meaning: two texts are close
    only when they share words. Fast and reproducible, for tests of logic."""

    name = "hash"
    max_tokens = 512

    def __init__(self, dimension: int = 256) -> None:
        super().__init__()
        self.dimension = dimension

    def embed_batch(self, texts: Sequence[str], kind: EmbedKind = "passage") -> Vectors:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for feature in _features(text):
                digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
                value = int.from_bytes(digest, "big")
                out[row, value % self.dimension] += 1.0 if (value >> 32) & 1 else -1.0
            if not out[row].any():
                out[row, 0] = 1.0  # an empty text still gets a unit vector
        return out
