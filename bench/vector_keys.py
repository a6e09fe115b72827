"""Which model wrote a cached vector: the key that keeps benchmark caches from going stale.

The benchmarks keep passage vectors on disk between runs, by text. A vector depends on more
than its text: the model, its variant and what the embedder does after the model (the
language axis it removes). A cache written before any of these changed would hand the next
run the old vectors, and its figures would describe a store no user has. Every cache records
:func:`model_key` and is read only by an embedder with the same key.
"""

from __future__ import annotations

import hashlib

import numpy as np

from omoide.providers.embeddings import Embedder

__all__ = ["model_key"]


def model_key(embedder: Embedder) -> str:
    """A short digest of what makes ``embedder``'s passage vectors what they are: its name,
    its dimension and the language axis it removes (if any)."""
    digest = hashlib.sha256(f"{embedder.name}\0{embedder.dimension}".encode())
    axis = getattr(embedder, "language_axis", None)
    if axis is not None:
        digest.update(np.ascontiguousarray(axis, dtype=np.float32).tobytes())
    return digest.hexdigest()[:16]
