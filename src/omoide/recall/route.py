"""Routing a question: the article's flowchart reads its cues and weighs the layers.

A time expression or a question about past experience (``router.past_cues``: "last time",
"前回"; ``router.experience_cues``: "incident", "履歴") weighs the episodic layer up; a how-to
question (``router.howto_cues``: "how do I …", "手順", "方法") weighs procedures up; every
layer is asked. A question about the present — one that says so (``router.present_cues``:
"now", "currently", "今", "現在") or one with no past cue (an experience cue says nothing of
time: "Who handles incident escalation?" asks about now), no
past tense (``router.past_tense_cues``, and an English word ending in "-ed" without a present
or modal auxiliary or its contraction: "what was fixed" but not "when are deploys allowed",
"what's allowed" or "where should the trucks be parked") and no time range — is
marked :attr:`Route.present`: of several statements of a fact, the newest answers it
(:mod:`omoide.recall.restatements` puts a newer restatement first); and one that says so is marked
:attr:`Route.says_present` as well: of the answers that pass the cut, the fresher come first.
A question that counts things (``router.counting_cues``: "how many", "何回") is marked
:attr:`Route.counting`: it gathers from several conversations (``router.thread_turns``).
The cues and each route's weights are configuration
(:class:`~omoide.core.settings.RouterConfig`), in Japanese and English.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache

from omoide.core.settings import RouterConfig
from omoide.text.identifiers import identifier_tokens
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
    #: The question asks about the present state of things (see the module's docstring).
    present: bool = False
    #: The question says so, with one of ``router.present_cues`` ("now", "currently", "今").
    says_present: bool = False
    #: The identifiers the question names (:func:`omoide.text.identifiers.identifier_tokens`).
    identifiers: tuple[str, ...] = ()
    #: The question counts things said on many occasions (``router.counting_cues``).
    counting: bool = False


#: A Japanese cue in the past form (ending in た) followed by one of these is another form of
#: the verb, which says nothing of the past: the conditional "事故があったら" (if there is an
#: accident), "雨だったら", "届きましたら"; the listing "行ったり来たり".
_NOT_PAST_AFTER = "らり"


@lru_cache(maxsize=16)
def _pattern(cues: Sequence[str]) -> re.Pattern[str] | None:
    """One pattern for a list of cues: Latin-letter phrases as whole words, others as written
    (one in the past form not followed by :data:`_NOT_PAST_AFTER`)."""
    parts = []
    for cue in cues:
        phrase = re.escape(unicodedata.normalize("NFKC", cue).casefold().strip())
        if cue.isascii():
            phrase = rf"(?<![0-9a-z]){phrase}(?![0-9a-z])"
        elif cue.endswith("た"):
            phrase = rf"{phrase}(?![{_NOT_PAST_AFTER}])"
        parts.append(phrase)
    return re.compile("|".join(parts)) if parts else None


def _cued(text: str, cues: Sequence[str]) -> bool:
    pattern = _pattern(tuple(cues))
    return pattern is not None and pattern.search(text) is not None


#: An English word in the past tense or a past participle ("fixed", "decided", "changed",
#: and the irregular ones that are both: "made", "bought", "left")...
_PAST_PARTICIPLE = re.compile(
    r"(?<![0-9a-z])(?:[a-z]{2,}ed|made|got|found|left|told|bought|said)(?![0-9a-z])"
)
#: ...which marks the past tense only without a present auxiliary ("when are deploys
#: allowed", "what has changed" ask about now) or a modal one (a passive after "should",
#: "can", "must": "where should the trucks be parked" asks where they are parked now).
_PRESENT_AUXILIARY = re.compile(
    r"(?<![0-9a-z])(is|are|am|do|does|has|have|can|must|should|shall|will|may)(?![0-9a-z])"
    # and their contractions: "what's allowed", "they're parked", "we've changed" (a
    # possessive "'s" follows a noun, not one of these words)
    r"|(?<![0-9a-z])(what|where|who|when|which|how|why|it|that|there|here|he|she)['’]s"
    r"(?![0-9a-z])|['’](re|m|ve)(?![0-9a-z])"
)


def _present(folded: str, past: bool, time_range: TimeRange | None, config: RouterConfig) -> bool:
    """Whether a question asks about the present state of things."""
    if _cued(folded, config.present_cues):
        return True
    if past or time_range is not None or _cued(folded, config.past_tense_cues):
        return False
    return _PAST_PARTICIPLE.search(folded) is None or _PRESENT_AUXILIARY.search(folded) is not None


def route(query: str, now: datetime, config: RouterConfig | None = None) -> Route:
    """Read the flowchart's cues in ``query`` (time expression, past experience, how-to)."""
    config = config or RouterConfig()
    text = unicodedata.normalize("NFKC", query)
    folded = text.casefold()
    time_range = find_time_range(text, now)
    in_past = _cued(folded, config.past_cues)
    past = in_past or _cued(folded, config.experience_cues)
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
    present = _present(folded, in_past, time_range, config)
    says = _cued(folded, config.present_cues)
    ids = tuple(identifier_tokens(text))
    counting = _cued(folded, config.counting_cues)
    return Route(weights, reasons, time_range, past, howto, present, says, ids, counting)


_DEFAULTS = {"working": 1.0, "episodic": 0.9, "semantic": 1.0, "procedural": 0.6}
