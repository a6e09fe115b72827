"""ChromaDB, the vector store behind the semantic layer: the client, its collections, its errors.

:func:`chroma_client` opens the persistent client of a data directory (or an HTTP client when
``semantic.chroma_url`` is set); :func:`open_collections` gets or creates the configured
collections with their HNSW settings; :func:`chroma_errors` turns what ChromaDB raises into
omoide errors. What the collections hold is the semantic layer's business
(:mod:`omoide.layers.semantic.store`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from omoide.core.config import SemanticConfig
from omoide.errors import BackendError, ConfigError, OmoideError, ValidationError

__all__ = ["CHROMA_DIR", "chroma_client", "chroma_errors", "open_collections"]

#: ChromaDB's directory inside a data directory.
CHROMA_DIR = "chroma"


def chroma_client(directory: Path, config: SemanticConfig) -> Any:
    """The ChromaDB client of a data directory: persistent under ``chroma/``, or the server
    ``config.chroma_url`` names (``http(s)://host:port``)."""
    import chromadb
    from chromadb.config import Settings

    settings = Settings(anonymized_telemetry=False, allow_reset=False)
    url = config.chroma_url
    if url:
        from urllib.parse import urlparse

        parsed = urlparse(url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ConfigError(f"semantic.chroma_url: expected http(s)://host:port, got {url!r}")
        return chromadb.HttpClient(
            host=parsed.hostname,
            port=parsed.port or (443 if parsed.scheme == "https" else 8000),
            ssl=parsed.scheme == "https",
            settings=settings,
        )
    return chromadb.PersistentClient(path=str(directory / CHROMA_DIR), settings=settings)


def open_collections(client: Any, config: SemanticConfig) -> dict[str, Any]:
    """The configured collections by name, created with the configured HNSW settings."""
    hnsw = {
        "space": config.hnsw_space,
        "ef_construction": config.hnsw_construction_ef,
        "ef_search": config.hnsw_search_ef,
        "max_neighbors": config.hnsw_m,
    }
    collections: dict[str, Any] = {}
    for name, spec in config.collections.items():
        coll = client.get_or_create_collection(
            name,
            configuration={"hnsw": hnsw},
            metadata={"purpose": spec.purpose or name},
            embedding_function=None,
        )
        _widen(coll, config.hnsw_search_ef)
        collections[name] = coll
    return collections


def _widen(coll: Any, ef_search: int) -> None:
    """Give an existing collection the configured search breadth, the one HNSW setting
    that can change after creation (it applies from the next open). Chroma can find its
    database busy at that moment ("database is locked"); the change then waits for the
    next open rather than failing this one — it tunes recall, it stores nothing."""
    current = (coll.configuration or {}).get("hnsw") or {}
    if current.get("ef_search") in (None, ef_search):
        return
    try:
        coll.modify(configuration={"hnsw": {"ef_search": ef_search}})
    except Exception as exc:  # chromadb.errors.InternalError: the database was busy
        if "locked" not in str(exc).lower():
            raise


@contextmanager
def chroma_errors(field: str) -> Iterator[None]:
    """Turn what ChromaDB raises into omoide errors: its refusals of an argument become a
    :class:`ValidationError` naming ``field``, its other failures (an internal error, a busy
    database) a :class:`BackendError`, so no ChromaDB exception reaches a caller raw."""
    try:
        yield
    except OmoideError:
        raise
    except Exception as exc:
        from chromadb.errors import ChromaError, InvalidArgumentError

        message = str(exc)[:500]
        if isinstance(exc, ValueError | InvalidArgumentError | TypeError):
            raise ValidationError(field, message) from None
        if isinstance(exc, ChromaError) or type(exc).__module__.startswith("chromadb"):
            raise BackendError(f"the vector store failed: {message}") from exc
        raise
