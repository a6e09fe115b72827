"""The rules of working memory that need no database: slot budgets, what a message may be,
the record of an eviction and the id an evicted message's episode gets.

Kept apart from :mod:`omoide.layers.working`, which owns the session tables and applies these
rules to the stored state.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from omoide.core.config import SLOTS, WorkingConfig
from omoide.core.ids import keyed_digest
from omoide.core.models import Message
from omoide.core.validation import check_json_mapping, check_name, check_text, check_unit_interval
from omoide.errors import ValidationError

__all__ = [
    "MAX_CONTENT_CHARS",
    "TEXT_SLOTS",
    "Eviction",
    "Promoter",
    "check_max_tokens",
    "check_text_slot",
    "coerce_message",
    "promoted_episode_id",
    "scaled_budgets",
]

MAX_CONTENT_CHARS = 1_000_000
TEXT_SLOTS = ("system", "active_task", "constraints", "scratchpad")

#: Called with (agent_name, session_id, message) for an important evicted message;
#: returns the id of the episode that now holds it.
Promoter = Callable[[str, str, Message], str]


@dataclass(frozen=True)
class Eviction:
    """A message that left working memory, and the episode it went to (if any)."""

    message: Message
    episode_id: str | None

    @property
    def promoted(self) -> bool:
        return self.episode_id is not None


def scaled_budgets(config: WorkingConfig, max_tokens: int) -> dict[str, int]:
    """Slot budgets scaled so that they sum to at most ``max_tokens``."""
    total = sum(config.slot_budgets.values())
    return {slot: max(1, config.slot_budgets[slot] * max_tokens // total) for slot in SLOTS}


def promoted_episode_id(
    agent_name: str, session_id: str, message_id: int, secret: bytes, attempt: int = 0
) -> str:
    """Id of the episode an evicted message becomes: deterministic, so re-evicting the same
    message (after a crash) is idempotent, and keyed by the directory's ``secret``, so no
    agent can compute the id of another agent's message (message ids are one sequence every
    agent sees). ``attempt`` gives the next candidate when an id is already taken by
    something that is not this message."""
    parts = [agent_name, session_id, str(message_id)]
    if attempt:
        parts.append(str(attempt))
    return f"wm-{keyed_digest(secret, *parts)[:24]}"


def coerce_message(
    message: str | Mapping[str, Any] | Message,
    *,
    role: str | None,
    importance: float | None,
    pinned: bool | None,
    metadata: Mapping[str, Any] | None,
    default_importance: float,
) -> Message:
    """``message`` (text, a dict or a :class:`Message`) as a checked :class:`Message`, the
    keyword arguments overriding its fields (see ``WorkingMemory.add_message``)."""
    if isinstance(message, Message):
        base = message
    elif isinstance(message, str):
        base = Message(content=message, importance=default_importance)
    elif isinstance(message, Mapping):
        extra = {
            k: v
            for k, v in message.items()
            if k not in ("content", "role", "importance", "pinned", "metadata")
        }
        if "content" not in message:
            raise ValidationError("message", "a message dict needs a 'content' key")
        base = Message(
            content=message["content"],
            role=message.get("role", "user"),
            importance=message.get("importance", default_importance),
            pinned=message.get("pinned", False),
            metadata={**dict(message.get("metadata") or {}), **extra},
        )
    else:
        raise ValidationError(
            "message", f"expected text, a dict or a Message, got {type(message).__name__}"
        )
    content = check_text("message.content", base.content, max_chars=MAX_CONTENT_CHARS)
    role_value = check_name("message.role", role if role is not None else base.role)
    imp = check_unit_interval(
        "message.importance", importance if importance is not None else base.importance
    )
    pin_flag = pinned if pinned is not None else base.pinned
    if not isinstance(pin_flag, bool):
        raise ValidationError("message.pinned", "expected true or false")
    meta = check_json_mapping(
        "message.metadata", metadata if metadata is not None else base.metadata
    )
    return Message(content=content, role=role_value, importance=imp, pinned=pin_flag, metadata=meta)


def check_text_slot(name: str) -> None:
    """Refuse a name that is not one of the text slots."""
    if name not in TEXT_SLOTS:
        raise ValidationError(
            "name",
            f"unknown slot {name!r}; text slots are {', '.join(TEXT_SLOTS)} "
            "(use add_message for recent_msgs and pin for pinned)",
        )


def check_max_tokens(value: Any) -> int:
    """``value`` if it is an integer large enough to give every slot a token."""
    if isinstance(value, bool) or not isinstance(value, int) or value < len(SLOTS):
        raise ValidationError("max_tokens", f"expected an integer >= {len(SLOTS)}, got {value!r}")
    return value
