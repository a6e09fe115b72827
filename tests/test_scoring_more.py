"""Scoring the later statements a question about the present adds to its candidates gives
what scoring every candidate again gives (:func:`omoide.recall.scoring.score_more`)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from omoide.core.settings import RouterConfig
from omoide.recall.context import ContextItem
from omoide.recall.route import route
from omoide.recall.scoring import score, score_more
from omoide.recall.sources import Found

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
QUESTIONS = (
    "What is the cutoff for same-day parcels now?",  # about the present
    "How many parcels do we ship now?",  # about the present, and counts
    "What happened with HX-12 last week?",  # the past, an identifier, a time range
)


@st.composite
def _items(draw: st.DrawFn, prefix: str) -> list[Found]:
    """Episodes and documents, some superseded by another of the same list or of ``found``."""
    out = []
    for n in range(draw(st.integers(0, 12))):
        layer = draw(st.sampled_from(["episodic", "semantic"]))
        relevance = draw(st.floats(0.0, 1.0))
        signals = {
            "relevance": relevance,
            "words": relevance,
            "meaning": relevance,
            "importance": draw(st.sampled_from([0.5, 0.7, 0.9])),
            "freshness": draw(st.floats(0.0, 1.0)),
        }
        successor = None
        if layer == "semantic" and draw(st.booleans()):
            signals["current"] = 0.0
            successor = draw(st.sampled_from(["f-0", "f-1", "m-0", "m-1"]))
        item = ContextItem(
            layer=layer,
            id=f"{prefix}-{n}",
            text=draw(st.sampled_from(["HX-12 fixed", "HX-14 fixed", "cutoff 16:30"])),
            score=0.0,
            why="found",
            author=draw(st.sampled_from(["a", "b"])),
            timestamp=NOW - timedelta(days=draw(st.integers(0, 30))),
            signals=signals,
        )
        out.append(Found(item, successor=successor, thread=draw(st.sampled_from([None, "t"]))))
    return out


def _seen(found: list[Found]) -> list[tuple[str, float, str]]:
    return [(f.item.id, f.item.score, f.item.why) for f in found]


@settings(max_examples=300, deadline=None)
@given(
    found=_items("f"),
    more=_items("m"),
    question=st.sampled_from(QUESTIONS),
    recency=st.sampled_from([0.0, 0.3]),
    turns=st.sampled_from([1.0, 0.8]),
)
def test_the_same_scores_as_scoring_every_candidate_again(
    found: list[Found], more: list[Found], question: str, recency: float, turns: float
) -> None:
    config = dataclasses.replace(RouterConfig(), recency_prior=recency, thread_turns=turns)
    plan = route(question, NOW, config)
    expected = score([*found, *more], plan, config)
    assert _seen(score_more(found, score(found, plan, config), more, plan, config)) == _seen(
        expected
    )
