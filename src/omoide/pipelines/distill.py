"""Distillation: old experience becomes knowledge (article section 7).

Candidates are live episodes not yet distilled whose freshness is below
``distill.freshness_threshold`` (0.5: about 50 days at the default decay), most important
first. They are taken ``batch_size`` at a time; each one not yet in a cluster seeds a cluster
made of itself and every remaining candidate of the same scope whose similarity to it is above
``distill.similarity_threshold`` (0.7) — the article's greedy clustering, grown over the whole
candidate pool so that one topic is not split across batches. A cluster of at least
``min_episodes_for_cluster`` (3) becomes one document in the ``distill.collection``
(``decisions``) with its sources, category and confidence, and its episodes are marked
distilled. Seeds whose cluster is too small stay candidates: later episodes may join them.

**Chatter is not knowledge.** Episodes below ``distill.min_importance`` (0.3) are never
candidates: three "standup: nothing new today" notes at 0.2 stay episodes (and are forgotten
in time) rather than become a "decision". A cluster's category follows its episodes' event
types (errors → ``error_pattern``, decisions → ``decision_pattern``, ...; notes and messages,
which name none, → ``observation``). When a run writes nothing, its report's ``reason`` says
why, with the wait computed from the configured freshness curve.

**One document per topic.** A seed as similar as that to an episode already distilled (and
still present) joins that episode's knowledge instead of starting a new document: the
document is extracted again from its sources still present plus the newcomers and rewritten
under the same id, its ``episode_count`` and ``source_episodes`` growing. So a topic that
recurs every night is one document that stays current, not one more document per night —
even one or two newcomers join (they need no cluster of their own).

**Identifiers are never merged.** Episodes join a cluster (or a topic) only if they name the
same identifiers: every token with a digit — incident codes (``E-04512``), invoice numbers,
versions, amounts, quarters (``Q3``). Two incidents that read alike but carry different
codes are different memories: one summary naming one code would stand for both and answer
for neither.

**Similarity is calibrated.** Raw cosines of multilingual-e5-small are squashed (unrelated
passages score 0.78-0.88, paraphrases 0.94-0.98), so the 0.7 threshold is applied to
:meth:`Embedder.calibrate` (passage kind), which maps the model's "unrelated" floor (0.80) to 0
and identity to 1. A calibrated 0.7 is a raw cosine of 0.94: paraphrases and restatements of
the same event, not merely the same subject area.

**Crash safety.** A knowledge id is derived from its sorted source episode ids, so the same
cluster always gets the same id. The knowledge document is written first (journalled), then
the marks; a run interrupted anywhere is completed by the next one, which finds the document
through the journal (or by its id) and only marks the episodes: no duplicate, no lost mark.
Episodes are grouped by scope (and by agent for private ones), so knowledge never shows an
agent what it could not read before.

**Budget.** The run stops cleanly after ``distill.max_duration_minutes`` on the injected
clock's monotonic time; the rest waits for the next run.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from omoide.clock import Clock, to_timestamp
from omoide.core.config import DistillConfig
from omoide.core.models import Episode
from omoide.core.scope import PRIVATE
from omoide.core.validation import check_positive_int
from omoide.errors import LLMError, OmoideError
from omoide.layers.episodic.store import EpisodicStore
from omoide.layers.semantic.store import SemanticStore
from omoide.pipelines.reports import DistillReport, SkippedCluster, distill_reason
from omoide.providers.embeddings import Embedder
from omoide.providers.llm import LLM, Cluster, Knowledge
from omoide.storage import Database
from omoide.text.identifiers import identifiers

__all__ = ["DistillReport", "Distiller", "SkippedCluster", "knowledge_id"]

#: After this many extraction failures in a row the run stops asking (endpoint down).
MAX_CONSECUTIVE_FAILURES = 3


def knowledge_id(source_ids: Sequence[str]) -> str:
    """The id of the knowledge distilled from these episodes (order does not matter)."""
    digest = hashlib.sha256("\n".join(sorted(source_ids)).encode("utf-8")).hexdigest()
    return f"distilled-{digest[:32]}"


@dataclass
class _Pool:
    """Candidates of one scope group, with unit vectors, most important first; and the
    episodes of the group already distilled, whose documents newcomers may join."""

    episodes: list[Episode]
    vectors: npt.NDArray[np.float32]
    free: npt.NDArray[np.bool_]
    #: Identifier-set label of each candidate (equal labels: the same identifiers).
    labels: npt.NDArray[np.int64]
    owner: str
    scope: str
    known_ids: list[str] = field(default_factory=list)
    #: Position of each id in ``known_ids``.
    known_index: dict[str, int] = field(default_factory=dict)
    known_docs: list[str] = field(default_factory=list)
    known_vectors: npt.NDArray[np.float32] = field(
        default_factory=lambda: np.zeros((0, 0), dtype=np.float32)
    )
    known_labels: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, dtype=np.int64))


class Distiller:
    """Runs distillation over the episodic store into the semantic store."""

    def __init__(
        self,
        db: Database,
        *,
        episodic: EpisodicStore,
        semantic: SemanticStore,
        embedder: Embedder,
        clock: Clock,
        config: DistillConfig,
        llm: LLM,
    ) -> None:
        self._db = db
        self._episodic = episodic
        self._semantic = semantic
        self._embedder = embedder
        self._clock = clock
        self.config = config
        self.llm = llm

    # -- the run -------------------------------------------------------------------------

    def run(self, batch_size: int | None = None) -> DistillReport:
        """Distill what is due now; see the module docstring."""
        batch = check_positive_int(
            "batch_size", self.config.batch_size if batch_size is None else batch_size
        )
        started = self._clock.monotonic()
        budget = self.config.max_duration_minutes * 60
        report = DistillReport()
        self.recover(report)
        pools = self._pools(report)
        order = sorted(
            (
                (pool_index, i)
                for pool_index, pool in enumerate(pools)
                for i in range(len(pool.episodes))
            ),
            key=lambda pi: _rank(pools[pi[0]].episodes[pi[1]]),
        )
        report.candidates = len(order)
        failures = 0
        for start in range(0, len(order), batch):
            for pool_index, i in order[start : start + batch]:
                pool = pools[pool_index]
                if not pool.free[i]:
                    continue
                if self._clock.monotonic() - started >= budget:
                    report.complete = False
                    report.seconds = self._clock.monotonic() - started
                    return report
                topic = self._topic_of(pool, i)
                if topic is not None:
                    members = self._members(pool, i)
                    pool.free[members] = False
                    if failures >= MAX_CONSECUTIVE_FAILURES:
                        report.skipped.append(
                            SkippedCluster(
                                tuple(sorted(pool.episodes[int(m)].id for m in members)),
                                f"not attempted: the extractor failed {failures} times in a row",
                            )
                        )
                        continue
                    outcome = self._fold(topic, members, pool, report)
                    failures = 0 if outcome else failures + 1
                    continue
                cluster = self._grow(pool, i)
                if cluster is None:
                    pool.free[i] = False
                    report.unclustered += 1
                    continue
                report.clusters += 1
                if failures >= MAX_CONSECUTIVE_FAILURES:
                    report.skipped.append(
                        SkippedCluster(
                            cluster.source_ids,
                            f"not attempted: the extractor failed {failures} times in a row",
                        )
                    )
                    continue
                outcome = self._distill_cluster(cluster, pool, report)
                failures = 0 if outcome else failures + 1
        report.seconds = self._clock.monotonic() - started
        report.reason = self._reason(report)
        return report

    def _reason(self, report: DistillReport) -> str:
        """Why ``report`` holds no knowledge, in words ("" when it holds some)."""
        if report.knowledge_written or report.knowledge_updated or report.knowledge_existing:
            return ""
        count, first = self._episodic.rows.undistilled_span()
        oldest = None
        if count and first is not None:
            oldest = (to_timestamp(self._clock.now()) - first) / 86400
        return distill_reason(
            self.config,
            candidates=report.candidates,
            low_importance=report.low_importance,
            curve=self._episodic.freshness,
            decay_rate=self._episodic.config.decay_rate,
            undistilled=count,
            oldest_days=oldest,
        )

    def _pools(self, report: DistillReport) -> list[_Pool]:
        """The candidates, grouped by scope (and owner for private scopes), each group with
        its episodes already distilled into a live document of the collection. Episodes
        below ``min_importance`` are counted in ``report.low_importance``, not taken."""
        threshold = self.config.freshness_threshold
        now = self._clock.now()
        rows = self._episodic.rows.undistilled()
        by_id = {r["id"]: r for r in rows}
        groups: dict[tuple[str, str], list[tuple[Episode, bytes]]] = defaultdict(list)
        for episode in self._fetch([r["id"] for r in rows]):
            if self._episodic.freshness_of(episode, now) >= threshold:
                continue
            if episode.importance < self.config.min_importance:
                report.low_importance += 1
                continue
            owner = episode.agent_name if episode.scope == PRIVATE else ""
            groups[(episode.scope, owner)].append((episode, by_id[episode.id]["embedding"]))
        known: dict[tuple[str, str], list[Any]] = defaultdict(list)
        distilled = self._episodic.rows.distilled()
        live_docs = {
            r["id"]
            for r in self._semantic.registry.rows(
                self.config.collection, list(dict.fromkeys(r["distilled_into"] for r in distilled))
            )
            if r["state"] in ("active", "compressed")
        }
        for row in (r for r in distilled if r["distilled_into"] in live_docs):
            owner = row["agent_name"] if row["scope"] == PRIVATE else ""
            if (row["scope"], owner) in groups:
                known[(row["scope"], owner)].append(row)
        labels: dict[frozenset[str], int] = {}

        def label(description: str, outcome: str | None) -> int:
            return labels.setdefault(identifiers(f"{description}\n{outcome or ''}"), len(labels))

        pools = []
        for (scope, owner), members in sorted(groups.items()):
            members.sort(key=lambda m: _rank(m[0]))
            pool = _Pool(
                episodes=[m[0] for m in members],
                vectors=_unit(b"".join(m[1] for m in members), len(members)),
                free=np.ones(len(members), dtype=bool),
                labels=np.array([label(e.description, e.outcome) for e, _ in members]),
                owner=owner,
                scope=scope,
            )
            settled = known.get((scope, owner), [])
            if settled:
                pool.known_ids = [r["id"] for r in settled]
                pool.known_index = {known: i for i, known in enumerate(pool.known_ids)}
                pool.known_docs = [r["distilled_into"] for r in settled]
                pool.known_vectors = _unit(b"".join(r["embedding"] for r in settled), len(settled))
                pool.known_labels = np.array(
                    [label(r["description"], r["outcome"]) for r in settled]
                )
            pools.append(pool)
        return pools

    def _fetch(self, ids: Sequence[str]) -> list[Episode]:
        out: list[Episode] = []
        for start in range(0, len(ids), 500):
            part = list(ids[start : start + 500])
            out.extend(self._episodic.rows.fetch(f"id IN ({','.join('?' * len(part))})", part))
        return out

    def _members(self, pool: _Pool, seed: int) -> npt.NDArray[np.intp]:
        """The free candidates similar enough to ``pool.episodes[seed]`` and naming the same
        identifiers, the seed first. Only those with the seed's identifiers are compared, so
        an episode naming its own incident code costs nothing however large the pool."""
        same = np.flatnonzero(pool.free & (pool.labels == pool.labels[seed]))
        cosines = pool.vectors[same] @ pool.vectors[seed]
        similar = np.asarray(self._embedder.calibrate(cosines, "passage"), dtype=np.float32)
        members = same[similar > self.config.similarity_threshold]
        return np.concatenate(([seed], members[members != seed])).astype(np.intp)

    def _topic_of(self, pool: _Pool, seed: int) -> str | None:
        """The document of the already-distilled episode most similar to the seed (above the
        threshold, same identifiers), or None: the seed then starts a topic of its own."""
        same = np.flatnonzero(pool.known_labels == pool.labels[seed])
        if len(same) == 0:
            return None
        cosines = pool.known_vectors[same] @ pool.vectors[seed]
        similar = np.asarray(self._embedder.calibrate(cosines, "passage"), dtype=np.float32)
        best = int(np.argmax(similar))
        if not similar[best] > self.config.similarity_threshold:
            return None
        return pool.known_docs[int(same[best])]

    def _grow(self, pool: _Pool, seed: int) -> Cluster | None:
        """The cluster seeded by ``pool.episodes[seed]``, or None if it is too small."""
        members = self._members(pool, seed)
        if len(members) < self.config.min_episodes_for_cluster:
            return None
        pool.free[members] = False
        return _cluster([pool.episodes[int(m)] for m in members], pool.vectors[members], self)

    def _distill_cluster(self, cluster: Cluster, pool: _Pool, report: DistillReport) -> bool:
        """Write the cluster's knowledge (unless it exists) and mark its episodes.

        Returns False when the extractor failed (the cluster is skipped and reported)."""
        collection = self.config.collection
        doc_id = knowledge_id(cluster.source_ids)
        if self._exists(collection, doc_id):
            report.knowledge_existing.append(doc_id)
            report.episodes_marked += self._mark(collection, doc_id, cluster.source_ids)
            return True
        try:
            knowledge = self.llm.extract(cluster)
        except LLMError as exc:
            report.skipped.append(SkippedCluster(cluster.source_ids, str(exc)))
            return False
        meta = self._metadata(cluster, knowledge)
        if self._write(doc_id, knowledge.summary, meta, cluster.source_ids, pool, report):
            report.knowledge_written.append(doc_id)
        return True

    def _fold(
        self,
        doc_id: str,
        members: npt.NDArray[np.intp],
        pool: _Pool,
        report: DistillReport,
    ) -> bool:
        """Rewrite the knowledge ``doc_id`` with the newcomers ``members`` on its topic and mark
        them; a crash in between is completed by :meth:`recover` (the document exists).

        The text is extracted from the newcomers and the document's sources still present
        (the newest :data:`FOLD_SOURCES`); the metadata counts every episode ever folded in.
        Returns False when the extractor failed."""
        collection = self.config.collection
        newcomers = [pool.episodes[int(m)] for m in members]
        present_ids = self._episodic.rows.sources_of(doc_id, FOLD_SOURCES)
        present = self._fetch(present_ids)
        index = pool.known_index
        vectors = np.concatenate(
            [
                pool.vectors[members],
                pool.known_vectors[[index[e.id] for e in present if e.id in index]],
            ]
        )
        present = [e for e in present if e.id in index]
        cluster = _cluster([*newcomers, *present], vectors, self)
        try:
            knowledge = self.llm.extract(cluster)
        except LLMError as exc:
            report.skipped.append(SkippedCluster(tuple(sorted(e.id for e in newcomers)), str(exc)))
            return False
        row = self._semantic.registry.row(self._db, collection, doc_id)
        before = json.loads(row["metadata"]) if row is not None else {}
        meta = _merged(before, self._metadata(cluster, knowledge), newcomers)
        if self._write(doc_id, knowledge.summary, meta, [e.id for e in newcomers], pool, report):
            report.knowledge_updated.append(doc_id)
        return True

    def _write(
        self,
        doc_id: str,
        summary: str,
        meta: dict[str, str | int | float],
        source_ids: Sequence[str],
        pool: _Pool,
        report: DistillReport,
    ) -> bool:
        """Journal, store and mark one knowledge document (crash-safe: see :meth:`recover`).

        Returns False when the semantic store refused it (reported as skipped; the journal
        entry is withdrawn and the sources stay candidates)."""
        collection = self.config.collection
        with self._db.transaction() as conn:
            conn.execute(
                "INSERT INTO distill_journal(collection, doc_id, source_ids, "
                "started_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (collection, doc_id, json.dumps(list(source_ids)), to_timestamp(self._clock.now())),
            )
        try:
            self._semantic.store(
                collection,
                [summary],
                [meta],
                ids=[doc_id],
                agent_name=pool.owner,
                scope=pool.scope,
                known_scope=True,
            )
        except OmoideError as exc:
            with self._db.transaction() as conn:
                conn.execute(
                    "DELETE FROM distill_journal WHERE collection = ? AND doc_id = ?",
                    (collection, doc_id),
                )
            report.skipped.append(SkippedCluster(tuple(sorted(source_ids)), f"not stored: {exc}"))
            return False
        report.episodes_marked += self._mark(collection, doc_id, source_ids)
        return True

    def _metadata(self, cluster: Cluster, knowledge: Knowledge) -> dict[str, str | int | float]:
        episodes = cluster.episodes
        return {
            "source": "distillation",
            "source_episodes": ",".join(cluster.source_ids),
            "episode_count": len(episodes),
            "distilled_at": self._clock.now().isoformat(),
            "confidence": round(float(knowledge.confidence), 3),
            "category": knowledge.category,
            "agents": ",".join(sorted({e.agent_name for e in episodes})),
            "event_types": ",".join(sorted({e.event_type for e in episodes})),
            "first_episode_at": min(e.timestamp for e in episodes).isoformat(),
            "last_episode_at": max(e.timestamp for e in episodes).isoformat(),
            # The most important source protects the document from forgetting; recall weighs
            # it by the mean, as it would weigh the episodes themselves.
            "importance": round(max(e.importance for e in episodes), 3),
            "mean_importance": round(sum(e.importance for e in episodes) / len(episodes), 3),
            "episode_tags": ",".join(_shared_tags(episodes)),
            "cohesion": round(cluster.cohesion, 3),
            "extractor": self.llm.name,
        }

    def _exists(self, collection: str, doc_id: str) -> bool:
        row = self._semantic.registry.row(self._db, collection, doc_id)
        return row is not None and row["state"] != "deleting"

    def _mark(self, collection: str, doc_id: str, source_ids: Sequence[str]) -> int:
        """Mark the sources distilled into ``doc_id`` and close its journal entry, atomically."""
        stamp = to_timestamp(self._clock.now())
        with self._db.transaction() as conn:
            marked = self._episodic.rows.mark_distilled(conn, source_ids, doc_id, stamp)
            conn.execute(
                "DELETE FROM distill_journal WHERE collection = ? AND doc_id = ?",
                (collection, doc_id),
            )
        return marked

    def recover(self, report: DistillReport | None = None) -> int:
        """Complete runs that were interrupted between writing knowledge and marking episodes.

        Every journal entry whose document exists gets its episodes marked; an entry whose
        document was never registered is dropped (its cluster is found again). Returns the
        number of episodes marked.
        """
        marked = 0
        for row in self._db.query("SELECT collection, doc_id, source_ids FROM distill_journal"):
            collection, doc_id = row["collection"], row["doc_id"]
            if self._exists(collection, doc_id):
                count = self._mark(collection, doc_id, json.loads(row["source_ids"]))
                marked += count
                if report is not None:
                    report.knowledge_existing.append(doc_id)
                    report.episodes_marked += count
            else:
                with self._db.transaction() as conn:
                    conn.execute(
                        "DELETE FROM distill_journal WHERE collection = ? AND doc_id = ?",
                        (collection, doc_id),
                    )
        return marked


def _shared_tags(episodes: Sequence[Episode]) -> list[str]:
    """The tags at least half of ``episodes`` carry, sorted."""
    counts = Counter(tag for e in episodes for tag in dict.fromkeys(e.tags))
    return sorted(t for t, c in counts.items() if c * 2 >= len(episodes))


def _rank(episode: Episode) -> tuple[float, float, str]:
    """Most important first; older first among equals; then by id (deterministic)."""
    return (-episode.importance, episode.timestamp.timestamp(), episode.id)


#: How many of a topic's sources still present are read again when newcomers join it.
FOLD_SOURCES = 100


def _unit(blob: bytes, rows: int) -> npt.NDArray[np.float32]:
    """Stored float32 embeddings as a matrix of unit rows."""
    vectors = np.frombuffer(blob, dtype=np.float32).reshape(rows, -1).copy()
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    unit: npt.NDArray[np.float32] = vectors / norms
    return unit


def _cluster(
    episodes: Sequence[Episode], vectors: npt.NDArray[np.float32], distiller: Distiller
) -> Cluster:
    """A cluster of ``episodes`` (unit ``vectors``, same order) with its most central member."""
    pairwise = np.asarray(distiller._embedder.calibrate(vectors @ vectors.T, "passage"))
    central = int(np.argmax(pairwise.mean(axis=1)))
    return Cluster(
        episodes=tuple(episodes),
        representative=central,
        cohesion=float(pairwise[central].mean()),
    )


def _merged(
    before: dict[str, Any], after: dict[str, str | int | float], newcomers: Sequence[Episode]
) -> dict[str, str | int | float]:
    """The metadata of a rewritten topic: ``after`` (from the episodes read this time) with
    counts, sources, agents, event types, first date and importance kept from ``before``."""

    def union(key: str, extra: Sequence[str]) -> str:
        old = [x for x in str(before.get(key, "")).split(",") if x]
        return ",".join(sorted({*old, *extra}))

    ids = [e.id for e in newcomers]
    merged = dict(after)
    sources = [*ids, *str(after["source_episodes"]).split(",")]
    merged["source_episodes"] = union("source_episodes", sources)
    merged["episode_count"] = len(str(merged["source_episodes"]).split(","))
    merged["agents"] = union("agents", str(after["agents"]).split(","))
    merged["event_types"] = union("event_types", str(after["event_types"]).split(","))
    if isinstance(before.get("first_episode_at"), str):
        merged["first_episode_at"] = min(before["first_episode_at"], str(after["first_episode_at"]))
    if isinstance(before.get("importance"), int | float):
        merged["importance"] = max(float(before["importance"]), float(after["importance"]))
    return merged
