"""Configuration: every threshold and weight, with the article's defaults.

A :class:`Config` is an immutable tree of dataclasses, one section per concern. Build one in
code (``Config(episodic=EpisodicConfig(max_entries=5000))``), derive one with
:func:`dataclasses.replace`, or load TOML with :meth:`Config.from_toml`; a data directory
that holds an ``omoide.toml`` is configured by it when ``Memory`` is given no config.

Example ``omoide.toml``::

    default_scope = "global"
    never_forget = ["legal_holds"]          # extends the five built-in categories

    [protection]
    writers = ["ceo"]                       # agents (besides admins) that may write them

    [episodic]
    max_entries = 20000

    [semantic.collections.runbooks]
    purpose = "operational runbooks"
    retention_days = 365
    max_docs = 2000

    [[forgetting.policies]]                 # added to the article's four (same name: replaces)
    name = "old_chatter"
    target_layer = "episodic"
    condition = "event_type == 'message' AND age > 14_days"
    action = "delete"
    grace_period_days = 14
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omoide.core.models import LAYERS
from omoide.core.policies import Schedule, policies_from_config
from omoide.core.settings import (
    NEVER_FORGET,
    SLOTS,
    CollectionConfig,
    DistillConfig,
    EpisodicConfig,
    ForgettingConfig,
    IngestConfig,
    LLMConfig,
    ProceduralConfig,
    ProtectionConfig,
    RouterConfig,
    SemanticConfig,
    ServerConfig,
    StorageConfig,
    WorkingConfig,
    _frozen,
)
from omoide.errors import ConditionSyntaxError, ConfigError, ValidationError

__all__ = [
    "NEVER_FORGET",
    "SLOTS",
    "CollectionConfig",
    "Config",
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


@dataclass(frozen=True)
class Config:
    """All of omoide's settings. Every field has a working default."""

    working: WorkingConfig = field(default_factory=WorkingConfig)
    episodic: EpisodicConfig = field(default_factory=EpisodicConfig)
    semantic: SemanticConfig = field(default_factory=SemanticConfig)
    procedural: ProceduralConfig = field(default_factory=ProceduralConfig)
    distill: DistillConfig = field(default_factory=DistillConfig)
    forgetting: ForgettingConfig = field(default_factory=ForgettingConfig)
    llm: LLMConfig = field(default_factory=LLMConfig)
    router: RouterConfig = field(default_factory=RouterConfig)
    ingest: IngestConfig = field(default_factory=IngestConfig)
    server: ServerConfig = field(default_factory=ServerConfig)
    protection: ProtectionConfig = field(default_factory=ProtectionConfig)
    storage: StorageConfig = field(default_factory=StorageConfig)
    #: Scope given to items written without one: ``global``, ``private`` or a share list.
    default_scope: str = "global"
    #: Teams for scopes: ``{"leads": ("ceo", "cto")}`` lets ``team:leads`` reach both.
    teams: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: _frozen({}))
    #: Never-forget categories; always includes :data:`NEVER_FORGET`.
    never_forget: tuple[str, ...] = NEVER_FORGET
    #: Seconds to wait for a data directory held by another process (0: fail at once).
    lock_timeout: float = 0.0

    def __post_init__(self) -> None:
        merged = tuple(dict.fromkeys((*NEVER_FORGET, *self.never_forget)))
        object.__setattr__(self, "never_forget", merged)
        _check(self)

    @classmethod
    def from_toml(cls, path: str | Path) -> Config:
        """Load a TOML file; unknown keys and bad values raise :class:`ConfigError`."""
        try:
            with open(path, "rb") as fh:
                data = tomllib.load(fh)
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"cannot read configuration {path}: {exc}") from exc
        return cls.from_dict(data)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Config:
        """Build a config from plain data (as read from TOML or JSON)."""
        config: Config = _build(cls, data, "config")
        return config


_SECTION_TYPES: dict[str, type] = {
    "storage": StorageConfig,
    "working": WorkingConfig,
    "episodic": EpisodicConfig,
    "semantic": SemanticConfig,
    "procedural": ProceduralConfig,
    "distill": DistillConfig,
    "forgetting": ForgettingConfig,
    "llm": LLMConfig,
    "router": RouterConfig,
    "ingest": IngestConfig,
    "server": ServerConfig,
    "protection": ProtectionConfig,
}


def _build(cls: type, data: Mapping[str, Any], where: str) -> Any:
    """A config section from plain data, checking each field's type. Long because every kind
    of field (nested sections, mappings, tuples, numbers) is converted here, in one place.
    """
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where}: expected a table, got {type(data).__name__}")
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = set(data) - names
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    defaults = cls()
    values: dict[str, Any] = {}
    for key, value in data.items():
        path = f"{where}.{key}"
        if cls is Config and key in _SECTION_TYPES:
            values[key] = _build(_SECTION_TYPES[key], value, path)
        elif key == "collections":
            merged = dict(getattr(defaults, key))
            if not isinstance(value, Mapping):
                raise ConfigError(f"{path}: expected a table of collections")
            for name, spec in value.items():
                base = merged.get(name, CollectionConfig())
                merged[name] = dataclasses.replace(
                    base, **_fields(CollectionConfig, spec, f"{path}.{name}")
                )
            values[key] = _frozen(merged)
        elif key in (
            "slot_budgets",
            "base_importance",
            "layer_weights",
            "past_weights",
            "howto_weights",
        ):
            if not isinstance(value, Mapping):
                raise ConfigError(f"{path}: expected a table")
            values[key] = _frozen({**getattr(defaults, key), **value})
        elif key == "policies":
            if not isinstance(value, list) or not all(isinstance(p, Mapping) for p in value):
                raise ConfigError(f"{path}: expected an array of tables")
            # A policy named like a default replaces it; others are added after the defaults.
            merged_policies = {p["name"]: p for p in getattr(defaults, key)}
            given = [spec.get("name") for spec in value]
            twice = sorted({str(n) for n in given if given.count(n) > 1})
            if twice:
                raise ConfigError(f"{path}: policy {twice[0]!r} is defined twice")
            for spec in value:
                merged_policies[spec.get("name")] = _frozen(spec)
            values[key] = tuple(merged_policies.values())
        elif key == "teams":
            if not isinstance(value, Mapping) or not all(
                isinstance(v, list | tuple) and all(isinstance(a, str) for a in v)
                for v in value.values()
            ):
                raise ConfigError(f"{path}: expected a table of agent-name arrays")
            values[key] = _frozen({k: tuple(v) for k, v in value.items()})
        elif key == "writers":
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ConfigError(f"{path}: expected an array of agent names")
            values[key] = tuple(value)
        elif key in (
            "never_forget",
            "index_roots",
            "past_cues",
            "experience_cues",
            "howto_cues",
            "present_cues",
            "past_tense_cues",
            "counting_cues",
        ):
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ConfigError(f"{path}: expected an array of strings")
            values[key] = tuple(value)
        else:
            values[key] = value
    try:
        return dataclasses.replace(defaults, **values)
    except ConditionSyntaxError:
        raise  # a forgetting condition: keep its type and position
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where}: {exc}") from exc


def _fields(cls: type, spec: Any, where: str) -> dict[str, Any]:
    if not isinstance(spec, Mapping):
        raise ConfigError(f"{where}: expected a table")
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = set(spec) - names
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    return dict(spec)


def _unit(value: Any, where: str) -> None:
    if not isinstance(value, int | float) or isinstance(value, bool) or math.isnan(value):
        raise ConfigError(f"{where}: expected a number, got {value!r}")
    if not 0.0 <= value <= 1.0:
        raise ConfigError(f"{where}: must be within [0, 1], got {value!r}")


def _positive(value: Any, where: str) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigError(f"{where}: expected a positive integer, got {value!r}")


def _check(config: Config) -> None:
    """Reject settings that cannot work, naming the setting.

    Long because it is a flat list of independent checks, one per setting, read top to bottom.
    """
    w, e, s, p, d = (
        config.working,
        config.episodic,
        config.semantic,
        config.procedural,
        config.distill,
    )
    _positive(w.max_tokens, "working.max_tokens")
    missing = set(SLOTS) - set(w.slot_budgets)
    extra = set(w.slot_budgets) - set(SLOTS)
    if missing or extra:
        raise ConfigError(f"working.slot_budgets: must name exactly the slots {', '.join(SLOTS)}")
    for slot, budget in w.slot_budgets.items():
        _positive(budget, f"working.slot_budgets.{slot}")
    _unit(w.promote_threshold, "working.promote_threshold")
    ingest = config.ingest
    _unit(ingest.base_importance, "ingest.base_importance")
    _positive(ingest.related_budget_tokens, "ingest.related_budget_tokens")
    _positive(ingest.max_operations, "ingest.max_operations")
    _unit(w.default_importance, "working.default_importance")
    _positive(e.max_entries, "episodic.max_entries")
    _positive(e.candidate_pool, "episodic.candidate_pool")
    _positive(e.max_description_chars, "episodic.max_description_chars")
    for name in (
        "eviction_fraction",
        "relevance_weight",
        "importance_weight",
        "freshness_weight",
        "retention_importance_weight",
        "retention_freshness_weight",
        "retention_access_weight",
        "decay_rate",
        "default_importance",
        "text_weight",
    ):
        _unit(getattr(e, name), f"episodic.{name}")
    for kind, value in e.base_importance.items():
        _unit(value, f"episodic.base_importance.{kind}")
    if e.vector_store not in ("memory", "chroma"):
        raise ConfigError(f"episodic.vector_store: 'memory' or 'chroma', got {e.vector_store!r}")
    url = config.storage.url
    _positive(config.storage.cache_mib, "storage.cache_mib")
    if url is not None and not url.startswith(("postgresql://", "postgres://")):
        raise ConfigError(f"storage.url: expected postgresql://..., got {url.split('@')[-1]!r}")
    if not s.collections:
        raise ConfigError("semantic.collections: at least one collection is needed")
    for name, coll in s.collections.items():
        if not isinstance(coll, CollectionConfig):
            raise ConfigError(f"semantic.collections.{name}: expected a CollectionConfig")
        if not (3 <= len(name) <= 63) or not name.replace("_", "").replace("-", "").isalnum():
            raise ConfigError(
                f"semantic.collections.{name}: names are 3-63 letters, digits, '-' or '_'"
            )
        _positive(coll.max_docs, f"semantic.collections.{name}.max_docs")
        if coll.retention_days is not None:
            _positive(coll.retention_days, f"semantic.collections.{name}.retention_days")
        if coll.on_full not in ("refuse", "archive_lowest"):
            raise ConfigError(
                f"semantic.collections.{name}.on_full: 'refuse' or 'archive_lowest', "
                f"got {coll.on_full!r}"
            )
    if s.cache_collection not in s.collections:
        raise ConfigError(
            f"semantic.cache_collection: {s.cache_collection!r} is not a configured collection"
        )
    _check_prefix(s.chroma_prefix)
    if s.hnsw_space not in ("cosine", "l2", "ip"):
        raise ConfigError(f"semantic.hnsw_space: cosine, l2 or ip, got {s.hnsw_space!r}")
    for name in ("hnsw_construction_ef", "hnsw_search_ef", "hnsw_m", "max_document_chars"):
        _positive(getattr(s, name), f"semantic.{name}")
    if s.chunk_tokens is not None:
        _positive(s.chunk_tokens, "semantic.chunk_tokens")
    if s.chunk_overlap_tokens < 0:
        raise ConfigError("semantic.chunk_overlap_tokens: must be >= 0")
    if s.in_process_chunks != 0:  # 0 turns it off
        _positive(s.in_process_chunks, "semantic.in_process_chunks")
    _unit(s.text_weight, "semantic.text_weight")
    for name in ("ema_alpha", "success_weight", "quality_weight", "initial_success_rate"):
        _unit(getattr(p, name), f"procedural.{name}")
    if not 0 <= p.initial_quality_score <= 10:
        raise ConfigError("procedural.initial_quality_score: must be within [0, 10]")
    _positive(d.batch_size, "distill.batch_size")
    _positive(d.min_episodes_for_cluster, "distill.min_episodes_for_cluster")
    _unit(d.similarity_threshold, "distill.similarity_threshold")
    _unit(d.freshness_threshold, "distill.freshness_threshold")
    _unit(d.min_importance, "distill.min_importance")
    if d.max_duration_minutes <= 0:
        raise ConfigError("distill.max_duration_minutes: must be > 0")
    if d.collection not in s.collections:
        raise ConfigError(f"distill.collection: {d.collection!r} is not a configured collection")
    _check_pipelines(config)
    _check_router(config.router)
    backdate = config.protection.agent_backdate_days
    if not isinstance(backdate, int | float) or isinstance(backdate, bool) or not backdate >= 0:
        raise ConfigError("protection.agent_backdate_days: expected a number >= 0")
    if config.lock_timeout < 0:
        raise ConfigError("lock_timeout: must be >= 0")
    for name in ("max_body_bytes", "max_import_bytes", "max_request_text_chars"):
        _positive(getattr(config.server, name), f"server.{name}")
    roots = config.server.index_roots
    if not isinstance(roots, tuple | list) or not all(isinstance(r, str) and r for r in roots):
        raise ConfigError("server.index_roots: expected a list of folder paths")


def _check_prefix(prefix: Any) -> None:
    """A collection-name prefix ChromaDB accepts in front of any collection name: letters,
    digits, '.', '-' or '_', starting with a letter or digit, at most 64 characters."""
    if not isinstance(prefix, str) or len(prefix) > 64:
        raise ConfigError("semantic.chroma_prefix: expected a string of at most 64 characters")
    if prefix and (
        not prefix[0].isascii()
        or not prefix[0].isalnum()
        or not all(c.isascii() and (c.isalnum() or c in "._-") for c in prefix)
        or ".." in prefix
    ):
        raise ConfigError(
            "semantic.chroma_prefix: letters, digits, '.', '-' or '_', starting with a letter "
            f"or digit, got {prefix!r}"
        )


def _check_router(r: RouterConfig) -> None:
    _positive(r.default_budget_tokens, "router.default_budget_tokens")
    _positive(r.candidate_pool, "router.candidate_pool")
    _positive(r.meaning_pool, "router.meaning_pool")
    _positive(r.top_k, "router.top_k")
    for name, most in (("restated_from", 100), ("restated_pool", 1_000)):
        value = getattr(r, name)
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= most:
            raise ConfigError(f"router.{name}: expected an integer within [0, {most}]")
    if not isinstance(r.recall_log_retention_days, int) or r.recall_log_retention_days < 0:
        raise ConfigError("router.recall_log_retention_days: expected an integer >= 0")
    if not r.recent_window_minutes > 0:
        raise ConfigError("router.recent_window_minutes: must be > 0")
    if len(r.context_key_weights) != 3 or any(
        not _number(x) or not 0 <= x <= 100 for x in r.context_key_weights
    ):
        raise ConfigError("router.context_key_weights: expected three numbers within [0, 100]")
    if not _number(r.dense_weight) or not 0 <= r.dense_weight <= 100:
        raise ConfigError("router.dense_weight: expected a number within [0, 100]")
    for name in (
        "importance_prior",
        "present_importance_prior",
        "recency_prior",
        "freshness_prior",
        "present_freshness_prior",
        "present_freshness_order",
    ):
        if not _number(getattr(r, name)) or not 0 <= getattr(r, name) < 2:
            raise ConfigError(f"router.{name}: expected a number within [0, 2)")
    if not _number(r.time_range_boost) or not 0 <= r.time_range_boost <= 10:
        raise ConfigError("router.time_range_boost: expected a number within [0, 10]")
    for name in (
        "superseded_factor",
        "other_identifier_factor",
        "min_score",
        "relative_floor",
        "diversity",
        "restated_similarity",
        "restated_similarity_across_languages",
        "restated_wording",
        "restated_values",
        "restated_values_across_languages",
        "restated_relevance",
        "thread_turns",
    ):
        _unit(getattr(r, name), f"router.{name}")
    for name in ("layer_weights", "past_weights", "howto_weights"):
        weights = getattr(r, name)
        unknown = set(weights) - set(LAYERS)
        if unknown:
            raise ConfigError(f"router.{name}: unknown layer(s) {', '.join(sorted(unknown))}")
        if any(not _number(v) or not 0 <= v <= 10 for v in weights.values()):
            raise ConfigError(f"router.{name}: expected numbers within [0, 10]")
    cues = ("past_cues", "experience_cues", "howto_cues", "present_cues", "past_tense_cues")
    for name in (*cues, "counting_cues"):
        if any(not isinstance(c, str) or not c.strip() for c in getattr(r, name)):
            raise ConfigError(f"router.{name}: expected non-empty phrases")


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _check_pipelines(config: Config) -> None:
    """Parse the forgetting policies and the schedule now, so a bad one fails at load time.

    A malformed condition raises ConditionSyntaxError (with its position); other mistakes in a
    policy raise ConfigError naming it.
    """
    try:
        policies_from_config(config.forgetting.policies)
    except ConditionSyntaxError:
        raise
    except (ValidationError, TypeError) as exc:
        raise ConfigError(str(exc)) from None
    Schedule.parse(config.distill.schedule)
