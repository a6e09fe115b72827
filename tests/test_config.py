"""Configuration defaults, TOML loading and rejection of settings that cannot work."""

from __future__ import annotations

from pathlib import Path

import pytest

from omoide import Config
from omoide.core.config import NEVER_FORGET, EpisodicConfig, WorkingConfig
from omoide.errors import ConfigError


def test_defaults_are_the_articles() -> None:
    config = Config()
    assert config.working.max_tokens == 32_000
    assert config.episodic.max_entries == 10_000
    assert (
        config.episodic.relevance_weight,
        config.episodic.importance_weight,
        config.episodic.freshness_weight,
    ) == (0.4, 0.35, 0.25)
    assert dict(config.episodic.base_importance) == {
        "decision": 0.7,
        "error": 0.8,
        "success": 0.5,
        "feedback": 0.9,
        "conflict": 0.85,
    }
    caps = {n: (c.retention_days, c.max_docs) for n, c in config.semantic.collections.items()}
    assert caps == {
        "knowledge": (None, 50_000),
        "code": (None, 30_000),
        "decisions": (365, 10_000),
        "feedback": (None, 5_000),
    }
    # The article's HNSW settings, but for the search breadth: its 100 found about half of
    # the exact ten nearest in a year's collection of near-duplicates; 500 finds 98 %.
    assert (
        config.semantic.hnsw_construction_ef,
        config.semantic.hnsw_search_ef,
        config.semantic.hnsw_m,
    ) == (200, 500, 16)
    # Vectors stay in this process and the directory's own ChromaDB unless told otherwise.
    assert (config.semantic.chroma_url, config.semantic.chroma_prefix) == (None, "")
    assert config.episodic.vector_store == "memory"
    assert config.procedural.ema_alpha == 0.1
    assert (
        config.distill.batch_size,
        config.distill.min_episodes_for_cluster,
        config.distill.freshness_threshold,
        config.distill.max_duration_minutes,
    ) == (50, 3, 0.5, 10)
    assert [p["name"] for p in config.forgetting.policies] == [
        "stale_episodes",
        "superseded_decisions",
        "low_value_knowledge",
        "resolved_errors",
    ]
    assert config.never_forget == NEVER_FORGET


def test_toml_overrides_and_extends(tmp_path: Path) -> None:
    path = tmp_path / "omoide.toml"
    path.write_text(
        """
        never_forget = ["legal_holds"]
        [teams]
        leads = ["ceo", "cto"]
        [episodic]
        max_entries = 500
        [episodic.base_importance]
        deployment = 0.6
        [semantic.collections.runbooks]
        purpose = "operational runbooks"
        retention_days = 90
        max_docs = 100
        [semantic.collections.knowledge]
        max_docs = 10
        [[forgetting.policies]]
        name = "old_chatter"
        target_layer = "episodic"
        condition = "event_type == 'message' AND age > 14_days"
        action = "delete"
        grace_period_days = 14
        """.replace("\n        ", "\n"),
        encoding="utf-8",
    )
    config = Config.from_toml(path)
    assert config.episodic.max_entries == 500
    assert config.episodic.base_importance["deployment"] == 0.6
    assert config.episodic.base_importance["decision"] == 0.7  # merged, not replaced
    assert config.semantic.collections["runbooks"].retention_days == 90
    assert config.semantic.collections["knowledge"].max_docs == 10
    assert config.semantic.collections["knowledge"].purpose.startswith("general")
    assert set(config.semantic.collections) == {
        "knowledge",
        "code",
        "decisions",
        "feedback",
        "runbooks",
    }
    assert config.never_forget == (*NEVER_FORGET, "legal_holds")
    assert config.teams == {"leads": ("ceo", "cto")}
    assert [p["name"] for p in config.forgetting.policies][-1] == "old_chatter"
    assert len(config.forgetting.policies) == 5


def test_never_forget_can_only_be_extended() -> None:
    config = Config(never_forget=("legal_holds",))
    assert set(NEVER_FORGET) <= set(config.never_forget)
    assert Config.from_dict({"never_forget": []}).never_forget == NEVER_FORGET


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"episodic": {"max_entries": 0}}, "episodic.max_entries"),
        ({"episodic": {"importance_weight": 1.5}}, "episodic.importance_weight"),
        ({"episodic": {"max_entrys": 5}}, "max_entrys"),
        ({"working": {"slot_budgets": {"extra": 5}}}, "working.slot_budgets"),
        ({"semantic": {"collections": {"x": {"max_docs": 5}}}}, "semantic.collections.x"),
        ({"semantic": {"collections": {"ok_name": {"on_full": "drop"}}}}, "on_full"),
        ({"semantic": {"hnsw_space": "manhattan"}}, "hnsw_space"),
        ({"semantic": {"text_weight": 1.5}}, "semantic.text_weight"),
        ({"semantic": {"chroma_prefix": "-team"}}, "semantic.chroma_prefix"),
        ({"episodic": {"vector_store": "postgres"}}, "episodic.vector_store"),
        ({"storage": {"cache_mib": 0}}, "storage.cache_mib"),
        ({"distill": {"collection": "nowhere"}}, "distill.collection"),
        ({"procedural": {"initial_quality_score": 11}}, "initial_quality_score"),
        ({"teams": {"leads": "ceo"}}, "teams"),
        ({"never_forget": "everything"}, "never_forget"),
        ({"episodic": 5}, "expected a table"),
        ({"unknown_section": {}}, "unknown_section"),
    ],
)
def test_bad_settings_are_rejected_by_name(data: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Config.from_dict(data)


def test_bad_toml_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text("[episodic\nmax_entries = ", encoding="utf-8")
    with pytest.raises(ConfigError, match="cannot read configuration"):
        Config.from_toml(path)
    with pytest.raises(ConfigError):
        Config.from_toml(tmp_path / "missing.toml")


def test_sections_are_immutable() -> None:
    config = Config(working=WorkingConfig(max_tokens=8_000), episodic=EpisodicConfig())
    with pytest.raises(AttributeError):
        config.working.max_tokens = 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        config.episodic.base_importance["decision"] = 0.1  # type: ignore[index]
