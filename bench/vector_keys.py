"""Which model wrote a cached vector: the key that keeps benchmark caches from going stale.

The benchmarks keep passage vectors on disk between runs, by text. A vector depends on more
than its text: the model, its variant and what the embedder does after the model (the
language axis it removes). A cache written before any of these changed would hand the next
run the old vectors, and its figures would describe a store no user has. Every cache records
:func:`model_key` and is read only by an embedder with the same key.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import numpy as np

from omoide.providers.embeddings import Embedder

__all__ = ["MODEL_FIELD", "model_key", "written_by"]

#: The field of a cache file that holds :func:`model_key` of the model that wrote it.
MODEL_FIELD = "model"


def model_key(embedder: Embedder) -> str:
    """A short digest of what makes ``embedder``'s passage vectors what they are: its name,
    its dimension and the language axis it removes (if any)."""
    digest = hashlib.sha256(f"{embedder.name}\0{embedder.dimension}".encode())
    if embedder.language_axis is not None:
        digest.update(np.ascontiguousarray(embedder.language_axis, dtype=np.float32).tobytes())
    return digest.hexdigest()[:16]


def written_by(stored: Mapping[str, Any], key: str) -> bool:
    """True when a cache file's fields (an opened ``.npz``) say the model of ``key`` wrote it;
    False for another model's or for a file that does not say."""
    return MODEL_FIELD in stored and str(stored[MODEL_FIELD]) == key
