"""Routing a question: the article's flowchart reads its cues and weighs the layers.

A time expression or a question about past experience weighs the episodic layer up; "how do
I …" / "手順" / "方法" weighs procedures up; knowledge and the working memory are always asked.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from omoide.text.timeexpr import TimeRange, find_time_range

__all__ = ["Route", "route"]

_PAST_EN = re.compile(
    r"\b(?:last time|previous(?:ly)?|before|earlier|did (?:we|i|you|they|he|she)|"
    r"have (?:we|i|you) (?:ever|already)|when did|what happened|remember|experience[ds]?|"
    r"history|ago|used to|incident|same (?:error|problem|issue))\b",
    re.IGNORECASE,
)
_PAST_JA = re.compile(r"前回|以前|過去|前に|経験|したこと|あった|いつ|覚えて|履歴|事例|同じ|この前")
_HOWTO_EN = re.compile(
    r"\b(?:how (?:do|can|should|to|would)|steps?|procedures?|process for|guide|instructions?|"
    r"workflow|checklist|runbook|recipe|best way)\b",
    re.IGNORECASE,
)
_HOWTO_JA = re.compile(
    r"手順|方法|やり方|どうやって|どのように|どうすれば|仕方|進め方|フロー|段取り"
)


@dataclass(frozen=True)
class Route:
    """Which layers a question goes to, how much each weighs, and why."""

    weights: Mapping[str, float]
    reasons: Mapping[str, str]
    time_range: TimeRange | None = None
    past: bool = False
    howto: bool = False


def route(query: str, now: datetime) -> Route:
    """Read the flowchart's cues in ``query`` (time expression, past experience, how-to)."""
    text = unicodedata.normalize("NFKC", query)
    time_range = find_time_range(text, now)
    past = bool(_PAST_EN.search(text) or _PAST_JA.search(text))
    howto = bool(_HOWTO_EN.search(text) or _HOWTO_JA.search(text))
    weights = {"working": 1.0, "episodic": 0.9, "semantic": 1.0, "procedural": 0.6}
    reasons = {
        "working": "referenced in this session in the last minutes",
        "episodic": "matches a past experience",
        "semantic": "knowledge matching the question",
        "procedural": "a procedure whose trigger matches",
    }
    if time_range is not None or past:
        weights.update(episodic=1.0, semantic=0.85)
        reasons["episodic"] = (
            f"past experience; the question names a time ({time_range.expression})"
            if time_range is not None
            else "the question asks about past experience"
        )
    if howto:
        weights.update(procedural=1.0, semantic=0.9, episodic=min(weights["episodic"], 0.85))
        reasons["procedural"] = "the question asks how to do something"
    return Route(weights, reasons, time_range, past, howto)
