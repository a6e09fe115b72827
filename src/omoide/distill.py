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
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from .clock import Clock, to_timestamp
from .config import DistillConfig
from .embeddings import Embedder
from .episodic import EpisodicStore
from .errors import LLMError, OmoideError
from .llm import LLM, Cluster, Knowledge
from .models import Episode
from .scope import PRIVATE
from .semantic import SemanticStore
from .storage import Database
from .validation import check_positive_int

__all__ = ["DistillReport", "Distiller", "SkippedCluster", "knowledge_id"]

#: After this many extraction failures in a row the run stops asking (endpoint down).
MAX_CONSECUTIVE_FAILURES = 3


def knowledge_id(source_ids: Sequence[str]) -> str:
    """The id of the knowledge distilled from these episodes (order does not matter)."""
    digest = hashlib.sha256("\n".join(sorted(source_ids)).encode("utf-8")).hexdigest()
    return f"distilled-{digest[:32]}"


@dataclass(frozen=True)
class SkippedCluster:
    """A cluster that produced no knowledge this run, and why (it stays for the next run)."""

    source_ids: tuple[str, ...]
    reason: str


@dataclass
class DistillReport:
    """What a distillation run did."""

    #: Episodes eligible at the start of the run.
    candidates: int = 0
    #: Clusters of at least ``min_episodes_for_cluster`` episodes found.
    clusters: int = 0
    #: Ids of knowledge documents written by this run.
    knowledge_written: list[str] = field(default_factory=list)
    #: Ids of knowledge documents found already written (an interrupted run, completed).
    knowledge_existing: list[str] = field(default_factory=list)
    #: Episodes marked distilled by this run.
    episodes_marked: int = 0
    #: Seeds whose cluster was too small (they stay candidates).
    unclustered: int = 0
    skipped: list[SkippedCluster] = field(default_factory=list)
    seconds: float = 0.0
    #: False when the time budget ran out before every candidate was seen.
    complete: bool = True


@dataclass
class _Pool:
    """Candidates of one scope group, with unit vectors, most important first."""

    episodes: list[Episode]
    vectors: npt.NDArray[np.float32]
    free: npt.NDArray[np.bool_]
    owner: str
    scope: str


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
        pools = self._pools()
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
        return report

    def _pools(self) -> list[_Pool]:
        """The candidates, grouped by scope (and owner for private scopes)."""
        threshold = self.config.freshness_threshold
        now = self._clock.now()
        rows = self._db.query(
            "SELECT rowid, id, embedding FROM episodes WHERE distilled_at IS NULL "
            "AND state IN ('active', 'compressed')"
        )
        by_id = {r["id"]: r for r in rows}
        groups: dict[tuple[str, str], list[tuple[Episode, bytes]]] = defaultdict(list)
        for episode in self._fetch([r["id"] for r in rows]):
            if self._episodic.freshness_of(episode, now) >= threshold:
                continue
            owner = episode.agent_name if episode.scope == PRIVATE else ""
            groups[(episode.scope, owner)].append((episode, by_id[episode.id]["embedding"]))
        pools = []
        for (scope, owner), members in sorted(groups.items()):
            members.sort(key=lambda m: _rank(m[0]))
            matrix = np.frombuffer(b"".join(m[1] for m in members), dtype=np.float32)
            vectors = matrix.reshape(len(members), -1).copy()
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            norms[norms == 0] = 1.0
            pools.append(
                _Pool(
                    episodes=[m[0] for m in members],
                    vectors=vectors / norms,
                    free=np.ones(len(members), dtype=bool),
                    owner=owner,
                    scope=scope,
                )
            )
        return pools

    def _fetch(self, ids: Sequence[str]) -> list[Episode]:
        out: list[Episode] = []
        for start in range(0, len(ids), 500):
            part = list(ids[start : start + 500])
            out.extend(self._episodic._fetch(f"id IN ({','.join('?' * len(part))})", part))
        return out

    def _grow(self, pool: _Pool, seed: int) -> Cluster | None:
        """The cluster seeded by ``pool.episodes[seed]``, or None if it is too small."""
        cosines = pool.vectors @ pool.vectors[seed]
        similar = np.asarray(self._embedder.calibrate(cosines, "passage"), dtype=np.float32)
        members = np.flatnonzero(pool.free & (similar > self.config.similarity_threshold))
        members = np.concatenate(([seed], members[members != seed]))
        if len(members) < self.config.min_episodes_for_cluster:
            return None
        pool.free[members] = False
        block = pool.vectors[members]
        pairwise = np.asarray(self._embedder.calibrate(block @ block.T, "passage"))
        central = int(np.argmax(pairwise.mean(axis=1)))
        cohesion = float(pairwise[central].mean())
        return Cluster(
            episodes=tuple(pool.episodes[int(m)] for m in members),
            representative=central,
            cohesion=cohesion,
        )

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
        now = self._clock.now()
        with self._db.transaction() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO distill_journal(collection, doc_id, source_ids, "
                "started_at) VALUES (?, ?, ?, ?)",
                (collection, doc_id, json.dumps(list(cluster.source_ids)), to_timestamp(now)),
            )
        try:
            self._semantic.store(
                collection,
                [knowledge.summary],
                [self._metadata(cluster, knowledge)],
                ids=[doc_id],
                agent_name=pool.owner,
                scope=pool.scope,
            )
        except OmoideError as exc:
            with self._db.transaction() as conn:
                conn.execute(
                    "DELETE FROM distill_journal WHERE collection = ? AND doc_id = ?",
                    (collection, doc_id),
                )
            report.skipped.append(SkippedCluster(cluster.source_ids, f"not stored: {exc}"))
            return True
        report.knowledge_written.append(doc_id)
        report.episodes_marked += self._mark(collection, doc_id, cluster.source_ids)
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
            "importance": round(max(e.importance for e in episodes), 3),
            "cohesion": round(cluster.cohesion, 3),
            "extractor": self.llm.name,
        }

    def _exists(self, collection: str, doc_id: str) -> bool:
        state = self._db.scalar(
            "SELECT state FROM semantic_docs WHERE collection = ? AND id = ?",
            (collection, doc_id),
        )
        return state is not None and state != "deleting"

    def _mark(self, collection: str, doc_id: str, source_ids: Sequence[str]) -> int:
        """Mark the sources distilled into ``doc_id`` and close its journal entry, atomically."""
        stamp = to_timestamp(self._clock.now())
        with self._db.transaction() as conn:
            marked = 0
            for start in range(0, len(source_ids), 500):
                part = list(source_ids[start : start + 500])
                cur = conn.execute(
                    "UPDATE episodes SET distilled_at = ?, distilled_into = ? "
                    f"WHERE distilled_at IS NULL AND id IN ({','.join('?' * len(part))})",
                    [stamp, doc_id, *part],
                )
                marked += cur.rowcount
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


def _rank(episode: Episode) -> tuple[float, float, str]:
    """Most important first; older first among equals; then by id (deterministic)."""
    return (-episode.importance, episode.timestamp.timestamp(), episode.id)
