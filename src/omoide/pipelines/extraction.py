"""Extraction: an LLM reads new chat turns and proposes facts, decisions and preferences.

After :meth:`Memory.add <omoide.memory.Memory.add>` records turns, and only when an LLM that can
chat is configured (``[llm] base_url``; offline nothing is extracted), the LLM is shown the new
turns with the existing memories a recall finds for them, and answers with *operations*::

    {"operations": [
      {"op": "add", "kind": "preference", "subject": "user.coffee",
       "text": "The user drinks coffee without sugar.", "turns": [0]},
      {"op": "update", "kind": "fact", "subject": "team.standup_day",
       "text": "The standup moves to Wednesday.", "turns": [2]}]}

``add`` proposes a new item and ``update`` a newer value for a subject; both are stored through
the semantic layer with the ``subject`` key, so a new value becomes a new *version* that
supersedes the writer's current one — never an in-place overwrite: the audit log and restore
keep working, and an agent's version chain is its own (another agent's fact is never
superseded: the owner rules of :mod:`omoide.layers.semantic.store`). Each item carries its
provenance: ``source = "extraction"`` and ``episode_ids``, the episodes it came from.

The answer is validated strictly (:func:`parse_operations`); a malformed one is retried once
with the problem explained, then skipped and reported — nothing half-parsed is stored. Known
failures of extraction are guarded against in code, not only in the prompt: only the user's
turns may be a source (the assistant's guesses are not the user's facts); system messages are
never a source (restated system prompts and boilerplate are not facts); an item whose text is
already among the memories shown (recalled memories shown back) or already stored by the writer
is not stored again.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from omoide.core.config import IngestConfig
from omoide.core.models import Episode
from omoide.errors import LLMError, NotFoundError
from omoide.layers.semantic.store import SemanticStore, content_id
from omoide.providers.llm import LLM

__all__ = ["KINDS", "Extraction", "Operation", "parse_operations"]

#: What extraction may write.
KINDS = ("fact", "decision", "preference")
OPS = ("add", "update")
MAX_TEXT_CHARS = 1_000
MAX_SUBJECT_CHARS = 120
_SUBJECT = re.compile(r"^[\w][\w .:/-]*$", re.UNICODE)

_SYSTEM_PROMPT = """You maintain the long-term memory of an AI agent.
You are shown NEW TURNS of a conversation (numbered) and KNOWN MEMORIES already stored.
Propose operations that store what is worth remembering from the USER's new turns:
facts about the user or their world, decisions, and preferences.
- "add": something new. "update": a newer value for a subject a known memory holds.
- "subject": a short, stable key for what the item is about (e.g. "user.home_city").
  Use the same subject for a newer value of the same thing.
- "text": one self-contained sentence, in the language of the turn.
- "turns": the numbers of the USER turns it comes from.
Do not store: what the assistant said or guessed, system instructions, greetings or
chit-chat, or anything the KNOWN MEMORIES already say.
Answer with only a JSON object: {"operations": [...]} (an empty list when nothing is worth it).
Each operation: {"op": "add"|"update", "kind": "fact"|"decision"|"preference",
"subject": "...", "text": "...", "turns": [n, ...]}."""


@dataclass(frozen=True)
class Operation:
    """One validated proposal of the model."""

    op: str
    kind: str
    subject: str
    text: str
    turns: tuple[int, ...]


def parse_operations(content: str, turn_count: int, max_operations: int) -> list[Operation]:
    """The operations of a model's answer; ValueError saying what is wrong (nothing partial)."""
    text = content.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", text, re.DOTALL)
    if fenced:
        text = fenced.group(1)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"the answer is not JSON ({exc.msg} at character {exc.pos})") from None
    if not isinstance(data, dict) or set(data) != {"operations"}:
        raise ValueError('the answer must be an object with exactly one key, "operations"')
    raw_ops = data["operations"]
    if not isinstance(raw_ops, list):
        raise ValueError('"operations" must be a list')
    if len(raw_ops) > max_operations:
        raise ValueError(f"at most {max_operations} operations")
    return [_operation(i, raw, turn_count) for i, raw in enumerate(raw_ops)]


def _operation(i: int, raw: Any, turn_count: int) -> Operation:
    where = f"operations[{i}]"
    if not isinstance(raw, dict):
        raise ValueError(f"{where} must be an object")
    missing = [k for k in ("op", "kind", "subject", "text", "turns") if k not in raw]
    if missing:
        raise ValueError(f"{where}: missing key(s) {', '.join(missing)}")
    extra = set(raw) - {"op", "kind", "subject", "text", "turns"}
    if extra:
        raise ValueError(f"{where}: unknown key {sorted(extra)[0]!r}")
    op, kind, subject, body, turns = (raw[k] for k in ("op", "kind", "subject", "text", "turns"))
    if op not in OPS:
        raise ValueError(f"{where}.op must be one of {', '.join(OPS)}")
    if kind not in KINDS:
        raise ValueError(f"{where}.kind must be one of {', '.join(KINDS)}")
    if (
        not isinstance(subject, str)
        or not 0 < len(subject.strip()) <= MAX_SUBJECT_CHARS
        or not _SUBJECT.match(subject.strip())
    ):
        raise ValueError(f"{where}.subject must be a short key of letters, digits and . _ : / -")
    if not isinstance(body, str) or not 0 < len(body.strip()) <= MAX_TEXT_CHARS:
        raise ValueError(f"{where}.text must be a non-empty string of at most {MAX_TEXT_CHARS}")
    if (
        not isinstance(turns, list)
        or not turns
        or not all(isinstance(t, int) and not isinstance(t, bool) for t in turns)
        or not all(0 <= t < turn_count for t in turns)
    ):
        raise ValueError(f"{where}.turns must list the numbers (0..{turn_count - 1}) of turns")
    return Operation(op, kind, subject.strip(), body.strip(), tuple(dict.fromkeys(turns)))


def _normal(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


class Extraction:
    """Runs one extraction over new turns; see the module docstring."""

    def __init__(self, llm: LLM, semantic: SemanticStore, config: IngestConfig) -> None:
        self._llm = llm
        self._semantic = semantic
        self.config = config

    @property
    def enabled(self) -> bool:
        """True when the LLM can chat and extraction is configured on."""
        return self.config.extract and self._llm.can_chat

    def run(
        self,
        episodes: Sequence[Episode],
        *,
        agent_name: str,
        related: Callable[[str], Sequence[str]],
        scope: str | Sequence[str] | None = None,
    ) -> tuple[list[str], list[str]]:
        """Extract from ``episodes`` (new turns, in order): the ids stored, and notes on what
        was refused or skipped. ``related(text)`` returns the texts of existing memories."""
        if not self.enabled or not episodes:
            return [], []
        if self.config.collection not in self._semantic.collections:
            return [], [f"extraction skipped: no semantic collection {self.config.collection!r}"]
        user_text = "\n".join(e.description for e in episodes if e.context.get("role") == "user")
        if not user_text:
            return [], ["no user turns: nothing to extract"]
        known = [t for t in related(user_text) if t.strip()]
        prompt = _prompt(episodes, known)
        try:
            operations = self._ask(prompt, len(episodes))
        except LLMError as exc:
            return [], [f"extraction skipped: {exc}"]
        return self._apply(operations, episodes, known, agent_name, scope)

    def _ask(self, prompt: str, turn_count: int) -> list[Operation]:
        messages: list[dict[str, str]] = [
            {"role": "system", "content": _SYSTEM_PROMPT},
            {"role": "user", "content": prompt},
        ]
        problem = ""
        for attempt in range(2):
            content = self._llm.chat(messages)
            try:
                return parse_operations(content, turn_count, self.config.max_operations)
            except ValueError as exc:
                problem = str(exc)
            if attempt == 0:
                messages += [
                    {"role": "assistant", "content": content},
                    {
                        "role": "user",
                        "content": f"That answer is unusable: {problem}. Reply again with only "
                        'the JSON object {"operations": [...]}.',
                    },
                ]
        raise LLMError(f"malformed answer twice: {problem}")

    def _apply(
        self,
        operations: Sequence[Operation],
        episodes: Sequence[Episode],
        known: Sequence[str],
        agent: str,
        scope: str | Sequence[str] | None,
    ) -> tuple[list[str], list[str]]:
        known_texts = {_normal(t) for t in known}
        known_blob = _normal("\n".join(known))
        stored: list[str] = []
        notes: list[str] = []
        collection = self.config.collection
        for op in operations:
            sources = [episodes[t] for t in op.turns]
            if any(e.context.get("role") != "user" for e in sources):
                notes.append(f"{op.subject}: refused, its source is not a user turn")
                continue
            text = _normal(op.text)
            if text in known_texts or (len(text) >= 12 and text in known_blob):
                notes.append(f"{op.subject}: already known")
                continue
            doc_id = content_id(op.text, agent)
            try:
                self._semantic.get(collection, doc_id, reader=agent)
                notes.append(f"{op.subject}: already stored")
                continue
            except NotFoundError:
                pass
            metadata: Mapping[str, Any] = {
                "subject": op.subject,
                "kind": op.kind,
                "source": "extraction",
                "episode_ids": ",".join(e.id for e in sources),
            }
            stored += self._semantic.store(
                collection, [op.text], [metadata], agent_name=agent, scope=scope
            )
        return stored, notes


def _prompt(episodes: Sequence[Episode], known: Sequence[str]) -> str:
    lines = ["KNOWN MEMORIES:"]
    lines += [f"- {text}" for text in known] or ["(none)"]
    lines.append("")
    lines.append("NEW TURNS:")
    for n, episode in enumerate(episodes):
        role = str(episode.context.get("role", "user"))
        if role == "system":  # instructions and boilerplate: never a source of facts
            continue
        speaker = episode.context.get("speaker")
        label = f"{role} ({speaker})" if speaker else role
        lines.append(f"[{n}] {label}: {episode.description}")
    return "\n".join(lines)
