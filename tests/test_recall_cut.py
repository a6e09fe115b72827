"""The cut's floor stands items against the store's background, not against zero.

These tests are about the cut's logic alone, so they hand it scored items directly; the
pipeline's tests (tests/test_recall_pipeline.py) cover the floor with the real embedder.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import numpy as np

from omoide.recall.context import ContextItem
from omoide.recall.cut import Cut, cut
from omoide.recall.sources import Found
from omoide.testing import HashEmbedder

DAY = datetime(2026, 3, 1, tzinfo=UTC)
LATER = DAY + timedelta(days=9)
HOW = Cut(top_k=10, min_score=0.05, relative_floor=0.25, pool=50)


def scored(*scores: float) -> list[Found]:
    return [
        Found(ContextItem(layer="episodic", id=f"e{i:03d}", text="", score=s, why=""))
        for i, s in enumerate(scores)
    ]


def kept(found: list[Found], how: Cut = HOW) -> list[str]:
    return [f.item.id for f in cut(found, how, HashEmbedder(8))]


def test_a_second_answer_far_above_a_weak_background_is_kept() -> None:
    """Two answers stand out of sixty unrelated candidates: the weaker, at a third of the
    best, is returned (a floor at half the best would have dropped it)."""
    found = scored(0.9, 0.3, *[0.08] * 60)
    assert kept(found) == ["e000", "e001"]


def test_where_many_candidates_score_alike_only_those_standing_out_are_kept() -> None:
    """Sixty candidates around 0.5 and two at 0.8: the background is high, so only the two
    that stand out pass (a floor at half the best would have let ten through)."""
    found = scored(0.8, 0.78, *[0.5 - 0.001 * i for i in range(60)])
    assert kept(found) == ["e000", "e001"]


def test_a_store_too_small_to_show_a_background_keeps_half_the_best() -> None:
    """Four candidates are all a small store holds, related or not: the median says nothing
    of a background there, so the floor is half the best score."""
    assert kept(scored(0.9, 0.5, 0.3, 0.1)) == ["e000", "e001"]


def test_no_relative_floor_keeps_everything_above_the_absolute_one() -> None:
    open_cut = Cut(top_k=10, min_score=0.2, relative_floor=0.0, pool=50)
    assert kept(scored(0.9, 0.3, 0.21, 0.19), open_cut) == ["e000", "e001", "e002"]


def test_a_newer_restatement_of_a_kept_item_is_kept_and_comes_first() -> None:
    """The newer of two statements alike in meaning passes with the older one even when its
    own score is under the floor, and for a question about the present it comes first."""
    same = np.zeros(8, np.float32)
    same[0] = 1.0
    old, new = "The weekly sync meeting is on Mondays.", "The weekly sync meeting is on Wednesdays."
    found = [
        Found(ContextItem("episodic", "old", old, 0.9, "", timestamp=DAY), same),
        Found(
            ContextItem("episodic", "new", new, 0.2, "", timestamp=DAY + timedelta(days=9)), same
        ),
    ]
    for i in range(60):  # a background of unrelated items, each alike only to itself
        other = np.zeros(8, np.float32)
        other[1 + i % 7] = 1.0
        found.append(Found(ContextItem("episodic", f"x{i:02d}", "", 0.1, "", timestamp=DAY), other))
    question = "Which day is the weekly sync meeting?"
    assert kept(found) == ["old"]
    present = dataclasses.replace(HOW, restated_similarity=0.8)
    assert [f.item.id for f in cut(found, present, HashEmbedder(8), question)] == ["new", "old"]


def test_a_newer_statement_in_the_other_language_needs_a_lower_bar() -> None:
    """The model rates a statement and its translation less alike than two wordings in one
    language: at the same similarity (0.75) a newer English statement restates an older
    Japanese one (across languages the bar is 0.7), but not an older English one (0.8)."""
    first = np.zeros(8, np.float32)
    first[0] = 1.0
    near = np.zeros(8, np.float32)
    near[0], near[1] = 0.75, float(np.sqrt(1 - 0.75**2))
    newer = "From next week the weekly sync meeting moves to Wednesdays."
    background = []
    for i in range(60):  # unrelated items, each alike only to itself
        other = np.zeros(8, np.float32)
        other[2 + i % 6] = 1.0
        background.append(
            Found(ContextItem("episodic", f"x{i:02d}", "", 0.1, "", timestamp=DAY), other)
        )
    how = dataclasses.replace(HOW, restated_similarity=0.8, restated_across_languages=0.7)
    question = "Which day is the weekly sync meeting?"
    for older, restated in (
        ("定例の週次ミーティングは月曜日です。", True),
        ("The weekly sync meeting is on Mondays.", False),
    ):
        found = [
            Found(ContextItem("episodic", "old", older, 0.9, "", timestamp=DAY), first),
            Found(ContextItem("episodic", "new", newer, 0.2, "", timestamp=LATER), near),
            *background,
        ]
        ids = [f.item.id for f in cut(found, how, HashEmbedder(8), question)]
        assert ids == (["new", "old"] if restated else ["old"])
