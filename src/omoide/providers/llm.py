"""Knowledge extraction: turning a cluster of similar episodes into one lesson.

An :class:`LLM` implements one method, :meth:`LLM.extract`, from a :class:`Cluster` to a
:class:`Knowledge` (summary, category, confidence) — or raises
:class:`~omoide.errors.LLMError`, and distillation skips and reports that cluster.

* :class:`OfflineExtractor` (default): deterministic, no model. The summary is the cluster's
  representative episode verbatim, the outcome most of them share, the tags at least half of
  them carry, the period and the agents; the category follows the event types; the
  confidence grows with cohesion and size.
* :class:`ChatCompletionsLLM`: any OpenAI-compatible ``/chat/completions`` endpoint (OpenAI,
  Ollama, vLLM, llama.cpp's server). It asks for a JSON object and validates it; a malformed
  answer is retried once with the problem explained, then refused. Configure it with
  ``[llm] base_url, model, api_key`` or ``OMOIDE_LLM_BASE_URL``, ``OMOIDE_LLM_MODEL``,
  ``OMOIDE_LLM_API_KEY`` (``OPENAI_API_KEY`` also works for the key).
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.request
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from omoide.core.config import LLMConfig
from omoide.core.models import Episode
from omoide.errors import ConfigError, LLMError

__all__ = [
    "CATEGORIES",
    "LLM",
    "ChatCompletionsLLM",
    "Cluster",
    "Knowledge",
    "OfflineExtractor",
    "llm_from_config",
    "parse_knowledge",
]

#: The kinds of knowledge distillation writes (article section 7), and ``observation`` for
#: episodes that are none of them (notes, messages, routine reports): no signal is not a decision.
CATEGORIES = ("decision_pattern", "error_pattern", "optimization", "preference", "observation")

_CATEGORY_OF_EVENT = {
    "error": "error_pattern",
    "failure": "error_pattern",
    "incident": "error_pattern",
    "bug": "error_pattern",
    "conflict": "error_pattern",
    "security_incident": "error_pattern",
    "success": "optimization",
    "optimization": "optimization",
    "improvement": "optimization",
    "performance": "optimization",
    "feedback": "preference",
    "human_feedback": "preference",
    "preference": "preference",
    "decision": "decision_pattern",
}

MAX_SUMMARY_CHARS = 2_000


@dataclass(frozen=True)
class Cluster:
    """Similar episodes to turn into one piece of knowledge."""

    #: The episodes, the seed (most important) first.
    episodes: tuple[Episode, ...]
    #: Index in ``episodes`` of the most central one (highest mean similarity to the others).
    representative: int = 0
    #: Mean calibrated similarity of the episodes to the representative, in [0, 1].
    cohesion: float = 1.0

    @property
    def source_ids(self) -> tuple[str, ...]:
        """The episode ids, sorted (knowledge ids derive from them)."""
        return tuple(sorted(e.id for e in self.episodes))


@dataclass(frozen=True)
class Knowledge:
    """A lesson drawn from a cluster."""

    summary: str
    category: str
    confidence: float


class LLM(ABC):
    """A knowledge extractor: implement :meth:`extract`.

    A model that can also hold a chat implements :meth:`chat` and sets ``can_chat``; then
    ``Memory.add`` uses it to extract facts from conversations
    (:mod:`omoide.pipelines.extraction`)."""

    #: Recorded with each piece of knowledge (metadata ``extractor``).
    name: str = "llm"
    #: True when :meth:`chat` is implemented.
    can_chat: bool = False

    @abstractmethod
    def extract(self, cluster: Cluster) -> Knowledge:
        """The lesson of ``cluster``; raise LLMError when none can be given."""

    def chat(self, messages: Sequence[Mapping[str, str]]) -> str:
        """One chat completion: the assistant's text (LLMError when the model cannot chat)."""
        raise LLMError(f"{self.name} cannot chat")


def _category(episodes: Sequence[Episode]) -> str:
    votes = Counter(_CATEGORY_OF_EVENT.get(e.event_type.lower(), "") for e in episodes)
    votes.pop("", None)
    if not votes:
        return "observation"
    best = max(votes.values())
    return next(c for c in CATEGORIES if votes.get(c) == best)


class OfflineExtractor(LLM):
    """Deterministic extraction from the cluster itself; needs no model (the default)."""

    name = "offline"

    def __init__(self, *, max_chars: int = 1_000) -> None:
        self.max_chars = max_chars

    def extract(self, cluster: Cluster) -> Knowledge:
        episodes = cluster.episodes
        if not episodes:
            raise LLMError("an empty cluster has nothing to extract")
        n = len(episodes)
        representative = episodes[cluster.representative]
        lines = [_clip(representative.description, self.max_chars)]
        outcomes = Counter(e.outcome.strip() for e in episodes if e.outcome and e.outcome.strip())
        if outcomes:
            outcome, times = outcomes.most_common(1)[0]
            if times == 1 and representative.outcome:
                outcome = representative.outcome.strip()
            lines.append(f"→ {_clip(outcome, self.max_chars)} ({times}/{n})")
        # Provenance (how many episodes, when, whose, their tags) is the document's metadata,
        # not its text: written into the text it would be searched and embedded as if it were
        # the lesson, and its English words would make a Japanese lesson read as English.
        size_factor = n / (n + 2)  # 3 → 0.6, 8 → 0.8, 18 → 0.9
        confidence = round(max(0.0, min(1.0, cluster.cohesion)) * size_factor, 3)
        return Knowledge("\n".join(lines), _category(episodes), confidence)


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


_SYSTEM_PROMPT = (
    "You distill an AI agent's experiences into reusable knowledge. From the related episodes "
    "you are given, extract ONE general lesson or pattern. Answer with a JSON object only, no "
    "prose, with exactly these keys:\n"
    '  "summary": one or two sentences stating the lesson, in the language of the episodes;\n'
    '  "category": one of "decision_pattern", "error_pattern", "optimization", "preference", '
    '"observation" (a recurring fact that is none of the others);\n'
    '  "confidence": a number from 0.0 to 1.0, how well the episodes support the lesson.'
)


def _user_prompt(cluster: Cluster, max_episodes: int) -> str:
    episodes = list(cluster.episodes)
    if len(episodes) > max_episodes:
        rep = episodes[cluster.representative]
        episodes = [rep, *[e for e in episodes if e is not rep][: max_episodes - 1]]
    lines = [
        f"- [{e.timestamp.date().isoformat()}] ({e.event_type}, {e.agent_name}) "
        f"{_clip(e.description, 500)}" + (f" → {_clip(e.outcome, 300)}" if e.outcome else "")
        for e in episodes
    ]
    more = len(cluster.episodes) - len(episodes)
    if more > 0:
        lines.append(f"(and {more} more like these)")
    return "Episodes:\n" + "\n".join(lines)


def parse_knowledge(content: str) -> Knowledge:
    """Validate a model's answer; raise ValueError saying what is wrong."""
    text = content.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", text, re.DOTALL)
    if fenced:
        text = fenced.group(1)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"the answer is not JSON ({exc.msg} at character {exc.pos})") from None
    if not isinstance(data, dict):
        raise ValueError("the answer must be a JSON object")
    missing = [k for k in ("summary", "category", "confidence") if k not in data]
    if missing:
        raise ValueError(f"missing key(s): {', '.join(missing)}")
    summary, category, confidence = data["summary"], data["category"], data["confidence"]
    if not isinstance(summary, str) or not summary.strip():
        raise ValueError('"summary" must be a non-empty string')
    if len(summary) > MAX_SUMMARY_CHARS:
        raise ValueError(f'"summary" must be at most {MAX_SUMMARY_CHARS} characters')
    if category not in CATEGORIES:
        raise ValueError(f'"category" must be one of {", ".join(CATEGORIES)}, got {category!r}')
    if (
        isinstance(confidence, bool)
        or not isinstance(confidence, int | float)
        or not 0.0 <= confidence <= 1.0
    ):
        raise ValueError(f'"confidence" must be a number from 0 to 1, got {confidence!r}')
    return Knowledge(summary.strip(), category, float(confidence))


class ChatCompletionsLLM(LLM):
    """An OpenAI-compatible chat-completions endpoint (stdlib HTTP, no SDK).

    ``base_url`` is the API root, e.g. ``https://api.openai.com/v1``,
    ``http://localhost:11434/v1`` (Ollama) or ``http://localhost:8080/v1`` (llama.cpp).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout_seconds: float = 60.0,
        json_mode: bool = True,
        max_episodes: int = 20,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"llm.base_url: expected http(s)://..., got {base_url!r}")
        if not model:
            raise ConfigError("llm.model: a model name is needed with llm.base_url")
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.can_chat = True
        self.model = model
        self.name = f"chat-completions/{model}"
        self._api_key = api_key
        self.timeout_seconds = timeout_seconds
        self.json_mode = json_mode
        self.max_episodes = max_episodes

    def extract(self, cluster: Cluster) -> Knowledge:
        messages: list[dict[str, str]] = [
            {"role": "system", "content": _SYSTEM_PROMPT},
            {"role": "user", "content": _user_prompt(cluster, self.max_episodes)},
        ]
        problem = ""
        for attempt in range(2):
            content = self.chat(messages)
            try:
                return parse_knowledge(content)
            except ValueError as exc:
                problem = str(exc)
            if attempt == 0:
                messages = [
                    *messages,
                    {"role": "assistant", "content": content},
                    {
                        "role": "user",
                        "content": f"That answer is unusable: {problem}. Reply again with only "
                        'the JSON object {"summary": ..., "category": ..., "confidence": ...}.',
                    },
                ]
        raise LLMError(f"malformed answer twice from {self.model}: {problem}")

    def chat(self, messages: Sequence[Mapping[str, str]]) -> str:
        """One chat completion; the assistant's text (LLMError on failure or refusal)."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": list(messages),
            "temperature": 0,
        }
        if self.json_mode:
            body["response_format"] = {"type": "json_object"}
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        request = urllib.request.Request(
            self.url, data=json.dumps(body).encode("utf-8"), headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_seconds) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read(500).decode("utf-8", "replace").strip()
            raise LLMError(f"{self.url} answered HTTP {exc.code}: {detail}") from None
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise LLMError(f"cannot reach {self.url}: {reason}") from None
        try:
            payload = json.loads(raw)
            choice = payload["choices"][0]
            message = choice["message"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise LLMError(f"{self.url} did not answer in the chat-completions format") from None
        refusal = message.get("refusal") if isinstance(message, dict) else None
        if refusal:
            raise LLMError(f"the model refused: {_clip(str(refusal), 200)}")
        if choice.get("finish_reason") == "content_filter":
            raise LLMError("the model's answer was withheld by its content filter")
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, str):
            raise LLMError(f"{self.url} returned a message without text content")
        return content

    def __repr__(self) -> str:
        return f"ChatCompletionsLLM({self.url!r}, model={self.model!r})"


def llm_from_config(config: LLMConfig | None = None) -> LLM:
    """The configured extractor: chat completions when a base URL is set (in the config or
    ``OMOIDE_LLM_BASE_URL``), else the offline extractor."""
    config = config or LLMConfig()
    base_url = config.base_url or os.environ.get("OMOIDE_LLM_BASE_URL")
    if not base_url:
        return OfflineExtractor()
    model = config.model or os.environ.get("OMOIDE_LLM_MODEL") or ""
    api_key = (
        config.api_key or os.environ.get("OMOIDE_LLM_API_KEY") or os.environ.get("OPENAI_API_KEY")
    )
    return ChatCompletionsLLM(
        base_url, model, api_key=api_key, timeout_seconds=config.timeout_seconds
    )
