"""The sources of a recall: one batched candidate query per layer and store, rated on one scale.

Each source turns what its layer finds into :class:`~omoide.recall.context.ContextItem`
carrying their signals (``words``, ``meaning``, ``relevance`` from :mod:`omoide.text.relevance`,
and the layer's own facts: importance, time, version). :mod:`omoide.recall.scoring` turns the
signals into the score; nothing here ranks across layers.

A source reads the parts of a memory named by :class:`MemoryParts` — in practice the
:class:`~omoide.memory.Memory` facade — instead of importing the facade, so recall sits below
the facade that wires it (imports run one way).
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from omoide.clock import Clock, as_utc
from omoide.core.config import Config
from omoide.core.ids import document_importance, system_source
from omoide.layers.episodic.candidate import Candidate, rate_candidates
from omoide.layers.episodic.context_keys import thread_of
from omoide.layers.episodic.store import EpisodicStore, episode_text
from omoide.layers.procedural import ProceduralMemory, trigger_match
from omoide.layers.semantic.store import SemanticStore
from omoide.layers.working import WorkingMemory, session_exists
from omoide.providers.embeddings import Embedder
from omoide.providers.tokens import TokenCounter
from omoide.recall.context import ContextItem
from omoide.recall.log import RecallLog
from omoide.recall.route import Route
from omoide.storage import Database
from omoide.text.fulltext import match_expression
from omoide.text.relevance import rate

__all__ = [
    "Asked",
    "Found",
    "MemoryParts",
    "documents",
    "episodes",
    "procedures",
    "successors",
    "working",
]


class MemoryParts(Protocol):
    """The layers, providers and settings one recall reads (read-only properties)."""

    @property
    def config(self) -> Config: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def db(self) -> Database: ...

    @property
    def episodic(self) -> EpisodicStore: ...

    @property
    def semantic(self) -> SemanticStore: ...

    @property
    def procedural(self) -> ProceduralMemory: ...

    @property
    def embedder(self) -> Embedder: ...

    @property
    def token_counter(self) -> TokenCounter: ...

    @property
    def recall_log(self) -> RecallLog: ...

    def working(self, agent_name: str, session_id: str) -> WorkingMemory:
        """The working memory of one agent's session."""
        ...


@dataclass(frozen=True)
class Found:
    """An item a source found, with its embedding when the layer keeps one (for comparing
    items with each other: diversity, restatements)."""

    item: ContextItem
    vector: npt.NDArray[np.float32] | None = None
    #: For a superseded version of a fact, the item id of its current version.
    successor: str | None = None
    #: The thread an episode belongs to, as its context key reads it
    #: (:func:`~omoide.layers.episodic.context_keys.thread_of`: one conversation, one task).
    thread: str | None = None

    def noted(self, note: str) -> Found:
        """This found item with ``note`` added to its item's why
        (:meth:`ContextItem.noted <omoide.recall.context.ContextItem.noted>`)."""
        return Found(self.item.noted(note), self.vector, self.successor, self.thread)


@dataclass(frozen=True)
class Asked:
    """One question as every source reads it: its text, embedding, route and reader."""

    query: str
    vector: npt.NDArray[np.float32]
    route: Route
    reader: str | None
    teams: frozenset[str]
    now: datetime


def episodes(mem: MemoryParts, asked: Asked) -> list[Found]:
    """The episodes the question may be about, rated as ``EpisodicStore.recall`` rates them
    (one store, one scorer); with a time range, also the best ones inside it."""
    config = mem.config.router
    common: dict[str, Any] = {
        "pool": config.candidate_pool,
        "meaning_pool": config.meaning_pool,
        "dense_weight": config.dense_weight,
        "key_weights": config.context_key_weights,
        "vector": asked.vector,
        "reader": asked.reader,
        "reader_teams": asked.teams,
    }
    found = {c.episode.id: c for c in mem.episodic.scored(asked.query, **common)}
    time_range = asked.route.time_range
    if time_range is not None:
        for c in mem.episodic.scored(asked.query, time_range=time_range.as_tuple(), **common):
            found.setdefault(c.episode.id, c)
    return [_episode(mem, asked, c) for c in found.values()]


def successors(mem: MemoryParts, asked: Asked, scored: Sequence[Found]) -> list[Found]:
    """For a question about the present, the episodes written after each of the best
    ``router.restated_from`` scored episodes and nearest it in meaning
    (``router.restated_pool`` each) that are not among ``scored``: a later statement of a
    fact the question found, however it is worded (:mod:`omoide.recall.restatements` decides whether
    it restates one). Rated for the question as every episode is."""
    config = mem.config.router
    if not asked.route.present or config.restated_from <= 0 or config.restated_pool <= 0:
        return []
    episodic = (f for f in scored if f.item.layer == "episodic")
    best = heapq.nlargest(config.restated_from, episodic, key=lambda f: f.item.score)
    of = [
        (f.vector, f.item.timestamp)
        for f in best
        if f.vector is not None and f.item.timestamp is not None
    ]
    if not of:
        return []
    have = {f.item.id for f in scored if f.item.layer == "episodic"}
    found = mem.episodic.newer_alike(
        of, asked.vector, pool=config.restated_pool, reader=asked.reader, reader_teams=asked.teams
    )
    found = [c for c in found if c.episode.id not in have]
    rated = rate_candidates(asked.query, found, mem.embedder, dense_weight=config.dense_weight)
    return [_episode(mem, asked, c) for c in rated]


def _episode(mem: MemoryParts, asked: Asked, c: Candidate) -> Found:
    """A rated episode as a recall's item."""
    episode = c.episode
    item = ContextItem(
        layer="episodic",
        id=episode.id,
        text=episode_text(episode.description, episode.outcome),
        score=0.0,
        why=asked.route.reasons["episodic"],
        author=episode.agent_name,
        timestamp=episode.timestamp,
        metadata={"event_type": episode.event_type},
        tokens=episode.tokens or 0,
        signals={
            "words": c.words,
            "meaning": c.meaning,
            "relevance": c.relevance,
            "importance": episode.ranking_importance,
            "freshness": mem.episodic.freshness_of(episode, asked.now),
        },
    )
    return Found(item, c.vector, thread=thread_of(episode.context))


def documents(mem: MemoryParts, asked: Asked, collections: list[str]) -> list[Found]:
    """The documents of each collection the question may be about: one vector query and
    one full-text query per collection, rated by words and meaning."""
    config = mem.config.router
    expression = match_expression(asked.query)
    items = []
    for collection in collections:
        if mem.semantic.is_empty(collection):
            continue
        found = mem.semantic.candidates(
            collection,
            asked.vector,
            expression,
            pool=config.candidate_pool,
            reader=asked.reader,
            reader_teams=asked.teams,
        )
        meanings = [
            float(m) for m in mem.embedder.calibrate(np.array([c.cosine for c in found]), "query")
        ]
        rated = rate(
            asked.query,
            [c.bm25 for c in found],
            [c.terms for c in found],
            meanings,
            [c.text for c in found],
            dense_weight=config.dense_weight,
        )
        for c, meaning, (words, rel) in zip(found, meanings, rated, strict=True):
            why = asked.route.reasons["semantic"] + f" (collection {collection})"
            extracted = c.metadata.get("episode_ids")
            if c.metadata.get("source") == "extraction" and isinstance(extracted, str):
                why += f"; extracted from episodes {extracted}"
            when = c.updated_at
            system = system_source(c.doc_id, c.metadata)
            if system == "distillation":  # ranked as its episodes would be
                why += "; " + _provenance(c.metadata)
                when = _moment(c.metadata.get("last_episode_at")) or when
            elif system == "episodic_overflow":  # an episode: as of when it happened
                why += "; moved out of the episodic store"
                when = _moment(c.metadata.get("timestamp")) or when
            item = ContextItem(
                layer="semantic",
                id=f"{collection}/{c.doc_id}",
                text=c.text,
                score=0.0,
                why=why,
                author=_document_author(c.agent_name, c.metadata),
                timestamp=when,
                metadata=dict(c.metadata),
                tokens=c.tokens or 0,
                signals={
                    "words": words,
                    "meaning": meaning,
                    "relevance": rel,
                    "importance": document_importance(c.doc_id, c.metadata),
                    "current": 1.0 if c.current else 0.0,
                    **_freshness(mem, when, asked.now),
                },
            )
            successor = None if c.superseded_by is None else f"{collection}/{c.superseded_by}"
            items.append(Found(item, c.vector, successor))
    return items


def procedures(mem: MemoryParts, asked: Asked, vectors: dict[Any, Any]) -> list[Found]:
    """The procedures whose trigger matches the question (3 exact, 2 glob, 1 keyword: relevance
    1, 0.9, 0.8), and for a how-to question those nearest in meaning. ``vectors`` caches the
    procedures' embeddings between recalls."""
    found = mem.procedural.procedures(reader=asked.reader, reader_teams=asked.teams)
    items = []
    for proc in found:
        specificity = trigger_match(proc.trigger, asked.query)
        rel = {3: 1.0, 2: 0.9, 1: 0.8}.get(specificity, 0.0)
        why = f"its trigger {proc.trigger!r} matches the question" if specificity else ""
        meaning = 0.0
        if asked.route.howto:
            cosine = float(_procedure_vector(mem, proc, vectors) @ asked.vector)
            meaning = float(mem.embedder.calibrate(cosine, "query"))
            if meaning > rel:
                rel, why = meaning, asked.route.reasons["procedural"]
        if rel <= 0:
            continue
        text = f"{proc.name} (v{proc.version})" + (
            f": {proc.description}" if proc.description else ""
        )
        item = ContextItem(
            layer="procedural",
            id=proc.name,
            text=f"{text}\n{proc.template}",
            score=0.0,
            why=why,
            author=proc.agent_name,
            timestamp=proc.last_updated,
            metadata={
                "version": proc.version,
                "success_rate": proc.success_rate,
                "avg_quality_score": proc.avg_quality_score,
            },
            # Proven procedures first: the article's selection score as the prior.
            signals={"meaning": meaning, "relevance": rel, "importance": proc.selection_score},
        )
        items.append(Found(item))
    return items


def working(mem: MemoryParts, asked: Asked, session: str) -> list[Found]:
    """The session's pins (always first) and its messages of the last minutes, newest first."""
    agent = asked.reader
    if agent is None or not session_exists(mem.db, agent, session):
        return []
    wm = mem.working(agent, session)
    items = [
        Found(
            ContextItem(
                layer="working",
                id=f"pin:{pin.key}",
                text=pin.content,
                score=2.0 + 1e-6 * (len(wm.pins) - i),
                why="pinned" + (f": {pin.reason}" if pin.reason else " (needed on every task)"),
                author=agent,
                timestamp=pin.pinned_at,
                signals={"pinned": 1.0},
            )
        )
        for i, pin in enumerate(wm.pins)
    ]
    cutoff = asked.now - timedelta(minutes=mem.config.router.recent_window_minutes)
    recent = [m for m in wm.messages if m.created_at is not None and m.created_at >= cutoff]
    for age, message in enumerate(reversed(recent)):
        items.append(
            Found(
                ContextItem(
                    layer="working",
                    id=f"msg:{message.id}",
                    text=message.content,
                    score=1.5 - 0.001 * age,
                    why=asked.route.reasons["working"],
                    author=agent if message.role in ("assistant", "agent") else message.role,
                    timestamp=message.created_at,
                    metadata={"role": message.role},
                    signals={"recent": 1.0},
                )
            )
        )
    return items


def _procedure_vector(mem: MemoryParts, proc: Any, cache: dict[Any, Any]) -> Any:
    key = (proc.name, proc.version, proc.last_updated.timestamp())
    vector = cache.get(key)
    if vector is None:
        text = f"{proc.name} {proc.description} {proc.trigger}\n{proc.template[:1000]}"
        vector = mem.embedder.embed_passages([text])[0]
        for old in [k for k in cache if k[0] == proc.name]:
            del cache[old]
        cache[key] = vector
    return vector


def _freshness(mem: MemoryParts, when: datetime | None, now: datetime) -> dict[str, float]:
    """A document's freshness on the episodic curve, from its time: when it was written, for
    distilled knowledge when its last episode happened, for an episode moved out of the
    episodic store when it happened ({} when it has no time)."""
    if when is None:
        return {}
    age = max(0.0, (now - when).total_seconds() / 86400)
    return {"freshness": float(mem.episodic.freshness(age, mem.episodic.config.decay_rate))}


def _provenance(metadata: Mapping[str, Any]) -> str:
    """Where a distilled document came from, in words: how many episodes, of when."""
    count = metadata.get("episode_count")
    first = str(metadata.get("first_episode_at") or "")[:10]
    last = str(metadata.get("last_episode_at") or "")[:10]
    span = first if first == last else f"{first}..{last}"
    return f"distilled from {count} episodes" + (f" ({span})" if span else "")


def _moment(value: Any) -> datetime | None:
    """An ISO timestamp of the metadata as a datetime (None when absent or unreadable)."""
    if not isinstance(value, str):
        return None
    try:
        return as_utc(datetime.fromisoformat(value))
    except ValueError:
        return None


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
