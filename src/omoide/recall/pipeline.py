"""Recall: one question in, one token-budgeted context out (article section 10).

:meth:`Memory.recall <omoide.memory.Memory.recall>` runs five steps, each in its module:

1. **route** (:mod:`~omoide.recall.route`) — the article's flowchart reads the question's cues
   (a time expression, past experience, how-to) and weighs the layers;
2. **sources** (:mod:`~omoide.recall.sources`) — each layer is asked once, batched: episodes
   by the full text of their context keys and by the in-memory vector matrix, documents by one
   vector query and full text per collection, procedures by trigger and meaning, the session's
   pins and recent messages; all within the reader's scope. For a question about the
   present, the episodes written after the best ones and nearest them in meaning join them
   (their later statements, however worded);
3. **score** (:mod:`~omoide.recall.scoring`) — relevance (words and meaning,
   :mod:`omoide.text.relevance`) times the layer's weight and the item's priors (importance,
   recency, the time range named, superseded versions);
4. **cut** (:mod:`~omoide.recall.cut`) — ranked, optionally diversified, above a floor
   that measures how far an item stands out from the candidates' median towards the best
   one, and an absolute one, at most ``top_k``;
5. **pack** (:mod:`~omoide.recall.packing`) — deduplicated and packed into the token budget,
   never over it.

Every recall is logged for provenance (:mod:`omoide.recall.log`).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from omoide.core.blas import single_threaded
from omoide.core.models import LAYERS
from omoide.core.scope import teams_of
from omoide.core.validation import (
    check_datetime,
    check_name,
    check_positive_int,
    check_text,
    check_unit_interval,
)
from omoide.errors import UnknownCollectionError, UnknownLayerError, ValidationError
from omoide.providers.tokens import BlockBound
from omoide.recall import sources
from omoide.recall.context import Context, ContextItem
from omoide.recall.cut import Cut, cut
from omoide.recall.packing import pack
from omoide.recall.restatements import Bars
from omoide.recall.route import route
from omoide.recall.scoring import score, score_more
from omoide.recall.sources import Asked, Found, MemoryParts

__all__ = ["MAX_QUERY_CHARS", "OPERATOR", "Recall"]

#: Who a recall without an agent is, in its header and the recall log: the operator.
OPERATOR = "operator"
#: Longest query accepted (characters).
MAX_QUERY_CHARS = 10_000


class Recall:
    """The recall pipeline of one memory; used through :meth:`Memory.recall`."""

    def __init__(self, memory: MemoryParts) -> None:
        self._mem = memory
        self._procedure_vectors: dict[Any, Any] = {}
        self._bound = BlockBound(memory.token_counter)

    def recall(
        self,
        query: str,
        *,
        agent_name: str | None,
        session_id: str | None = None,
        budget_tokens: int | None = None,
        layers: Sequence[str] | None = None,
        collections: Sequence[str] | None = None,
        top_k: int | None = None,
        min_score: float | None = None,
        diversity: float | None = None,
        now: datetime | str | None = None,
    ) -> Context:
        """One question in, one token-budgeted context out (see the module's docstring)."""
        mem = self._mem
        config = mem.config.router
        query = check_text("query", query, max_chars=MAX_QUERY_CHARS)
        # No agent: the operator, who reads every scope (and has no session of its own).
        reader = None if agent_name is None else check_name("agent_name", agent_name)
        session = None if session_id is None else check_name("session_id", session_id)
        budget = check_positive_int(
            "budget_tokens",
            config.default_budget_tokens if budget_tokens is None else budget_tokens,
            maximum=1_000_000,
        )
        chosen = _check_layers(layers)
        wanted = self._check_collections(collections)
        when = mem.clock.now() if now is None else check_datetime("now", now)
        teams = teams_of(reader, mem.config.teams) if reader else frozenset()
        plan = route(query, when, config)
        how = Cut(
            top_k=check_positive_int(
                "top_k", config.top_k if top_k is None else top_k, maximum=1_000
            ),
            min_score=check_unit_interval(
                "min_score", config.min_score if min_score is None else min_score
            ),
            # A floor given for this recall replaces both: absolute only.
            relative_floor=config.relative_floor if min_score is None else 0.0,
            diversity=check_unit_interval(
                "diversity", config.diversity if diversity is None else diversity
            ),
            # Of two statements of one fact, the newer answers "what is X now" only.
            restated=Bars(
                config.restated_similarity,
                config.restated_similarity_across_languages,
                config.restated_wording,
                config.restated_values,
                config.restated_values_across_languages,
                config.restated_relevance,
            )
            if plan.present and config.restated_similarity > 0
            else None,
            # Of the answers to "what is X now", the fresher first.
            freshness_order=config.present_freshness_order if plan.says_present else 0.0,
            pool=config.candidate_pool,
        )
        # BLAS on one thread: the recall's products are small, and BLAS's idle threads would
        # hold the cores the next question's embedding needs (omoide.core.blas).
        with single_threaded():
            asked = Asked(query, mem.embedder.embed_query(query), plan, reader, teams, when)

            found: list[Found] = []
            if "working" in chosen and session is not None:
                found += sources.working(mem, asked, session)
            if "episodic" in chosen:
                found += sources.episodes(mem, asked)
            if "semantic" in chosen:
                found += sources.documents(mem, asked, wanted)
            if "procedural" in chosen:
                found += sources.procedures(mem, asked, self._procedure_vectors)
            scored = score(found, plan, config)
            if "episodic" in chosen and how.restated is not None:
                # Later statements of what the best episodes say join them; the cut decides
                # which restates one.
                later = sources.successors(mem, asked, scored)
                if later:
                    scored = score_more(found, scored, later, plan, config)
            ranked = [f.item for f in cut(scored, how, mem.embedder, query)]
            items, rendered, used = pack(
                query, reader or OPERATOR, ranked, budget, mem.token_counter, self._bound
            )
            # The accesses and the log entry are written in one transaction: one commit per
            # recall rather than one for each, and not waited for on disk (bookkeeping: a
            # power failure may lose the last recalls' entries, never a memory).
            with mem.db.transaction(durable=False):
                self._touch(items, when)
                recall_id = self._log(
                    query, reader or OPERATOR, session, chosen, plan, budget, used, items
                )
            return Context(
                query=query,
                agent_name=reader or OPERATOR,
                items=tuple(items),
                tokens=used,
                budget_tokens=budget,
                layers=chosen,
                time_range=plan.time_range,
                recall_id=recall_id,
                session_id=session,
                _rendered=rendered,
            )

    def _check_collections(self, collections: Sequence[str] | None) -> list[str]:
        known = self._mem.semantic.collections
        if collections is None:
            return known
        if isinstance(collections, str) or not isinstance(collections, Sequence):
            raise ValidationError("collections", "expected a list of collection names")
        for name in collections:
            if name not in known:
                raise UnknownCollectionError(name, known)
        return [c for c in known if c in collections]

    def _log(
        self,
        query: str,
        agent: str,
        session: str | None,
        chosen: tuple[str, ...],
        plan: Any,
        budget: int,
        used: int,
        items: Sequence[ContextItem],
    ) -> str | None:
        log = self._mem.recall_log
        if not log.enabled:
            return None
        recall_id = f"rc-{uuid.uuid4().hex}"
        log.write(
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
        return recall_id

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
