"""Routing a question: the article's flowchart reads its cues and weighs the layers.

A time expression or a question about past experience (``router.past_cues``) weighs the
episodic layer up; a how-to question (``router.howto_cues``: "how do I …", "手順", "方法")
weighs procedures up; every layer is asked. The cues and each route's weights are
configuration (:class:`~omoide.core.settings.RouterConfig`), in Japanese and English.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache

from omoide.core.settings import RouterConfig
from omoide.text.timeexpr import TimeRange, find_time_range

__all__ = ["Route", "route"]


@dataclass(frozen=True)
class Route:
    """Which layers a question goes to, how much each weighs, and why."""

    weights: Mapping[str, float]
    reasons: Mapping[str, str]
    time_range: TimeRange | None = None
    past: bool = False
    howto: bool = False


@lru_cache(maxsize=16)
def _pattern(cues: Sequence[str]) -> re.Pattern[str] | None:
    """One pattern for a list of cues: Latin-letter phrases as whole words, others as written."""
    parts = []
    for cue in cues:
        phrase = re.escape(unicodedata.normalize("NFKC", cue).casefold().strip())
        if cue.isascii():
            phrase = rf"(?<![0-9a-z]){phrase}(?![0-9a-z])"
        parts.append(phrase)
    return re.compile("|".join(parts)) if parts else None


def _cued(text: str, cues: Sequence[str]) -> bool:
    pattern = _pattern(tuple(cues))
    return pattern is not None and pattern.search(text) is not None


def route(query: str, now: datetime, config: RouterConfig | None = None) -> Route:
    """Read the flowchart's cues in ``query`` (time expression, past experience, how-to)."""
    config = config or RouterConfig()
    text = unicodedata.normalize("NFKC", query)
    folded = text.casefold()
    time_range = find_time_range(text, now)
    past = _cued(folded, config.past_cues)
    howto = _cued(folded, config.howto_cues)
    weights = {**_DEFAULTS, **config.layer_weights}
    reasons = {
        "working": "referenced in this session in the last minutes",
        "episodic": "matches a past experience",
        "semantic": "knowledge matching the question",
        "procedural": "a procedure matching the question",
    }
    if time_range is not None or past:
        weights.update(config.past_weights)
        reasons["episodic"] = (
            f"past experience; the question names a time ({time_range.expression})"
            if time_range is not None
            else "the question asks about past experience"
        )
    if howto:
        howto_weights = dict(config.howto_weights)
        if "episodic" in howto_weights:  # a how-to question about the past keeps the lesser
            howto_weights["episodic"] = min(weights["episodic"], howto_weights["episodic"])
        weights.update(howto_weights)
        reasons["procedural"] = "the question asks how to do something"
    return Route(weights, reasons, time_range, past, howto)


_DEFAULTS = {"working": 1.0, "episodic": 0.9, "semantic": 1.0, "procedural": 0.6}
