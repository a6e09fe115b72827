"""Provenance of recalls: which memories went into which context.

Every :meth:`Memory.recall <omoide.memory.Memory.recall>` is logged in SQLite — the query,
the agent, the session, the layers consulted, the time range read from the question and,
in order, the items returned (layer, id, score, tokens). :class:`RecallLog` answers both
directions of the question "where did this context come from?": :meth:`RecallLog.get` gives
the items of one recall, :meth:`RecallLog.containing` the recalls that returned one memory.

Entries older than ``RouterConfig.recall_log_retention_days`` are pruned as new ones are
written (0 days: recalls are not logged at all).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from omoide.clock import Clock, from_timestamp, to_timestamp
from omoide.core.config import RouterConfig
from omoide.core.models import LAYERS
from omoide.core.validation import check_datetime, check_name, check_positive_int
from omoide.errors import NotFoundError, ValidationError
from omoide.storage import Database

__all__ = ["LoggedItem", "RecallLog", "RecallRecord"]

#: How often (seconds of the injected clock) old entries are pruned at most.
PRUNE_INTERVAL_SECONDS = 3600.0


@dataclass(frozen=True)
class LoggedItem:
    """One item a recall returned."""

    position: int
    layer: str
    id: str
    score: float
    tokens: int


@dataclass(frozen=True)
class RecallRecord:
    """One logged recall and the items it returned, in context order."""

    id: str
    created_at: datetime
    agent_name: str
    session_id: str | None
    query: str
    layers: tuple[str, ...]
    time_range: tuple[datetime, datetime] | None
    budget_tokens: int
    tokens_used: int
    items: tuple[LoggedItem, ...]


class RecallLog:
    """The recall provenance log; obtain it as ``Memory.recall_log``."""

    def __init__(self, db: Database, *, clock: Clock, config: RouterConfig) -> None:
        self._db = db
        self._clock = clock
        self.config = config
        self._last_prune: float | None = None

    @property
    def enabled(self) -> bool:
        return self.config.recall_log_retention_days > 0

    def write(
        self,
        recall_id: str,
        *,
        agent_name: str,
        session_id: str | None,
        query: str,
        layers: Sequence[str],
        time_range: tuple[datetime, datetime] | None,
        budget_tokens: int,
        tokens_used: int,
        items: Sequence[tuple[str, str, float, int]],
    ) -> None:
        """Record one recall (``items``: layer, id, score, tokens in context order)."""
        if not self.enabled:
            return
        now = self._clock.now()
        with self._db.transaction() as conn:
            conn.execute(
                "INSERT INTO recall_log(id, created_at, agent_name, session_id, query, layers, "
                "time_start, time_end, budget_tokens, tokens_used) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    recall_id,
                    to_timestamp(now),
                    agent_name,
                    session_id,
                    query,
                    json.dumps(list(layers)),
                    None if time_range is None else to_timestamp(time_range[0]),
                    None if time_range is None else to_timestamp(time_range[1]),
                    budget_tokens,
                    tokens_used,
                ),
            )
            conn.executemany(
                "INSERT INTO recall_log_items(recall_id, position, layer, item_id, score, tokens) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (recall_id, i, layer, item_id, float(score), int(tokens))
                    for i, (layer, item_id, score, tokens) in enumerate(items)
                ],
            )
        stamp = self._clock.monotonic()
        if self._last_prune is None or stamp - self._last_prune >= PRUNE_INTERVAL_SECONDS:
            self._last_prune = stamp
            self.prune()

    def prune(self, now: datetime | None = None) -> int:
        """Delete entries older than the retention period; return how many went."""
        days = self.config.recall_log_retention_days
        if days <= 0:
            with self._db.transaction() as conn:
                return int(conn.execute("DELETE FROM recall_log").rowcount)
        cutoff = (now or self._clock.now()) - timedelta(days=days)
        with self._db.transaction() as conn:
            return int(
                conn.execute(
                    "DELETE FROM recall_log WHERE created_at < ?", (to_timestamp(cutoff),)
                ).rowcount
            )

    # -- reading -----------------------------------------------------------------------

    def get(self, recall_id: str, *, reader: str | None = None) -> RecallRecord:
        """One recall with its items (``reader``: only that agent's own recalls)."""
        check_name("recall_id", recall_id)
        where, params = "id = ?", [recall_id]
        if reader is not None:
            where += " AND agent_name = ?"
            params.append(check_name("reader", reader))
        rows = self._db.query(f"SELECT * FROM recall_log WHERE {where}", params)
        if not rows:
            raise NotFoundError("recall", recall_id)
        return self._records(rows)[0]

    def entries(
        self,
        *,
        agent_name: str | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        limit: int = 100,
        reader: str | None = None,
    ) -> list[RecallRecord]:
        """Logged recalls, newest first, optionally of one agent and within a period.

        ``reader`` limits the answer to that agent's own recalls: what an agent asked is
        private to it.
        """
        where: list[str] = ["1 = 1"]
        params: list[Any] = []
        if agent_name is not None:
            where.append("agent_name = ?")
            params.append(check_name("agent_name", agent_name))
        if reader is not None:
            where.append("agent_name = ?")
            params.append(check_name("reader", reader))
        if since is not None:
            where.append("created_at >= ?")
            params.append(to_timestamp(check_datetime("since", since)))
        if until is not None:
            where.append("created_at <= ?")
            params.append(to_timestamp(check_datetime("until", until)))
        check_positive_int("limit", limit, maximum=100_000)
        rows = self._db.query(
            f"SELECT * FROM recall_log WHERE {' AND '.join(where)} "
            "ORDER BY created_at DESC, rowid DESC LIMIT ?",
            [*params, limit],
        )
        return self._records(rows)

    def containing(
        self,
        item_id: str,
        *,
        layer: str | None = None,
        limit: int = 100,
        reader: str | None = None,
    ) -> list[RecallRecord]:
        """The recalls whose context included the memory ``item_id``, newest first."""
        check_name("item_id", item_id)
        check_positive_int("limit", limit, maximum=100_000)
        where = ["i.item_id = ?"]
        params: list[Any] = [item_id]
        if layer is not None:
            if layer not in LAYERS:
                raise ValidationError("layer", f"unknown layer {layer!r}")
            where.append("i.layer = ?")
            params.append(layer)
        if reader is not None:
            where.append("r.agent_name = ?")
            params.append(check_name("reader", reader))
        rows = self._db.query(
            "SELECT DISTINCT r.* FROM recall_log r JOIN recall_log_items i ON i.recall_id = r.id "
            f"WHERE {' AND '.join(where)} ORDER BY r.created_at DESC, r.rowid DESC LIMIT ?",
            [*params, limit],
        )
        return self._records(rows)

    def count(self) -> int:
        """Number of logged recalls."""
        return int(self._db.scalar("SELECT COUNT(*) FROM recall_log"))

    def _records(self, rows: Sequence[Any]) -> list[RecallRecord]:
        if not rows:
            return []
        ids = [r["id"] for r in rows]
        items: dict[str, list[LoggedItem]] = {i: [] for i in ids}
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            for r in self._db.query(
                "SELECT * FROM recall_log_items WHERE recall_id IN "
                f"({','.join('?' * len(part))}) ORDER BY recall_id, position",
                part,
            ):
                items[r["recall_id"]].append(
                    LoggedItem(
                        int(r["position"]),
                        r["layer"],
                        r["item_id"],
                        float(r["score"]),
                        int(r["tokens"]),
                    )
                )
        return [
            RecallRecord(
                id=r["id"],
                created_at=from_timestamp(r["created_at"]),
                agent_name=r["agent_name"],
                session_id=r["session_id"],
                query=r["query"],
                layers=tuple(json.loads(r["layers"])),
                time_range=None
                if r["time_start"] is None
                else (from_timestamp(r["time_start"]), from_timestamp(r["time_end"])),
                budget_tokens=int(r["budget_tokens"]),
                tokens_used=int(r["tokens_used"]),
                items=tuple(items[r["id"]]),
            )
            for r in rows
        ]
