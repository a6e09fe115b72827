"""Japanese knowledge retrieval: JSQuAD paragraphs as documents, its questions as queries.

    python -m bench.jsquad                    # 400 questions, writes bench/RESULTS.md
    python -m bench.jsquad --questions 100 --no-write

JSQuAD v1.3 (JGLUE, Kurihara et al., LREC 2022; CC BY-SA 4.0) is read from
``../shared/data/jsquad/test-v1.3.json`` (or ``--data PATH``), never copied into the
repository. Every paragraph is stored as one document of a collection through
``SemanticStore.store``; a seeded sample of questions (the same for every retriever) is then
asked, and a question is answered at k when its own paragraph is among the first k documents.
Retrievers, in one run over the same paragraphs: ``Memory.recall`` (the semantic layer, default
settings), ``SemanticStore.query`` (by relevance, its default: words and meaning), dense
alone (``SemanticStore.query(rank="meaning")``), BM25 over omoide's analysed terms
(``rank-bm25``) and the reciprocal-rank fusion (k = 60) of BM25 and dense. Paragraph vectors
are cached on disk outside the repository between runs.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.longmemeval import DiskCachedEmbedder, rrf
from bench.results import machine, publish
from omoide import ManualClock, Memory
from omoide.text.fulltext import analyze

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "data" / "jsquad" / "test-v1.3.json"
CACHE = Path(tempfile.gettempdir()) / "omoide-bench-vectors"
SECTION = "jsquad"
DENSE = 'dense e5-small (SemanticStore.query, rank="meaning")'
KS = (1, 5, 10)


def load(path: Path, count: int, seed: int = 7) -> tuple[list[str], list[tuple[str, int]]]:
    """The paragraphs, and a seeded sample of ``count`` (question, paragraph index)."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    paragraphs: list[str] = []
    questions: list[tuple[str, int]] = []
    for article in raw["data"]:
        for paragraph in article["paragraphs"]:
            index = len(paragraphs)
            paragraphs.append(paragraph["context"].replace(" [SEP] ", "\n", 1))
            questions.extend((qa["question"], index) for qa in paragraph["qas"])
    random.Random(seed).shuffle(questions)
    return paragraphs, questions[:count]


def run(path: Path, count: int) -> tuple[dict[str, list[int]], dict[str, list[float]]]:
    """Rank of the right paragraph (0 = first; 99 = not in the first 10) per retriever, and
    latencies."""
    from rank_bm25 import BM25Okapi

    paragraphs, questions = load(path, count)
    ids = [f"p{i}" for i in range(len(paragraphs))]
    embedder = DiskCachedEmbedder(CACHE)
    ranks: dict[str, list[int]] = {
        n: [] for n in ("Memory.recall", "SemanticStore.query", DENSE, "BM25", "RRF(BM25, dense)")
    }
    latency: dict[str, list[float]] = {
        n: [] for n in ("Memory.recall", "SemanticStore.query", DENSE)
    }
    bm25 = BM25Okapi([analyze(p) for p in paragraphs])
    with (
        tempfile.TemporaryDirectory() as tmp,
        Memory(Path(tmp), clock=ManualClock(), embedder=embedder) as mem,
    ):
        for start in range(0, len(paragraphs), 200):
            mem.semantic.store(
                "knowledge", paragraphs[start : start + 200], ids=ids[start : start + 200]
            )
            print(f"stored {start + 200}/{len(paragraphs)}", file=sys.stderr, flush=True)
        for question, gold in questions:
            embedder.embed_query(question)
            began = time.perf_counter()
            got = [i.split("/", 1)[1] for i in mem.recall(question, agent_name=None).ids()]
            latency["Memory.recall"].append(time.perf_counter() - began)
            ranks["Memory.recall"].append(_rank(got, ids[gold]))
            began = time.perf_counter()
            hits = mem.semantic.query("knowledge", question, n_results=100, touch=False)
            latency["SemanticStore.query"].append(time.perf_counter() - began)
            ranks["SemanticStore.query"].append(_rank([h.doc_id for h in hits], ids[gold]))
            began = time.perf_counter()
            hits = mem.semantic.query(
                "knowledge", question, n_results=100, touch=False, rank="meaning"
            )
            latency[DENSE].append(time.perf_counter() - began)
            dense = [int(h.doc_id[1:]) for h in hits]
            ranks[DENSE].append(_rank(dense, gold))
            words = list(np.argsort(-bm25.get_scores(analyze(question)), kind="stable")[:100])
            ranks["BM25"].append(_rank(words, gold))
            ranks["RRF(BM25, dense)"].append(_rank(rrf(words, dense), gold))
    return ranks, latency


def _rank(ranked: Sequence[Any], gold: Any) -> int:
    top = list(ranked[: max(KS)])
    return top.index(gold) if gold in top else 99


def report(ranks: dict[str, list[int]], latency: dict[str, list[float]], count: int) -> str:
    rows = ["| retriever | R@1 | R@5 | R@10 | p50 ms |", "|---|---|---|---|---|"]
    for name, values in ranks.items():
        recall = " | ".join(f"{100 * statistics.fmean(r < k for r in values):.1f}" for k in KS)
        lat = sorted(latency.get(name, []))
        p50 = f"{1000 * lat[len(lat) // 2]:.0f}" if lat else "–"
        rows.append(f"| {name} | {recall} | {p50} |")
    return (
        "## Retrieval (JSQuAD, Japanese documents)\n\n"
        f"{count} questions (seeded sample) over the 1,159 paragraphs of JSQuAD v1.3 test, each "
        "paragraph one document; all retrievers over the same paragraphs in one run. Goals: "
        "`Memory.recall` R@1 ≥ 95, R@5 ≥ 98.5, above every baseline; `SemanticStore.query` above "
        f"dense. {machine()}\n\n" + "\n".join(rows)
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--questions", type=int, default=400)
    parser.add_argument("--no-write", action="store_true", help="do not update RESULTS.md")
    args = parser.parse_args(argv)
    ranks, latency = run(args.data, args.questions)
    text = report(ranks, latency, args.questions)
    publish(SECTION, text, write=not args.no_write)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
