"""Handing omoide a conversation: chat turns become working memory and episodes of a thread.

``Memory.add(messages, agent_name=..., session_id=...)`` takes messages in the chat format
(``{"role", "content", "name"?, "timestamp"?, "id"?}``, a list or one) and, for each:

* records an **episode** of the session's thread (``event_type`` ``"message"``, the writing
  agent as owner, the role and speaker in its context, ``context.thread`` = the session), so
  context keys and neighbours work as for any conversation; all in one transaction, durable
  when the call returns;
* appends it to the session's **working memory** (already recorded, so it is never promoted
  again when it leaves the budget).

Adding is **idempotent**: a message's episode id is keyed by a secret of the data directory over
(agent, session, the message's own ``id`` if it has one, else its role, speaker, text and
``timestamp``), so a retried call records nothing twice. A message without a timestamp or id is
unique by its text within the session. Empty or whitespace-only messages, and blocks of recalled
memories (``<memories …>…</memories>``, what :meth:`Memory.recall` renders) shown back to the
model, are not recorded: such a message is skipped and reported, never an error for the batch.

**Importance without a human** (:func:`importance_of`): a chat turn starts at
``ingest.base_importance`` (0.3: routine chatter ages out by the forgetting policies) and gains
for cues in English and Japanese — a decision (+0.15), an error or failure (+0.15), human
feedback from the user (+0.15), an explicit "remember this" / 「覚えておいて」 (+0.2) — capped at
1. The estimate decides what is *kept*, not what is *found*: a turn with a cue rises above
chatter for the forgetting policies (and past the 0.5 that keeps it from ``stale_episodes``
when two cues meet), but the episode is marked ``context["importance"] = "estimated"`` and
recall ranks it at the neutral 0.5 (:attr:`Episode.ranking_importance`) — a keyword cue says a
turn is worth keeping, not which turn answers a question (measured on LongMemEval_S: ranking
by the estimate cost a question in a hundred; see ``bench/RESULTS.md``). Setting an
episode's importance (``episodic.update``) makes it the writer's again, and it ranks. A
system message is kept at the base. An LLM, when
configured, extracts facts besides (see :mod:`omoide.pipelines.extraction`); offline, nothing
is extracted and nothing is pinned.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from omoide.clock import Clock, to_timestamp
from omoide.core.config import IngestConfig
from omoide.core.ids import keyed_digest
from omoide.core.models import ESTIMATED, Episode
from omoide.core.validation import check_datetime, check_name
from omoide.errors import TokenBudgetError, ValidationError
from omoide.layers.episodic.store import EpisodicStore
from omoide.layers.working import WorkingMemory
from omoide.pipelines.extraction import Extraction

__all__ = [
    "MAX_MESSAGES",
    "ROLES",
    "AddReport",
    "ChatTurn",
    "ConversationIngest",
    "importance_of",
    "strip_recalled",
]

#: Roles of the chat format.
ROLES = ("user", "assistant", "system", "tool")
#: Messages one call may add.
MAX_MESSAGES = 1_000
#: Characters of one message.
MAX_MESSAGE_CHARS = 100_000
#: Keys a message may carry.
_KEYS = {"role", "content", "name", "timestamp", "id"}

_RECALLED = re.compile(r"<memories\b[^>]*>.*?</memories>", re.DOTALL | re.IGNORECASE)

_CUES: tuple[tuple[str, float, re.Pattern[str]], ...] = (
    (
        "decision",
        0.15,
        re.compile(
            r"\b(?:we decided|decided to|decision|let's go with|we will|we'll use|agreed to|"
            r"from now on)\b|決定|決めました|決めた|にします|ことにし|今後は|方針",
            re.IGNORECASE,
        ),
    ),
    (
        "error",
        0.15,
        re.compile(
            r"\b(?:error|exception|failed|failure|crash(?:ed)?|broken|bug|outage|timeout)\b|"
            r"エラー|失敗|障害|落ちた|不具合|例外|タイムアウト",
            re.IGNORECASE,
        ),
    ),
    (
        "remember",
        0.2,
        re.compile(
            r"\b(?:remember (?:this|that)|don't forget|do not forget|keep in mind|note that)\b|"
            r"覚えておいて|覚えといて|忘れないで|メモして|留意して",
            re.IGNORECASE,
        ),
    ),
)
_FEEDBACK = re.compile(
    r"\b(?:please (?:don't|do not|stop|always|never)|i (?:prefer|want you to|don't like|like it "
    r"when)|you should(?:n't)?|that was (?:wrong|great|helpful)|next time)\b|"
    r"してほしい|しないで|やめて|次からは|好みは|の方がいい|間違って",
    re.IGNORECASE,
)


def strip_recalled(text: str) -> str:
    """``text`` without the recalled-memory blocks omoide renders (so they are not stored or
    extracted again as if the conversation had said them)."""
    return _RECALLED.sub("", text).strip()


def importance_of(role: str, text: str, base: float = 0.3) -> tuple[float, tuple[str, ...]]:
    """The documented default importance of a chat turn, and the cues that raised it."""
    if role == "system":
        return base, ()
    found = [(name, gain) for name, gain, pattern in _CUES if pattern.search(text)]
    if role == "user" and _FEEDBACK.search(text):
        found.append(("feedback", 0.15))
    return min(1.0, base + sum(gain for _, gain in found)), tuple(name for name, _ in found)


@dataclass(frozen=True)
class ChatTurn:
    """One validated message of an ``add`` call."""

    position: int
    role: str
    content: str
    name: str | None
    timestamp: datetime
    client_id: str | None
    explicit_time: bool


@dataclass
class AddReport:
    """What one ``add`` did: the episodes recorded (new), those already there (a retry), the
    messages skipped with the reason, what extraction wrote (with an LLM), and notes."""

    agent_name: str
    session_id: str
    recorded: list[Episode] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)
    skipped: list[tuple[int, str]] = field(default_factory=list)
    extracted: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def episode_ids(self) -> list[str]:
        return [e.id for e in self.recorded]

    def summary(self) -> str:
        parts = [f"{len(self.recorded)} recorded"]
        if self.duplicates:
            parts.append(f"{len(self.duplicates)} already present")
        if self.skipped:
            parts.append(f"{len(self.skipped)} skipped")
        if self.extracted:
            parts.append(f"{len(self.extracted)} extracted")
        return f"{self.agent_name}/{self.session_id}: " + ", ".join(parts)


def _check_message(position: int, raw: Any, default_time: datetime) -> ChatTurn | str:
    """A validated turn, or the reason to skip it (ValidationError for malformed input)."""
    where = f"messages[{position}]"
    if isinstance(raw, str):
        raw = {"role": "user", "content": raw}
    if not isinstance(raw, Mapping):
        raise ValidationError(where, "expected a message object or a string")
    unknown = set(raw) - _KEYS
    if unknown:
        raise ValidationError(f"{where}.{sorted(unknown)[0]}", "unknown message key")
    role = raw.get("role", "user")
    if role not in ROLES:
        raise ValidationError(f"{where}.role", f"expected one of {', '.join(ROLES)}")
    content = raw.get("content")
    if not isinstance(content, str):
        raise ValidationError(f"{where}.content", "expected a string")
    if len(content) > MAX_MESSAGE_CHARS:
        raise ValidationError(f"{where}.content", f"longer than {MAX_MESSAGE_CHARS} characters")
    name = raw.get("name")
    if name is not None:
        name = check_name(f"{where}.name", name)
    client_id = raw.get("id")
    if client_id is not None:
        client_id = check_name(f"{where}.id", client_id)
    stamp = raw.get("timestamp")
    when = default_time if stamp is None else check_datetime(f"{where}.timestamp", stamp)
    if not content.strip():
        return "empty message"
    text = strip_recalled(content)
    if not text:
        return "only recalled memories"
    return ChatTurn(position, role, text, name, when, client_id, stamp is not None)


class ConversationIngest:
    """Records chat turns as episodes and working memory; see the module docstring."""

    def __init__(
        self,
        episodic: EpisodicStore,
        working: Callable[[str, str], WorkingMemory],
        *,
        clock: Clock,
        secret: Callable[[], bytes],
        config: IngestConfig,
        extraction: Extraction | None = None,
        related: Callable[[str, str], Sequence[str]] | None = None,
    ) -> None:
        self._episodic = episodic
        self._working = working
        self._clock = clock
        self._secret = secret
        self._key: bytes | None = None
        self.config = config
        self._extraction = extraction
        self._related = related or (lambda text, agent: [])

    def turns(
        self, messages: Any, timestamp: datetime | str | None
    ) -> tuple[list[ChatTurn], list[tuple[int, str]]]:
        """Validate ``messages``: the turns to record, and the skipped ones with the reason.
        Turns without a timestamp of their own follow ``timestamp`` (or now) a millisecond
        apart, in order."""
        if isinstance(messages, Mapping | str):
            messages = [messages]
        if not isinstance(messages, Sequence) or isinstance(messages, bytes):
            raise ValidationError("messages", "expected a message or a list of messages")
        if len(messages) > MAX_MESSAGES:
            raise ValidationError("messages", f"at most {MAX_MESSAGES} messages per call")
        start = self._clock.now() if timestamp is None else check_datetime("timestamp", timestamp)
        turns: list[ChatTurn] = []
        skipped: list[tuple[int, str]] = []
        for position, raw in enumerate(messages):
            checked = _check_message(position, raw, start + timedelta(milliseconds=position))
            if isinstance(checked, str):
                skipped.append((position, checked))
            else:
                turns.append(checked)
        return turns, skipped

    def episode_id(self, agent: str, session: str, turn: ChatTurn) -> str:
        """The idempotent id of ``turn``'s episode (see the module docstring)."""
        if turn.client_id is not None:
            parts: tuple[str, ...] = ("id", turn.client_id)
        else:
            stamp = str(to_timestamp(turn.timestamp)) if turn.explicit_time else ""
            parts = ("turn", turn.role, turn.name or "", turn.content, stamp)
        self._key = self._key or self._secret()
        return "msg-" + keyed_digest(self._key, agent, session, *parts)[:32]

    def add(
        self,
        messages: Any,
        *,
        agent_name: str,
        session_id: str,
        timestamp: datetime | str | None = None,
        scope: str | Sequence[str] | None = None,
    ) -> AddReport:
        """Record ``messages`` (see the module docstring); validated before anything is written."""
        agent = check_name("agent_name", agent_name)
        session = check_name("session_id", session_id)
        turns, skipped = self.turns(messages, timestamp)
        report = AddReport(agent, session, skipped=skipped)
        items: list[dict[str, Any]] = []
        ids: list[str] = []
        for turn in turns:
            episode_id = self.episode_id(agent, session, turn)
            if episode_id in ids:  # the same message twice in one call
                report.duplicates.append(episode_id)
                continue
            importance, cues = importance_of(turn.role, turn.content, self.config.base_importance)
            context: dict[str, Any] = {"thread": session, "role": turn.role}
            if turn.name:
                context["speaker"] = turn.name
            if cues:
                context["cues"] = list(cues)
            context["importance"] = ESTIMATED
            item: dict[str, Any] = {
                "id": episode_id,
                "agent_name": agent,
                "event_type": "message",
                "description": turn.content,
                "timestamp": turn.timestamp,
                "importance": importance,
                "context": context,
            }
            if scope is not None:
                item["scope"] = scope
            items.append(item)
            ids.append(episode_id)
        existing = self._episodic.rows.present(ids)  # ids are the agent's own (keyed by it)
        stored = self._episodic.record_many(items, exist_ok=True)
        for episode in stored:
            if episode.id in existing:
                report.duplicates.append(episode.id)
            else:
                report.recorded.append(episode)
        self._remember(agent, session, report)
        if report.recorded and self._extraction is not None and self._extraction.enabled:
            extracted, notes = self._extraction.run(
                report.recorded,
                agent_name=agent,
                related=lambda text: self._related(text, agent),
                scope=scope,
            )
            report.extracted += extracted
            report.notes += notes
        return report

    def _remember(self, agent: str, session: str, report: AddReport) -> None:
        """Append the newly recorded turns to working memory (never promoted again)."""
        if not report.recorded:
            return
        wm = self._working(agent, session)
        for episode in report.recorded:
            role = str(episode.context.get("role", "user"))
            try:
                wm.add_message(
                    episode.description,
                    role=role,
                    importance=0.0,
                    metadata={"episode_id": episode.id},
                )
            except TokenBudgetError:
                report.notes.append(
                    f"{episode.id}: longer than working memory's message budget; kept as an "
                    "episode only"
                )
