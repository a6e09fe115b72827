"""Distilled knowledge among the episodes it was drawn from, for the cut.

A document distilled from episodes says what they said, as of when they said it: it ranks
no higher than the best of its source episodes among a recall's candidates
(:func:`below_sources`), and for restatements it is alike whatever one of them is alike
(:func:`with_sources`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from omoide.recall.context import origin
from omoide.recall.sources import Found

__all__ = ["below_sources", "sources_of", "with_sources"]


def sources_of(found: Sequence[Found]) -> dict[int, list[int]]:
    """For each distilled document among ``found``, the positions of its source episodes
    among ``found`` (documents with none of them present are left out)."""
    where = {f.item.id: i for i, f in enumerate(found) if f.item.layer == "episodic"}
    out: dict[int, list[int]] = {}
    for i, f in enumerate(found):
        meta = f.item.metadata
        if origin(f.item) != "distillation":
            continue
        present = [where[s] for s in str(meta.get("source_episodes", "")).split(",") if s in where]
        if present:
            out[i] = present
    return out


def below_sources(ranked: list[Found]) -> list[Found]:
    """``ranked`` with each distilled document scored no higher than the best of its source
    episodes among them, ranked again."""
    sources = sources_of(ranked)
    if not sources:
        return ranked
    out = list(ranked)
    for i, present in sources.items():
        best = max(ranked[k].item.score for k in present)
        item = ranked[i].item
        if item.score > best:
            note = "ranked no higher than its source episodes"
            why = f"{item.why}; {note}" if item.why else note
            out[i] = replace(ranked[i], item=replace(item, score=best, why=why))
    return sorted(out, key=lambda f: (-f.item.score, f.item.layer, f.item.id))


def with_sources(found: Sequence[Found], alike: np.ndarray) -> np.ndarray:
    """``alike`` with each distilled document alike whatever one of its source episodes
    among ``found`` is alike."""
    sources = sources_of(found)
    if not sources:
        return alike
    out = alike.copy()
    for i, present in sources.items():
        out[i, :] |= alike[present, :].any(axis=0)
        out[:, i] |= alike[:, present].any(axis=1)
    return out
