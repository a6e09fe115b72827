"""Restatements: of two items saying the same thing, the newer is the current statement.

For a question about the present (:attr:`Route.present <omoide.recall.route.Route.present>`,
``router.restated_similarity`` > 0) the cut (:mod:`omoide.recall.cut`) moves each newer
statement of a fact right above the older one, and above the items of the older one's thread
(``context["thread"]``, else its ``session_id``: one conversation) ranked right above it,
the rest of that conversation's account of the fact — also when it already ranks above the
older one but below those items. As the current version of a fact passes
the floor with its superseded one, a restatement passes it with the item it restates.

**Alike** (:func:`alike`): two items say the same thing when their embeddings are at least
``router.restated_similarity`` similar, calibrated — at least
``router.restated_similarity_across_languages`` for two texts in different languages, which
the model rates less alike than two wordings in one (two texts are in one language when each
has letters of the script the other is mostly written in,
:func:`~omoide.text.relevance.written_alike`: "来週以降、運行会議はroom C-310でやります。" is
not in an English sentence's). Two texts in one language whose words agree but for their
numbers and codes (``router.restated_wording``: "… held in room B-204." and "… held in room
C-310.") are one statement with other values, however alike the model rates them; and two
texts naming values of one kind and not the same ones (:func:`~omoide.recall.statements.kind`:
two times, ``36h`` and ``40h``; not a duration after a time) are one fact at another value
when at least ``router.restated_values`` alike ("時間外労働は月40hまでとします。" and "今後、
時間外は月36hまでに抑えてください。", 0.62) — in different languages
``router.restated_values_across_languages``, as the model rates a restatement in the other
language as alike as unrelated text, when one of the two also holds a word of the other
translated (:func:`~omoide.text.lexicon.translated_alike`: a code or a time in common shape
alone does not make an incident report the new value of a deadline; and there a number
without a unit has no kind, a score of ``84`` being no reply time of ``4`` hours).

**For this question** (:func:`may_restate`): the newer item restates the older only when it
keeps the values the question names (its numbers and codes; a Japanese question's Latin
names) as well as the older one does — "incident 1234 fixed by …" and "incident 5678 fixed
by …" are alike, but for a question about incident 1234 the newer does not restate the
older; its other words may differ, as two wordings of one fact do. It restates nothing the
question asks when it answers the question much less well (its relevance under
``router.restated_relevance`` of the older one's; across languages its meaning, as a
statement in the other language holds none of the question's other words whatever it says)
and no older text it restates at the same values
(:func:`~omoide.recall.statements.same_values`, as alike as the values test asks) answered it
that well — "念のため再掲：月の残業上限は36hです。" answers a question about 時間外 as "今後、
時間外は月36hまでに抑えてください。" did — or when it names another identifier of the form the
question asks for where the older one names none (the next incident, another route: another
fact, not this one's new value), or when the two are records of one template
(:func:`~omoide.recall.statements.two_records`: two bills settled, differing in their code and
their amount).

Every pair of a recall's candidates is compared at once, as matrices: a recall about the
present holds a few hundred candidates, and per pair in Python the comparisons took most of
its time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from omoide.core.similarity import pairwise
from omoide.providers.embeddings import Embedder
from omoide.recall.distilled import with_sources
from omoide.recall.sources import Found
from omoide.recall.statements import Compared, analysed, claimed_values
from omoide.text.fulltext import content_terms
from omoide.text.identifiers import identifier_tokens, names_another
from omoide.text.lexicon import translated_alike
from omoide.text.relevance import Writing, languages, word_share, writing, written_alike

__all__ = ["Bars", "alike", "may_restate", "restated", "similarity"]

#: Only pairs at least this alike in meaning (calibrated) are compared word by word for
#: ``restated_wording``: unrelated texts rate under it.
WORDING_GATE = 0.5


@dataclass(frozen=True)
class Bars:
    """The restatement settings of one cut (the module's docstring): 0 turns a test off, and
    ``across_languages`` 0 is ``similarity``."""

    #: Two items at least this alike in meaning (calibrated) say the same thing
    #: (``router.restated_similarity``).
    similarity: float
    #: The bar for two texts in different languages
    #: (``router.restated_similarity_across_languages``).
    across_languages: float = 0.0
    #: Two texts in one language whose words but for numbers and codes agree this much are
    #: one statement with other values (``router.restated_wording``).
    wording: float = 0.0
    #: Two texts in one language stating values of one kind, not the same ones, this alike
    #: in meaning are one fact at another value (``router.restated_values``).
    values: float = 0.0
    #: The same across two languages (``36h`` and ``45h``;
    #: ``router.restated_values_across_languages``).
    values_across: float = 0.0
    #: A restatement's relevance is at least this share of the older item's
    #: (``router.restated_relevance``).
    relevance: float = 0.0

    def values_bars(self, differ: np.ndarray) -> np.ndarray:
        """The values test's bar for each pair (in one language or across two; inf: off)."""
        return np.where(differ, self.values_across or np.inf, self.values or np.inf)


def restated(
    candidates: list[Found],
    passes: Callable[[Found], bool],
    bars: Bars,
    embedder: Embedder,
    query: str,
) -> tuple[list[Found], np.ndarray]:
    """The ``candidates`` that pass the floor, with each newer restatement of one of them
    (it is the current statement of what that item says), newer statements first; and the
    similarity of every pair of them, in that order."""
    similar = similarity(candidates, embedder)
    differ = _languages_differ([writing(f.item.text) for f in candidates])
    compared = Compared([f.item.text for f in candidates], differ)
    pairs = with_sources(candidates, alike(candidates, differ, similar, bars, compared))
    times = _times(candidates)
    # restates[b, a]: b is newer than a, alike it, and may restate it for this question
    newer = pairs.T & (times[:, None] > times[None, :])  # NaN times compare False
    restates = may_restate(candidates, newer, differ, query, bars, similar, compared)
    kept = np.array([passes(f) for f in candidates], dtype=bool)
    kept |= (restates & kept[None, :]).any(axis=1)
    chosen = np.flatnonzero(kept)
    picked = np.ix_(chosen, chosen)
    return _newer_first([candidates[i] for i in chosen], similar[picked], restates[picked])


def may_restate(
    found: Sequence[Found],
    pairs: np.ndarray,
    differ: np.ndarray,
    query: str,
    bars: Bars,
    similar: np.ndarray,
    compared: Compared,
) -> np.ndarray:
    """``out[b, a]``: of the ``pairs`` (``pairs[b, a]``: ``b`` newer than ``a`` and alike
    it), the ones where ``b`` may restate ``a`` for this question (the module's docstring).
    What each text holds is read once; what holds for a pair, at once for every pair."""
    asked = identifier_tokens(query)
    terms = content_terms(query)
    if languages(query) & {"cjk"}:
        values = [t for t in terms if t.isascii()]
    else:
        values = [t for t in terms if any(c.isdigit() for c in t)]
    texts = [f.item.text for f in found]
    held = np.array([word_share(values, analysed(t)) for t in texts])  # the asked values
    other = np.array([bool(asked) and names_another(asked, t) for t in texts], dtype=bool)
    relevant = np.array([f.item.signals.get("relevance", 0.0) for f in found])
    meaning = np.array(
        [f.item.signals.get("meaning", r) for f, r in zip(found, relevant, strict=True)]
    )
    # as_well[x, a]: x answers about as well as a (across languages, by meaning)
    as_well = np.where(
        differ,
        meaning[:, None] >= bars.relevance * meaning[None, :],
        relevant[:, None] >= bars.relevance * relevant[None, :],
    )
    # rewords[b, c]: c is an older text b states at the same values, as alike as asked
    times = _times(found)
    at_values = (similar >= bars.values_bars(differ)) & compared.same_values()
    rewords = (times[None, :] < times[:, None]) & at_values
    # b answers as well as a, or an older text it rewords other than a itself does
    through = rewords.astype(np.float32) @ as_well.astype(np.float32)
    through -= rewords & np.diag(as_well)[None, :]
    answers = as_well | (through > 0)
    named = ~(other[:, None] & ~other[None, :])
    keeps = held[:, None] >= held[None, :]
    return np.asarray(pairs & answers & named & keeps & ~compared.two_records())


def alike(
    found: Sequence[Found],
    differ: np.ndarray,
    similar: np.ndarray,
    bars: Bars,
    compared: Compared,
) -> np.ndarray:
    """Which pairs are alike enough to be one statement (the module's docstring)."""
    across = bars.across_languages or bars.similarity
    out = np.asarray(similar >= np.where(differ, across, bars.similarity))
    if bars.wording > 0:  # in one language, read where at least this alike
        gate = ~differ & (similar >= WORDING_GATE)
        out |= gate & compared.worded_alike(bars.wording)
    valued = (similar >= bars.values_bars(differ)) & compared.other_values()
    out |= valued & ~differ
    claimed = claimed_values(
        [f.item.text for f in found], [f.item.timestamp for f in found], similar, differ
    )
    for a, b in np.argwhere(np.triu(valued & differ & ~out, 1)):
        first, second = found[a].item.text, found[b].item.text
        if not claimed(a, b) and translated_alike(first, second):
            out[a, b] = out[b, a] = True
    return out


def similarity(found: Sequence[Found], embedder: Embedder) -> np.ndarray:
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


def _languages_differ(scripts: Sequence[Writing]) -> np.ndarray:
    """``differ[a, b]``: the two texts are in different languages (:func:`written_alike`).
    A text's scripts are one of a few sets: compare the sets, then spread to every pair."""
    distinct = list(dict.fromkeys(scripts))
    which = np.array([distinct.index(s) for s in scripts], dtype=np.intp)
    table = np.array(
        [not written_alike(a, b) for a in distinct for b in distinct], dtype=bool
    ).reshape(len(distinct), len(distinct))
    return np.asarray(table[np.ix_(which, which)])


def _times(found: Sequence[Found]) -> np.ndarray:
    """Each item's time as a POSIX timestamp, NaN when it has none."""
    return np.array(
        [np.nan if f.item.timestamp is None else f.item.timestamp.timestamp() for f in found],
        dtype=float,
    )


def _newer_first(
    ranked: list[Found], similar: np.ndarray, restates: np.ndarray
) -> tuple[list[Found], np.ndarray]:
    """Each item that restates an older one ranked above it (``restates[b, a]``) moves right
    above that one; and ``similar`` in the new order."""
    order = list(range(len(ranked)))
    # Where each item stands in ``order``, kept as items move: the walk asks where the
    # restatements of every item it reaches are, a few hundred times a recall.
    place = np.arange(len(ranked))
    # Which items restate each one, read from its column when the walk reaches it: of a
    # recall's few thousand restating pairs most are never looked at.
    restated = np.asarray(restates.any(axis=0), dtype=bool)
    restated_by: dict[int, np.ndarray] = {}
    moved: dict[int, int] = {}  # moved item -> the older statement it moved above
    i = 0
    while i < len(order):
        a = order[i]
        if not restated[a]:
            i += 1
            continue
        newer = restated_by.get(a)
        if newer is None:
            newer = restated_by[a] = np.flatnonzero(restates[:, a])
        at_places = place[newer]
        below = at_places[at_places > i]
        if not len(below):
            # A restatement already above this item still goes above the rest of its
            # conversation's account ranked right above it.
            lifted = _lift_above(ranked, order, place, i, at_places)
            if lifted is not None:
                moved.setdefault(lifted, a)
            i += 1
            continue
        j = int(below.min())
        b = order[j]
        at = _above_thread(ranked, order, i, ranked[b])
        _move(order, place, j, at)
        moved.setdefault(b, a)
        i = at  # the moved item now sits at i: look at it against the rest in turn
    for b, a in moved.items():
        ranked[b] = ranked[b].noted(f"a newer statement of {ranked[a].item.id}")
    return [ranked[k] for k in order], similar[np.ix_(order, order)]


def _move(order: list[int], place: np.ndarray, j: int, at: int) -> None:
    """Move the item at ``j`` in ``order`` to ``at``, keeping ``place`` (each item's index)."""
    order.insert(at, order.pop(j))
    low, high = min(at, j), max(at, j) + 1
    place[order[low:high]] = np.arange(low, high)


def _lift_above(
    ranked: Sequence[Found], order: list[int], place: np.ndarray, i: int, newer: np.ndarray
) -> int | None:
    """A restatement of the item at ``i`` (``newer``: where its restatements stand) ranked
    above it but below items of its thread (older than the restatement, right above it)
    moves above those too; the one moved (None: none)."""
    thread = ranked[order[i]].thread
    if thread is None:
        return None
    # Only a restatement with nothing but the thread's items between it and ``i`` can move.
    reach = i - 1
    while reach >= 0 and ranked[order[reach]].thread == thread:
        reach -= 1
    for j in sorted(int(p) for p in newer if reach <= p < i):
        b = order[j]
        at = _above_thread(ranked, order, i, ranked[b], skip=j)
        if at < j:
            _move(order, place, j, at)
            return b
    return None


def _above_thread(
    ranked: Sequence[Found], order: Sequence[int], at: int, newer: Found, skip: int = -1
) -> int:
    """Where a restatement of the item at ``at`` (in ``order``) goes: right above it, and
    above the items of that one's thread ranked right above it and older than ``newer`` — the
    rest of the older conversation's account of the fact. The place ``skip`` (where the
    restatement itself stands, when above) is stepped over."""
    thread = ranked[order[at]].thread
    when = newer.item.timestamp
    top = k = at
    while thread is not None and when is not None and k > 0:
        k -= 1
        if k == skip:
            continue
        above = ranked[order[k]]
        if above.thread != thread or above.item.timestamp is None or above.item.timestamp >= when:
            break
        top = k
    return top
