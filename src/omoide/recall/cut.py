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
  thing (their embeddings at least that similar, calibrated; at least
  ``router.restated_similarity_across_languages`` for two texts in different languages, which
  the model rates less alike than two wordings in one; two texts are in one language when
  each has letters of the script the other is mostly written in,
  :func:`~omoide.text.relevance.written_alike`: "来週以降、運行会議はroom C-310でやります。"
  is not in an English sentence's), the newer is the current
  statement and moves right above the older one, and above the items of the older one's
  thread (``context["thread"]``, else its ``session_id``: one conversation) ranked right
  above it, the rest of that conversation's account of the fact — when it keeps the values
  the question names (its numbers and codes; a Japanese question's Latin names) as well as
  the older one does: two reports that differ in the very identifier the question names
  ("incident 1234 fixed by …" and "incident 5678 fixed by …") are alike, but the newer one
  does not restate the older. Its other words may differ, as two wordings of one fact do.
  Two texts in one language whose words agree but for their numbers and codes
  (``router.restated_wording``: "… held in room B-204." and "… held in room C-310.") are
  one statement with other values, however alike the model rates them; and two texts
  naming values of one kind and not the same ones (:func:`~omoide.recall.statements.kind`:
  two times, ``36h`` and ``40h``; not a duration after a time) are one fact at another
  value when at least ``router.restated_values`` alike ("時間外労働は月40hまでとします。"
  and "今後、時間外は月36hまでに抑えてください。", 0.62) — in different languages
  ``router.restated_values_across_languages``, as the model rates a restatement in the
  other language as alike as unrelated text — when one of the two also holds a word of the
  other translated (:func:`~omoide.text.lexicon.translated_alike`: a code or a time in
  common shape alone does not make an incident report the new value of a deadline; and
  there a number without a unit has no kind, a score of ``84`` being no reply time of
  ``4`` hours).
  A newer item restates nothing the question asks when it answers the question much less
  well (its relevance under ``router.restated_relevance`` of the older one's; across
  languages its meaning, as a statement in the other language holds none of the
  question's other words whatever it says) and no older text it restates at the same values
  (:func:`~omoide.recall.statements.same_values`, as alike as the values test asks) answered
  it that well — "念のため再掲：月の残業上限は36hです。" answers a question about 時間外 as
  "今後、時間外は月36hまでに抑えてください。" did — or when it names another identifier of the
  form the question asks for where the older one names none (the next incident, another
  route: it states another fact, not this one's new value), or when the two are records of
  one template (:func:`~omoide.recall.statements.two_records`: two bills settled, differing
  in their code and their amount). As the current version of a
  fact passes the floor with its superseded one, a restatement passes
  it with the item it restates;
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

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cache

import numpy as np

from omoide.core.similarity import pairwise
from omoide.providers.embeddings import Embedder
from omoide.recall.distilled import below_sources, with_sources
from omoide.recall.packing import dedupe
from omoide.recall.sources import Found
from omoide.recall.statements import (
    Compared,
    analysed,
    claimed_values,
    two_records,
)
from omoide.text.fulltext import content_terms
from omoide.text.identifiers import codes, identifier_tokens, identifiers, names_another
from omoide.text.lexicon import translated_alike
from omoide.text.relevance import (
    Writing,
    languages,
    prior,
    word_share,
    writing,
    written_alike,
)

__all__ = ["Cut", "cut"]

#: The floor of a store too small to show a background, as a share of the best score.
SMALL_STORE_FLOOR = 0.5
#: Only pairs at least this alike in meaning (calibrated) are compared word by word for
#: ``restated_wording``: unrelated texts rate under it, and reading every pair would cost.
WORDING_GATE = 0.5


@dataclass(frozen=True)
class Cut:
    """The parameters of one cut (the router's settings, or a recall's own)."""

    top_k: int
    min_score: float
    relative_floor: float
    diversity: float = 0.0
    restated_similarity: float = 0.0
    #: The restatement threshold for two texts in different languages (0: the same).
    restated_across_languages: float = 0.0
    #: Two texts in one language whose words but for numbers and codes agree this much are
    #: one statement with other values (0: off; ``router.restated_wording``).
    restated_wording: float = 0.0
    #: Two texts in one language stating different values this alike in meaning are one
    #: fact at another value (0: off; ``router.restated_values``).
    restated_values: float = 0.0
    #: Two texts in different languages stating values of one kind (``36h`` and ``45h``)
    #: and not the same ones are one fact at another value when this alike in meaning (0:
    #: off; ``router.restated_values_across_languages``).
    restated_values_across: float = 0.0
    #: A restatement's relevance is at least this share of the older item's (0: any).
    restated_relevance: float = 0.0
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
        return _distinct(kept)
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
    if how.restated_similarity > 0:
        # Restatements may come from under the floor: look at all above the absolute one.
        candidates = [f for f in ranked if f.item.score >= how.min_score or passes(f)]
        ranked, similar = _restated(candidates, passes, how, embedder, query)
    else:
        ranked = [f for f in ranked if passes(f)]
        similar = _similarity(ranked, embedder) if how.diversity else None
    if similar is not None and how.diversity > 0:
        ranked = _diverse(ranked, similar, how.diversity, how.top_k)
    out = _distinct(kept + ranked)
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
            note = f"ordered by freshness {fresh:.2f} (a question about the present)"
            why = f"{f.item.why}; {note}" if f.item.why else note
            f = replace(f, item=replace(f.item, why=why))
        weighed.append((value, f))
    weighed.sort(key=lambda pair: -pair[0])
    out = _current_first([f for _, f in weighed])
    if how.restated_similarity > 0:
        out, _ = _restated(out, lambda f: True, how, embedder, query)
    return out


def _distinct(found: list[Found]) -> list[Found]:
    """``found`` with one item per memory, the first of each (see :func:`dedupe`)."""
    first = {id(item) for item in dedupe([f.item for f in found])}
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


def _restated(
    candidates: list[Found],
    passes: Callable[[Found], bool],
    how: Cut,
    embedder: Embedder,
    query: str,
) -> tuple[list[Found], np.ndarray]:
    """The ``candidates`` that pass the floor, with each newer restatement of one of them
    (it is the current statement of what that item says), newer statements first."""
    similar = _similarity(candidates, embedder)
    # A Japanese sentence naming "room C-310" states its fact in Japanese, and its English
    # restatement is held to the bar across languages (:func:`written_alike`).
    differ = _languages_differ([writing(f.item.text) for f in candidates])
    compared = Compared([f.item.text for f in candidates], differ)
    alike = with_sources(candidates, _alike(candidates, differ, similar, how, compared))
    holds = _may_restate(candidates, differ, query, how, similar, compared)
    kept = _with_restatements(candidates, [passes(f) for f in candidates], alike, holds)
    chosen = [i for i, ok in enumerate(kept) if ok]
    picked = np.ix_(chosen, chosen)
    return _newer_first(
        [candidates[i] for i in chosen],
        similar[picked],
        alike[picked],
        lambda b, a: holds(chosen[b], chosen[a]),
    )


def _may_restate(
    found: Sequence[Found],
    differ: np.ndarray,
    query: str,
    how: Cut,
    similar: np.ndarray,
    compared: Compared,
) -> Callable[[int, int], bool]:
    """``holds(b, a)``: item ``b`` may restate item ``a`` for this question. It keeps as many
    of the values the question names as ``a`` does — the words either language writes alike:
    numbers and codes, and a Japanese question's Latin names — so of "incident 1234 fixed
    by …" and "incident 5678 fixed by …" the newer does not restate the older for a question
    about incident 1234; its other words may differ, as two wordings of one fact do ("weekly
    ops sync" and "weekly operations meeting"), and across languages they must. Its
    relevance is at least ``relevance`` of ``a``'s (across languages its meaning: a
    statement in the other language holds none of the question's other words, whatever it
    says): a text that answers the question far less well is about something else, however
    alike the two read — unless it rewords an older statement of its values that answered
    as well (the same values, as alike as the values test asks). And it names no other
    identifier of the asked form (:func:`~omoide.text.identifiers.names_another`) unless
    ``a`` does: the route R-982 going through another hub says nothing of route R-560."""
    asked = identifier_tokens(query)
    terms = content_terms(query)
    if languages(query) & {"cjk"}:
        values = [t for t in terms if t.isascii()]
    else:
        values = [t for t in terms if any(c.isdigit() for c in t)]

    @cache
    def kept(i: int) -> float:  # read only for the pairs alike enough to compare
        return word_share(values, analysed(found[i].item.text))

    @cache
    def other(i: int) -> bool:
        return bool(asked) and names_another(asked, found[i].item.text)

    relevance = how.restated_relevance
    times = _times(found)
    values_bar = how.restated_values or np.inf  # 0: the test is off
    values_across = how.restated_values_across or np.inf
    at_same_values = compared.same_values()

    def signal(i: int, same: bool) -> float:
        signals = found[i].item.signals
        relevant = signals.get("relevance", 0.0)
        return relevant if same else signals.get("meaning", relevant)

    def as_well(x: int, a: int) -> bool:
        same = not differ[a, x]
        return signal(x, same) >= relevance * signal(a, same)

    @cache
    def rewords(b: int) -> tuple[int, ...]:
        """The older texts ``b`` restates at the same values, as alike as the values test
        asks (read only for a pair that fails :func:`as_well`)."""
        when = times[b]
        if np.isnan(when):
            return ()
        # NaN times compare False: an item without one is no older text
        bars = np.where(differ[b], values_across, values_bar)
        older = (times < when) & (similar[b] >= bars) & at_same_values[b]
        return tuple(map(int, np.flatnonzero(older)))

    def answers(b: int, a: int) -> bool:
        """``b`` answers the question about as well as ``a``, or an older text it restates
        at the same values does (its other wording answered as well as it ever did)."""
        return as_well(b, a) or any(c != a and as_well(c, a) for c in rewords(b))

    def holds(b: int, a: int) -> bool:
        if (other(b) and not other(a)) or not answers(b, a):
            return False
        return kept(b) >= kept(a) and not two_records(found[a].item.text, found[b].item.text)

    return holds


def _languages_differ(scripts: Sequence[Writing]) -> np.ndarray:
    """``differ[a, b]``: the two texts are in different languages (:func:`written_alike`).
    A text's scripts are one of a few sets: compare the sets, then spread to every pair."""
    distinct = list(dict.fromkeys(scripts))
    which = np.array([distinct.index(s) for s in scripts], dtype=np.intp)
    table = np.array(
        [not written_alike(a, b) for a in distinct for b in distinct], dtype=bool
    ).reshape(len(distinct), len(distinct))
    return np.asarray(table[np.ix_(which, which)])


def _alike(
    found: Sequence[Found],
    differ: np.ndarray,
    similar: np.ndarray,
    how: Cut,
    compared: Compared,
) -> np.ndarray:
    """Which pairs are alike enough to be one statement: at least ``restated_similarity``,
    or ``restated_across_languages`` for two texts in different languages (``differ``; 0:
    the same) — or, in one language, worded alike but for their values; or naming values of
    one kind and not the same ones at least ``restated_values`` alike
    (``restated_values_across`` in different languages, with a word of one translated in
    the other and the value not another fact's; :mod:`omoide.recall.statements`)."""
    across = how.restated_across_languages or how.restated_similarity
    alike = np.asarray(similar >= np.where(differ, across, how.restated_similarity))
    if how.restated_wording > 0:  # in one language, read where at least this alike
        gate = ~differ & (similar >= WORDING_GATE)
        alike |= gate & compared.worded_alike(how.restated_wording)
    bars = np.where(differ, how.restated_values_across or np.inf, how.restated_values or np.inf)
    valued = (similar >= bars) & compared.other_values()
    alike |= valued & ~differ
    claimed = claimed_values(
        [f.item.text for f in found], [f.item.timestamp for f in found], similar, differ
    )
    for a, b in np.argwhere(np.triu(valued & differ & ~alike, 1)):
        first, second = found[a].item.text, found[b].item.text
        if not claimed(a, b) and translated_alike(first, second):
            alike[a, b] = alike[b, a] = True
    return alike


def _times(found: Sequence[Found]) -> np.ndarray:
    """Each item's time as a POSIX timestamp, NaN when it has none."""
    return np.array(
        [np.nan if f.item.timestamp is None else f.item.timestamp.timestamp() for f in found],
        dtype=float,
    )


def _with_restatements(
    ranked: Sequence[Found],
    passes: list[bool],
    alike: np.ndarray,
    holds: Callable[[int, int], bool],
) -> list[bool]:
    """``passes``, and also each item that restates one that passes (newer, ``alike`` in
    meaning, and one that may restate it for this question: :func:`_may_restate`)."""
    times = _times(ranked)
    kept = np.array(passes, dtype=bool)
    # restates[a, b]: b is newer than a, which passes, and alike it (NaN times compare False)
    restates = alike & kept[:, None] & (times[:, None] < times[None, :])
    out = list(passes)
    for b in np.flatnonzero(~kept & restates.any(axis=0)):
        out[b] = any(holds(int(b), int(a)) for a in np.flatnonzero(restates[:, b]))
    return out


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


def _similarity(found: Sequence[Found], embedder: Embedder) -> np.ndarray:
    """Calibrated passage-to-passage similarity of every pair (0 where a vector is missing)."""
    dim = next((len(f.vector) for f in found if f.vector is not None), 0)
    if dim == 0:
        return np.zeros((len(found), len(found)), dtype=np.float32)
    matrix = np.stack(
        [f.vector if f.vector is not None else np.zeros(dim, np.float32) for f in found]
    )
    sims = np.asarray(embedder.calibrate(pairwise(matrix), "passage"), dtype=np.float32)
    missing = [i for i, f in enumerate(found) if f.vector is None]
    sims[missing, :] = 0.0
    sims[:, missing] = 0.0
    return sims


def _newer_first(
    ranked: list[Found], similar: np.ndarray, alike: np.ndarray, holds: Callable[[int, int], bool]
) -> tuple[list[Found], np.ndarray]:
    """Each item that restates an older one ranked above it moves right above that one
    (``alike``: the pairs alike enough; ``holds(b, a)``: ``b`` may restate ``a`` for this
    question, :func:`_may_restate`)."""
    order = list(range(len(ranked)))
    restates: dict[int, int] = {}  # moved item -> the older statement it moved above
    i = 0
    while i < len(order):
        a = order[i]
        when_a = ranked[a].item.timestamp
        for j in range(i + 1, len(order)):
            b = order[j]
            when_b = ranked[b].item.timestamp
            if (
                when_a is not None
                and when_b is not None
                and when_b > when_a
                and alike[a, b]
                and holds(b, a)
            ):
                at = _above_thread(ranked, order, i, ranked[b])
                order.insert(at, order.pop(j))
                restates.setdefault(b, a)
                i = at
                break
        else:
            i += 1
            continue
        # the moved item now sits at i: look at it against the rest in turn
    for b, a in restates.items():
        item = ranked[b].item
        note = f"a newer statement of {ranked[a].item.id}"
        why = f"{item.why}; {note}" if item.why else note
        ranked[b] = replace(ranked[b], item=replace(item, why=why))
    return [ranked[k] for k in order], similar[np.ix_(order, order)]


def _above_thread(ranked: Sequence[Found], order: Sequence[int], at: int, newer: Found) -> int:
    """Where a restatement of the item at ``at`` (in ``order``) goes: right above it, and
    above the items of that one's thread ranked right above it and older than ``newer`` — the
    rest of the older conversation's account of the fact."""
    thread = ranked[order[at]].thread
    when = newer.item.timestamp
    while thread is not None and when is not None and at > 0:
        above = ranked[order[at - 1]]
        if above.thread != thread or above.item.timestamp is None or above.item.timestamp >= when:
            break
        at -= 1
    return at


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
