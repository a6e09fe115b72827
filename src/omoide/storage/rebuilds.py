"""The names of the data rebuilds migrations request (:mod:`omoide.storage.migrations`).

A rebuild derives data by code (full text analysed in Python, context keys, token counts);
a migration names it, the database records it as requested, and the layer owning the data
runs it once when it next opens the store (:meth:`omoide.storage.Database.run_rebuild`).
"""

from __future__ import annotations

__all__ = [
    "CHUNK_TOKENS_REBUILD",
    "CONTEXT_KEYS_REBUILD",
    "EPISODE_FULLTEXT_REBUILD",
    "EPISODE_TOKENS_REBUILD",
    "FULLTEXT_REBUILDS",
    "SEMANTIC_FULLTEXT_REBUILD",
]

#: Index the context keys of every stored episode (the episodic layer).
CONTEXT_KEYS_REBUILD = "episode_context_keys"
#: Index the full text of every semantic document (the semantic layer).
SEMANTIC_FULLTEXT_REBUILD = "semantic_fulltext"
#: Count the tokens of every stored episode (the episodic layer).
EPISODE_TOKENS_REBUILD = "episode_tokens"
#: Count the tokens of every stored chunk (the semantic layer).
CHUNK_TOKENS_REBUILD = "chunk_tokens"
#: Analyse the full text of every stored episode again (the episodic layer).
EPISODE_FULLTEXT_REBUILD = "episode_fulltext"
#: Analyse every full-text index again, after the analysis changed.
FULLTEXT_REBUILDS = (EPISODE_FULLTEXT_REBUILD, CONTEXT_KEYS_REBUILD, SEMANTIC_FULLTEXT_REBUILD)
