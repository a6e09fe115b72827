"""Promotion: an important message leaving working memory becomes an episode first.

:class:`~omoide.layers.working.WorkingMemory` calls a promoter for each evicted message whose
importance is above ``working.promote_threshold``; :class:`Promotion` records it in the episodic
layer under an id keyed by a secret of the data directory (see :mod:`omoide.core.ids`), so no
agent can create that id first. An id that is taken anyway (an import, an old store) is only
reused when it holds this same agent's message of this session — a message promoted before a
crash: idempotent — otherwise the next candidate id is used, so an evicted message is never
swallowed by an episode someone else wrote. Two replicas evicting the same message at once
both compute its id; the one whose insert loses finds the other's episode and returns it.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

from omoide.core.models import Message
from omoide.errors import AlreadyExistsError
from omoide.layers.episodic.store import EpisodicStore
from omoide.layers.working_rules import promoted_episode_id
from omoide.storage import Database

__all__ = ["PROMOTION_ATTEMPTS", "Promotion"]

#: Candidate ids tried for one promoted message before falling back to a random one.
PROMOTION_ATTEMPTS = 8


class Promotion:
    """The promoter of every working memory of one data directory."""

    def __init__(self, episodic: EpisodicStore, db: Database, secret: Callable[[], bytes]) -> None:
        self._episodic = episodic
        self._db = db
        self._secret = secret
        self._key: bytes | None = None

    def __call__(self, agent_name: str, session_id: str, message: Message) -> str:
        """Record ``message`` as an episode of ``agent_name``; return the episode's id."""
        assert message.id is not None  # messages in working memory have their row id
        secret = self._key = self._key or self._secret()
        taken: tuple[type[Exception], ...] = (
            AlreadyExistsError,
            *self._db.dialect.integrity_errors(),
        )
        for attempt in range(PROMOTION_ATTEMPTS):
            candidate = promoted_episode_id(agent_name, session_id, message.id, secret, attempt)
            row = self._episodic.rows.row(self._db, candidate)
            if row is None:
                try:
                    return self._record(agent_name, session_id, message, candidate)
                except taken:
                    # Taken meanwhile: on a shared database, most likely another replica
                    # evicting the same message at the same time.
                    row = self._episodic.rows.row(self._db, candidate)
                    if row is None:
                        raise
            if _holds(row, agent_name, session_id):
                return candidate
        return self._record(agent_name, session_id, message, f"wm-{uuid.uuid4().hex[:24]}")

    def _record(self, agent_name: str, session_id: str, message: Message, episode_id: str) -> str:
        episode = self._episodic.record(
            agent_name,
            "message",
            message.content,
            context={
                **dict(message.metadata),
                "role": message.role,
                "session_id": session_id,
                "source": "working_memory",
            },
            importance=message.importance,
            tags=["working_memory"],
            id=episode_id,
            timestamp=message.created_at,
        )
        return episode.id


def _holds(row: Any, agent_name: str, session_id: str) -> bool:
    """Whether an episode row is a promoted message of this agent's session."""
    context = json.loads(row["context"])
    return bool(
        row["agent_name"] == agent_name
        and row["event_type"] == "message"
        and context.get("source") == "working_memory"
        and context.get("session_id") == session_id
    )
