"""The audit log: every forgetting action, restore, purge and overflow, append-only.

Owner of the ``audit_log`` table (and of ``purge_grants``, whose rows the lifecycle writes
with the audit row that allows them): the log is written only inside the transaction of the
change it records (:meth:`AuditLog.write`), and the schema refuses updates and deletes. Each
row holds the item as it was (its snapshot, without the embedding): enough to restore it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from omoide.clock import Clock, from_timestamp, to_timestamp
from omoide.core.scope import reader_predicate
from omoide.core.validation import check_datetime, check_name, check_positive_int
from omoide.errors import NotFoundError
from omoide.storage import Database

__all__ = ["AuditEntry", "AuditLog", "AuditQuery", "document_snapshot", "episode_snapshot"]


@dataclass(frozen=True)
class AuditEntry:
    """One row of the audit log."""

    id: int
    at: datetime
    run_id: str
    policy: str
    layer: str
    collection: str
    item_id: str
    action: str
    reason: str
    #: The item before the action (JSON values; no embedding).
    snapshot: Mapping[str, Any]


def episode_snapshot(row: Any) -> dict[str, Any]:
    """An episode row as the audit log keeps it: JSON values, without rowid and embedding."""
    snap = dict(row)  # sqlite3.Row: dict() reads it through keys()
    snap.pop("rowid", None)
    snap.pop("embedding", None)
    for key in ("context", "tags", "refs"):
        snap[key] = json.loads(snap[key])
    return snap


def document_snapshot(row: Any) -> dict[str, Any]:
    """A document row as the audit log keeps it: JSON values, without its rowid."""
    snap = dict(row)
    snap.pop("rowid", None)
    snap["metadata"] = json.loads(snap["metadata"])
    return snap


@dataclass(frozen=True)
class AuditQuery:
    """The filters of the audit log, newest entries first: each one given narrows it."""

    item_id: str | None = None
    policy: str | None = None
    layer: str | None = None
    action: str | None = None
    run_id: str | None = None
    since: datetime | str | None = None
    until: datetime | str | None = None
    limit: int = 100

    def __post_init__(self) -> None:
        for name in ("item_id", "policy", "layer", "action", "run_id"):
            value = getattr(self, name)
            if value is not None:
                check_name(name, value)
        for name in ("since", "until"):
            value = getattr(self, name)
            if value is not None:
                check_datetime(name, value)
        check_positive_int("limit", self.limit)

    def filters(self) -> dict[str, Any]:
        """The filters as keyword arguments (those of :meth:`omoide.memory.Memory.audit`)."""
        return asdict(self)

    def params(self) -> dict[str, Any]:
        """The query parameters of ``GET /v1/audit`` (unset ones left out, times as text)."""
        return {
            k: (v.isoformat() if isinstance(v, datetime) else v)
            for k, v in asdict(self).items()
            if v is not None
        }


class AuditLog:
    """Appends to and reads the audit log."""

    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    def write(
        self,
        conn: Any,
        *,
        layer: str,
        collection: str,
        item_id: str,
        action: str,
        policy: str,
        reason: str,
        run_id: str,
        snapshot: Mapping[str, Any],
    ) -> int:
        """Append one row, in the caller's transaction (the change it records is in it);
        return its id."""
        cursor = conn.execute(
            "INSERT INTO audit_log(at, run_id, policy, layer, collection, item_id, action, "
            "reason, snapshot) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
            (
                to_timestamp(self._clock.now()),
                run_id,
                policy,
                layer,
                collection,
                item_id,
                action,
                reason,
                json.dumps(snapshot, ensure_ascii=False),
            ),
        )
        return int(cursor.fetchall()[0][0])

    def last_snapshot(
        self, layer: str, collection: str, item_id: str, action: str
    ) -> dict[str, Any]:
        """The snapshot of the newest ``action`` on an item (what restoring it goes back to)."""
        row = self._db.query_one(
            "SELECT snapshot FROM audit_log WHERE layer = ? AND collection = ? AND item_id = ? "
            "AND action = ? ORDER BY id DESC LIMIT 1",
            (layer, collection, item_id, action),
        )
        if row is None:
            raise NotFoundError("audit snapshot", f"{layer}/{item_id}")
        snapshot: dict[str, Any] = json.loads(row[0])
        return snapshot

    def entries(
        self,
        query: AuditQuery,
        *,
        reader: str | None = None,
        reader_teams: Iterable[str] = (),
    ) -> list[AuditEntry]:
        """Audit rows, newest first, filtered by ``query`` (validated when it was made).

        With ``reader``, only rows whose snapshot is of an item that agent may read (by the
        owner and scope the item had): a snapshot holds the item's content.
        """
        pred, params = reader_predicate(
            reader,
            reader_teams,
            owner_column="json_extract(snapshot, '$.agent_name')",
            scope_column="json_extract(snapshot, '$.scope')",
        )
        where: list[str] = [pred]
        for column in ("item_id", "policy", "layer", "action", "run_id"):
            value = getattr(query, column)
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        if query.since is not None:
            where.append("at >= ?")
            params.append(to_timestamp(check_datetime("since", query.since)))
        if query.until is not None:
            where.append("at <= ?")
            params.append(to_timestamp(check_datetime("until", query.until)))
        params.append(query.limit)
        rows = self._db.query(
            f"SELECT * FROM audit_log WHERE {' AND '.join(where)} ORDER BY id DESC LIMIT ?",
            params,
        )
        return [
            AuditEntry(
                id=int(r["id"]),
                at=from_timestamp(r["at"]),
                run_id=r["run_id"],
                policy=r["policy"],
                layer=r["layer"],
                collection=r["collection"],
                item_id=r["item_id"],
                action=r["action"],
                reason=r["reason"],
                snapshot=json.loads(r["snapshot"]),
            )
            for r in rows
        ]
