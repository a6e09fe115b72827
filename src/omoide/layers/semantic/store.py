"""Layer 3: the semantic store (RAG) on ChromaDB.

Collections (knowledge, code, decisions, feedback by default) are ChromaDB collections with
cosine HNSW indexes (construction_ef 200, search_ef 500 — wide, because a collection of
near-duplicates defeats a narrow search — M 16). Vectors come from omoide's
:class:`~omoide.providers.embeddings.Embedder`, never from Chroma's default embedding function
(which
downloads a model at run time).

A document longer than the embedder's window is split into chunks
(:mod:`omoide.providers.chunking`), stored in Chroma as ``<doc id>#<n>``. Each whole document is
also
registered in SQLite (``semantic_docs``, read through :mod:`omoide.layers.semantic.registry`): its
text, owner,
scope, lifecycle state and access statistics, with its full text indexed for
:meth:`SemanticStore.search_text`. A write registers the document as *pending*, writes the
chunks to Chroma, then marks it *active*; a crash in between leaves a pending row that the
next open completes, so Chroma and SQLite never disagree for long and never lose an
acknowledged document.

Metadata keys starting with ``_`` belong to omoide (``_doc``, ``_chunk``, ``_agent``,
``_scope``, ``_global``, ``_r:agent:NAME`` / ``_r:team:NAME`` reader flags, ``_current``,
``_expiring`` / ``_expires``): callers may not set them or filter on them, so a ``where``
filter can never widen a scope.

A document may carry an expiry (``store(..., expires_at=...)``; ``SemanticStore.cache``, an
:class:`~omoide.layers.semantic.cache.InformationCache`, stores outside information that way): from
that
moment it leaves query results, and :meth:`SemanticStore.purge_expired` (run by maintenance)
removes it.

The semantic layer owns ``semantic_docs`` and ``semantic_docs_fts`` (see
:mod:`omoide.layers.semantic.registry`); this module writes documents and keeps Chroma in
line, :mod:`omoide.layers.semantic.query` reads them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from omoide.clock import Clock, to_timestamp
from omoide.core.config import SemanticConfig
from omoide.core.scope import GLOBAL, normalize_scope
from omoide.core.validation import (
    check_datetime,
    check_list,
    check_metadata,
    check_name,
    check_names,
    check_text,
)
from omoide.errors import (
    CapacityError,
    ProtectedMemoryError,
    ValidationError,
)
from omoide.layers.semantic.cache import InformationCache
from omoide.layers.semantic.chunks import LIVE_STATES, MAX_REWRITES, Plan, write_chunks
from omoide.layers.semantic.counts import CHUNK_TOKENS_META, recount_chunks
from omoide.layers.semantic.fulltext_rows import later_versions, sync_fulltext
from omoide.layers.semantic.mirror import MirroredCollection
from omoide.layers.semantic.query import DocumentQueries
from omoide.layers.semantic.registry import DocumentRegistry
from omoide.providers.chunking import chunk_text
from omoide.providers.embeddings import Embedder
from omoide.providers.tokens import TokenCounter, default_token_counter
from omoide.storage import Database
from omoide.storage.chroma import chroma_errors, open_collections, store_id
from omoide.storage.rebuilds import CHUNK_TOKENS_REBUILD

__all__ = ["SemanticStore", "chroma_errors", "content_id"]

#: Decides whether a document is protected by a never-forget rule (collection, metadata).
DocumentProtection = Callable[[str, Mapping[str, Any]], bool]


def content_id(document: str, agent_name: str = "") -> str:
    """The default id of a document: a hash of its writer and its content, so one agent
    storing the same text twice makes one document, while another agent storing that text
    gets a document of its own (its id tells nothing about what others stored). Documents
    written as no agent (the library, the local operator) keep the content-only hash."""
    text = document if agent_name == "" else f"{agent_name}\x1f{document}"
    return "h-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


class SemanticStore(DocumentQueries):
    """Layer 3; obtain it as ``Memory.semantic``."""

    def __init__(
        self,
        db: Database,
        client: Any,
        *,
        embedder: Embedder,
        clock: Clock,
        config: SemanticConfig | None = None,
        count_tokens: Callable[[str], int] | None = None,
        default_scope: str = GLOBAL,
        protection: DocumentProtection | None = None,
        remove_expired: Callable[[str, Sequence[str]], int] | None = None,
        teams: Mapping[str, Iterable[str]] | None = None,
        token_counter: TokenCounter | None = None,
    ) -> None:
        self._db = db
        self._registry = DocumentRegistry(db, clock)
        #: The registry rows, for the pipelines that move documents (lifecycle, transfer).
        self.registry = self._registry
        self._client = client
        self._embedder = embedder
        self._clock = clock
        self.config = config or SemanticConfig()
        self._default_scope = default_scope
        self._protection = protection
        #: The configured teams a new scope may name (None: not checked).
        self._teams = teams
        if count_tokens is None:

            def count_tokens(text: str) -> int:
                n = embedder.count_tokens(text)
                return len(text) if n is None else n

        self._count_tokens = count_tokens
        self.chunk_tokens = self.config.chunk_tokens or max(16, embedder.max_tokens - 32)
        #: ``cache(url_or_key, content, ttl_days, source)``: outside information with an expiry.
        self.cache = InformationCache(self, db, clock)
        #: Removes expired entries for :meth:`purge_expired` (Memory passes an audited one).
        self.remove_expired: Callable[[str, Sequence[str]], int] = remove_expired or self.delete
        self._collections: dict[str, Any] = open_collections(client, self.config, store_id(db))
        if self.config.in_process_chunks > 0 and not db.shared:
            self._collections = {
                name: MirroredCollection(coll, embedder.dimension, self.config.in_process_chunks)
                for name, coll in self._collections.items()
            }
        #: Counts each chunk's tokens when it is written (the memory's counter; see
        #: :mod:`omoide.layers.semantic.counts`).
        self.token_counter = token_counter or default_token_counter()
        self._count_chunks_once()

    def _count_chunks_once(self) -> None:
        """Count the stored chunks if no counts exist or another counter made them."""

        def recount(conn: Any) -> None:
            recount_chunks(conn, self._collections, self.token_counter)
            self._db.set_meta(CHUNK_TOKENS_META, self.token_counter.name)

        self._db.run_rebuild(CHUNK_TOKENS_REBUILD, recount)
        if self._db.get_meta(CHUNK_TOKENS_META) != self.token_counter.name:
            with self._db.transaction() as conn:
                recount(conn)

    # -- writing -----------------------------------------------------------------------

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
        embedded: Mapping[str, np.ndarray] | None = None,
        known_scope: bool = False,
        guard: Callable[[], None] | None = None,
    ) -> list[str]:
        """Upsert documents; return their ids (a hash of writer and content unless given).

        Documents longer than the embedder's window are chunked on sentence boundaries with
        overlap; storing a document again under the same id replaces it (and its chunks).
        With ``expires_at`` the documents leave query results from that moment on (see
        :class:`~omoide.layers.semantic.cache.InformationCache`). Everything is validated before
        anything is
        written. ``embedded`` holds vectors already made by :meth:`embed_chunks` (so that a
        caller can embed outside its own locks); chunks missing from it are embedded here.
        A scope naming a team the configuration does not define is refused, unless
        ``known_scope`` says it is the scope of items already stored (overflow, distillation
        copy it; a team removed from the configuration since must not fail those).
        ``guard`` runs inside the write transaction, before the first write: no other thread,
        process or replica can write in between, so a check it makes (who may overwrite these
        ids) still holds when they are written; it raises to refuse, and nothing is written.

        Long because validation, owner and capacity checks, supersession and the two-phase write
        (pending in SQLite, then Chroma, then settle) must happen in this order in one call.
        """
        coll = self._collection(collection)
        docs = self._check_documents(documents)
        metas = check_list("metadatas", metadatas, length=len(docs))
        clean_metas = [check_metadata(f"metadatas[{i}]", m) for i, m in enumerate(metas)]
        for i, meta in enumerate(clean_metas):
            subject = meta.get("subject")
            if subject is not None and (not isinstance(subject, str) or not subject.strip()):
                raise ValidationError(f"metadatas[{i}].subject", "expected a non-empty string")
        owner = "" if agent_name == "" else check_name("agent_name", agent_name)
        if ids is None:
            doc_ids = self._default_ids(collection, docs, owner)
        else:
            doc_ids = check_names("ids", ids, length=len(docs))
            if any("#" in x for x in doc_ids):
                raise ValidationError("ids", "ids may not contain '#' (it separates chunks)")
            if len(set(doc_ids)) != len(doc_ids):
                raise ValidationError("ids", "the same id appears twice in one call")
        # Identical documents under hashed ids are one document: keep the last metadata.
        unique: dict[str, tuple[str, dict[str, Any]]] = {}
        for doc_id, doc, meta in zip(doc_ids, docs, clean_metas, strict=True):
            unique[doc_id] = (doc, meta)
        scope_value = normalize_scope(
            self._default_scope if scope is None else scope,
            teams=None if known_scope else self._teams,
        )
        expires = None
        if expires_at is not None:
            expires = to_timestamp(check_datetime("expires_at", expires_at))
        self._check_capacity(collection, list(unique))
        self._check_protected_overwrite(collection, unique)

        now = to_timestamp(self._clock.now())
        plans = []
        for doc_id, (doc, meta) in unique.items():
            chunks = self.chunk(doc)
            protected = bool(self._protection and self._protection(collection, meta))
            plans.append(Plan(doc_id, doc, meta, chunks, protected))
        vectors = self._chunk_vectors([c for p in plans for c in p[3]], embedded or {})

        with self._db.transaction() as conn:
            if guard is not None:
                guard()
            for doc_id, doc, meta, chunks, protected in plans:
                conn.execute(
                    "INSERT INTO semantic_docs(collection, id, content, metadata, content_hash, "
                    "chunk_count, agent_name, scope, state, protected, expires_at, created_at, "
                    "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?) "
                    "ON CONFLICT(collection, id) DO UPDATE SET content=excluded.content, "
                    "metadata=excluded.metadata, content_hash=excluded.content_hash, "
                    "chunk_count=CASE WHEN excluded.chunk_count > semantic_docs.chunk_count "
                    "THEN excluded.chunk_count ELSE semantic_docs.chunk_count END, "
                    "agent_name=excluded.agent_name, scope=excluded.scope, state='pending', "
                    "protected=CASE WHEN excluded.protected > semantic_docs.protected "
                    "THEN excluded.protected ELSE semantic_docs.protected END, "
                    "archived_at=NULL, compressed_at=NULL, expires_at=excluded.expires_at, "
                    "updated_at=excluded.updated_at",
                    (
                        collection,
                        doc_id,
                        doc,
                        json.dumps(meta, ensure_ascii=False),
                        hashlib.sha256(doc.encode()).hexdigest(),
                        len(chunks),
                        owner,
                        scope_value,
                        int(protected),
                        expires,
                        now,
                        now,
                    ),
                )
                sync_fulltext(conn, [self._registry.rowid(conn, collection, doc_id)])
            superseded = [
                old
                for doc_id, _doc, meta, _chunks, _protected in plans
                for old in self._registry.supersede(
                    conn, collection, doc_id, meta, scope_value, now
                )
            ]
        self._write_chunks(coll, collection, plans, vectors, owner, scope_value, now, expires)
        self._flag_superseded(collection, superseded)
        return list(unique)

    def _default_ids(self, collection: str, docs: Sequence[str], owner: str) -> list[str]:
        """The default ids of ``docs`` for ``owner``: :func:`content_id`, except that a
        document the same owner stored before ids included the writer keeps its old id
        (so storing it again still replaces it instead of adding a copy)."""
        ids = [content_id(d, owner) for d in docs]
        if owner == "":
            return ids
        legacy = [content_id(d) for d in docs]
        kept = {
            r["id"] for r in self._registry.rows(collection, legacy) if r["agent_name"] == owner
        }
        return [old if old in kept else new for old, new in zip(legacy, ids, strict=True)]

    def embed_chunks(self, collection: str, documents: Sequence[str]) -> dict[str, np.ndarray]:
        """The vectors :meth:`store` would compute for ``documents``, by chunk text: the slow
        part of a store, which needs no lock."""
        self._collection(collection)
        chunks = list(
            dict.fromkeys(c for d in self._check_documents(documents) for c in self.chunk(d))
        )
        return dict(zip(chunks, self._embedder.embed_passages(chunks), strict=True))

    def _chunk_vectors(
        self, chunks: Sequence[str], embedded: Mapping[str, np.ndarray]
    ) -> np.ndarray:
        """Vectors of ``chunks`` in order, from ``embedded`` where it has them."""
        missing = list(dict.fromkeys(c for c in chunks if c not in embedded))
        fresh = dict(zip(missing, self._embedder.embed_passages(missing), strict=True))
        if not chunks:
            return np.zeros((0, self._embedder.dimension), dtype=np.float32)
        return np.stack([fresh[c] if c in fresh else embedded[c] for c in chunks])

    def _flag_superseded(self, collection: str, doc_ids: Sequence[str]) -> None:
        """Mirror ``superseded_by`` into the chunks' ``_current`` flag (SQLite stays the truth:
        :meth:`query` reads it from the registry)."""
        chunk_ids = [
            f"{r['id']}#{i}"
            for r in self._registry.rows(collection, doc_ids)
            if r["state"] in ("active", "compressed")
            for i in range(int(r["chunk_count"]))
        ]
        if chunk_ids:
            with chroma_errors("ids"):
                self._collection(collection).update(
                    ids=chunk_ids, metadatas=[{"_current": False}] * len(chunk_ids)
                )

    def _write_chunks(
        self,
        coll: Any,
        collection: str,
        plans: Sequence[Plan],
        vectors: np.ndarray,
        owner: str,
        scope: str,
        now: float,
        expires: float | None = None,
        *,
        rewrites: int = 0,
    ) -> None:
        """Replace the chunks of these documents in Chroma, then mark the documents active;
        those another write changed meanwhile are written again as they now are."""
        written = write_chunks(
            self._db,
            coll,
            collection,
            plans,
            vectors,
            self.token_counter,
            owner=owner,
            scope=scope,
            created=now,
            expires=expires,
        )
        if written.changed and rewrites < MAX_REWRITES:  # beyond: the other writer checks too
            self._rewrite(collection, written.changed, rewrites + 1)

    def _rewrite(self, collection: str, doc_ids: Sequence[str], rewrites: int = 0) -> None:
        """Write the chunks of these documents from their registry rows as they are now."""
        coll = self._collection(collection)
        for row in self._registry.rows(collection, doc_ids):
            if row["state"] not in LIVE_STATES:
                continue
            chunks = self.chunk(row["content"])
            plan = Plan(
                row["id"],
                row["content"],
                json.loads(row["metadata"]),
                chunks,
                bool(row["protected"]),
            )
            self._write_chunks(
                coll,
                collection,
                [plan],
                self._embedder.embed_passages(chunks),
                row["agent_name"],
                row["scope"],
                float(row["created_at"]),
                row["expires_at"],
                rewrites=rewrites,
            )

    def recover(self) -> int:
        """Complete operations a crash interrupted; return how many documents it touched.

        Documents left *pending* are written to Chroma; documents left *archiving* or
        *deleting* have their chunks removed and reach *archived* or leave the registry.
        """
        rows = self._db.query(
            "SELECT collection, id FROM semantic_docs "
            "WHERE state IN ('pending', 'archiving', 'deleting')"
        )
        by_collection: dict[str, list[str]] = {}
        for row in rows:
            by_collection.setdefault(row["collection"], []).append(row["id"])
        for collection, ids in by_collection.items():
            if collection in self._collections:
                self.settle(collection, ids)
        return len(rows)

    def settle(self, collection: str, doc_ids: Sequence[str]) -> None:
        """Bring Chroma in line with registry rows left in a transitional state.

        The registry changes first (in SQLite, where the never-forget triggers check it),
        Chroma follows, and the final state is recorded last: ``pending`` → chunks written →
        ``active`` (or ``compressed``); ``archiving`` → chunks removed → ``archived``;
        ``deleting`` → chunks removed → row removed. Every step can be repeated safely.
        """
        coll = self._collection(collection)
        for row in self._registry.rows(collection, doc_ids):
            state = row["state"]
            if state == "pending":
                self._rewrite(collection, [row["id"]])
            elif state in ("archiving", "deleting"):
                chunk_ids = [f"{row['id']}#{i}" for i in range(int(row["chunk_count"]))]
                if chunk_ids:
                    with chroma_errors("ids"):
                        coll.delete(ids=chunk_ids)
                with self._db.transaction() as conn:
                    if state == "archiving":
                        conn.execute(
                            "UPDATE semantic_docs SET state='archived' "
                            "WHERE collection=? AND id=? AND state='archiving'",
                            (collection, row["id"]),
                        )
                    else:
                        conn.execute(
                            "DELETE FROM semantic_docs WHERE collection=? AND id=? "
                            "AND state='deleting'",
                            (collection, row["id"]),
                        )
                        # Its words leave the full text of its later versions too.
                        sync_fulltext(conn, [int(row["rowid"]), *later_versions(conn, row)])

    def delete(self, collection: str, ids: Sequence[str]) -> int:
        """Delete documents (and their chunks); return how many existed.

        Never-forget documents are refused with :class:`ProtectedMemoryError` and then nothing
        is deleted.
        """
        self._collection(collection)
        doc_ids = check_names("ids", ids)
        rows = self._registry.rows(collection, doc_ids)
        protected = [r["id"] for r in rows if r["protected"]]
        if protected:
            raise ProtectedMemoryError(
                f"document {protected[0]!r} in {collection!r} is protected by a never-forget "
                "rule and cannot be deleted"
            )
        # The registry first: the never-forget trigger refuses a protected row here even if
        # the check above were bypassed, and a crash leaves a *deleting* row that recover()
        # completes rather than chunks without a registry row.
        with self._db.transaction() as conn:
            conn.executemany(
                "UPDATE semantic_docs SET state='deleting' WHERE collection=? AND id=?",
                [(collection, r["id"]) for r in rows],
            )
        self.settle(collection, [r["id"] for r in rows])
        return len(rows)

    # -- reading -----------------------------------------------------------------------

    def chunk(self, text: str) -> list[str]:
        """The chunks :meth:`store` would write for ``text``."""
        return chunk_text(
            text,
            max_tokens=self.chunk_tokens,
            overlap_tokens=self.config.chunk_overlap_tokens,
            count=self._count_tokens,
        )

    def purge_expired(self, collection: str | None = None) -> int:
        """Delete expired documents (all collections unless one is named); return how many.

        Expiry is the contract a cached entry was stored with, so expired entries are deleted,
        not archived (through :attr:`remove_expired`: in a Memory, each one is audited with
        policy ``cache_expiry``). Never-forget (protected) documents are kept: they only
        leave results.
        """
        names = self.collections if collection is None else [collection]
        for name in names:
            self._collection(name)
        now = to_timestamp(self._clock.now())
        removed = 0
        for name in names:
            ids = [
                r["id"]
                for r in self._db.query(
                    "SELECT id FROM semantic_docs WHERE collection=? AND expires_at IS NOT NULL "
                    "AND expires_at <= ? AND protected=0 AND state='active'",
                    (name, now),
                )
            ]
            for start in range(0, len(ids), 500):
                removed += self.remove_expired(name, ids[start : start + 500])
        return removed

    def _check_documents(self, documents: Any) -> list[str]:
        if isinstance(documents, str) or not isinstance(documents, Sequence):
            raise ValidationError("documents", "expected a list of strings")
        if not documents:
            raise ValidationError("documents", "must not be empty")
        if len(documents) > 100_000:
            raise ValidationError("documents", "at most 100,000 documents per call")
        return [
            check_text(f"documents[{i}]", d, max_chars=self.config.max_document_chars)
            for i, d in enumerate(documents)
        ]

    def _check_capacity(self, collection: str, doc_ids: Sequence[str]) -> None:
        spec = self.config.collections[collection]
        existing = {r["id"] for r in self._registry.rows(collection, doc_ids)}
        new = len([d for d in doc_ids if d not in existing])
        count = self.count(collection) + self.count(collection, state="pending")
        if new and count + new > spec.max_docs and spec.on_full == "refuse":
            raise CapacityError(
                f"collection {collection!r} holds {count:,} of {spec.max_docs:,} documents; "
                f"{new:,} more would exceed its cap (rule: refuse)"
            )

    def _check_protected_overwrite(
        self, collection: str, docs: Mapping[str, tuple[str, dict[str, Any]]]
    ) -> None:
        for row in self._registry.rows(collection, list(docs)):
            if row["protected"] and docs[row["id"]][0] != row["content"]:
                raise ProtectedMemoryError(
                    f"document {row['id']!r} in {collection!r} is protected by a never-forget "
                    "rule; its content cannot be replaced (store a new document instead)"
                )
