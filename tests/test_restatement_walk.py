"""The restatement walk keeps where each item stands instead of scanning the ranking for the
restatements of every item it reaches: it must move the same items to the same places as
the walk read position by position, written here plainly as the reference."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from omoide.recall.context import ContextItem
from omoide.recall.restatements import _newer_first
from omoide.recall.sources import Found

START = datetime(2026, 1, 1, tzinfo=UTC)


def _reference(ranked: Sequence[Found], restates: np.ndarray) -> list[str]:
    """The walk as first written: each item's restatements found by reading every place."""

    def above_thread(order: Sequence[int], at: int, newer: Found) -> int:
        thread, when = ranked[order[at]].thread, newer.item.timestamp
        while thread is not None and when is not None and at > 0:
            above = ranked[order[at - 1]]
            if above.thread != thread or above.item.timestamp is None:
                break
            if above.item.timestamp >= when:
                break
            at -= 1
        return at

    order = list(range(len(ranked)))
    i = 0
    while i < len(order):
        a = order[i]
        newer = set(np.flatnonzero(restates[:, a]).tolist())
        j = next((j for j in range(i + 1, len(order)) if order[j] in newer), None)
        if j is None:
            for k in range(i):
                b = order[k]
                if b in newer:
                    at = above_thread(order[:k] + order[k + 1 :], i - 1, ranked[b])
                    if at < k:
                        order.insert(at, order.pop(k))
                        break
            i += 1
            continue
        b = order[j]
        at = above_thread(order, i, ranked[b])
        order.insert(at, order.pop(j))
        i = at
    return [ranked[k].item.id for k in order]


@st.composite
def rankings(draw: st.DrawFn) -> tuple[list[Found], np.ndarray]:
    """A ranking of up to 14 items, most in one thread (some in another or none, a few
    without a time), and which newer items restate which older ones: the walk's lift above
    a conversation needs runs of one thread's items."""
    n = draw(st.integers(1, 14))
    found = []
    for k in range(n):
        day = draw(st.integers(-1, 9))
        item = ContextItem(
            layer="episodic",
            id=f"e{k}",
            text=f"item {k}",
            score=1.0 - k / 100,
            why="",
            timestamp=None if day < 0 else START + timedelta(days=day, minutes=k),
        )
        found.append(Found(item, thread=draw(st.sampled_from([None, "s1", "s1", "s1", "s2"]))))
    times = [f.item.timestamp for f in found]
    restates = np.zeros((n, n), dtype=bool)
    for b in range(n):
        for a in range(n):
            newer = times[a] is not None and times[b] is not None and times[b] > times[a]
            restates[b, a] = newer and draw(st.booleans())
    return found, restates


@settings(max_examples=1000, deadline=None)
@given(rankings())
def test_the_walk_moves_what_the_plain_walk_moves(case: tuple[list[Found], np.ndarray]) -> None:
    found, restates = case
    expected = _reference(found, restates)
    n = len(found)
    similar = np.arange(n * n, dtype=np.float32).reshape(n, n)  # each cell told apart
    walked, reordered = _newer_first(list(found), similar, restates)
    assert [f.item.id for f in walked] == expected
    order = [int(item_id[1:]) for item_id in expected]
    assert np.array_equal(reordered, similar[np.ix_(order, order)])
