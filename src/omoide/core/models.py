"""The records omoide stores and returns.

They are frozen snapshots: changing memory goes through the layer APIs, never through
attribute assignment on a returned object.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

__all__ = [
    "ESTIMATED",
    "LAYERS",
    "RANKINGS",
    "CollectionStats",
    "Episode",
    "Message",
    "Pin",
    "Procedure",
    "ProcedureVersion",
    "QueryHit",
    "SemanticDocument",
]

#: The four memory layers, in the order the article's recall flowchart asks them.
LAYERS: tuple[str, ...] = ("working", "episodic", "semantic", "procedural")

#: ``context["importance"]`` of an episode whose importance omoide estimated (a chat turn's
#: cues) rather than a writer chose: it steers forgetting, not ranking.
ESTIMATED = "estimated"


@dataclass(frozen=True)
class Episode:
    """One experience (article section 4): what happened, when, to whom, how much it mattered."""

    id: str
    timestamp: datetime
    agent_name: str
    event_type: str
    description: str
    context: Mapping[str, Any] = field(default_factory=dict)
    outcome: str | None = None
    importance: float = 0.5
    tags: tuple[str, ...] = ()
    references: tuple[str, ...] = ()
    access_count: int = 0
    last_accessed: datetime | None = None
    decay_rate: float = 0.01
    #: Who may read it: ``global``, ``private`` or a share list (see :mod:`omoide.core.scope`).
    scope: str = "global"
    #: True when a never-forget rule covers it: no path may delete, archive or compress it.
    protected: bool = False
    #: ``active``, ``archived`` or ``compressed``.
    state: str = "active"
    distilled_at: datetime | None = None
    #: Score given by the recall that returned it (None when fetched directly).
    score: float | None = None
    #: Tokens of its text as a context renders it, counted when the text was written by the
    #: memory's token counter (None: not counted, e.g. an episode not read from the store).
    tokens: int | None = None

    @property
    def ranking_importance(self) -> float:
        """The importance that ranks it in recall: the writer's, or neutral (0.5) when omoide
        estimated it from cues (``context["importance"] == "estimated"``, what ``Memory.add``
        writes) — a guess at what is worth keeping says nothing about which turn answers a
        question, so it steers forgetting only."""
        if self.context.get("importance") == ESTIMATED:
            return 0.5
        return self.importance


@dataclass(frozen=True)
class Message:
    """A working-memory message."""

    content: str
    role: str = "user"
    importance: float = 0.5
    pinned: bool = False
    created_at: datetime | None = None
    tokens: int = 0
    metadata: Mapping[str, Any] = field(default_factory=dict)
    id: int | None = None


@dataclass(frozen=True)
class Pin:
    """An item pinned into working memory: always in the context until unpinned."""

    key: str
    content: str
    reason: str
    pinned_at: datetime
    tokens: int


@dataclass(frozen=True)
class Procedure:
    """A learned way of doing a task (article section 6), at its current version."""

    name: str
    trigger: str
    template: str
    success_rate: float
    avg_quality_score: float
    execution_count: int
    last_updated: datetime
    version: int
    agent_name: str = ""
    scope: str = "global"
    description: str = ""

    @property
    def selection_score(self) -> float:
        """The article's ranking: success_rate × 0.6 + avg_quality/10 × 0.4 (default weights)."""
        return self.success_rate * 0.6 + self.avg_quality_score / 10 * 0.4


@dataclass(frozen=True)
class ProcedureVersion:
    """One version of a procedure with the outcomes observed while it was current."""

    name: str
    version: int
    trigger: str
    template: str
    success_rate: float
    avg_quality_score: float
    execution_count: int
    created_at: datetime
    current: bool


@dataclass(frozen=True)
class SemanticDocument:
    """A document in a semantic collection (the whole text, not a chunk)."""

    id: str
    collection: str
    document: str
    metadata: Mapping[str, Any]
    agent_name: str
    scope: str
    created_at: datetime
    updated_at: datetime
    chunk_count: int
    access_count: int = 0
    last_accessed: datetime | None = None
    state: str = "active"
    protected: bool = False
    subject: str | None = None
    version: int | None = None
    superseded_by: str | None = None
    superseded_at: datetime | None = None
    #: When the document leaves query results (cached outside information); None: never.
    expires_at: datetime | None = None


#: The orders ``SemanticStore.query`` ranks in: words and meaning together, or meaning alone.
RANKINGS = ("relevance", "meaning")


@dataclass(frozen=True)
class QueryHit:
    """One result of a semantic query: the matching chunk and where it came from."""

    id: str
    document: str
    metadata: Mapping[str, Any]
    distance: float
    collection: str
    doc_id: str
    chunk_index: int = 0
    #: False when a newer version of the document (same subject) supersedes it.
    current: bool = True
    #: Tokens of the chunk's text as a context renders it, counted when the chunk was written
    #: by the memory's token counter (None: not counted).
    tokens: int | None = None
    #: Words and meaning together, in [0, 1] (:mod:`omoide.text.relevance`), when the query
    #: ranked by relevance; None when it ranked by meaning alone.
    relevance: float | None = None

    @property
    def similarity(self) -> float:
        """Cosine similarity (1 - distance) for cosine collections."""
        return 1.0 - self.distance

    def __getitem__(self, key: str) -> Any:
        """Dict-style access (``hit["document"]``), as the article's query returns dicts."""
        try:
            return getattr(self, key)
        except AttributeError:
            raise KeyError(key) from None


@dataclass(frozen=True)
class CollectionStats:
    """A semantic collection's declared policy next to its current usage."""

    name: str
    purpose: str
    #: Days a document is kept; None: permanent.
    retention_days: int | None
    #: Cap on documents (active + pending) and what happens when it is reached.
    max_docs: int
    on_full: str
    update_freq: str
    #: Documents by lifecycle state.
    documents: int
    pending: int
    archived: int
    compressed: int
    #: Active documents past their expiry, waiting for ``purge_expired``.
    expired: int
    #: Vectors (chunks) ChromaDB holds.
    chunks: int

    @property
    def usage(self) -> float:
        """Share of the cap in use, 0.0-1.0 (documents that count against it / max_docs)."""
        return (self.documents + self.pending) / self.max_docs

    @property
    def full(self) -> bool:
        """True when no new document fits under the cap."""
        return self.documents + self.pending >= self.max_docs
