"""Layer 1: working memory (CAG).

A :class:`WorkingMemory` is the context an agent keeps at hand during one session, in the
article's six slots, each with a token budget:

==============  ======  ==========================================================
slot            budget  holds
==============  ======  ==========================================================
system           2,000  the system prompt
active_task      1,000  the task at hand
constraints      1,000  active instructions and constraints
recent_msgs     20,000  the conversation, oldest first
pinned           4,000  items pinned with :meth:`WorkingMemory.pin` (always kept)
scratchpad       4,000  temporary notes
==============  ======  ==========================================================

Budgets are for ``max_tokens=32000`` and scale with it. Adding a message past the
``recent_msgs`` budget evicts the oldest unpinned messages; an evicted message whose
importance is above 0.7 is first recorded in the episodic store (so it is never lost), and
every eviction is reported in the return value of :meth:`WorkingMemory.add_message`.
Everything is written to the database as it changes, so a session reopened in another process
finds the same state. Tokens are counted once, when content arrives.

On a shared database (replicas over PostgreSQL) another replica may change the session at any
time, so every change first reads the session again inside its own write transaction (writers
are serialized there) and checks budgets against what is stored: no slot written back stale, no
budget counted twice, no message evicted twice. A sole writer's object holds the current state
already and reads nothing more.

Owner of ``working_sessions``, ``working_messages`` and ``working_pins``: no module outside
this one runs SQL on them (:func:`session_exists`, :func:`session_count` and
:func:`session_usage` answer the other layers and the front ends).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from datetime import timedelta
from typing import Any

from omoide.clock import Clock, from_timestamp, to_timestamp
from omoide.core.config import SLOTS, WorkingConfig
from omoide.core.models import Message, Pin
from omoide.core.validation import check_name, check_text
from omoide.errors import NotFoundError, TokenBudgetError
from omoide.layers.working_rules import (
    MAX_CONTENT_CHARS,
    TEXT_SLOTS,
    Eviction,
    Promoter,
    check_max_tokens,
    check_text_slot,
    coerce_message,
    scaled_budgets,
)
from omoide.providers.tokens import TokenCounter
from omoide.storage import Database
from omoide.storage.database import insert_row, insert_row_keeping_id

__all__ = [
    "Eviction",
    "WorkingMemory",
    "import_session_rows",
    "session_count",
    "session_exists",
    "session_usage",
    "sessions_present",
]


def session_exists(db: Database, agent_name: str, session_id: str) -> bool:
    """True if the working session is stored (whether or not it is open in this process)."""
    return (
        db.query_one(
            "SELECT 1 FROM working_sessions WHERE agent_name=? AND session_id=?",
            (agent_name, session_id),
        )
        is not None
    )


def session_count(db: Database) -> int:
    """Number of stored working sessions."""
    return int(db.scalar("SELECT COUNT(*) FROM working_sessions"))


def session_usage(db: Database, agent_name: str | None = None) -> dict[str, tuple[int, int, int]]:
    """Per agent (only ``agent_name`` unless None): its sessions, their message tokens and
    their pins' tokens."""
    where, params = ("1 = 1", []) if agent_name is None else ("s.agent_name = ?", [agent_name])
    rows = db.query(
        "SELECT s.agent_name, COUNT(DISTINCT s.session_id), COALESCE(SUM(m.tokens), 0), "
        "(SELECT COALESCE(SUM(p.tokens), 0) FROM working_pins p WHERE p.agent_name = "
        "s.agent_name) FROM working_sessions s LEFT JOIN working_messages m "
        "ON m.agent_name = s.agent_name AND m.session_id = s.session_id "
        f"WHERE {where} GROUP BY s.agent_name",
        params,
    )
    return {str(r[0] or ""): (int(r[1] or 0), int(r[2] or 0), int(r[3] or 0)) for r in rows}


def sessions_present(db: Database, keys: Iterable[tuple[str, str]]) -> set[tuple[str, str]]:
    """Which of these (agent_name, session_id) are stored sessions."""
    return {k for k in keys if session_exists(db, *k)}


def import_session_rows(
    conn: Any,
    sessions: Iterable[Mapping[str, Any]],
    messages: Iterable[Mapping[str, Any]],
    pins: Iterable[Mapping[str, Any]],
) -> None:
    """Insert whole rows of an import (messages keep their ids when those are free)."""
    for s in sessions:
        insert_row(conn, "working_sessions", s)
    for m in messages:
        insert_row_keeping_id(conn, "working_messages", m)
    for p in pins:
        insert_row(conn, "working_pins", p)


class WorkingMemory:
    """One agent's working memory for one session; obtain it with ``Memory.working()``."""

    #: The session's token limit and the slot budgets scaled to it.
    max_tokens: int
    budgets: dict[str, int]
    _slots: dict[str, tuple[str, int]]
    _messages: list[Message]
    _pins: dict[str, Pin]

    def __init__(
        self,
        db: Database,
        *,
        agent_name: str,
        session_id: str,
        max_tokens: int | None,
        config: WorkingConfig,
        counter: TokenCounter,
        clock: Clock,
        promote: Promoter | None = None,
    ) -> None:
        self.agent_name = check_name("agent_name", agent_name)
        self.session_id = check_name("session_id", session_id)
        self._db = db
        self._config = config
        self._counter = counter
        self._clock = clock
        self._promote = promote
        self._lock = threading.RLock()
        self._load_or_create(max_tokens)

    # -- state ------------------------------------------------------------------------

    def _load_or_create(self, max_tokens: int | None) -> None:
        limit = None if max_tokens is None else check_max_tokens(max_tokens)
        resized = False
        with self._lock:
            with self._db.locked() as conn:
                stored = self._reload(conn)
            if not stored or (limit is not None and limit != self.max_tokens):
                with self._db.transaction() as conn:
                    if self._db.shared:  # another replica may have created or resized it
                        stored = self._reload(conn)
                    if not stored:
                        self._create(conn, limit)
                    elif limit is not None and limit != self.max_tokens:
                        self._resize(conn, limit)
                        resized = True
            # A session reopened with a smaller max_tokens sheds messages now, as overflow
            # does. On a shared database only if this call resized it: an overflow seen
            # otherwise is another replica's message on its way in, which that one evicts
            # and reports.
            shed = resized or not self._db.shared
            self.resize_evictions = self._evict_over_budget() if shed else []

    def _reload(self, conn: Any) -> bool:
        """Read the session's stored state through ``conn`` (in a write transaction: the
        state that transaction changes); False if the session is not stored."""
        key = (self.agent_name, self.session_id)
        row = conn.execute(
            "SELECT max_tokens, slots FROM working_sessions WHERE agent_name=? AND session_id=?",
            key,
        ).fetchone()
        if row is None:
            return False
        self.max_tokens = int(row["max_tokens"])
        self.budgets = scaled_budgets(self._config, self.max_tokens)
        raw = json.loads(row["slots"])
        self._slots = {k: (v[0], int(v[1])) for k, v in raw.items()}
        self._messages = [
            _message(r)
            for r in conn.execute(
                "SELECT * FROM working_messages WHERE agent_name=? AND session_id=? ORDER BY id",
                key,
            ).fetchall()
        ]
        self._pins = {
            r["key"]: _pin(r)
            for r in conn.execute(
                "SELECT * FROM working_pins WHERE agent_name=? AND session_id=? ORDER BY pinned_at",
                key,
            ).fetchall()
        }
        return True

    @contextmanager
    def _writing(self) -> Iterator[Any]:
        """A write transaction deciding on the session's current state: on a shared database
        another replica may have changed it, so it is read again under the write lock (a sole
        writer's objects hold the current state already). Callers hold ``self._lock``."""
        with self._db.transaction() as conn:
            if self._db.shared and not self._reload(conn):
                raise NotFoundError("working session", f"{self.agent_name}/{self.session_id}")
            yield conn

    def _create(self, conn: Any, max_tokens: int | None) -> None:
        self.max_tokens = check_max_tokens(
            max_tokens if max_tokens is not None else self._config.max_tokens
        )
        self.budgets = scaled_budgets(self._config, self.max_tokens)
        self._slots, self._messages, self._pins = {}, [], {}
        now = to_timestamp(self._clock.now())
        conn.execute(
            "INSERT INTO working_sessions(agent_name, session_id, max_tokens, slots, "
            "created_at, updated_at) VALUES (?, ?, ?, '{}', ?, ?)",
            (self.agent_name, self.session_id, self.max_tokens, now, now),
        )

    def _resize(self, conn: Any, new: int) -> None:
        budgets = scaled_budgets(self._config, new)
        # A smaller session must still hold its pins and text slots; messages are evicted after.
        pinned = sum(p.tokens for p in self._pins.values())
        if pinned > budgets["pinned"]:
            raise TokenBudgetError(
                "max_tokens",
                f"{new} is too small for this session's pins ({pinned} tokens); unpin first",
            )
        conn.execute(
            "UPDATE working_sessions SET max_tokens=? WHERE agent_name=? AND session_id=?",
            (new, self.agent_name, self.session_id),
        )
        self.max_tokens, self.budgets = new, budgets

    @property
    def messages(self) -> list[Message]:
        """The messages in the ``recent_msgs`` slot, oldest first."""
        with self._lock:
            return list(self._messages)

    @property
    def pins(self) -> list[Pin]:
        """Pinned items, in pinning order."""
        with self._lock:
            return list(self._pins.values())

    def get_slot(self, name: str) -> str | None:
        """The text of a text slot (system, active_task, constraints, scratchpad)."""
        check_text_slot(name)
        with self._lock:
            entry = self._slots.get(name)
            return entry[0] if entry else None

    def slot_tokens(self) -> dict[str, int]:
        """Tokens used per slot."""
        with self._lock:
            used = {slot: self._slots.get(slot, ("", 0))[1] for slot in TEXT_SLOTS}
            used["recent_msgs"] = sum(m.tokens for m in self._messages)
            used["pinned"] = sum(p.tokens for p in self._pins.values())
            return {slot: used[slot] for slot in SLOTS}

    def total_tokens(self) -> int:
        """Tokens held across all slots (content only; the headers of build_context are extra)."""
        return sum(self.slot_tokens().values())

    def recent(self, within: timedelta) -> list[Message]:
        """Messages added in the last ``within`` (by the injected clock)."""
        cutoff = self._clock.now() - within
        with self._lock:
            return [m for m in self._messages if m.created_at and m.created_at >= cutoff]

    # -- changes -----------------------------------------------------------------------

    def add_message(
        self,
        message: str | Mapping[str, Any] | Message,
        *,
        role: str | None = None,
        importance: float | None = None,
        pinned: bool | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> list[Eviction]:
        """Append a message; evict the oldest unpinned ones while over budget.

        ``message`` is text, a :class:`Message`, or a dict with ``content`` and optionally
        ``role``, ``importance``, ``pinned`` and other keys (kept as metadata). Keyword
        arguments override. Returns the evictions this caused: each evicted message with
        importance above the promotion threshold was recorded as an episode first.
        """
        msg = coerce_message(
            message,
            role=role,
            importance=importance,
            pinned=pinned,
            metadata=metadata,
            default_importance=self._config.default_importance,
        )
        tokens = self._counter.count(msg.content)
        with self._lock:
            now = self._clock.now()
            with self._writing() as conn:
                budget = self.budgets["recent_msgs"]
                pinned_tokens = sum(m.tokens for m in self._messages if m.pinned)
                if tokens + pinned_tokens > budget:
                    raise TokenBudgetError(
                        "message",
                        f"{tokens} tokens do not fit the recent_msgs budget of {budget} "
                        f"({pinned_tokens} held by pinned messages)",
                    )
                cur = conn.execute(
                    "INSERT INTO working_messages(agent_name, session_id, role, content, "
                    "importance, pinned, tokens, metadata, created_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                    (
                        self.agent_name,
                        self.session_id,
                        msg.role,
                        msg.content,
                        msg.importance,
                        int(msg.pinned),
                        tokens,
                        json.dumps(dict(msg.metadata), ensure_ascii=False),
                        to_timestamp(now),
                    ),
                )
                message_id = int(cur.fetchall()[0][0])
                self._touch(conn)
            self._messages.append(replace(msg, id=message_id, tokens=tokens, created_at=now))
            return self._evict_over_budget()

    def _victim(self, everything: bool) -> Message | None:
        """The next message to evict: the oldest unpinned one, while over budget (or, with
        ``everything``, while there is one)."""
        if not everything and sum(m.tokens for m in self._messages) <= self.budgets["recent_msgs"]:
            return None
        return next((m for m in self._messages if not m.pinned), None)

    def _evict_over_budget(self, everything: bool = False) -> list[Eviction]:
        """Evict the oldest unpinned messages while over budget (all of them with
        ``everything``), one transaction each; return what this call evicted.

        Record first, delete after: an important message becomes an episode before its row
        goes, outside the transaction (embedding may be slow), so a crash in between leaves
        it in place and the deterministic episode id makes the retry idempotent. Each delete
        re-checks that the message is still the one to evict: another replica may have
        evicted it (then the next one is chosen) or the session may fit by now.
        """
        evictions: list[Eviction] = []
        while (victim := self._victim(everything)) is not None:
            episode_id = None
            if victim.importance > self._config.promote_threshold and self._promote is not None:
                episode_id = self._promote(self.agent_name, self.session_id, victim)
            with self._writing() as conn:
                current = self._victim(everything)
                evicted = current is not None and current.id == victim.id
                if evicted:
                    conn.execute("DELETE FROM working_messages WHERE id=?", (victim.id,))
                    self._touch(conn)
            if evicted:
                self._messages = [m for m in self._messages if m.id != victim.id]
                evictions.append(Eviction(victim, episode_id))
        return evictions

    def pin(self, key: str, content: str, reason: str = "") -> Pin:
        """Keep ``content`` in every context until unpinned; re-pinning a key replaces it."""
        key = check_name("key", key)
        content = check_text("content", content, max_chars=MAX_CONTENT_CHARS)
        reason = check_text("reason", reason, max_chars=10_000, allow_empty=True)
        tokens = self._counter.count(content)
        with self._lock:
            now = self._clock.now()
            with self._writing() as conn:
                others = sum(p.tokens for k, p in self._pins.items() if k != key)
                budget = self.budgets["pinned"]
                if others + tokens > budget:
                    raise TokenBudgetError(
                        "content",
                        f"pinning {tokens} tokens would exceed the pinned budget of {budget} "
                        f"({others} already pinned); unpin something first",
                    )
                conn.execute(
                    "INSERT INTO working_pins(agent_name, session_id, key, content, reason, "
                    "tokens, pinned_at) VALUES (?, ?, ?, ?, ?, ?, ?) "
                    "ON CONFLICT(agent_name, session_id, key) DO UPDATE SET "
                    "content=excluded.content, reason=excluded.reason, tokens=excluded.tokens, "
                    "pinned_at=excluded.pinned_at",
                    (
                        self.agent_name,
                        self.session_id,
                        key,
                        content,
                        reason,
                        tokens,
                        to_timestamp(now),
                    ),
                )
                self._touch(conn)
            pin = Pin(key, content, reason, now, tokens)
            self._pins.pop(key, None)
            self._pins[key] = pin
            return pin

    def unpin(self, key: str) -> Pin:
        """Remove a pinned item and return it."""
        key = check_name("key", key)
        with self._lock:
            with self._writing() as conn:
                if key not in self._pins:
                    raise NotFoundError("pin", key)
                conn.execute(
                    "DELETE FROM working_pins WHERE agent_name=? AND session_id=? AND key=?",
                    (self.agent_name, self.session_id, key),
                )
                self._touch(conn)
            return self._pins.pop(key)

    def set_slot(self, name: str, value: str | None) -> None:
        """Set a text slot (system, active_task, constraints, scratchpad); None clears it."""
        check_text_slot(name)
        if value is not None:
            value = check_text(name, value, max_chars=MAX_CONTENT_CHARS, allow_empty=True)
        tokens = self._counter.count(value) if value else 0
        with self._lock:
            with self._writing() as conn:
                if tokens > self.budgets[name]:
                    raise TokenBudgetError(
                        name, f"{tokens} tokens exceed the {name} budget of {self.budgets[name]}"
                    )
                slots = dict(self._slots)  # the other slots as stored: none is written back stale
                if value:
                    slots[name] = (value, tokens)
                else:
                    slots.pop(name, None)
                conn.execute(
                    "UPDATE working_sessions SET slots=? WHERE agent_name=? AND session_id=?",
                    (json.dumps(slots, ensure_ascii=False), self.agent_name, self.session_id),
                )
                self._touch(conn)
            self._slots = slots

    def clear_messages(self) -> list[Eviction]:
        """Evict every unpinned message (important ones are promoted, as on overflow)."""
        with self._lock:
            if self._db.shared:  # the messages other replicas added since this was read
                with self._db.locked() as conn:
                    self._reload(conn)
            return self._evict_over_budget(everything=True)

    def _touch(self, conn: Any) -> None:
        conn.execute(
            "UPDATE working_sessions SET updated_at=? WHERE agent_name=? AND session_id=?",
            (to_timestamp(self._clock.now()), self.agent_name, self.session_id),
        )

    # -- rendering ---------------------------------------------------------------------

    def build_context(self) -> str:
        """The slots rendered for an LLM, in the article's order, empty slots left out."""
        with self._lock:
            parts = []
            for slot in SLOTS:
                if slot == "recent_msgs":
                    body = "\n".join(f"{m.role}: {m.content}" for m in self._messages)
                elif slot == "pinned":
                    body = "\n".join(
                        f"- {p.key}: {p.content}" + (f" (pinned: {p.reason})" if p.reason else "")
                        for p in self._pins.values()
                    )
                else:
                    body = self._slots.get(slot, ("", 0))[0]
                if body:
                    parts.append(f"[{slot}]\n{body}")
            return "\n\n".join(parts)

    def __repr__(self) -> str:
        return (
            f"WorkingMemory(agent_name={self.agent_name!r}, session_id={self.session_id!r}, "
            f"tokens={self.total_tokens()}/{self.max_tokens})"
        )


def _pin(row: Any) -> Pin:
    return Pin(
        row["key"],
        row["content"],
        row["reason"],
        from_timestamp(row["pinned_at"]),
        int(row["tokens"]),
    )


def _message(row: Any) -> Message:
    return Message(
        content=row["content"],
        role=row["role"],
        importance=float(row["importance"]),
        pinned=bool(row["pinned"]),
        created_at=from_timestamp(row["created_at"]),
        tokens=int(row["tokens"]),
        metadata=json.loads(row["metadata"]),
        id=int(row["id"]),
    )
