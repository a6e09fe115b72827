"""The sections of the configuration: one frozen dataclass per concern, with the article's
defaults. :class:`omoide.core.config.Config` gathers them, loads TOML and checks values."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

__all__ = [
    "HOWTO_CUES",
    "NEVER_FORGET",
    "PAST_CUES",
    "PAST_TENSE_CUES",
    "PRESENT_CUES",
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
    #: Where the episodes' vectors are searched: ``"memory"``, an exact matrix in this process
    #: (the default), or ``"chroma"``, a collection of the semantic layer's ChromaDB (the
    #: ``semantic.chroma_url`` server, else the directory's own), so this process need not hold
    #: them all. SQLite keeps every vector either way.
    vector_store: str = "memory"


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
    #: Put before every ChromaDB collection name of this store (``"team-a."`` makes
    #: ``team-a.knowledge``), so several data directories can share one Chroma server.
    chroma_prefix: str = ""
    hnsw_space: str = "cosine"
    hnsw_construction_ef: int = 200
    #: Breadth of the HNSW search. Collections full of near-duplicates (thousands of
    #: "Fixed E-…: we added a retry" documents) defeat a narrow search: at 100, a year of the
    #: fleet simulation found 54 % of the exact ten nearest; at 500, 98 %, in about 5 ms.
    hnsw_search_ef: int = 500
    hnsw_m: int = 16
    #: A collection of at most this many chunks is also held in the process (vectors, texts,
    #: metadata: about 4 kB a chunk) and searched exactly there, without a ChromaDB query (0:
    #: always ask ChromaDB). Ignored on a shared database, whose collections other replicas
    #: write.
    in_process_chunks: int = 50_000
    #: Chunk size in tokens; ``None`` uses the embedder's window less a margin for the prefix.
    chunk_tokens: int | None = None
    chunk_overlap_tokens: int = 50
    max_document_chars: int = 10_000_000
    #: Collection that :meth:`~omoide.layers.semantic.store.SemanticStore.cache` writes to by
    #: default.
    cache_collection: str = "knowledge"
    #: Share of words in the relevance ``SemanticStore.query`` ranks by; the rest is meaning
    #: (as ``episodic.text_weight`` for ``EpisodicStore.recall``).
    text_weight: float = 0.5


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


#: Phrases that mark a question about past experience (article section 10's flowchart). A
#: phrase in Latin letters matches as whole words, case-insensitively; any other as written.
#: They place the question in the past: of several statements of a fact, it may ask for an
#: earlier one ("the previous setting", "前回の設定"); "before" only ending its clause ("the
#: contact before?"): "how warm may it get before we stop it?" names no past.
PAST_CUES: tuple[str, ...] = (
    *("last time", "previous", "previously", "earlier", "when did", "what happened"),
    *("before?", "before.", "before,", "before!", "ever before", "than before"),
    *("did we", "did i", "did you", "did they", "did he", "did she", "used to", "ago"),
    *("have we ever", "have i ever", "have you ever", "have we already", "have i already"),
    *("前回", "以前", "過去", "前に", "したこと", "あった", "この前"),
)
#: Words of a question about experience that say nothing of its time: they weigh the
#: episodic layer up as the past cues do, but "Who handles incident escalation?" still asks
#: about the present. "When" is none in either language ("定例会議はいつ？" asks for a time).
EXPERIENCE_CUES: tuple[str, ...] = (
    *("remember", "experience", "experienced", "history", "incident", "same error"),
    *("same problem", "same issue", "経験", "覚えて", "履歴", "事例", "同じ"),
)
#: Phrases that ask about the state of things now: the newest statement of a fact answers.
PRESENT_CUES: tuple[str, ...] = (
    *("now", "current", "currently", "at the moment", "at present", "these days", "nowadays"),
    *("still", "latest", "most recent", "most recently", "so far", "anymore", "any more"),
    *("今", "いま", "現在", "現行", "最新", "今後", "これから", "まだ", "今でも"),
)
#: Grammatical marks of a question in the past tense (besides :data:`PAST_CUES` and, in
#: English, any word ending in "-ed"): such a question asks about an event, not the current
#: state of things. Japanese past forms are matched as written ("た?" is a question ending
#: in the past tense, after NFKC folds "？" to "?"). "last" is not one: it says "final" as
#: often ("the last pickup"), and "last week", "last Monday", "last time" are read as a
#: time range or a past cue.
PAST_TENSE_CUES: tuple[str, ...] = (
    *("did", "was", "were", "had", "went", "took", "gave", "came", "began", "yesterday"),
    *("だった", "でした", "ました", "かった", "たっけ", "たの?", "たんだ", "たか?", "た?", "た。"),
)
#: Phrases that mark a question counting or adding up things said on many occasions.
COUNTING_CUES: tuple[str, ...] = (
    *("how many", "how often", "in total", "altogether", "number of times"),
    *("何回", "いくつ", "何個", "何件", "何種類", "合計", "全部で"),
)
#: Phrases that mark a question asking how to do something.
HOWTO_CUES: tuple[str, ...] = (
    *("how do", "how can", "how should", "how to", "how would", "step", "steps", "procedure"),
    *("procedures", "process for", "guide", "instructions", "workflow", "checklist"),
    *("runbook", "recipe", "best way", "手順", "方法", "やり方", "どうやって", "どのように"),
    *("どうすれば", "仕方", "進め方", "フロー", "段取り"),
)


def _weights(**weights: float) -> Mapping[str, Any]:
    return _frozen(weights)


@dataclass(frozen=True)
class RouterConfig:
    """Recall across layers (article section 10): routing, scoring and the cut.

    See :mod:`omoide.recall.pipeline` for how the values are used.
    """

    default_budget_tokens: int = 2_000
    recent_window_minutes: float = 5.0
    #: Days a recall stays in the provenance log (0: recalls are not logged).
    recall_log_retention_days: int = 30
    #: The flowchart's cues, and each layer's weight for a question with none, a question
    #: about the past (or naming a time) and a how-to question.
    past_cues: tuple[str, ...] = PAST_CUES
    experience_cues: tuple[str, ...] = EXPERIENCE_CUES
    howto_cues: tuple[str, ...] = HOWTO_CUES
    #: A question about the present — one with a ``present_cues`` phrase, or one with no
    #: past cue, past tense (``past_tense_cues``) or time range — is answered by the newest
    #: statement of a fact: the restatement rule (``restated_similarity``) and the optional
    #: ``present_freshness_prior`` apply to it.
    present_cues: tuple[str, ...] = PRESENT_CUES
    past_tense_cues: tuple[str, ...] = PAST_TENSE_CUES
    #: A question counting things (``counting_cues``: "how many", "何回") gathers them from
    #: several conversations: of one writer's items in one thread, the k-th best (k from 0)
    #: scores ``thread_turns ** k`` of its score, so one conversation's turns, which share
    #: their neighbours' words, do not fill the places. Off (1) by default: at 0.85
    #: LongMemEval dev turn all@5 72.6 → 75.0 with every other figure as high, LoCoMo R@10
    #: 78.4 either way (1-5) and 75.2 → 75.1 (6-10); stores without threads are unaffected.
    #: As the default the ranking before the cut loses 0.2 of LoCoMo 6-10's R@10: a trade
    #: between benchmarks, so it stays off (bench/RESULTS.md, changes 27 and 28).
    counting_cues: tuple[str, ...] = COUNTING_CUES
    thread_turns: float = 1.0
    layer_weights: Mapping[str, float] = field(
        default_factory=lambda: _weights(working=1.0, episodic=0.9, semantic=1.0, procedural=0.6)
    )
    past_weights: Mapping[str, float] = field(
        default_factory=lambda: _weights(working=1.0, episodic=1.0, semantic=0.85, procedural=0.6)
    )
    howto_weights: Mapping[str, float] = field(
        default_factory=lambda: _weights(working=1.0, episodic=0.85, semantic=0.9, procedural=1.0)
    )
    #: BM25 weights of an episode's context-key columns: the episode, its neighbours in the
    #: thread, the ones two places away (see :mod:`omoide.layers.episodic.context_keys`).
    context_key_weights: tuple[float, float, float] = (1.0, 0.5, 0.25)
    #: Weight of meaning (calibrated embedding similarity) beside words in relevance
    #: (:mod:`omoide.text.relevance`).
    dense_weight: float = 1.0
    #: Candidates per signal (full text, vectors) per source before scoring.
    candidate_pool: int = 50
    #: Episodes brought by meaning (the question's nearest vectors) before scoring: more
    #: than by words, as an answer written in the other language than the question can
    #: only come this way, and the model ranks it below same-language texts on the topic
    #: (at 100 rather than 50: `logistics` feedback 80.0 → 91.4 %, current facts 81.2 →
    #: 82.4 %; LoCoMo 1-5 and LongMemEval dev unchanged).
    meaning_pool: int = 100
    #: Priors on relevance, each ``1 + strength × (value − 0.5)``: the writer's importance;
    #: recency (1 for the newest candidate of a source, 0 for the oldest); and freshness (an
    #: item's time on the episodic freshness curve: an episode's, a document's writing, a
    #: distilled document's last episode). Freshness for every question is off by default:
    #: at 0.5 it puts the newest statement of a changed fact first far more often (a fleet's
    #: current facts 51 % → 68 %, LongMemEval knowledge updates 47 % → 76 %) but costs
    #: questions about earlier events (LoCoMo R@10 78.0 → 72.0). Given to questions about the
    #: present only (``present_freshness_prior``, also off) it still costs LoCoMo 78.0 → 75.3
    #: (its present-tense questions are about stable facts): the restatement rule below is
    #: what the default uses instead; see bench/RESULTS.md. Importance at 0.4 rather than
    #: 0.6: `logistics` current facts 143 → 147 of 170, nothing lost (at 0.2 a feedback
    #: question is lost).
    importance_prior: float = 0.4
    #: For a question about the present, the strength of a writer's importance above
    #: neutral (below it, ``importance_prior``; a procedure's proven score is no writer's
    #: importance). Importance says how much a record matters (a settled bill at 0.9), not
    #: that it states the current value asked for: at 0 (the default) `logistics` current
    #: facts 156 → 162 of 170 (another seed: 138 → 147), the other fleet figures the same;
    #: at 0.2, 159. See bench/RESULTS.md, change 34.
    present_importance_prior: float = 0.0
    #: For a question that says it is about the present (``present_cues``: "now",
    #: "currently", "いま"), what passes the cut is ordered by its score times
    #: ``1 + present_freshness_order × (freshness − 0.5)`` (current versions and restatements
    #: kept in place): the cut decides what answers, freshness which answer comes first. It
    #: returns the same items as without it, so unlike the priors it cannot bring a recent
    #: unrelated item in. Off by default: at 0.5 LongMemEval dev turn all@5 71.4 → 72.6 and
    #: knowledge updates newest first 47.1 → 52.9 %, LoCoMo R@10 unchanged, but `logistics`
    #: without maintenance loses a current fact to fresh chatter that passed the cut (77.6 →
    #: 77.1 %; bench/RESULTS.md). A setting for a fleet whose questions ask about now.
    present_freshness_order: float = 0.0
    recency_prior: float = 0.0
    freshness_prior: float = 0.0
    present_freshness_prior: float = 0.0
    #: Relevance of an item inside the time range a question names ("先週", "last week") is
    #: multiplied by ``1 + time_range_boost``.
    time_range_boost: float = 0.5
    #: Relevance of a superseded version of a fact is multiplied by this.
    superseded_factor: float = 0.5
    #: Relevance of an item that names none of the identifiers a question asks about but
    #: another of the same form (``HX-166`` when ``HX-162`` was asked for, ``rack C7`` for
    #: ``rack C2``: another incident, another place) is multiplied by this (1: off). Words
    #: and meaning rate such an item as highly as the one asked for; the identifier says
    #: it is about something else (:func:`omoide.text.identifiers.names_another`). 0.5
    #: until items naming the asked code came as candidates of their own: then at 0.25 the
    #: fix naming it goes above the reports of other orders (bench/RESULTS.md, change 15).
    other_identifier_factor: float = 0.25
    #: The cut: at most ``top_k`` items, each scoring at least ``min_score`` and at least
    #: ``relative_floor`` of the way from the median score of the best ``2 ×
    #: candidate_pool`` candidates to the best item's (half the best score in a store with
    #: fewer candidates than ``candidate_pool``).
    top_k: int = 10
    min_score: float = 0.15
    relative_floor: float = 0.25
    #: Maximal marginal relevance: an item's score loses ``diversity`` times its similarity to
    #: the items ranked before it (0: off).
    diversity: float = 0.0
    #: For a question about the present: two items whose texts are this similar in meaning
    #: (calibrated, passage to passage) and of which the newer keeps the values the question
    #: names (its numbers and codes) say the same thing — the newer one is the current
    #: statement and ranks first (0: off). Fleet current facts 51 → 59 %, LoCoMo unchanged
    #: (bench/RESULTS.md).
    restated_similarity: float = 0.8
    #: The same threshold for two texts in different languages (0: as ``restated_similarity``).
    #: With the model's language axis removed (:mod:`omoide.providers.language_axis`), nine in
    #: ten of that module's translation pairs rate at least 0.53 alike (calibrated, median
    #: 0.70) and 99 % of its unrelated pairs across the languages under 0.33: the bar sits
    #: between them.
    restated_similarity_across_languages: float = 0.5
    #: Two texts in one language whose words agree this much, numbers and codes aside (shared
    #: words over all their words), are one statement with other values — "… held in room
    #: B-204." and "… held in room C-310." — however the model rates them (0.73 alike, under
    #: ``restated_similarity``); 0: off. Read only for pairs at least 0.5 alike in meaning.
    restated_wording: float = 0.8
    #: Two texts in one language that name values of one kind (``omoide.recall.statements.
    #: kind``: two times, ``36h`` and ``40h``, ``room B-204`` and ``room C-310``) and not the
    #: same ones are one fact at another value when at least this alike in meaning —
    #: "時間外労働は月40hまでとします。" and "今後、時間外は月36hまでに抑えてください。" (0.62):
    #: the values differing is itself evidence of an update that two wordings of one fact do
    #: not need to earn by meaning alone; 0: off. A value of another kind (a call once a delay
    #: passes 30 minutes, after the roll call's 06:45) states another fact: requiring one kind
    #: took `logistics` current facts from 134 to 135 of 170 and changed no other figure. The
    #: threshold's sweep and history are in bench/RESULTS.md.
    restated_values: float = 0.5
    #: The same for two texts in different languages (0: off). Across the languages the
    #: model rates a restatement little above unrelated text (0.30-0.35 for
    #: "今後、時間外は月45hまでに抑えてください。" and "Overtime cap changes to 36h per
    #: month"); values of one kind, which both languages write alike, are the evidence,
    #: with a word one of them holds translated (``omoide.text.lexicon``; without it a code
    #: or a time in common shape made an incident report the new value of a deadline).
    #: `logistics` current facts 77.6 → 78.8 %, every other figure unchanged (bench/RESULTS.md).
    restated_values_across_languages: float = 0.3
    #: A newer item restates an older one only if its relevance to the question is at least
    #: this share of the older one's, or an older text it restates at the same values had
    #: that much (a rewording answers as its first wording did): a text that answers the
    #: question far less well is about something else, however alike the two read (0: any).
    restated_relevance: float = 0.75
    #: For a question about the present, the episodes written after each of the best
    #: ``restated_from`` episodes and nearest it in meaning (``restated_pool`` each) join the
    #: candidates: the later statement of a fact may share no word with the question and
    #: rank too low in meaning to be found by it ("The courier moved our pickup cutoff to
    #: 16:30." for "What's the latest a box can go out and still make the same-day
    #: truck?"), yet read like the older statement the question found. They rank by their own
    #: relevance; the restatement rule above decides whether one restates (0: off).
    #: `logistics` current facts 153 → 155 of 170, every other figure unchanged.
    restated_from: int = 3
    restated_pool: int = 5


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


@dataclass(frozen=True)
class StorageConfig:
    """Where the relational state lives.

    Unset: ``omoide.db`` (SQLite) in the data directory, the embedded default. A
    ``postgresql://user:password@host:port/database`` URL (or ``$OMOIDE_DATABASE_URL``)
    puts it on PostgreSQL (the ``postgres`` extra), shared by any number of processes; the
    vectors must then be on a Chroma server too (``semantic.chroma_url``).
    """

    url: str | None = None
    #: Mebibytes of SQLite's page cache for the embedded database (its ``cache_size``; pages
    #: are cached as they are read, up to this). A recall reads the full-text indexes of
    #: both layers, several megabytes at 10,000 episodes and documents: in SQLite's default
    #: 2 MiB they evict each other and are read again on every recall. Ignored on PostgreSQL.
    cache_mib: int = 64
