"""The external information cache: outside facts kept with their source and an expiry.

Agents fetch things — an API answer, a web page, a price list — that are worth remembering for
a while but go stale. ``mem.semantic.cache(url_or_key, content, ttl_days, source)`` stores such
a text as a document of the semantic layer, so it is found by meaning like any other
knowledge, with three rules:

* **one entry per key and writer** — the document id is derived from ``url_or_key`` and the
  writing agent, so caching the same key again replaces the writer's entry (and restarts its
  time to live) instead of adding a copy. Another agent caching the same key gets an entry
  of its own: a key is not a global name, so caching it neither overwrites nor reveals
  anyone else's entry. A lookup finds the caller's own entry first, else the live entry it
  may read that was cached earliest (by its latest caching: the first writer's, as when a
  key had one entry); the entry names its owner (``agent_name``);
* **expiry** — once ``ttl_days`` have passed (by the store's clock) the entry leaves
  ``query`` results and :meth:`InformationCache.get`; ``SemanticStore.purge_expired`` (run
  by maintenance) then deletes it;
* **provenance** — its metadata records ``cache_key``, ``source`` (where it came from), and
  ``cached_at`` / ``expires`` as ISO 8601 strings.

Entries go to the collection named by ``semantic.cache_collection`` (*knowledge* by default,
the article's home of general documents); a call may name another collection.

>>> mem.semantic.cache("https://example.com/rates", "USD/JPY 150.2", 1, "example.com")
...                                                                # doctest: +SKIP
>>> mem.semantic.cache.get("https://example.com/rates").document   # doctest: +SKIP
'USD/JPY 150.2'
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from omoide.clock import Clock, to_timestamp
from omoide.core.models import SemanticDocument
from omoide.core.scope import reader_predicate
from omoide.core.settings import SemanticConfig
from omoide.core.validation import check_metadata, check_number, check_text
from omoide.errors import NotFoundError, ValidationError
from omoide.storage import Database


class CacheStore(Protocol):
    """What the cache needs of the semantic store that holds its entries (named here, so this
    module does not import the store, which builds the cache)."""

    @property
    def config(self) -> SemanticConfig: ...

    def store(
        self,
        collection: str,
        documents: Sequence[str],
        metadatas: Sequence[Mapping[str, Any] | None] | None = None,
        ids: Sequence[str] | None = None,
        *,
        agent_name: str = "",
        scope: str | Sequence[str] | None = None,
        expires_at: datetime | None = None,
        guard: Callable[[], None] | None = None,
    ) -> list[str]: ...

    def count(self, collection: str, *, state: str = "active") -> int: ...

    def get(
        self,
        collection: str,
        doc_id: str,
        *,
        reader: str | None = None,
        reader_teams: Iterable[str] = (),
    ) -> SemanticDocument: ...


__all__ = ["CacheStore", "InformationCache", "cache_id"]

MAX_KEY_CHARS = 8_192
MAX_TTL_DAYS = 36_500.0


def cache_id(key: str, agent_name: str = "") -> str:
    """The document id of ``agent_name``'s entry cached under ``key`` (a hash: keys may be
    long URLs). Entries cached as no agent keep the key-only hash."""
    text = key if agent_name == "" else f"{agent_name}\x1f{key}"
    return "cache-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


class InformationCache:
    """Outside information with an expiry; obtain it as ``Memory.semantic.cache``."""

    def __init__(self, store: CacheStore, db: Database, clock: Clock) -> None:
        self._store = store
        self._db = db
        self._clock = clock

    @property
    def collection(self) -> str:
        """The collection entries go to unless a call names one."""
        return self._store.config.cache_collection

    def __call__(
        self,
        url_or_key: str,
        content: str,
        ttl_days: float,
        source: str,
        *,
        collection: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        agent_name: str = "",
        scope: str | Sequence[str] | None = None,
        guard: Callable[[], None] | None = None,
    ) -> str:
        """Cache ``content`` under ``url_or_key`` for ``ttl_days`` (> 0); return the doc id.

        ``source`` says where the content came from (a URL, an API name). ``metadata`` adds
        caller fields (the ``cache_key``, ``source``, ``cached_at`` and ``expires`` fields are
        always set by the cache). Re-caching a key replaces its entry. ``guard`` is the
        store's (a check run inside its write transaction).
        """
        key = check_text("url_or_key", url_or_key, max_chars=MAX_KEY_CHARS)
        ttl = check_number("ttl_days", ttl_days, low=0.0, high=MAX_TTL_DAYS)
        if ttl <= 0:
            raise ValidationError("ttl_days", "must be > 0")
        origin = check_text("source", source, max_chars=MAX_KEY_CHARS)
        extra = check_metadata("metadata", metadata)
        now = self._clock.now()
        expires = now + timedelta(days=ttl)
        meta = {
            **extra,
            "cache_key": key,
            "source": origin,
            "cached_at": now.isoformat(),
            "expires": expires.isoformat(),
        }
        return self._store.store(
            self.collection if collection is None else collection,
            [content],
            [meta],
            ids=[cache_id(key, agent_name)],
            agent_name=agent_name,
            scope=scope,
            expires_at=expires,
            guard=guard,
        )[0]

    def get(
        self,
        url_or_key: str,
        *,
        collection: str | None = None,
        reader: str | None = None,
        reader_teams: Iterable[str] = (),
        agent_name: str = "",
    ) -> SemanticDocument | None:
        """The live entry cached under ``url_or_key`` that ``reader`` may read, or None.

        ``agent_name``'s own entry (by default the reader's) comes first; else the live
        entry of another writer cached earliest, by its latest caching (``cached_at``, which
        the cache sets on every call: re-caching an entry, to widen its scope say, puts it
        behind entries cached meanwhile). Only entries the cache wrote count (their id is the
        key's hash for their owner, and clients cannot choose ``cache-`` ids): a document
        that merely claims the key in its metadata is not an entry."""
        key = check_text("url_or_key", url_or_key, max_chars=MAX_KEY_CHARS)
        target = self.collection if collection is None else collection
        own = agent_name or reader or ""
        candidates = [cache_id(key, own)]
        db = self._db
        scope_sql, params = reader_predicate(reader, reader_teams)
        now = to_timestamp(self._clock.now())
        self._store.count(target)  # validates the collection name
        others: list[tuple[datetime, str]] = []
        for row in db.query(
            "SELECT id, agent_name, json_extract(metadata, '$.cached_at') AS cached_at "
            "FROM semantic_docs WHERE collection=? AND state='active' "
            "AND json_extract(metadata, '$.cache_key') = ? "
            f"AND (expires_at IS NULL OR expires_at > ?) AND {scope_sql} LIMIT 1000",
            (target, key, now, *params),
        ):
            if row["id"] != cache_id(key, row["agent_name"] or ""):
                continue
            try:
                cached_at = datetime.fromisoformat(str(row["cached_at"]))
            except ValueError:
                continue
            if cached_at.tzinfo is None:  # an imported entry: times are stored as UTC
                cached_at = cached_at.replace(tzinfo=UTC)
            others.append((cached_at, row["id"]))
        candidates += [doc_id for _, doc_id in sorted(others)]
        for doc_id in dict.fromkeys(candidates):
            doc = self._live(target, doc_id, reader, reader_teams)
            if doc is not None:
                return doc
        return None

    def _live(
        self, collection: str, doc_id: str, reader: str | None, reader_teams: Iterable[str]
    ) -> SemanticDocument | None:
        try:
            doc = self._store.get(collection, doc_id, reader=reader, reader_teams=reader_teams)
        except NotFoundError:
            return None
        if doc.state != "active":
            return None
        if doc.expires_at is not None and doc.expires_at <= self._clock.now():
            return None
        return doc
