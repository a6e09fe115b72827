"""The operations over the memory's pipelines: recall, distillation, forgetting, maintenance,
the audit log, restore, indexing and the information cache.

A mixin of :class:`~omoide.service.local.LocalOperations` (kept apart for size) on the shared
rules of :class:`~omoide.service.caller.OperationsBase`: the caller's identity and scopes
apply, results are JSON-ready dicts. Whole-store jobs (distill, forget, maintain, index) need
an admin caller; a forgetting *dry run* is open to every agent and shows only the items it may
read. The audit log holds snapshots of the items it acted on, so an agent reads only the
entries of items its scopes allow. An id an agent names (restore, audit) is its own stored id
(``agent:id``) first, then the id as given (:meth:`~omoide.service.caller.OperationsBase._full_id`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from omoide.core.validation import check_name
from omoide.errors import NotFoundError, PermissionDeniedError, UnknownLayerError, ValidationError
from omoide.ingest.indexing import ProgressCallback
from omoide.layers.semantic.cache import cache_id
from omoide.pipelines.forgetting import ItemNote
from omoide.pipelines.lifecycle import LAYERS
from omoide.service.caller import OperationsBase, json_dict, plain_name, store_lock, to_json
from omoide.service.protocol import AuditQuery

__all__ = ["OPERATOR", "PipelineOperations"]

#: Who the local operator recalls as when it names no agent.
OPERATOR = "operator"


class PipelineOperations(OperationsBase):
    """Recall, distill, forget, maintain, audit, restore, index and cache, as ``caller``."""

    # -- recall --------------------------------------------------------------------------

    def recall(
        self,
        query: str,
        *,
        session_id: str | None = None,
        budget_tokens: int | None = None,
        layers: Sequence[str] | None = None,
        collections: Sequence[str] | None = None,
        top_k: int | None = None,
        min_score: float | None = None,
        diversity: float | None = None,
    ) -> dict[str, Any]:
        """The caller's budgeted context for ``query`` from every layer: the rendered text
        (ready for a prompt) and the items with where each came from and why. A read needs
        no author: a caller that reads every scope (the local operator, an admin key) recalls
        from every scope, as the operator; an agent from what its scopes allow."""
        ctx = self.mem.recall(
            query,
            agent_name=None if self.caller.read_all else self.caller.agent,
            session_id=session_id,
            budget_tokens=budget_tokens,
            layers=layers,
            collections=collections,
            top_k=top_k,
            min_score=min_score,
            diversity=diversity,
        )
        return {
            "query": ctx.query,
            "agent_name": ctx.agent_name,
            "context": ctx.render(),
            "tokens": ctx.tokens,
            "budget_tokens": ctx.budget_tokens,
            "layers": list(ctx.layers),
            "time_range": _plain(ctx.time_range),
            "recall_id": ctx.recall_id,
            "session_id": ctx.session_id,
            "items": [_plain(item) for item in ctx.items],
        }

    # -- distillation, forgetting, maintenance -----------------------------------------

    def distill(self) -> dict[str, Any]:
        """Turn old, similar episodes into knowledge (admin)."""
        self._require_admin("distillation")
        return _object(self.mem.distill())

    def forget(self, *, dry_run: bool = False) -> dict[str, Any]:
        """Apply the forgetting policies (admin); a dry run, open to all, only reports —
        to an agent, only the items it may read."""
        if not dry_run:
            self._require_admin("forgetting")
        report = self.mem.forget(dry_run=dry_run)
        if not self.caller.read_all:
            # Filtered by layer, collection and id: ids are unique only within a collection.
            for policy in report.policies:
                layer = policy.layer
                policy.acted = [
                    a for a in policy.acted if self._visible(layer, a.collection, a.item_id)
                ]
                policy.skipped = [
                    s for s in policy.skipped if self._visible(layer, _collection(s), s[0])
                ]
                policy.failed = [
                    f for f in policy.failed if self._visible(layer, _collection(f), f[0])
                ]
                policy.candidates = len(policy.acted) + len(policy.skipped)
        out = _object(report)
        out["acted"] = sum(len(p["acted"]) - len(p["failed"]) for p in out["policies"])
        return out

    def maintain(self) -> dict[str, Any]:
        """The daily job now: distill, forget, enforce collection policies (admin)."""
        self._require_admin("maintenance")
        return _object(self.mem.maintain())

    def enforce_collections(self, *, dry_run: bool = False) -> dict[str, Any]:
        """Collection retention, caps and cache expiry alone (admin)."""
        self._require_admin("enforcing collection policies")
        return _object(self.mem.enforce_collections(dry_run=dry_run))

    def _visible(self, layer: str, collection: str | None, item_id: str) -> bool:
        """Whether the caller may read an item of a plan (by layer, collection and id; a
        semantic item of unknown collection is not visible)."""
        reader, teams = self.caller.reader, self.caller.teams
        if layer == "episodic":
            return self.mem.episodic.rows.is_visible(item_id, reader, teams)
        if not collection:
            return False
        return self.mem.semantic.registry.is_visible(collection, item_id, reader, teams)

    # -- audit and restore -------------------------------------------------------------

    def audit(self, query: AuditQuery | None = None) -> list[dict[str, Any]]:
        """Audit entries newest first; an agent sees those of items its scopes allow."""
        filters = (query or AuditQuery()).filters()
        reader, teams = self.caller.reader, self.caller.teams
        own = self._own_form(filters["item_id"]) if filters.get("item_id") else None
        if own is not None:  # the caller's own item of that name first, as everywhere
            entries = self.mem.audit(
                **{**filters, "item_id": own}, reader=reader, reader_teams=teams
            )
            if entries:
                return [_object(e) for e in entries]
        entries = self.mem.audit(**filters, reader=reader, reader_teams=teams)
        return [_object(e) for e in entries]

    def restore(
        self,
        item_id: str,
        *,
        layer: str | None = None,
        collection: str | None = None,
        keep: bool = False,
    ) -> dict[str, Any]:
        """Bring an archived or compressed item back (an admin, or the item's owner).

        To an agent, only the items it owns exist here: anyone else's item, readable or not,
        answers exactly as an id that does not exist (no existence oracle)."""
        item_id = self._item_id(item_id, layer, collection)
        if not self.caller.admin:
            layer, collection = self._own_restore_place(item_id, layer, collection)
        found = self.mem.lifecycle.restore(item_id, layer=layer, collection=collection, keep=keep)
        if found == "episodic":
            return {
                "layer": found,
                "collection": None,
                "item": _object(self.mem.episodic.get(item_id)),
                "kept": keep,
            }
        where = self.mem.semantic.registry.collections_of(item_id, collection or None)
        doc = self.mem.semantic.get(where[0], item_id)
        return {"layer": found, "collection": where[0], "item": _object(doc), "kept": keep}

    def purge(
        self, item_id: str, *, reason: str, layer: str = "episodic", collection: str = ""
    ) -> dict[str, Any]:
        """Remove an item for good, never-forget ones too (admin); the audit entry (with the
        item's snapshot) is returned."""
        self._require_admin("purging an item")
        item_id = self._item_id(item_id, layer, collection or None)
        by = self.caller.agent or OPERATOR
        return _object(
            self.mem.purge(item_id, reason=reason, layer=layer, collection=collection, by=by)
        )

    def _item_id(self, given: str, layer: str | None, collection: str | None) -> str:
        """The whole id ``given`` stands for in the layer (or either) it names: the caller's
        own stored id first, then ``given``, when the caller may read an item with it; else
        the one id a unique prefix stands for (see :meth:`_full_id`)."""
        if not plain_name(given, 1) or (collection is not None and not plain_name(collection, 1)):
            return given  # the lifecycle names what is wrong
        names = (layer,) if layer is not None else ("episodic", "semantic")
        episodic = "episodic" in names and collection is None
        semantic = "semantic" in names
        reader, teams = self.caller.reader, self.caller.teams
        registry = self.mem.semantic.registry
        own = self._own_form(given)
        for form in (own, given):
            if form is None:
                continue
            if (episodic and self.mem.episodic.rows.is_visible(form, reader, teams)) or (
                semantic and registry.ids_starting(form, collection, reader, teams)[:1] == [form]
            ):
                return form
        if episodic and (found := self._episode_id(given)) != given:
            return found
        return self._document_id(given, collection, "id") if semantic else given

    def _own_restore_place(
        self, item_id: str, layer: str | None, collection: str | None
    ) -> tuple[str, str | None]:
        """The one place (layer, collection) where the caller owns ``item_id``; NotFoundError
        (the same as for a missing id) when it owns none there."""
        check_name("id", item_id)
        if layer is not None and layer not in LAYERS:
            raise UnknownLayerError(layer, list(LAYERS))
        if collection is not None:
            self.mem.semantic.count(collection)  # validates the collection name
        agent = self.caller.agent or ""
        places: list[tuple[str, str | None]] = []
        if (
            layer in (None, "episodic")
            and collection is None
            and self.mem.episodic.rows.owned_by(item_id, agent)
        ):
            places.append(("episodic", None))
        if layer in (None, "semantic"):
            owned = self.mem.semantic.registry.owned_collections(item_id, agent, collection)
            places += [("semantic", c) for c in owned]
        if not places:
            raise NotFoundError("item", item_id)
        if len(places) > 1:
            where = ", ".join(f"{lay}/{coll}" if coll else lay for lay, coll in places)
            raise ValidationError(
                "id", f"{item_id!r} exists in {where}; pass layer= or collection="
            )
        return places[0]

    # -- indexing, collections, cache -----------------------------------------------------

    def index(
        self,
        path: str | os.PathLike[str],
        collection: str,
        *,
        source: str | None = None,
        include: Iterable[str] = (),
        exclude: Iterable[str] = (),
        max_file_bytes: int | None = None,
        scope: str | Sequence[str] | None = None,
        use_git: bool | None = None,
        dry_run: bool = False,
        progress: ProgressCallback | None = None,
    ) -> dict[str, Any]:
        """Index a folder or git repository on this machine into ``collection`` (admin:
        it reads the files of the process that holds the memory)."""
        self._require_admin("indexing")
        if self.caller.remote:
            self._check_index_root(path)
        if scope is None and self.caller.agent:
            scope = "private"  # an admin's files are the admin's until shared on purpose
        options: dict[str, Any] = {}
        if max_file_bytes is not None:
            options["max_file_bytes"] = max_file_bytes
        report = self.mem.index(
            path,
            collection,
            source=source,
            include=include,
            exclude=exclude,
            agent_name=self.caller.agent or "",
            scope=scope,
            use_git=use_git,
            dry_run=dry_run,
            progress=progress,
            **options,
        )
        return {
            **_object(report),
            "files_skipped": report.files_skipped,
            "skipped_by_reason": report.skipped_by_reason(),
            "summary": report.summary(),
        }

    def _check_index_root(self, path: str | os.PathLike[str]) -> None:
        """Through a server, only folders under ``server.index_roots`` may be indexed (the
        path resolved, symlinks followed, so ``root/../etc`` or a link out is outside)."""
        roots = [Path(r).expanduser().resolve() for r in self.mem.config.server.index_roots]
        if not roots:
            raise PermissionDeniedError(
                "indexing through the server is off: the operator lists the folders it may "
                "read in server.index_roots"
            )
        target = Path(path).expanduser().resolve()
        if not any(target == root or target.is_relative_to(root) for root in roots):
            raise PermissionDeniedError(
                "the server indexes only folders under server.index_roots: "
                + ", ".join(str(r) for r in roots)
            )

    def cache(
        self,
        key: str,
        content: str,
        ttl_days: float,
        source: str,
        *,
        collection: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        scope: str | Sequence[str] | None = None,
    ) -> dict[str, Any]:
        """Cache outside information under ``key`` for ``ttl_days``; caching a key again
        replaces its entry (the entry's owner only)."""
        writer = self._writer()
        target = self.mem.semantic.cache.collection if collection is None else collection
        self._check_document_writer(target, [metadata], 1)

        def owners() -> None:  # checked inside the store's write transaction
            if isinstance(key, str):
                self._check_document_owners(target, [cache_id(key, writer)])

        with store_lock(self.mem):  # one write of an id at a time here (its chunks too)
            doc_id = self.mem.semantic.cache(
                key,
                content,
                ttl_days,
                source,
                collection=target,
                metadata=metadata,
                agent_name=writer,
                scope=scope,
                guard=owners,
            )
        return _object(self.mem.semantic.get(target, doc_id))

    def cached(self, key: str, *, collection: str | None = None) -> dict[str, Any]:
        """The live entry cached under ``key`` (NotFoundError if absent, expired or hidden)."""
        doc = self.mem.semantic.cache.get(
            key,
            collection=collection,
            reader=self.caller.reader,
            reader_teams=self.caller.teams,
            agent_name=self.caller.agent or "",
        )
        if doc is None:
            raise NotFoundError("cache entry", key)
        return _object(doc)


def _collection(note: tuple[str, str]) -> str | None:
    """The collection a skipped or failed item of a forgetting report is in (if known)."""
    return note.collection if isinstance(note, ItemNote) else None


_object = json_dict


def _plain(value: Any) -> Any:
    return None if value is None else to_json(value)
