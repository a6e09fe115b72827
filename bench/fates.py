"""Where a lost answer went: the fate of a question's gold item in the maintained store.

For every question the maintained variant misses and the unmaintained one answers,
:func:`trace` reads the gold item (the question's ``source`` episode) back from the maintained
store and its audit log at the moment the question was asked, and names one cause:

* ``deleted`` / ``archived`` / ``compressed`` — a forgetting policy acted on it (which one, from
  the audit log);
* ``moved out by capacity`` — overflow handed it to the semantic layer (the document it became
  and whether that document was returned);
* ``moved out, then archived`` — and the document it became was later archived or deleted
  in the semantic layer (by which policy, and why), so no recall could find it;
* ``distilled, summary lacks the answer`` — it was distilled into a knowledge document that was
  returned but does not say the answer (the episode itself was not);
* ``distilled, neither returned`` — distilled, and neither the document nor the episode came
  back;
* ``outranked by a distilled doc`` / ``by an older statement`` / ``by another item`` — still
  present as written, but other items took the places that counted (recall's to fix);
* ``no gold`` — the question names no source item.

Each :class:`Fate` also says what took the counted places and where the gold ranked, so that
causes that are recall's can be shown with examples.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from omoide.errors import NotFoundError
from omoide.memory import Memory
from omoide.recall.context import ContextItem
from omoide.simulation.runner import Answer
from omoide.simulation.scoring import answers

__all__ = ["CAUSES", "Fate", "Tracer", "cut", "tally", "trace"]

CAUSES: tuple[str, ...] = (
    "deleted",
    "archived",
    "compressed",
    "moved out by capacity",
    "moved out, then archived",
    "distilled, summary lacks the answer",
    "distilled, neither returned",
    "outranked by a distilled doc",
    "outranked by an older statement",
    "outranked by another item",
    "no gold",
)


@dataclass(frozen=True)
class Fate:
    """Why one question the baseline answered was missed with maintenance."""

    day: int
    kind: str
    question: str
    expected: str
    cause: str
    #: What happened to the gold item, and what took the places that counted.
    detail: str


def _counted(answer: Answer) -> int:
    """How many first items are judged: the top one for a current fact, else five."""
    return 1 if answer.question.kind == "current_fact" else 5


def cut(text: str, width: int = 90) -> str:
    """``text`` on one line, at most ``width`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _rank(items: Sequence[ContextItem], item_id: str) -> int | None:
    """1-based rank of an item (episode id or semantic ``collection/id``), None if absent."""
    for n, item in enumerate(items, 1):
        if item.id == item_id or item.id.endswith(f"/{item_id}"):
            return n
    return None


def _is_distilled(item: ContextItem) -> bool:
    return item.layer == "semantic" and item.metadata.get("source") == "distillation"


def _what(item: ContextItem) -> str:
    """One item, as the report names it."""
    origin = "distilled doc" if _is_distilled(item) else f"{item.layer} item"
    return f"{origin} ({item.author or '?'}): “{cut(item.text, 70)}” [{_signals(item)}]"


def _signals(item: ContextItem) -> str:
    """An item's score and the signals that made it, in short."""
    shown = ("words", "meaning", "relevance", "importance")
    parts = [f"{k} {item.signals[k]:.2f}" for k in shown if k in item.signals]
    return f"score {item.score:.3f}: " + ", ".join(parts)


def _outranked(kept: Answer, gold_author: str) -> tuple[str, str]:
    """The cause and detail for a gold item present as written that was not in the counted
    places: what took them."""
    q = kept.question
    top = kept.items[: _counted(kept)]
    if not top:
        return "outranked by another item", "nothing returned"
    distilled = [i for i in top if _is_distilled(i)]
    older = [i for i in top if any(o.casefold() in i.text.casefold() for o in q.forbidden)]
    if q.kind == "current_fact" and older:
        winner, cause = older[0], "outranked by an older statement"
    elif distilled:
        winner, cause = distilled[0], "outranked by a distilled doc"
    else:
        winner, cause = top[0], "outranked by another item"
    other = (
        "another agent's" if winner.author and winner.author != gold_author else "the same agent's"
    )
    return cause, f"won by {other} {_what(winner)}"


def trace(mem: Memory, kept: Answer, baseline: Answer, day: int) -> Fate:
    """The fate of ``kept``'s gold item in ``mem`` (the maintained store, as it was when it
    answered); ``baseline`` is the same question as the unmaintained store answered it."""
    q = kept.question
    ranks = _rank(kept.items, q.source), _rank(baseline.items, q.source)
    where = f"gold rank {ranks[0] or '-'} (baseline {ranks[1] or '-'})"
    if ranks[1] is not None:
        where += f", gold in the baseline [{_signals(baseline.items[ranks[1] - 1])}]"

    def fate(cause: str, detail: str) -> Fate:
        return Fate(day, q.kind, q.text, q.expected, cause, f"{detail}; {where}")

    if not q.source:
        top = kept.items[:1]
        won = f"; first: {_what(top[0])}" if top else "; nothing returned"
        return fate("no gold", "the question names no source" + won)
    log = mem.audit(q.source, limit=20)
    try:
        episode = mem.episodic.get(q.source)
    except NotFoundError:
        episode = None
    if episode is None:
        entry = log[0] if log else None
        if entry is not None and entry.action == "overflow":
            doc = mem.episodic.rows.distilled_into_of(q.source) or f"episode-{q.source}"
            gone = _document_gone(mem, doc)
            if gone is not None:
                return fate("moved out, then archived", f"became {doc}, then {gone}")
            rank = _rank(kept.items, doc)
            return fate("moved out by capacity", f"became {doc}, returned at {rank or '-'}")
        policy = entry.policy if entry is not None else "?"
        return fate("deleted", f"by {policy}")
    if episode.state in ("archived", "compressed"):
        acts = [e for e in log if e.action in ("archive", "compress")]
        policy = acts[0].policy if acts else "?"
        return fate(episode.state, f"by {policy}")
    doc_id = mem.episodic.rows.distilled_into_of(q.source)
    if doc_id is not None:
        doc_rank = _rank(kept.items, doc_id)
        if doc_rank is not None and doc_rank <= _counted(kept):
            text = kept.items[doc_rank - 1].text
            if not answers(text, q):
                return fate(
                    "distilled, summary lacks the answer",
                    f"{doc_id} at {doc_rank} says “{cut(text, 80)}”",
                )
        elif _rank(kept.items, q.source) is None:
            return fate("distilled, neither returned", f"into {doc_id}, rank {doc_rank or '-'}")
    cause, detail = _outranked(kept, episode.agent_name)
    return fate(cause, detail)


def _document_gone(mem: Memory, doc_id: str) -> str | None:
    """How the document an episode became left the searchable semantic layer (its state and
    the policy that put it there, with the policy's reason), or None while it is there."""
    collection = mem.config.distill.collection
    try:
        state = mem.semantic.get(collection, doc_id).state
    except NotFoundError:
        state = "deleted"
    if state in ("active", "compressed"):
        return None
    acts = [e for e in mem.audit(doc_id, limit=20) if e.action in ("archive", "delete")]
    why = f" ({cut(acts[0].reason, 110)})" if acts else ""
    return f"{state} by {acts[0].policy if acts else '?'}{why}"


class Tracer:
    """An observer for :func:`omoide.simulation.runner.simulate`: traces every question the
    ``kept`` variant misses and the ``baseline`` one answers, on the day it is asked."""

    def __init__(self, kept: str = "forgetting", baseline: str = "baseline") -> None:
        self.kept = kept
        self.baseline = baseline
        self.fates: list[Fate] = []

    def __call__(
        self, day: int, stores: Mapping[str, Memory], given: Mapping[str, Sequence[Answer]]
    ) -> None:
        if self.kept not in given or self.baseline not in given:
            return
        for kept, base in zip(given[self.kept], given[self.baseline], strict=True):
            if base.ok and not kept.ok:
                self.fates.append(trace(stores[self.kept], kept, base, day))


def tally(fates: Sequence[Fate]) -> list[tuple[str, int]]:
    """Causes by count, most frequent first (those with none left out)."""
    return Counter(f.cause for f in fates).most_common()
