"""Moving memories out of sight and back: delete, archive, compress, restore — audited.

Every change is one SQLite transaction that also appends a row to the audit log
(:mod:`omoide.pipelines.audit`, which owns it), holding the item as it was (its snapshot,
without the embedding). The never-forget triggers check the same transaction, so a protected
item is refused before anything changes. The rows themselves change only through the
layers' row APIs (:class:`~omoide.layers.episodic.rows.EpisodicRows`,
:class:`~omoide.layers.semantic.registry.DocumentRegistry`), which keep their tables in step.

* **archive** — the item leaves recall and search but stays in its table (state
  ``archived``); :meth:`Lifecycle.restore` brings it back.
* **compress** — the details are replaced by a summary (the first sentences, see
  :func:`summarize`); the id, the original date and ``compressed_at`` are kept and the item
  stays searchable by its summary. The snapshot in the audit log lets :meth:`Lifecycle.restore`
  undo it.
* **delete** — the item leaves its table; the audit row keeps its snapshot.

Semantic documents also live in ChromaDB: the registry row moves first (``archiving``,
``deleting`` or ``pending``), then :meth:`SemanticStore.settle` brings Chroma in line and
records the final state, so a crash in between is completed when the store is next opened.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from omoide.clock import Clock, from_timestamp, to_timestamp
from omoide.core.models import Episode
from omoide.core.validation import check_name
from omoide.errors import NotFoundError, UnknownLayerError, ValidationError
from omoide.layers.episodic.store import EpisodicStore, embedding_text
from omoide.layers.semantic.store import SemanticStore
from omoide.pipelines.audit import (
    AuditEntry,
    AuditLog,
    AuditQuery,
    document_snapshot,
    episode_snapshot,
)
from omoide.providers.chunking import split_sentences
from omoide.providers.embeddings import Embedder
from omoide.storage import Database

__all__ = ["ACTIONS", "AuditEntry", "Lifecycle", "summarize"]

#: What a forgetting policy may do to an item.
ACTIONS = ("delete", "archive", "compress")
LAYERS = ("episodic", "semantic")


def summarize(text: str, max_chars: int = 280) -> str:
    """The leading sentences of ``text`` that fit in ``max_chars`` (an extractive summary).

    Japanese and English sentence ends are recognised; a first sentence longer than the
    budget is cut and marked with ``…``.
    """
    text = " ".join(text.split())
    if len(text) <= max_chars:
        return text
    summary = ""
    for sentence in split_sentences(text):
        if len(summary) + len(sentence) > max_chars:
            break
        summary += sentence
    summary = summary.strip()
    if not summary:
        summary = text[: max_chars - 1].rstrip() + "…"
    return summary


class Lifecycle:
    """Delete, archive, compress and restore items of the episodic and semantic layers."""

    def __init__(
        self,
        db: Database,
        *,
        episodic: EpisodicStore,
        semantic: SemanticStore,
        embedder: Embedder,
        clock: Clock,
        summary_chars: int = 280,
    ) -> None:
        self._db = db
        #: The layers whose items this lifecycle moves (their row APIs, for the pipelines).
        self.episodic = episodic
        self.semantic = semantic
        self._embedder = embedder
        self._clock = clock
        self.summary_chars = summary_chars
        #: The audit log every change of this lifecycle is recorded in.
        self.log = AuditLog(db, clock)

    # -- dispatch ------------------------------------------------------------------------

    def apply(
        self,
        layer: str,
        item_id: str,
        action: str,
        *,
        collection: str = "",
        policy: str,
        reason: str,
        run_id: str,
    ) -> None:
        """Perform ``action`` on one item and audit it (ProtectedMemoryError if protected)."""
        audit = {"policy": policy, "reason": reason, "run_id": run_id}
        if layer == "episodic":
            {
                "delete": self._delete_episode,
                "archive": self._archive_episode,
                "compress": self._compress_episode,
            }[action](item_id, **audit)
        elif layer == "semantic":
            {
                "delete": self._delete_document,
                "archive": self._archive_document,
                "compress": self._compress_document,
            }[action](collection, item_id, **audit)
        else:
            raise UnknownLayerError(layer, list(LAYERS))

    def purge(
        self,
        layer: str,
        item_id: str,
        *,
        reason: str,
        by: str,
        collection: str = "",
    ) -> AuditEntry:
        """Remove one item for good, never-forget or not (the admin's way out of spam).

        The audit log keeps the item's snapshot, ``by`` (who purged it) and ``reason``; the
        storage triggers let this one delete through because of a grant tied to that audit
        row (migration ``0008_admin_purge``), and no other path writes grants.
        """
        check_name("layer", layer)
        check_name("id", item_id)
        if not isinstance(reason, str) or not reason.strip():
            raise ValidationError("reason", "a purge needs a non-empty reason")
        if len(reason) > 2_000:
            raise ValidationError("reason", "at most 2000 characters")
        if layer not in LAYERS:
            raise UnknownLayerError(layer, list(LAYERS))
        if layer == "episodic":
            collection = ""
        else:
            check_name("collection", collection)
        run_id = f"purge-{uuid.uuid4().hex[:12]}"
        with self._db.transaction() as conn:
            if layer == "episodic":
                row = self._episode_row(conn, item_id)
                snapshot = episode_snapshot(row)
            else:
                row = self._document_row(conn, collection, item_id)
                snapshot = document_snapshot(row)
            audit_id = self.log.write(
                conn,
                layer=layer,
                collection=collection,
                item_id=item_id,
                action="purge",
                policy="admin_purge",
                reason=f"{reason.strip()} (purged by {by})",
                run_id=run_id,
                snapshot=snapshot,
            )
            conn.execute(
                "INSERT INTO purge_grants(layer, collection, item_id, audit_id) "
                "VALUES (?, ?, ?, ?)",
                (layer, collection, item_id, audit_id),
            )
            if layer == "episodic":
                self.episodic.rows.remove(conn, [int(row["rowid"])])
            else:
                self.semantic.registry.move(conn, collection, item_id, "deleting")
        if layer == "episodic":
            self.episodic.forget_vectors([int(row["rowid"])])
        else:
            self.semantic.settle(collection, [item_id])
        [entry] = self.audit(AuditQuery(item_id, run_id=run_id, limit=1))
        return entry

    # -- episodes ------------------------------------------------------------------------

    def _episode_row(self, conn: Any, episode_id: str) -> Any:
        return self.episodic.rows.require(conn, episode_id)

    def _archive_episode(self, episode_id: str, *, policy: str, reason: str, run_id: str) -> None:
        with self._db.transaction() as conn:
            row = self._episode_row(conn, episode_id)
            if row["state"] == "archived":
                return
            self.episodic.rows.archive(conn, int(row["rowid"]), to_timestamp(self._clock.now()))
            self.log.write(
                conn,
                layer="episodic",
                collection="",
                item_id=episode_id,
                action="archive",
                policy=policy,
                reason=reason,
                run_id=run_id,
                snapshot=episode_snapshot(row),
            )
        self.episodic.forget_vectors([int(row["rowid"])])

    def _compress_episode(self, episode_id: str, *, policy: str, reason: str, run_id: str) -> None:
        row = self._episode_row(self._db, episode_id)
        if row["state"] == "archived":
            raise ValidationError("id", f"episode {episode_id!r} is archived; restore it first")
        description = summarize(row["description"], self.summary_chars)
        outcome = summarize(row["outcome"], self.summary_chars) if row["outcome"] else None
        vector = self._embedder.embed_passages(
            [embedding_text(row["agent_name"], description, outcome)]
        )[0]
        with self._db.transaction() as conn:
            row = self._episode_row(conn, episode_id)  # as it is now, inside the transaction
            self.episodic.rows.change(
                conn,
                int(row["rowid"]),
                {
                    "description": description,
                    "outcome": outcome,
                    "context": "{}",
                    "embedding": vector.tobytes(),
                    "state": "compressed",
                    "compressed_at": to_timestamp(self._clock.now()),
                },
            )
            self.log.write(
                conn,
                layer="episodic",
                collection="",
                item_id=episode_id,
                action="compress",
                policy=policy,
                reason=reason,
                run_id=run_id,
                snapshot=episode_snapshot(row),
            )
        self.episodic.refresh_vectors([int(row["rowid"])])

    def _delete_episode(self, episode_id: str, *, policy: str, reason: str, run_id: str) -> None:
        with self._db.transaction() as conn:
            row = self._episode_row(conn, episode_id)
            self.episodic.rows.remove(conn, [int(row["rowid"])])
            self.log.write(
                conn,
                layer="episodic",
                collection="",
                item_id=episode_id,
                action="delete",
                policy=policy,
                reason=reason,
                run_id=run_id,
                snapshot=episode_snapshot(row),
            )
        self.episodic.forget_vectors([int(row["rowid"])])

    def _restore_episode(self, episode_id: str, *, reason: str, run_id: str) -> str:
        row = self._episode_row(self._db, episode_id)
        audit: dict[str, Any] = {
            "layer": "episodic",
            "collection": "",
            "item_id": episode_id,
            "action": "restore",
            "policy": "restore",
            "reason": reason,
            "run_id": run_id,
            "snapshot": episode_snapshot(row),
        }
        if row["state"] == "archived":
            with self._db.transaction() as conn:
                self.episodic.rows.unarchive(conn, int(row["rowid"]))
                self.log.write(conn, **audit)
        elif row["state"] == "compressed":
            original = self.log.last_snapshot("episodic", "", episode_id, "compress")
            description = str(original["description"])
            outcome = original.get("outcome")
            vector = self._embedder.embed_passages(
                [embedding_text(row["agent_name"], description, outcome)]
            )[0]
            with self._db.transaction() as conn:
                self.episodic.rows.change(
                    conn,
                    int(row["rowid"]),
                    {
                        "description": description,
                        "outcome": outcome,
                        "context": json.dumps(original.get("context") or {}, ensure_ascii=False),
                        "embedding": vector.tobytes(),
                        "state": "active",
                        "compressed_at": None,
                    },
                )
                self.log.write(conn, **audit)
        else:
            raise ValidationError("id", f"episode {episode_id!r} is not archived or compressed")
        self.episodic.refresh_vectors([int(row["rowid"])])
        return "episodic"

    # -- documents -----------------------------------------------------------------------

    def _document_row(self, conn: Any, collection: str, doc_id: str) -> Any:
        row = self.semantic.registry.row(conn, collection, doc_id)
        if row is None:
            raise NotFoundError("document", f"{collection}/{doc_id}")
        return row

    def _archive_document(
        self, collection: str, doc_id: str, *, policy: str, reason: str, run_id: str
    ) -> None:
        self._move_document(collection, doc_id, "archiving", "archive", policy, reason, run_id)

    def _delete_document(
        self, collection: str, doc_id: str, *, policy: str, reason: str, run_id: str
    ) -> None:
        self._move_document(collection, doc_id, "deleting", "delete", policy, reason, run_id)

    def _move_document(
        self,
        collection: str,
        doc_id: str,
        state: str,
        action: str,
        policy: str,
        reason: str,
        run_id: str,
    ) -> None:
        with self._db.transaction() as conn:
            row = self._document_row(conn, collection, doc_id)
            if row["state"] in ("archived", "archiving", "deleting"):
                return
            self.semantic.registry.move(conn, collection, doc_id, state)
            self.log.write(
                conn,
                layer="semantic",
                collection=collection,
                item_id=doc_id,
                action=action,
                policy=policy,
                reason=reason,
                run_id=run_id,
                snapshot=document_snapshot(row),
            )
        self.semantic.settle(collection, [doc_id])

    def _compress_document(
        self, collection: str, doc_id: str, *, policy: str, reason: str, run_id: str
    ) -> None:
        now = self._clock.now()
        with self._db.transaction() as conn:
            row = self._document_row(conn, collection, doc_id)
            if row["state"] not in ("active", "compressed", "pending"):
                raise ValidationError(
                    "id", f"document {collection}/{doc_id} is {row['state']}; restore it first"
                )
            summary = summarize(row["content"], self.summary_chars)
            metadata = {
                **json.loads(row["metadata"]),
                "original_date": from_timestamp(row["created_at"]).isoformat(),
                "compressed_at": now.isoformat(),
                "original_chars": len(row["content"]),
            }
            self.semantic.registry.rewrite(
                conn, row, summary, metadata, compressed_at=to_timestamp(now)
            )
            self.log.write(
                conn,
                layer="semantic",
                collection=collection,
                item_id=doc_id,
                action="compress",
                policy=policy,
                reason=reason,
                run_id=run_id,
                snapshot=document_snapshot(row),
            )
        self.semantic.settle(collection, [doc_id])

    def _restore_document(self, collection: str, doc_id: str, *, reason: str, run_id: str) -> str:
        row = self._document_row(self._db, collection, doc_id)
        audit: dict[str, Any] = {
            "layer": "semantic",
            "collection": collection,
            "item_id": doc_id,
            "action": "restore",
            "policy": "restore",
            "reason": reason,
            "run_id": run_id,
            "snapshot": document_snapshot(row),
        }
        if row["state"] == "archived":
            with self._db.transaction() as conn:
                self.semantic.registry.unarchive(conn, collection, doc_id)
                self.log.write(conn, **audit)
        elif row["state"] == "compressed":
            original = self.log.last_snapshot("semantic", collection, doc_id, "compress")
            with self._db.transaction() as conn:
                self.semantic.registry.rewrite(
                    conn,
                    row,
                    str(original["content"]),
                    original.get("metadata") or {},
                    compressed_at=None,
                )
                self.log.write(conn, **audit)
        else:
            raise ValidationError(
                "id", f"document {collection}/{doc_id} is not archived or compressed"
            )
        self.semantic.settle(collection, [doc_id])
        return "semantic"

    # -- restore and audit ---------------------------------------------------------------

    def record_overflow(
        self,
        episodes: Sequence[Episode],
        collection: str,
        represented: Mapping[str, str] | None = None,
    ) -> None:
        """Audit episodes handed to the semantic layer because the store is over capacity;
        ``represented`` maps those already distilled to their knowledge document."""
        represented = represented or {}
        run_id = f"capacity-{uuid.uuid4().hex[:12]}"
        with self._db.transaction() as conn:
            for episode in episodes:
                row = self.episodic.rows.row(conn, episode.id)
                if row is None:
                    continue
                self.log.write(
                    conn,
                    layer="episodic",
                    collection="",
                    item_id=episode.id,
                    action="overflow",
                    policy="capacity",
                    reason=(
                        f"over capacity; represented by {collection}/{represented[episode.id]}"
                        if episode.id in represented
                        else f"over capacity; moved to {collection}/episode-{episode.id}"
                    ),
                    run_id=run_id,
                    snapshot=episode_snapshot(row),
                )

    def restore(
        self,
        item_id: str,
        *,
        layer: str | None = None,
        collection: str | None = None,
        reason: str = "restored on request",
        keep: bool = False,
    ) -> str:
        """Bring an archived (or compressed) item back; return its layer.

        The item is looked up in both layers unless ``layer`` or ``collection`` says where;
        an id found in more than one place needs one of them. Forgetting then leaves it alone
        for a while, and for good with ``keep`` (audited too): see :meth:`exemptions`."""
        check_name("id", item_id)
        if layer is not None and layer not in LAYERS:
            raise UnknownLayerError(layer, list(LAYERS))
        places: list[tuple[str, str]] = []
        if (
            layer in (None, "episodic")
            and collection is None
            and self.episodic.rows.exists(item_id)
        ):
            places.append(("episodic", ""))
        if layer in (None, "semantic"):
            places.extend(
                ("semantic", c) for c in self.semantic.registry.collections_of(item_id, collection)
            )
        if not places:
            raise NotFoundError("item", item_id)
        if len(places) > 1:
            where = ", ".join(f"{lay}/{coll}" if coll else lay for lay, coll in places)
            raise ValidationError(
                "id", f"{item_id!r} exists in {where}; pass layer= or collection="
            )
        run_id = f"restore-{uuid.uuid4().hex[:12]}"
        found_layer, found_collection = places[0]
        if found_layer == "episodic":
            self._restore_episode(item_id, reason=reason, run_id=run_id)
        else:
            self._restore_document(found_collection, item_id, reason=reason, run_id=run_id)
        if keep:
            snapshot = self.log.last_snapshot(found_layer, found_collection, item_id, "restore")
            place = {"layer": found_layer, "collection": found_collection, "item_id": item_id}
            with self._db.transaction() as conn:
                self.log.write(
                    conn,
                    **place,
                    action="keep",
                    policy="restore",
                    run_id=run_id,
                    reason="kept against forgetting on restore",
                    snapshot=snapshot,
                )
        return found_layer

    def exemptions(self, now: datetime, days: float) -> dict[tuple[str, str, str], str]:
        """(layer, collection, id) -> why forgetting leaves it alone: restored in the last
        ``days`` (a person undid a policy: it must not act again at once), or kept for good."""
        out: dict[tuple[str, str, str], str] = {}
        for entry in self.log.entries(AuditQuery(policy="restore", action="keep", limit=10**6)):
            out[(entry.layer, entry.collection, entry.item_id)] = "kept on restore (restore --keep)"
        since = now - timedelta(days=days)
        recent = AuditQuery(policy="restore", action="restore", since=since, limit=10**6)
        for entry in self.log.entries(recent):
            out.setdefault(
                (entry.layer, entry.collection, entry.item_id),
                f"restored {entry.at:%Y-%m-%d}: exempt for {days:g} days "
                "(forgetting.restore_exemption_days)",
            )
        return out

    def audit(
        self, query: AuditQuery, *, reader: str | None = None, reader_teams: Iterable[str] = ()
    ) -> list[AuditEntry]:
        """Audit rows, newest first (see :meth:`omoide.pipelines.audit.AuditLog.entries`)."""
        return self.log.entries(query, reader=reader, reader_teams=reader_teams)
