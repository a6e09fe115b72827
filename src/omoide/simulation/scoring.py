"""Judging answers against what the scenario knows is right."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

from omoide.simulation.scenario import Question

__all__ = ["answers", "hit_at", "is_current"]


def _norm(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def answers(text: str, question: Question) -> bool:
    """True if ``text`` holds the expected answer (and names the anchor, if any)."""
    t = _norm(text)
    return _norm(question.expected) in t and _norm(question.anchor) in t


def is_current(text: str, question: Question) -> bool:
    """True if ``text`` states the current value and no superseded one.

    A superseded value that is part of the current one ("approved" inside "approved with
    pinning") cannot be told apart by text and is not held against it.
    """
    if not answers(text, question):
        return False
    t, current = _norm(text), _norm(question.expected)
    return not any(_norm(old) in t and _norm(old) not in current for old in question.forbidden)


def hit_at(texts: Sequence[str], question: Question, k: int) -> bool:
    """True if one of the first ``k`` texts answers the question."""
    return any(answers(t, question) for t in texts[:k])
