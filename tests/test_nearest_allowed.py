"""The episodes nearest a question that a reader may see (the in-process matrix): checked
against the filter in bands of twice the pool, nearest first, so a wide filter costs one
short read, and the answer is the one every allowed episode ranked by hand gives."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from omoide import Memory
from omoide.testing import HashEmbedder, ManualClock

WORDS = [
    "invoice",
    "deploy",
    "rollback",
    "cache",
    "schema",
    "billing",
    "queue",
    "latency",
    "region",
    "pager",
]


def _texts(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=4)) + f" note {seed}-{i}" for i in range(n)]


@pytest.fixture
def memory(tmp_path: Path) -> Any:
    clock = ManualClock(datetime(2026, 3, 1, tzinfo=UTC))
    with Memory(tmp_path / "m", embedder=HashEmbedder(), clock=clock) as mem:
        # 90 private notes of "alpha", 30 notes every agent may read
        mem.episodic.record_many(
            [
                {"agent_name": "alpha", "event_type": "note", "description": t, "scope": "private"}
                for t in _texts(90, 1)
            ]
            + [
                {"agent_name": "beta", "event_type": "note", "description": t}
                for t in _texts(30, 2)
            ]
        )
        yield mem


def _asked(memory: Memory, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many rowids each check against the filter was given."""
    rows = memory.episodic.rows
    sizes: list[int] = []
    check = type(rows).matching

    def counted(self: Any, rowids: Any, where: str, params: Any) -> set[int]:
        sizes.append(len(rowids))
        return check(self, rowids, where, params)

    monkeypatch.setattr(type(rows), "matching", counted)
    return sizes


def _by_hand(memory: Memory, vector: np.ndarray, reader: str, pool: int) -> dict[int, float]:
    """The ``pool`` allowed episodes most similar to ``vector``, every row read and ranked."""
    rowids, sims = memory.episodic._vector_index().similarities(vector)
    allowed = {
        int(r[0])
        for r in memory.db.query(
            "SELECT rowid FROM episodes WHERE scope = 'global' OR agent_name = ?", [reader]
        )
    }
    ranked = sorted(
        ((float(s), int(r)) for r, s in zip(rowids, sims, strict=True) if int(r) in allowed),
        reverse=True,
    )
    return {r: s for s, r in ranked[:pool]}


@pytest.mark.parametrize(
    ("reader", "question"),
    [("alpha", "invoice billing latency"), ("gamma", "deploy rollback cache")],
)
def test_the_nearest_allowed_are_those_every_allowed_episode_ranked_gives(
    memory: Memory, monkeypatch: pytest.MonkeyPatch, reader: str, question: str
) -> None:
    pool = 8
    vector = memory.embedder.embed_query(question)
    where, params = memory.episodic._where(None, None, None, None, reader, ())
    sizes = _asked(memory, monkeypatch)
    found, vectors = memory.episodic._dense_candidates(vector, where, params, pool, ())
    expected = _by_hand(memory, vector, reader, pool)
    assert sorted(found.values(), reverse=True) == pytest.approx(
        sorted(expected.values(), reverse=True)
    )
    assert len(found) == pool and set(vectors) == set(found)
    if reader == "alpha":  # sees every episode: the first band decides
        assert sizes == [2 * pool]
    else:  # sees a quarter: the next band is read, then every episode it may see
        assert sizes == [2 * pool, 2 * pool]


def test_a_reader_seeing_few_episodes_gets_all_of_them_when_fewer_than_the_pool(
    memory: Memory,
) -> None:
    vector = memory.embedder.embed_query("queue region pager")
    where, params = memory.episodic._where(None, None, None, None, "gamma", ())
    found, _ = memory.episodic._dense_candidates(vector, where, params, 40, ())
    assert len(found) == 30
    assert found.keys() == _by_hand(memory, vector, "gamma", 40).keys()
