"""The sections of the configuration: one frozen dataclass per concern, with the article's
defaults. :class:`omoide.core.config.Config` gathers them, loads TOML and checks values."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

__all__ = [
    "NEVER_FORGET",
    "SLOTS",
    "CollectionConfig",
    "DistillConfig",
    "EpisodicConfig",
    "ForgettingConfig",
    "IngestConfig",
    "LLMConfig",
    "ProceduralConfig",
    "ProtectionConfig",
    "RouterConfig",
    "SemanticConfig",
    "ServerConfig",
    "WorkingConfig",
]


def _frozen(mapping: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(mapping))


#: The never-forget categories of the article. Configuration may add to them, never remove.
NEVER_FORGET: tuple[str, ...] = (
    "human_feedback",
    "security_incidents",
    "manifesto_rules",
    "financial_records",
    "compliance_events",
)

SLOTS: tuple[str, ...] = (
    "system",
    "active_task",
    "constraints",
    "recent_msgs",
    "pinned",
    "scratchpad",
)


@dataclass(frozen=True)
class WorkingConfig:
    """Layer 1. Slot budgets are the article's (sum 32K); they scale with ``max_tokens``."""

    max_tokens: int = 32_000
    slot_budgets: Mapping[str, int] = field(
        default_factory=lambda: _frozen(
            {
                "system": 2_000,
                "active_task": 1_000,
                "constraints": 1_000,
                "recent_msgs": 20_000,
                "pinned": 4_000,
                "scratchpad": 4_000,
            }
        )
    )
    #: Evicted messages with importance strictly above this are recorded as episodes.
    promote_threshold: float = 0.7
    #: Importance of a message that does not state one.
    default_importance: float = 0.5


@dataclass(frozen=True)
class EpisodicConfig:
    """Layer 2: capacity, scoring weights and base importances."""

    max_entries: int = 10_000
    #: When over capacity, evict down to ``max_entries * (1 - eviction_fraction)``.
    eviction_fraction: float = 0.1
    relevance_weight: float = 0.4
    importance_weight: float = 0.35
    freshness_weight: float = 0.25
    retention_importance_weight: float = 0.4
    retention_freshness_weight: float = 0.3
    retention_access_weight: float = 0.3
    decay_rate: float = 0.01
    base_importance: Mapping[str, float] = field(
        default_factory=lambda: _frozen(
            {"decision": 0.7, "error": 0.8, "success": 0.5, "feedback": 0.9, "conflict": 0.85}
        )
    )
    #: Importance of an event type that has no base importance.
    default_importance: float = 0.5
    #: Share of full-text rank in relevance; the rest is embedding similarity.
    text_weight: float = 0.5
    #: How many full-text and how many vector candidates enter scoring (each).
    candidate_pool: int = 100
    max_description_chars: int = 100_000


@dataclass(frozen=True)
class CollectionConfig:
    """Layer 3: what a collection is for, how long it keeps documents, and its cap."""

    purpose: str = ""
    #: ``None`` keeps documents permanently.
    retention_days: int | None = None
    max_docs: int = 50_000
    #: What happens at the cap: ``"refuse"`` (CapacityError) or ``"archive_lowest"``.
    on_full: str = "refuse"
    update_freq: str = "on_demand"


def _default_collections() -> Mapping[str, CollectionConfig]:
    return _frozen(
        {
            "knowledge": CollectionConfig(
                "general technical knowledge and documents", None, 50_000, "refuse", "weekly"
            ),
            "code": CollectionConfig(
                "code snippets, patterns and anti-patterns", None, 30_000, "refuse", "on_commit"
            ),
            "decisions": CollectionConfig(
                "distilled decisions", 365, 10_000, "archive_lowest", "on_distill"
            ),
            "feedback": CollectionConfig(
                "human feedback and lessons learned", None, 5_000, "refuse", "on_receive"
            ),
        }
    )


@dataclass(frozen=True)
class SemanticConfig:
    """Layer 3: ChromaDB collections, HNSW parameters and chunking."""

    collections: Mapping[str, CollectionConfig] = field(default_factory=_default_collections)
    #: ``http://host:port`` of a Chroma server; ``None`` uses a persistent client in the data dir.
    chroma_url: str | None = None
    hnsw_space: str = "cosine"
    hnsw_construction_ef: int = 200
    #: Breadth of the HNSW search. Collections full of near-duplicates (thousands of
    #: "Fixed E-…: we added a retry" documents) defeat a narrow search: at 100, a year of the
    #: fleet simulation found 54 % of the exact ten nearest; at 500, 98 %, in about 5 ms.
    hnsw_search_ef: int = 500
    hnsw_m: int = 16
    #: Chunk size in tokens; ``None`` uses the embedder's window less a margin for the prefix.
    chunk_tokens: int | None = None
    chunk_overlap_tokens: int = 50
    max_document_chars: int = 10_000_000
    #: Collection that :meth:`~omoide.layers.semantic.store.SemanticStore.cache` writes to by
    #: default.
    cache_collection: str = "knowledge"


@dataclass(frozen=True)
class ProceduralConfig:
    """Layer 4: outcome averaging and selection weights."""

    ema_alpha: float = 0.1
    success_weight: float = 0.6
    quality_weight: float = 0.4
    initial_success_rate: float = 0.5
    initial_quality_score: float = 5.0


@dataclass(frozen=True)
class DistillConfig:
    """The distillation pipeline (article section 7)."""

    batch_size: int = 50
    min_episodes_for_cluster: int = 3
    similarity_threshold: float = 0.7
    freshness_threshold: float = 0.5
    max_duration_minutes: float = 10.0
    schedule: str = "03:00"
    collection: str = "decisions"
    #: Episodes below this importance are never distilled: routine chatter ("standup: nothing
    #: new", 0.2) is left to forgetting instead of becoming knowledge. The event types' base
    #: importances (decision 0.7, error 0.8, other types 0.5) are all above it.
    min_importance: float = 0.3


def _default_policies() -> tuple[Mapping[str, Any], ...]:
    return (
        _frozen(
            {
                "name": "stale_episodes",
                "target_layer": "episodic",
                "condition": "freshness < 0.1 AND access_count < 2 AND importance < 0.5",
                "action": "delete",
                "grace_period_days": 90,
            }
        ),
        _frozen(
            {
                "name": "superseded_decisions",
                "target_layer": "semantic",
                "condition": "newer_version_exists AND age > 30_days",
                "action": "archive",
                "grace_period_days": 30,
            }
        ),
        _frozen(
            {
                "name": "low_value_knowledge",
                "target_layer": "semantic",
                "condition": "access_count == 0 AND age > 180_days",
                "action": "compress",
                "grace_period_days": 180,
            }
        ),
        _frozen(
            {
                "name": "resolved_errors",
                "target_layer": "episodic",
                "condition": "event_type == 'error' AND has_resolution AND age > 60_days",
                "action": "compress",
                "grace_period_days": 60,
            }
        ),
    )


@dataclass(frozen=True)
class ForgettingConfig:
    """Structured forgetting (article section 8): the policies, as data."""

    policies: tuple[Mapping[str, Any], ...] = field(default_factory=_default_policies)
    #: Days a restored item is exempt from forgetting (``restore --keep``: for good).
    restore_exemption_days: float = 30.0


@dataclass(frozen=True)
class LLMConfig:
    """An OpenAI-compatible chat-completions endpoint; unset means the offline extractor."""

    base_url: str | None = None
    model: str | None = None
    api_key: str | None = None
    timeout_seconds: float = 60.0


@dataclass(frozen=True)
class RouterConfig:
    """Recall across layers (article section 10)."""

    default_budget_tokens: int = 2_000
    recent_window_minutes: float = 5.0
    #: Days a recall stays in the provenance log (0: recalls are not logged).
    recall_log_retention_days: int = 30
    #: BM25 weights of an episode's context-key columns: the episode, its neighbours in the
    #: thread, the ones two places away (see :mod:`omoide.layers.episodic.context_keys`).
    context_key_weights: tuple[float, float, float] = (1.0, 0.5, 0.25)
    #: Weight of calibrated embedding similarity beside the normalised context-key BM25.
    dense_weight: float = 1.0
    #: Candidates per signal (full text, embeddings) per layer before ranking.
    candidate_pool: int = 200
    #: Relevance is multiplied by ``1 + importance_prior * (importance - 0.5)``: the writer's
    #: importance as a prior. 0.5 is neutral, so a store whose items all have the default
    #: importance ranks exactly as without it. Semantic documents read ``importance`` from
    #: their metadata (neutral when absent). Within [0, 2), so the factor stays positive.
    importance_prior: float = 0.6
    #: How an item's score is made: relevance, and for episodes importance and freshness.
    relevance_weight: float = 0.95
    importance_weight: float = 0.05
    freshness_weight: float = 0.0
    #: Added to episodes inside the time range a question names ("先週", "last week").
    time_range_bonus: float = 0.25
    #: Added to episodes written by an agent the question names ("what did the CTO decide?").
    author_bonus: float = 0.1
    #: Added, times the share of its subject's words the question names, to the current
    #: version of a versioned document (``subject`` ``policy.deploy_window`` for "when are
    #: deploys allowed?"): a question that names a fact's subject asks for its current value.
    subject_bonus: float = 0.35
    #: Added, times the share of the question's rare identifiers a document holds, to the
    #: documents that hold an identifier the question names ("how did we fix E-04512?"). An
    #: identifier is rare when at most ``rare_identifier_docs`` documents of a collection hold
    #: it ("Q3" in hundreds of decisions singles nothing out).
    identifier_bonus: float = 0.35
    rare_identifier_docs: int = 5
    #: Relevance is multiplied by this for an item that names none of the question's
    #: identifiers but another of the same form (``E-02365`` when asked about ``E-03424``,
    #: ``Q2`` for ``Q1``): it is about another incident or quarter, however alike it reads.
    other_identifier_factor: float = 0.5
    #: A semantic document's relevance blends the question's words (full-text BM25 relative
    #: to the best candidate, times the share of the question's content words the document
    #: holds) with its meaning as ``(words + dense_weight * meaning) /
    #: (1 + dense_weight)``. Unless it holds some but not all of those words (then it is
    #: about something else sharing the question's frame), it never falls below this share
    #: of its meaning alone: a document in the other language cannot share the words.
    meaning_floor: float = 0.95


@dataclass(frozen=True)
class IngestConfig:
    """Conversations handed to ``Memory.add``: turn importance and, with an LLM, extraction."""

    #: Importance of a chat turn without cues (see :mod:`omoide.ingest.conversation`).
    base_importance: float = 0.3
    #: Extract facts, decisions and preferences with the configured LLM (when there is one).
    extract: bool = True
    #: Collection the extracted items go to.
    collection: str = "knowledge"
    #: Tokens of existing memories shown to the LLM with the new turns.
    related_budget_tokens: int = 800
    #: Operations one extraction may propose.
    max_operations: int = 20


@dataclass(frozen=True)
class ServerConfig:
    """Limits of ``omoide serve`` on one request, so that no agent can stall the others."""

    #: Bytes of one request body (REST and MCP); a larger body is answered 413.
    max_body_bytes: int = 1_048_576
    #: Bytes of one ``POST /v1/import`` body (admin keys only): an export is larger.
    max_import_bytes: int = 268_435_456
    #: Characters of text one request may give to embed (documents, descriptions, outcomes,
    #: messages, cached content, queries, all together); past it the request is a 422 naming
    #: the field. Embedding costs about a second per 2,000 characters on a small CPU.
    max_request_text_chars: int = 200_000
    #: Folders an admin key may index through the servers (``POST .../index``), each with
    #: its subfolders; empty (the default): indexing through a server is refused, so no key
    #: can make the server read its machine's files. The local operator (the CLI on a
    #: directory, the library) may index any folder.
    index_roots: tuple[str, ...] = ()
    #: The web dashboard under ``/ui`` (signed in with the same API keys); false turns it off.
    dashboard: bool = True


@dataclass(frozen=True)
class ProtectionConfig:
    """Who may write never-forget items through the servers (and ``LocalOperations``).

    A never-forget item can only be removed by an admin purge, so an agent able to write one
    could fill the store for good. Admin keys and the local operator always may; other agents
    only if listed in ``writers``. Default: none. The library itself is not restricted.
    """

    writers: tuple[str, ...] = ()
    #: How many days into the past an agent that is not an admin may date an episode
    #: (``timestamp``) through the servers: backdating makes an episode look old at once
    #: (distillable, forgettable). Admins and the local operator may date anything.
    agent_backdate_days: float = 1.0
