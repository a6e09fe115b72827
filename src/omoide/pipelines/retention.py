"""Collection policies enforced: retention, caps and cache expiry, through the audit log.

Each semantic collection declares how long it keeps documents (``retention_days``), a cap
(``max_docs``) and what happens at the cap (``on_full``). Writing past a ``refuse`` cap is
refused by the store itself (CapacityError); everything else is enforced here, by the
maintenance job (:meth:`Memory.maintain <omoide.memory.Memory.maintain>`):

* **retention** (policy ``retention``) — active documents not written for more than
  ``retention_days`` (by ``updated_at``: storing a document again restarts its time) are
  archived: they leave recall and search, stay in their table, and
  :meth:`Memory.restore <omoide.memory.Memory.restore>` brings them back;
* **caps** under ``on_full = "archive_lowest"`` (policy ``capacity``) — a collection holding
  more than ``max_docs`` documents has its lowest-value ones archived until it fits. Value:
  fewest accesses first, then least important (``importance`` metadata — an episode moved
  out over capacity carries its own —, a distilled document's mean; 0.5 when none), then
  least recently used (last access, else last write), then id. So an unread note of
  importance 0.2 leaves before an unread incident fix of 0.5 written earlier;
* **cache expiry** (policy ``cache_expiry``) — entries of the information cache past their
  expiry are deleted (expiry is the contract they were stored with); the audit row keeps
  the entry as it was.

Never-forget (protected) documents are exempt from all three and counted as kept. Every
action is one transaction with its audit row (:mod:`omoide.pipelines.lifecycle`), so
``Memory.audit(policy="retention")`` lists what was done and why.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from omoide.clock import Clock, to_timestamp
from omoide.core.ids import document_importance
from omoide.errors import OmoideError
from omoide.layers.semantic.store import SemanticStore
from omoide.pipelines.forgetting import PlannedAction
from omoide.pipelines.lifecycle import Lifecycle
from omoide.storage import Database

__all__ = ["Retention", "RetentionReport"]


@dataclass
class RetentionReport:
    """What one enforcement of the collection policies did (or would do, ``dry_run``)."""

    dry_run: bool
    run_id: str
    at: datetime
    #: Every action, in order: retention and capacity archives, cache-expiry deletes.
    actions: list[PlannedAction] = field(default_factory=list)
    #: Protected documents a policy matched and left alone, per collection.
    protected_kept: dict[str, int] = field(default_factory=dict)
    #: Collections still over their cap after archiving (only protected documents remain).
    over_cap: dict[str, int] = field(default_factory=dict)
    #: (item id, error) of actions that failed when carried out.
    failed: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0

    def count(self, policy: str) -> int:
        """Actions of one policy (``retention``, ``capacity`` or ``cache_expiry``)."""
        return sum(1 for a in self.actions if a.policy == policy)


class Retention:
    """Enforces every collection's retention, cap and cache expiry (see the module docs)."""

    def __init__(
        self, db: Database, *, semantic: SemanticStore, lifecycle: Lifecycle, clock: Clock
    ) -> None:
        self._db = db
        self._semantic = semantic
        self._lifecycle = lifecycle
        self._clock = clock

    def run(self, *, dry_run: bool = False) -> RetentionReport:
        """Plan every collection's actions, then (unless ``dry_run``) carry them out."""
        started = self._clock.monotonic()
        now = self._clock.now()
        report = RetentionReport(dry_run, f"retention-{uuid.uuid4().hex[:12]}", now)
        for name in self._semantic.config.collections:
            self._plan_collection(name, now, report)
        if not dry_run:
            for action in report.actions:
                try:
                    self._lifecycle.apply(
                        "semantic",
                        action.item_id,
                        action.action,
                        collection=action.collection,
                        policy=action.policy,
                        reason=action.reason,
                        run_id=report.run_id,
                    )
                except OmoideError as exc:
                    report.failed.append((action.item_id, f"{type(exc).__name__}: {exc}"))
        report.seconds = self._clock.monotonic() - started
        return report

    def delete_expired(self, collection: str, doc_ids: Sequence[str]) -> int:
        """Delete expired cache entries with an audit row each; return how many left.

        The hook behind :meth:`SemanticStore.purge_expired`, so purging is audited whoever
        calls it. Protected entries are skipped (they only leave results).
        """
        run_id = f"cache-{uuid.uuid4().hex[:12]}"
        removed = 0
        for doc_id in doc_ids:
            self._lifecycle.apply(
                "semantic",
                doc_id,
                "delete",
                collection=collection,
                policy="cache_expiry",
                reason="cache entry past its expiry",
                run_id=run_id,
            )
            removed += 1
        return removed

    # -- planning ----------------------------------------------------------------------

    def _plan_collection(self, name: str, now: datetime, report: RetentionReport) -> None:
        spec = self._semantic.config.collections[name]
        planned: set[str] = set()
        kept = 0

        def plan(doc_id: str, action: str, policy: str, reason: str) -> None:
            planned.add(doc_id)
            report.actions.append(PlannedAction(policy, "semantic", name, doc_id, action, reason))

        registry = self._semantic.registry
        for row in registry.expired(name, to_timestamp(now)):
            if row["protected"]:
                kept += 1
            else:
                plan(row["id"], "delete", "cache_expiry", "cache entry past its expiry")

        if spec.retention_days is not None:
            cutoff = now - timedelta(days=spec.retention_days)
            for row in registry.unwritten_since(name, to_timestamp(cutoff)):
                if row["id"] in planned:
                    continue
                if row["protected"]:
                    kept += 1
                else:
                    plan(
                        row["id"],
                        "archive",
                        "retention",
                        f"not written for more than {spec.retention_days} days "
                        f"(retention of {name!r})",
                    )

        if spec.on_full == "archive_lowest":
            held = registry.count(name, "active") + registry.count(name, "pending")
            excess = held - len(planned) - spec.max_docs
            if excess > 0:
                rows = sorted(registry.least_accessed(name, excess + len(planned)), key=_value)
                lowest = [r["id"] for r in rows if r["id"] not in planned][:excess]
                for doc_id in lowest:
                    plan(
                        doc_id,
                        "archive",
                        "capacity",
                        f"{name!r} holds {held:,} of {spec.max_docs:,} documents "
                        "(rule: archive_lowest; fewest accesses, least important, "
                        "least recently used)",
                    )
                if len(lowest) < excess:
                    report.over_cap[name] = excess - len(lowest)
        if kept:
            report.protected_kept[name] = kept


def _value(row: Any) -> tuple[int, float, float, str]:
    """A document's value to a capped collection, lowest first: its accesses, its importance
    (:func:`~omoide.core.ids.document_importance`), its last use (access, else write), its id."""
    importance = document_importance(row["id"], json.loads(row["metadata"] or "{}"))
    return (row["access_count"], importance, row["used"], row["id"])
