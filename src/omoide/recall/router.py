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

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from omoide.core.config import RouterConfig
from omoide.core.models import LAYERS
from omoide.core.scope import teams_of
from omoide.core.validation import check_datetime, check_name, check_positive_int, check_text
from omoide.errors import NotFoundError, UnknownLayerError, ValidationError
from omoide.layers.episodic.store import episode_text
from omoide.layers.procedural import trigger_match
from omoide.layers.working import session_exists
from omoide.recall.context import (
    Context,
    ContextItem,
)
from omoide.recall.documents import codes, gather_documents, names_agent, subject_share
from omoide.recall.packing import dedupe, pack
from omoide.recall.route import Route, route
from omoide.recall.sources import MemoryParts
from omoide.text.fulltext import content_terms, coverage
from omoide.text.identifiers import identifiers, names_another

__all__ = ["LAYERS", "Context", "ContextItem", "Route", "Router", "route"]

#: Who a recall without an agent is, in its header and the recall log: the operator.
OPERATOR = "operator"
#: Longest query accepted (characters).
MAX_QUERY_CHARS = 10_000
# -- the router -------------------------------------------------------------------------


class Router:
    """Recall across layers; used through :meth:`Memory.recall`."""

    def __init__(self, memory: MemoryParts) -> None:
        self._mem = memory
        self._procedure_vectors: dict[tuple[str, int, float], Any] = {}

    def recall(
        self,
        query: str,
        *,
        agent_name: str | None,
        session_id: str | None = None,
        budget_tokens: int | None = None,
        layers: Sequence[str] | None = None,
        now: datetime | str | None = None,
    ) -> Context:
        """One question in, one token-budgeted context out. Long because it is the pipeline's
        outline (check, route, gather per layer, pack, touch, log), read top to bottom.
        """
        mem = self._mem
        config = mem.config.router
        query = check_text("query", query, max_chars=MAX_QUERY_CHARS)
        # No agent: the operator, who reads every scope (and has no session of its own).
        reader = None if agent_name is None else check_name("agent_name", agent_name)
        agent = reader or OPERATOR
        session = None if session_id is None else check_name("session_id", session_id)
        budget = check_positive_int(
            "budget_tokens",
            config.default_budget_tokens if budget_tokens is None else budget_tokens,
            maximum=1_000_000,
        )
        chosen = _check_layers(layers)
        when = mem.clock.now() if now is None else check_datetime("now", now)
        teams = teams_of(reader, mem.config.teams) if reader else frozenset()
        plan = route(query, when)

        candidates: list[ContextItem] = []
        if "working" in chosen and session is not None and reader is not None:
            candidates += self._working(reader, session, when, plan)
        if "episodic" in chosen:
            candidates += self._episodic(query, reader, teams, when, plan)
        if "semantic" in chosen:
            candidates += self._semantic(query, reader, teams, plan)
        if "procedural" in chosen:
            candidates += self._procedural(query, reader, teams, plan)

        items, rendered, used = pack(
            query, agent, dedupe(candidates), budget, self._mem.token_counter
        )
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
        self, query: str, agent: str | None, teams: frozenset[str], now: datetime, plan: Route
    ) -> list[ContextItem]:
        """Episodes as context items with their score and why. Long because each signal of the
        documented score (text, meaning, priors, author, time range) adds to the same item in turn.
        """
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
        self, query: str, agent: str | None, teams: frozenset[str], plan: Route
    ) -> list[ContextItem]:
        """Documents as context items with their score and why. Long because each documented signal
        (words, meaning, versions, identifiers, importance, author, provenance) adjusts the same hit
        in turn.
        """
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
                origin = hit.metadata.get("episode_ids")
                if hit.metadata.get("source") == "extraction" and isinstance(origin, str):
                    why += f"; extracted from episodes {origin}"
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
        self, query: str, agent: str | None, teams: frozenset[str], plan: Route
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
