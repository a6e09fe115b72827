"""The score: one formula for every layer, on one scale, written down once.

An item's score is its relevance (words and meaning, :mod:`omoide.text.relevance`) times the
route's weight for its layer (:mod:`omoide.recall.route`) and times its priors, each 1 when
neutral. Knowledge distillation wrote from episodes weighs as the episodic layer does: it is
the same experience, summarised, and summarising it must not lift it above the episodes a
question is about (nor a newer episode above which it would otherwise not rank).

* importance — ``1 + router.importance_prior × (importance − 0.5)``: the writer's importance
  of an episode, a document's ``importance`` metadata, a procedure's proven selection score.
  For a question about the present (:attr:`Route.present <omoide.recall.route.Route.present>`)
  a writer's importance above neutral lifts by ``router.present_importance_prior`` instead
  (0, no lift, by default): it says how much a record matters — a settled bill, an incident,
  an operator's remark — not that it states how things are now, which is what is asked.
  Importance below neutral (chatter) lowers as for every question, and a procedure's proven
  score, which says which way works, lifts as for every question;
* recency — ``1 + router.recency_prior × (recency − 0.5)``, recency running from 0 for the
  oldest candidate of its layer to 1 for the newest;
* freshness — ``1 + strength × (freshness − 0.5)``, the item's time on the episodic freshness
  curve (an episode's; a document's writing; a distilled document's last episode), the same
  for every layer; the strength is ``router.present_freshness_prior`` for a question about
  the present (:attr:`Route.present <omoide.recall.route.Route.present>`: of statements of a
  fact the newest answers it), else ``router.freshness_prior``;
* time — ``1 + router.time_range_boost`` for an item inside the time range the question names;
* version — ``router.superseded_factor`` for a superseded version of a fact, and its current
  version, when found too, scores at least what the superseded one would score unfactored:
  a question that matches an old statement of a fact asks about that fact, and the answer is
  its current value, however differently it is worded (restated in another language). A
  version chain is one writer's (:meth:`~omoide.layers.semantic.registry.DocumentRegistry.
  supersede`), so no one lifts another's document;
* identifiers — ``router.other_identifier_factor`` for an item that names none of the
  identifiers the question asks about but another of the same form (another incident code,
  another rack): words and meaning cannot tell ``HX-166`` from ``HX-162``.
* threads — for a question that counts (:attr:`Route.counting <omoide.recall.route.Route.
  counting>`: "how many", "何回"), ``router.thread_turns ** k`` for the k-th best item of its
  writer's in its thread after the first (off at 1, the default): one conversation's turns,
  which share their neighbours' words, give way to the other conversations a count gathers
  from.

Working memory is not scored: the session's pins come first, then its recent messages.
Each item's ``why`` says which signals made its score, with their values.
"""

from __future__ import annotations

from collections.abc import Sequence

from omoide.core.settings import RouterConfig
from omoide.recall.context import ContextItem, origin
from omoide.recall.route import Route
from omoide.recall.sources import Found
from omoide.text.identifiers import names_another
from omoide.text.relevance import prior

__all__ = ["score", "score_more", "weighs_as"]


def weighs_as(item: ContextItem) -> str:
    """The layer whose route weight an item takes: its own, but ``episodic`` for knowledge
    distilled from episodes."""
    if origin(item) == "distillation":
        return "episodic"
    return item.layer


def score(found: Sequence[Found], route: Route, config: RouterConfig) -> list[Found]:
    """``found`` with each item's score and why (see the module's docstring)."""
    recency = _recency(found) if config.recency_prior else {}
    freshness = config.freshness_prior
    if route.present:
        freshness = max(freshness, config.present_freshness_prior)
    scored = []
    lent: dict[str, tuple[float, str]] = {}  # current version: best unfactored old score, id
    for f in found:
        item = f.item
        if item.layer == "working":
            scored.append(f)
            continue
        signals = dict(item.signals)
        weight = route.weights.get(weighs_as(item), 1.0)
        value = signals.get("relevance", 0.0) * weight
        parts = [f"relevance {signals.get('relevance', 0.0):.2f}"]
        if "words" in signals:
            parts[0] += f" (words {signals['words']:.2f}, meaning {signals['meaning']:.2f})"
        importance = signals.get("importance", 0.5)
        strength = config.importance_prior
        if route.present and importance > 0.5 and item.layer != "procedural":
            strength = config.present_importance_prior
            if not strength:
                parts.append(f"importance {importance:.2f}, no lift for a question about now")
        if strength and importance != 0.5:
            value *= prior(importance, strength)
            parts.append(f"importance {importance:.2f}")
        if freshness and "freshness" in signals:
            value *= prior(signals["freshness"], freshness)
            parts.append(f"freshness {signals['freshness']:.2f}")
        if config.recency_prior and id(f) in recency:
            signals["recency"] = recency[id(f)]
            value *= prior(recency[id(f)], config.recency_prior)
            parts.append(f"recency {recency[id(f)]:.2f}")
        if route.time_range is not None and item.timestamp in route.time_range:
            value *= 1 + config.time_range_boost
            parts.append(f"within {route.time_range.expression}")
        if signals.get("current", 1.0) == 0.0:
            if f.successor is not None and value > lent.get(f.successor, (0.0, ""))[0]:
                lent[f.successor] = (value, item.id)
            value *= config.superseded_factor
            parts.append("superseded by a newer version")
        if (
            route.identifiers
            and config.other_identifier_factor < 1.0
            and names_another(route.identifiers, item.text)
        ):
            value *= config.other_identifier_factor
            parts.append("names another identifier than the question's")
        if weight != 1.0:
            parts.append(f"layer weight {weight:g}")
        why = f"{item.why}; {', '.join(parts)}" if item.why else ", ".join(parts)
        scored.append(Found(item.scored(value, why, signals), f.vector, f.successor, f.thread))
    scored = [_lent(f, lent) for f in scored] if lent else scored
    if route.counting and config.thread_turns < 1.0:
        scored = _threads_take_turns(scored, config.thread_turns)
    return scored


def score_more(
    found: Sequence[Found],
    scored: Sequence[Found],
    more: Sequence[Found],
    route: Route,
    config: RouterConfig,
) -> list[Found]:
    """``score([*found, *more])``, given ``scored`` (``score(found)``). Where no prior reads
    the whole set (recency, threads taking turns) and no item of ``more`` is a version of a
    fact (superseded, or the current version of one of ``found``), each item's score is its
    own: ``scored`` stands and only ``more`` is scored. A question about the present adds
    the later statements of what it found, and scoring every candidate again took about
    1.5 ms of its 33 ms of own work."""
    whole = bool(config.recency_prior) or (route.counting and config.thread_turns < 1.0)
    current = {f.successor for f in found if f.successor is not None}
    versions = any(f.successor is not None or f.item.id in current for f in more)
    if whole or versions:
        return score([*found, *more], route, config)
    return [*scored, *score(more, route, config)]


def _threads_take_turns(scored: list[Found], factor: float) -> list[Found]:
    """Each item of a thread after its best scored ``factor ** k``, k its place in its
    thread by score (0 for the best): what a greedy pick discounting each thread by the
    items already taken from it gives, in one pass. A thread is one writer's: a thread's
    name is the writer's claim, and another agent writing under it must not lower the
    items of the conversation it names."""
    order = sorted(range(len(scored)), key=lambda i: -scored[i].item.score)
    placed: dict[tuple[str, str], int] = {}
    out = list(scored)
    for i in order:
        f = scored[i]
        if f.thread is None or f.item.layer == "working":
            continue
        key = (f.item.author, f.thread)
        k = placed[key] = placed.get(key, -1) + 1
        if k:
            item = f.item
            why = f"{item.why}; item {k + 1} of its conversation, for a question that counts"
            value = item.score * factor**k
            out[i] = Found(
                item.scored(value, why, dict(item.signals)), f.vector, f.successor, f.thread
            )
    return out


def _lent(found: Found, lent: dict[str, tuple[float, str]]) -> Found:
    """``found`` scored at least what its best superseded version found would score
    unfactored (``lent``: by current version, that score and the old version's id)."""
    item = found.item
    value, old = lent.get(item.id, (0.0, ""))
    if value <= item.score:
        return found
    why = f"{item.why}; the current version of {old}, which matches the question"
    return Found(
        item.scored(value, why, dict(item.signals)), found.vector, found.successor, found.thread
    )


def _recency(found: Sequence[Found]) -> dict[int, float]:
    """Each timestamped item's place in time among its layer's candidates, in [0, 1]."""
    by_layer: dict[str, list[Found]] = {}
    for f in found:
        if f.item.timestamp is not None and f.item.layer != "working":
            by_layer.setdefault(f.item.layer, []).append(f)
    out: dict[int, float] = {}
    for items in by_layer.values():
        times = [f.item.timestamp.timestamp() for f in items if f.item.timestamp is not None]
        low, high = min(times), max(times)
        for f in items:
            assert f.item.timestamp is not None
            t = f.item.timestamp.timestamp()
            out[id(f)] = 0.5 if high == low else (t - low) / (high - low)
    return out
