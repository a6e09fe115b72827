"""ChromaDB, the vector store behind the semantic layer: the client, its collections, its errors.

:func:`chroma_client` opens the persistent client of a data directory (or an HTTP client when
``semantic.chroma_url`` is set); :func:`open_collections` gets or creates the configured
collections with their HNSW settings; :func:`chroma_errors` turns what ChromaDB raises into
omoide errors. What the collections hold is the semantic layer's business
(:mod:`omoide.layers.semantic.store`), and the episodes' vectors the episodic layer's when
``episodic.vector_store`` is ``"chroma"`` (:mod:`omoide.layers.episodic.chroma_vectors`).

On a server several data directories may share, each names its collections with its own
``semantic.chroma_prefix``. Every collection records the store that created it
(:func:`store_id`, in its metadata), so a second directory opened on the same names is refused
instead of overwriting the first one's vectors.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from omoide.core.config import SemanticConfig
from omoide.errors import BackendError, ConfigError, OmoideError, ValidationError
from omoide.storage.database import Database

__all__ = [
    "CHROMA_DIR",
    "chroma_client",
    "chroma_errors",
    "collection_name",
    "open_collection",
    "open_collections",
    "query_collection",
    "store_id",
]

#: ChromaDB's directory inside a data directory.
CHROMA_DIR = "chroma"
#: The metadata key of a collection naming the store it belongs to.
STORE_KEY = "omoide_store"


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
        try:  # the client asks the server for its tenant and database at once
            return chromadb.HttpClient(
                host=parsed.hostname,
                port=parsed.port or (443 if parsed.scheme == "https" else 8000),
                ssl=parsed.scheme == "https",
                settings=settings,
            )
        except Exception as exc:  # ValueError("Could not connect to a Chroma server...")
            raise BackendError(f"cannot reach the Chroma server at {url}: {exc}") from exc
    return chromadb.PersistentClient(path=str(directory / CHROMA_DIR), settings=settings)


def store_id(db: Database) -> str:
    """The id of the store in ``db``, made on first use: what its Chroma collections record
    to tell them from another data directory's."""
    with db.transaction() as conn:
        conn.execute(
            "INSERT INTO meta(key, value) VALUES ('store_id', ?) ON CONFLICT(key) DO NOTHING",
            (uuid.uuid4().hex,),
        )
    value = db.get_meta("store_id")
    assert value is not None
    return value


def collection_name(config: SemanticConfig, name: str) -> str:
    """The name of collection ``name`` in ChromaDB: the configured prefix, then the name."""
    return f"{config.chroma_prefix}{name}"


def open_collections(client: Any, config: SemanticConfig, store: str) -> dict[str, Any]:
    """The configured collections by name, created with the configured HNSW settings, for
    the store whose :func:`store_id` is ``store``."""
    return {
        name: open_collection(client, config, name, spec.purpose or name, store)
        for name, spec in config.collections.items()
    }


def open_collection(
    client: Any, config: SemanticConfig, name: str, purpose: str, store: str
) -> Any:
    """Collection ``name`` (prefixed), created with the configured HNSW settings. One that
    another store created is refused (:class:`ConfigError`); one an older version of omoide
    created, before collections recorded their store, is claimed."""
    hnsw = {
        "space": config.hnsw_space,
        "ef_construction": config.hnsw_construction_ef,
        "ef_search": config.hnsw_search_ef,
        "max_neighbors": config.hnsw_m,
    }
    full = collection_name(config, name)
    try:
        with chroma_errors("collection"):
            coll = client.get_or_create_collection(
                full,
                configuration={"hnsw": hnsw},
                metadata={"purpose": purpose, STORE_KEY: store},
                embedding_function=None,
            )
            metadata = dict(coll.metadata or {})
            if metadata.get(STORE_KEY, store) != store:
                where = config.chroma_url or "this data directory's ChromaDB"
                raise ConfigError(
                    f"the ChromaDB collection {full!r} on {where} belongs to another omoide "
                    "data directory; give each directory sharing a server its own "
                    "semantic.chroma_prefix"
                )
            if STORE_KEY not in metadata:
                coll.modify(metadata={**metadata, STORE_KEY: store})
            _widen(coll, config.hnsw_search_ef)
    except ValidationError as exc:
        raise ConfigError(f"ChromaDB refused the collection {full!r}: {exc.message}") from None
    return coll


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
        import httpx
        from chromadb.errors import ChromaError, InvalidArgumentError

        message = str(exc)[:500]
        if isinstance(exc, httpx.HTTPError):  # a Chroma server that cannot be reached
            raise BackendError(f"the vector store cannot be reached: {message}") from exc
        if isinstance(exc, ValueError | InvalidArgumentError | TypeError):
            raise ValidationError(field, message) from None
        if isinstance(exc, ChromaError) or type(exc).__module__.startswith("chromadb"):
            raise BackendError(f"the vector store failed: {message}") from exc
        raise


#: Times a query is asked when the vector store answers with an internal error. A Chroma
#: server compacting deletes while it is queried can briefly fail to find an id its index
#: still lists ("Error finding id"); the same query asked again answers. A query changes
#: nothing, so asking again is safe; a store that keeps failing still raises BackendError.
QUERY_ATTEMPTS = 3


def query_collection(coll: Any, field: str, **query: Any) -> Any:
    """``coll.query(**query)`` under :func:`chroma_errors`, asked again at once (up to
    :data:`QUERY_ATTEMPTS` times in all) when ChromaDB fails with an internal error."""
    from chromadb.errors import InternalError

    for attempt in range(1, QUERY_ATTEMPTS + 1):
        try:
            with chroma_errors(field):
                return coll.query(**query)
        except BackendError as exc:
            cause = exc.__cause__
            internal = isinstance(cause, InternalError) or "internal error" in str(cause).lower()
            if attempt == QUERY_ATTEMPTS or not internal:
                raise
    raise AssertionError("unreachable")  # pragma: no cover
