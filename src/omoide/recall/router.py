"""The router: one question in, one token-budgeted context out (article section 10).

:meth:`Memory.recall <omoide.memory.Memory.recall>` follows the article's flowchart:

* referenced in the last 5 minutes → **working memory**: the session's recent messages;
  needed on every task → its **pins** (always first);
* a past experience, or a time expression ("先週", "3日前", "last week") → the **episodic**
  store, with the time range the expression denotes (episodes inside it rank first);
* knowledge → the **semantic** store;
* "how do I …", "手順", "方法" → **procedural** memory (and any procedure whose trigger matches).

Every layer that can answer is consulted; the route decides how much each one weighs. Items
are scored on one scale (relevance in [0, 1], times the route's weight for the layer),
deduplicated (by id, by the episode a document was made from, and by identical text),
ranked, and packed into the token budget — never over it, counted by the memory's token
counter on the rendered text. Every recall is logged for provenance
(:mod:`omoide.recall.log`).

Episodes are ranked by their own relevance rather than by :meth:`EpisodicStore.recall`'s
article formula: the BM25 of the episode's *context key* (the episode, its date and its
neighbours in the thread; :mod:`omoide.layers.episodic.context_keys`) normalised by the best
candidate and
multiplied by the share of the question's content words the key holds
(:func:`omoide.text.fulltext.coverage`: an agent's decision on another topic shares its name, not
the topic), plus calibrated embedding similarity (each weighted 1:1 by default), with a little
importance.
Episodes written by an agent the question names ("what did the CTO decide?") get a bonus,
as do episodes inside the time range the question names. Freshness is off by default: a
question about an old event should not lose to a recent one that matches it less; time
enters through time expressions instead.

Importance is a prior on relevance in every layer: relevance is multiplied by
``1 + router.importance_prior × (importance − 0.5)`` (episodes' own importance, documents'
``importance`` metadata; 0.5 when absent), so routine chatter the writer marked 0.2 does not
outrank a decision marked 0.8 that matches as well — and a store whose items all share the
default importance ranks exactly as without it. Documents are scored by their words and their
meaning: the BM25 of the document's full text (:meth:`SemanticStore.search_text`) normalised
by the best candidate and multiplied by the share of the question's content words it holds
(:func:`omoide.text.fulltext.coverage`), blended with calibrated similarity as for episodes. A
document holding none of those words (it may be in the other language) or all of them never
falls below ``router.meaning_floor`` times the similarity alone; one holding only some is
about something else in the question's frame and keeps the blend. The documents the words
find are candidates too. The current version of a versioned fact whose subject the question
names is also asked for on its own and gains ``router.subject_bonus`` times the share of its
subject's words named, and one whose earlier version matches the question better ranks as
well as that version (an archived version, out of vector search, is found by its words).

Identifiers the question names (:mod:`omoide.text.identifiers`: ``E-03424``, ``Q1``) weigh in every
layer: an item holding a rare one gains ``router.identifier_bonus``; one naming only another
identifier of the same form (``E-02365``, ``Q2``) is about something else and has its
relevance multiplied by ``router.other_identifier_factor``. Documents written by an agent the
question names are asked for on their own and gain ``router.author_bonus``, like episodes.

Everything an agent reads through the router is limited to what its scope allows.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import numpy as np

from omoide.core.context import (
    FOOTER,
    Context,
    ContextItem,
    render_context,
    render_header,
    render_item,
)
from omoide.core.scope import teams_of
from omoide.core.validation import check_datetime, check_name, check_positive_int, check_text
from omoide.errors import NotFoundError, UnknownLayerError, ValidationError
from omoide.layers.episodic.store import episode_text
from omoide.layers.procedural import trigger_match
from omoide.layers.working import session_exists
from omoide.recall.candidates import codes, gather_documents, names_agent, subject_share
from omoide.text.fulltext import content_terms, coverage
from omoide.text.identifiers import identifiers, names_another
from omoide.text.timeexpr import TimeRange, find_time_range

if TYPE_CHECKING:
    from omoide.core.config import RouterConfig
    from omoide.memory import Memory

__all__ = ["LAYERS", "Context", "ContextItem", "Route", "Router", "route"]

#: The layers a recall can draw from, in the flowchart's order.
LAYERS: tuple[str, ...] = ("working", "episodic", "semantic", "procedural")
#: Longest query accepted (characters).
MAX_QUERY_CHARS = 10_000
#: An item is cut to fit the remaining budget only if at least this many tokens remain.
MIN_TRUNCATED_TOKENS = 24
#: Packing stops after this many items that did not fit (the budget is as good as full).
MAX_MISSES = 3

_PAST_EN = re.compile(
    r"\b(?:last time|previous(?:ly)?|before|earlier|did (?:we|i|you|they|he|she)|"
    r"have (?:we|i|you) (?:ever|already)|when did|what happened|remember|experience[ds]?|"
    r"history|ago|used to|incident|same (?:error|problem|issue))\b",
    re.IGNORECASE,
)
_PAST_JA = re.compile(r"前回|以前|過去|前に|経験|したこと|あった|いつ|覚えて|履歴|事例|同じ|この前")
_HOWTO_EN = re.compile(
    r"\b(?:how (?:do|can|should|to|would)|steps?|procedures?|process for|guide|instructions?|"
    r"workflow|checklist|runbook|recipe|best way)\b",
    re.IGNORECASE,
)
_HOWTO_JA = re.compile(
    r"手順|方法|やり方|どうやって|どのように|どうすれば|仕方|進め方|フロー|段取り"
)


@dataclass(frozen=True)
class Route:
    """Which layers a question goes to, how much each weighs, and why."""

    weights: Mapping[str, float]
    reasons: Mapping[str, str]
    time_range: TimeRange | None = None
    past: bool = False
    howto: bool = False


def route(query: str, now: datetime) -> Route:
    """Read the flowchart's cues in ``query`` (time expression, past experience, how-to)."""
    text = unicodedata.normalize("NFKC", query)
    time_range = find_time_range(text, now)
    past = bool(_PAST_EN.search(text) or _PAST_JA.search(text))
    howto = bool(_HOWTO_EN.search(text) or _HOWTO_JA.search(text))
    weights = {"working": 1.0, "episodic": 0.9, "semantic": 1.0, "procedural": 0.6}
    reasons = {
        "working": "referenced in this session in the last minutes",
        "episodic": "matches a past experience",
        "semantic": "knowledge matching the question",
        "procedural": "a procedure whose trigger matches",
    }
    if time_range is not None or past:
        weights.update(episodic=1.0, semantic=0.85)
        reasons["episodic"] = (
            f"past experience; the question names a time ({time_range.expression})"
            if time_range is not None
            else "the question asks about past experience"
        )
    if howto:
        weights.update(procedural=1.0, semantic=0.9, episodic=min(weights["episodic"], 0.85))
        reasons["procedural"] = "the question asks how to do something"
    return Route(weights, reasons, time_range, past, howto)


# -- the router -------------------------------------------------------------------------


class Router:
    """Recall across layers; used through :meth:`Memory.recall`."""

    def __init__(self, memory: Memory) -> None:
        self._mem = memory
        self._procedure_vectors: dict[tuple[str, int, float], Any] = {}

    def recall(
        self,
        query: str,
        *,
        agent_name: str,
        session_id: str | None = None,
        budget_tokens: int | None = None,
        layers: Sequence[str] | None = None,
        now: datetime | str | None = None,
    ) -> Context:
        mem = self._mem
        config = mem.config.router
        query = check_text("query", query, max_chars=MAX_QUERY_CHARS)
        agent = check_name("agent_name", agent_name)
        session = None if session_id is None else check_name("session_id", session_id)
        budget = check_positive_int(
            "budget_tokens",
            config.default_budget_tokens if budget_tokens is None else budget_tokens,
            maximum=1_000_000,
        )
        chosen = _check_layers(layers)
        when = mem.clock.now() if now is None else check_datetime("now", now)
        teams = teams_of(agent, mem.config.teams)
        plan = route(query, when)

        candidates: list[ContextItem] = []
        if "working" in chosen and session is not None:
            candidates += self._working(agent, session, when, plan)
        if "episodic" in chosen:
            candidates += self._episodic(query, agent, teams, when, plan)
        if "semantic" in chosen:
            candidates += self._semantic(query, agent, teams, plan)
        if "procedural" in chosen:
            candidates += self._procedural(query, agent, teams, plan)

        items, rendered, used = self._pack(query, agent, _dedupe(candidates), budget)
        self._touch(items, when)
        recall_id = None
        if mem.recall_log.enabled:
            recall_id = f"rc-{uuid.uuid4().hex}"
            mem.recall_log.write(
                recall_id,
                agent_name=agent,
                session_id=session,
                query=query,
                layers=chosen,
                time_range=None if plan.time_range is None else plan.time_range.as_tuple(),
                budget_tokens=budget,
                tokens_used=used,
                items=[(i.layer, i.id, i.score, i.tokens) for i in items],
            )
        return Context(
            query=query,
            agent_name=agent,
            items=tuple(items),
            tokens=used,
            budget_tokens=budget,
            layers=chosen,
            time_range=plan.time_range,
            recall_id=recall_id,
            session_id=session,
            _rendered=rendered,
        )

    # -- layers ------------------------------------------------------------------------

    def _working(self, agent: str, session: str, now: datetime, plan: Route) -> list[ContextItem]:
        mem = self._mem
        if not session_exists(mem.db, agent, session):
            return []
        wm = mem.working(agent, session)
        items = [
            ContextItem(
                layer="working",
                id=f"pin:{pin.key}",
                text=pin.content,
                score=1.0 + 1e-6 * (len(wm.pins) - i),
                why="pinned" + (f": {pin.reason}" if pin.reason else " (needed on every task)"),
                author=agent,
                timestamp=pin.pinned_at,
            )
            for i, pin in enumerate(wm.pins)
        ]
        cutoff = now - timedelta(minutes=mem.config.router.recent_window_minutes)
        recent = [m for m in wm.messages if m.created_at is not None and m.created_at >= cutoff]
        weight = plan.weights["working"]
        for age, message in enumerate(reversed(recent)):
            items.append(
                ContextItem(
                    layer="working",
                    id=f"msg:{message.id}",
                    text=message.content,
                    score=weight * (0.75 - 0.001 * age),
                    why=plan.reasons["working"],
                    author=agent if message.role in ("assistant", "agent") else message.role,
                    timestamp=message.created_at,
                    metadata={"role": message.role},
                )
            )
        return items

    def _episodic(
        self, query: str, agent: str, teams: frozenset[str], now: datetime, plan: Route
    ) -> list[ContextItem]:
        mem = self._mem
        config = mem.config.router
        found = {
            c.episode.id: c
            for c in mem.episodic.candidates(
                query,
                pool=config.candidate_pool,
                reader=agent,
                reader_teams=teams,
                key_weights=config.context_key_weights,
            )
        }
        if plan.time_range is not None:
            for c in mem.episodic.candidates(
                query,
                pool=config.candidate_pool,
                time_range=plan.time_range.as_tuple(),
                reader=agent,
                reader_teams=teams,
                key_weights=config.context_key_weights,
            ):
                found.setdefault(c.episode.id, c)
        if not found:
            return []
        best = max(c.key_score for c in found.values())
        beta = config.dense_weight
        cosines = np.array([c.cosine for c in found.values()], dtype=np.float32)
        dense = mem.embedder.calibrate(cosines, "query")
        weight = plan.weights["episodic"]
        named = {a for a in {c.episode.agent_name for c in found.values()} if names_agent(query, a)}
        question_codes = codes(query)
        limit = config.rare_identifier_docs
        rare = [
            c for c in question_codes if 0 < mem.episodic.count_holding(c, limit=limit + 1) <= limit
        ]
        items = []
        terms = content_terms(query)
        for (_id, c), dense_part in zip(found.items(), dense, strict=True):
            text_part = 0.0
            if c.key_score > 0:
                text_part = c.key_score / best * coverage(terms, c.key)
            relevance = (text_part + beta * float(dense_part)) / (1 + beta)
            episode = c.episode
            text = episode_text(episode.description, episode.outcome)
            why = plan.reasons["episodic"]
            relevance, why = _identified(relevance, why, text, question_codes, rare, config)
            score = (
                config.relevance_weight
                * relevance
                * _prior(episode.importance, config.importance_prior)
                + config.importance_weight * episode.importance
                + config.freshness_weight * mem.episodic.freshness_of(episode, now)
            )
            if episode.agent_name in named:
                score += config.author_bonus
                why = f"written by {episode.agent_name}, whom the question names; {why}"
            if plan.time_range is not None and episode.timestamp in plan.time_range:
                score += config.time_range_bonus
                why = f"within {plan.time_range.expression}; {why}"
            items.append(
                ContextItem(
                    layer="episodic",
                    id=episode.id,
                    text=text,
                    score=weight * score,
                    why=why,
                    author=episode.agent_name,
                    timestamp=episode.timestamp,
                    metadata={"event_type": episode.event_type, "relevance": relevance},
                )
            )
        return items

    def _semantic(
        self, query: str, agent: str, teams: frozenset[str], plan: Route
    ) -> list[ContextItem]:
        mem = self._mem
        weight = plan.weights["semantic"]
        items = []
        config = mem.config.router
        bonus, prior, beta = config.subject_bonus, config.importance_prior, config.dense_weight
        question_codes = codes(query)
        terms = content_terms(query)
        for collection in mem.semantic.collections:
            if mem.semantic.count(collection) == 0:
                continue
            found = gather_documents(
                mem.semantic,
                mem.embedder,
                collection,
                query,
                reader=agent,
                reader_teams=teams,
                rare_limit=config.rare_identifier_docs,
            )
            words, stale = found.words, found.stale
            best_words = max(words.values(), default=0.0)
            for hit in found.hits:
                relevance = float(mem.embedder.calibrate(hit.similarity, "query"))
                why = plan.reasons["semantic"] + f" (collection {collection})"
                text_part = 0.0
                held = coverage(terms, hit.document)
                if best_words > 0 and hit.doc_id in words:
                    text_part = words[hit.doc_id] / best_words * held
                hybrid = (text_part + beta * relevance) / (1 + beta)
                if hybrid > relevance:
                    why += "; shares the question's words"
                if 0 < held < 1:  # same frame, another subject: the words decide
                    relevance = hybrid
                else:
                    relevance = max(hybrid, config.meaning_floor * relevance)
                subject = hit.metadata.get("subject")
                if not hit.current:
                    relevance *= 0.5
                    why += "; superseded by a newer version"
                elif isinstance(subject, str):
                    if stale.get(subject, 0.0) > relevance:
                        relevance = stale[subject]
                        why += f"; the current version of {subject}, whose earlier version matches"
                    if share := subject_share(query, subject):
                        relevance += bonus * share
                        why += f"; the current version of {subject}, which the question names"
                relevance, why = _identified(
                    relevance, why, hit.document, question_codes, found.rare, config
                )
                importance = hit.metadata.get("importance")
                if isinstance(importance, int | float) and 0 <= importance <= 1:
                    relevance *= _prior(float(importance), prior)
                try:
                    doc = mem.semantic.get(collection, hit.doc_id, reader=agent, reader_teams=teams)
                except NotFoundError:  # removed since the query
                    continue
                if doc.agent_name in found.authors:
                    relevance += config.author_bonus
                    why = f"written by {doc.agent_name}, whom the question names; {why}"
                items.append(
                    ContextItem(
                        layer="semantic",
                        id=f"{collection}/{hit.doc_id}",
                        text=hit.document,
                        score=weight * relevance,
                        why=why,
                        author=_document_author(doc.agent_name, hit.metadata),
                        timestamp=doc.updated_at,
                        metadata=dict(hit.metadata),
                    )
                )
        return items

    def _procedural(
        self, query: str, agent: str, teams: frozenset[str], plan: Route
    ) -> list[ContextItem]:
        mem = self._mem
        procedures = mem.procedural.procedures(reader=agent, reader_teams=teams)
        if not procedures:
            return []
        query_vector = mem.embedder.embed_query(query) if plan.howto else None
        weight = plan.weights["procedural"]
        items = []
        for proc in procedures:
            specificity = trigger_match(proc.trigger, query)
            relevance = {3: 1.0, 2: 0.9, 1: 0.8}.get(specificity, 0.0)
            why = f"its trigger {proc.trigger!r} matches the question" if specificity else ""
            if query_vector is not None:
                cosine = float(self._procedure_vector(proc) @ query_vector)
                similarity = float(mem.embedder.calibrate(cosine, "query"))
                if similarity > relevance:
                    relevance = similarity
                    why = plan.reasons["procedural"]
            if relevance <= 0:
                continue
            # Proven procedures first: the article's selection score, as a mild factor.
            score = weight * relevance * (0.75 + 0.25 * proc.selection_score)
            text = f"{proc.name} (v{proc.version})" + (
                f": {proc.description}" if proc.description else ""
            )
            items.append(
                ContextItem(
                    layer="procedural",
                    id=proc.name,
                    text=f"{text}\n{proc.template}",
                    score=score,
                    why=why,
                    author=proc.agent_name,
                    timestamp=proc.last_updated,
                    metadata={
                        "version": proc.version,
                        "success_rate": proc.success_rate,
                        "avg_quality_score": proc.avg_quality_score,
                    },
                )
            )
        return items

    def _procedure_vector(self, proc: Any) -> Any:
        key = (proc.name, proc.version, proc.last_updated.timestamp())
        vector = self._procedure_vectors.get(key)
        if vector is None:
            text = f"{proc.name} {proc.description} {proc.trigger}\n{proc.template[:1000]}"
            vector = self._mem.embedder.embed_passages([text])[0]
            self._procedure_vectors = {
                k: v for k, v in self._procedure_vectors.items() if k[0] != proc.name
            }
            self._procedure_vectors[key] = vector
        return vector

    # -- packing -----------------------------------------------------------------------

    def _pack(
        self, query: str, agent: str, candidates: list[ContextItem], budget: int
    ) -> tuple[list[ContextItem], str, int]:
        """Greedy by score: the best items that fit; a long item is cut to fit if enough
        room is left. The rendered text is counted at the end and trimmed if the parts'
        counts did not add up (tokenizers are not exactly additive)."""
        count = self._mem.token_counter.count
        head = render_header(query, agent)
        used = count(head) + count(FOOTER) + 2
        ranked = sorted(candidates, key=lambda i: (-i.score, i.layer, i.id))
        chosen: list[ContextItem] = []
        blocks: list[str] = []
        misses = 0
        for item in ranked:
            if budget - used < MIN_TRUNCATED_TOKENS or misses >= MAX_MISSES:
                break
            n = len(chosen) + 1
            block = render_item(n, item, item.text)
            tokens = count(block) + 1
            truncated = False
            if used + tokens > budget:
                room = budget - used - (tokens - count(item.text)) - 2
                text = ""
                if room >= MIN_TRUNCATED_TOKENS:
                    text = self._mem.token_counter.truncate(item.text, room).rstrip()
                if not text:
                    misses += 1
                    continue
                block = render_item(n, item, text + "…")
                tokens = count(block) + 1
                if used + tokens > budget:
                    misses += 1
                    continue
                truncated = True
            used += tokens
            blocks.append(block)
            chosen.append(_replace_item(item, tokens=tokens, truncated=truncated))
        if not chosen:
            return [], "", 0
        rendered = render_context(head, blocks)
        total = count(rendered)
        while total > budget and chosen:
            chosen.pop()
            blocks.pop()
            rendered = render_context(head, blocks) if blocks else ""
            total = count(rendered) if blocks else 0
        return chosen, rendered, total

    def _touch(self, items: Sequence[ContextItem], now: datetime) -> None:
        mem = self._mem
        episodes = [i.id for i in items if i.layer == "episodic"]
        if episodes:
            mem.episodic.touch(episodes, now)
        by_collection: dict[str, list[str]] = {}
        for item in items:
            if item.layer == "semantic":
                collection, _, doc_id = item.id.partition("/")
                by_collection.setdefault(collection, []).append(doc_id)
        for collection, ids in by_collection.items():
            mem.semantic.touch(collection, ids)


def _replace_item(item: ContextItem, **changes: Any) -> ContextItem:
    return replace(item, **changes)


def _check_layers(layers: Sequence[str] | None) -> tuple[str, ...]:
    if layers is None:
        return LAYERS
    if isinstance(layers, str) or not isinstance(layers, Sequence):
        raise ValidationError("layers", "expected a list of layer names")
    if not layers:
        raise ValidationError("layers", "must name at least one layer (or be None for all)")
    for name in layers:
        if name not in LAYERS:
            raise UnknownLayerError(name, list(LAYERS), field="layers")
    return tuple(layer for layer in LAYERS if layer in layers)


def _prior(importance: float, strength: float) -> float:
    """The factor an item's relevance gets from its importance (1 at the neutral 0.5)."""
    return 1.0 + strength * (importance - 0.5)


def _identified(
    relevance: float,
    why: str,
    text: str,
    codes: Sequence[str],
    rare: Sequence[str],
    config: RouterConfig,
) -> tuple[float, str]:
    """Relevance and reason after the identifiers the question names (``codes``): a bonus
    for holding the rare ones, a cut for naming another of the same form instead."""
    own = identifiers(text)
    held = [code for code in rare if code.casefold() in own]
    if held:
        relevance += config.identifier_bonus * len(held) / len(rare)
        why += f"; holds {', '.join(held)}, which the question names"
    elif codes and names_another(codes, text):
        relevance *= config.other_identifier_factor
        why += f"; names another identifier than {', '.join(codes)}"
    return relevance, why


def _fingerprint(text: str) -> str:
    normalised = " ".join(unicodedata.normalize("NFKC", text).casefold().split())
    return hashlib.sha1(normalised.encode()).hexdigest()


def _dedupe(items: list[ContextItem]) -> list[ContextItem]:
    """One item per memory: by layer and id, by the episode a document was made from, and by
    identical text. The highest score wins."""
    best: dict[str, ContextItem] = {}
    alias: dict[str, str] = {}
    for item in sorted(items, key=lambda i: -i.score):
        keys = [f"{item.layer}:{item.id}", "text:" + _fingerprint(item.text)]
        episode_id = item.metadata.get("episode_id") if item.layer == "semantic" else None
        if item.layer == "episodic":
            keys.append(f"episode:{item.id}")
        elif isinstance(episode_id, str):
            keys.append(f"episode:{episode_id}")
        if any(k in alias for k in keys):
            continue
        best[keys[0]] = item
        for k in keys:
            alias[k] = keys[0]
    return list(best.values())


def _document_author(agent_name: str, metadata: Mapping[str, Any]) -> str:
    """Who a document is from. Distillation writes shared knowledge as no agent (``""``);
    it is attributed to the agents of its source episodes (its ``agents`` metadata), which
    only distillation can do: every agent's write carries the agent's name."""
    agents = metadata.get("agents")
    if not agent_name and metadata.get("source") == "distillation" and isinstance(agents, str):
        names = [a.strip() for a in agents.split(",") if a.strip()]
        if names:
            return "distilled from " + ", ".join(names)
    return agent_name
