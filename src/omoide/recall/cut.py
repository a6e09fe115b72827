"""The cut: which scored items a recall returns, in which order.

Items are ranked by score. Then, in order:

* **distilled knowledge in its sources' place**: a document distilled from episodes never
  ranks above the best of its source episodes among the candidates (it says what they said,
  as of when they said it: maintenance must not change what a recall puts first), and for
  restatements it is alike whatever one of those sources is alike — so a newer statement
  that restates the episodes a lesson was drawn from restates the lesson too;
* **current versions first**: a superseded version of a fact never ranks above the current
  version of its subject, which moves right above it;
* **restatements** (``router.restated_similarity`` > 0, for a question about the present,
  :attr:`Route.present <omoide.recall.route.Route.present>`): of two items saying the same
  thing, the newer is the current statement and moves right above the older one; it passes
  the floor with the item it restates (:mod:`omoide.recall.restatements` says when one
  restates another);
* **diversity** (``router.diversity`` > 0, maximal marginal relevance): each next item is the
  one whose score minus ``diversity`` times its similarity to the items already taken is
  highest, so near-duplicates and the chunks of one long document do not crowd out the rest;
* **the floor**: an item is returned only if its score is at least ``min_score`` and stands
  out from the rest: at least ``relative_floor`` of the way from the candidates' median score
  (what any question finds in this store; of the best ``2 × router.candidate_pool``, as many
  as words and meaning bring at one pool each) to the best one's — a recall returns what answers
  and nothing else, and a question that matches nothing returns an empty context. Measured
  from the median rather than from zero, the floor keeps more items where one or two stand
  far above a weak background and fewer where many score alike. A store with fewer
  candidates than one signal's pool shows no background (its candidates are everything it
  holds, related or not): there the floor is half the best score. An item naming a code
  the question names (letters with digits: ``R-5346``, ``PO#5868``) passes at ``min_score``:
  it is about what is asked, however far the report naming it too stands out;
* **one item per memory** (:func:`~omoide.recall.packing.dedupe`: a document made from an
  episode and that episode, two items of the same text): the first of each stays, so the
  ``top_k`` places go to distinct memories, and of identical texts the one a restatement
  moved first (the newest) is the one kept;
* at most ``top_k`` items;
* **the fresher first** (``router.present_freshness_order`` > 0, for a question that says it
  is about the present: :attr:`Route.says_present <omoide.recall.route.Route.says_present>`,
  "now", "currently", "いま"): what passed is ordered by score times a freshness prior,
  then the rules above put current versions and restatements back in place. The cut decided
  what answers; of the answers to "what is X now", the newer statement is likelier the one
  asked for. It changes no item returned, only their order.

The session's pins and recent messages (working memory) are not cut: they come first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from omoide.providers.embeddings import Embedder
from omoide.recall.distilled import below_sources
from omoide.recall.packing import dedupe
from omoide.recall.restatements import Bars, restated, similarity
from omoide.recall.sources import Found
from omoide.text.identifiers import codes, identifiers
from omoide.text.relevance import prior

__all__ = ["Cut", "cut"]

#: The floor of a store too small to show a background, as a share of the best score.
SMALL_STORE_FLOOR = 0.5


@dataclass(frozen=True)
class Cut:
    """The parameters of one cut (the router's settings, or a recall's own)."""

    top_k: int
    min_score: float
    relative_floor: float
    diversity: float = 0.0
    #: Restatements' settings, for a question about the present (None: none are sought;
    #: :mod:`omoide.recall.restatements`).
    restated: Bars | None = None
    #: Strength of freshness in ordering what passed the cut (0: by score alone;
    #: ``router.present_freshness_order``, for a question about the present).
    freshness_order: float = 0.0
    #: Candidates one signal of a source brings (``router.candidate_pool``).
    pool: int = 50


def cut(found: Sequence[Found], how: Cut, embedder: Embedder, query: str = "") -> list[Found]:
    """The items a recall returns, best first (see the module's docstring); ``query`` is the
    question, whose words a restatement must hold."""
    kept = sorted((f for f in found if f.item.layer == "working"), key=lambda f: -f.item.score)
    ranked = sorted(
        (f for f in found if f.item.layer != "working"),
        key=lambda f: (-f.item.score, f.item.layer, f.item.id),
    )
    if not ranked:
        return _distinct(kept, len(kept))
    ranked = below_sources(ranked)
    floor = max(how.min_score, _relative_floor(ranked, how.relative_floor, how.pool))
    ranked = _current_first(ranked)
    # The current version of a fact whose superseded version passes the floor passes too,
    # and so does an item naming a code the question names: it is about what is asked.
    needed = {f.successor for f in ranked if f.successor and f.item.score >= floor}
    asked = {code.casefold() for code in codes(query)}
    if asked:
        needed |= {
            f.item.id
            for f in ranked
            if f.item.score >= how.min_score and asked & identifiers(f.item.text)
        }

    def passes(f: Found) -> bool:
        return f.item.score >= floor or f.item.id in needed

    similar: np.ndarray | None
    if how.restated is not None:
        # Restatements may come from under the floor: look at all above the absolute one.
        candidates = [f for f in ranked if f.item.score >= how.min_score or passes(f)]
        ranked, similar = restated(candidates, passes, how.restated, embedder, query)
    else:
        ranked = [f for f in ranked if passes(f)]
        similar = similarity(ranked, embedder) if how.diversity else None
    if similar is not None and how.diversity > 0:
        ranked = _diverse(ranked, similar, how.diversity, how.top_k)
    # Working items come first and are at most len(kept): the first len(kept) + top_k
    # distinct items hold every working item and the top_k best others.
    out = _distinct(kept + ranked, len(kept) + how.top_k)
    working = [f for f in out if f.item.layer == "working"]
    answers = [f for f in out if f.item.layer != "working"][: how.top_k]
    if how.freshness_order > 0 and len(answers) > 1:
        answers = _fresher_first(answers, how, embedder, query)
    return working + answers


def _fresher_first(answers: list[Found], how: Cut, embedder: Embedder, query: str) -> list[Found]:
    """``answers`` (what passed the cut) ordered by score times a freshness prior of
    strength ``how.freshness_order``; then, as in the cut, each current version before its
    superseded ones and each restatement right above what it restates. The cut decided
    what answers; among the answers to a question about the present, the fresher first."""
    weighed = []
    for f in answers:
        fresh = f.item.signals.get("freshness")
        value = f.item.score
        if fresh is not None:
            value *= prior(fresh, how.freshness_order)
            f = f.noted(f"ordered by freshness {fresh:.2f} (a question about the present)")
        weighed.append((value, f))
    weighed.sort(key=lambda pair: -pair[0])
    out = _current_first([f for _, f in weighed])
    if how.restated is not None:
        out, _ = restated(out, lambda f: True, how.restated, embedder, query)
    return out


def _distinct(found: list[Found], limit: int) -> list[Found]:
    """The first ``limit`` of ``found`` with one item per memory, the first of each (see
    :func:`dedupe`)."""
    first = {id(item) for item in dedupe([f.item for f in found], limit)}
    return [f for f in found if id(f.item) in first]


def _relative_floor(ranked: Sequence[Found], share: float, pool: int) -> float:
    """The score ``share`` of the way from the candidates' median (the background: what any
    question finds) to the best (0: no relative floor). The median is of the best ``2 ×
    pool``, as many as words and meaning bring at ``pool`` each, so that more candidates
    brought by meaning (``router.meaning_pool``) do not lower it. A store too small to show a
    background — fewer candidates than one signal's ``pool``, so they are all it holds,
    related or not — keeps what scores at least half the best."""
    if share <= 0:
        return 0.0
    best = ranked[0].item.score
    if len(ranked) < pool:
        return SMALL_STORE_FLOOR * best
    background = float(np.median([f.item.score for f in ranked[: 2 * pool]]))
    return background + share * (best - background)


def _current_first(ranked: list[Found]) -> list[Found]:
    """Each superseded version ranked above its current version lets that one go first."""
    out = list(ranked)
    for f in ranked:
        if f.successor is None:
            continue
        at = out.index(f)
        newer = next((k for k, g in enumerate(out) if g.item.id == f.successor), None)
        if newer is not None and newer > at:
            out.insert(at, out.pop(newer))
    return out


def _diverse(ranked: list[Found], similar: np.ndarray, diversity: float, top_k: int) -> list[Found]:
    """Greedy maximal marginal relevance over ``ranked``, ``top_k`` items."""
    chosen: list[int] = []
    left = list(range(len(ranked)))
    while left and len(chosen) < top_k:

        def marginal(k: int) -> float:
            penalty = max((float(similar[k, c]) for c in chosen), default=0.0)
            return ranked[k].item.score - diversity * penalty

        pick = max(left, key=marginal)
        chosen.append(pick)
        left.remove(pick)
    return [ranked[k] for k in chosen]
