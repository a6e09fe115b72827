"""Reliability figures in one command: crashes, concurrency and hostile input.

    python -m bench.reliability                 # 200 SIGKILLs, 24 clients, 200 fuzz examples
    python -m bench.reliability --kills 20 --clients 8 --fuzz-examples 50   # quicker

Runs :mod:`bench.crash`, :mod:`bench.concurrency`, and the property-based and schemathesis
tests (``tests/test_hostile_input.py``, ``tests/test_server_mcp_fuzz.py``,
``tests/test_server_fuzz.py``) with more examples than CI, then writes the "Reliability"
section of ``bench/RESULTS.md``. The baseline each figure is held against is the goal the
guarantee sets: zero lost writes, zero errors surfaced, exactly one owner per directory.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import concurrency, crash
from bench.results import RESULTS, machine, table, write_section

ROOT = Path(__file__).resolve().parent.parent
FUZZ_FILES = (
    "tests/test_hostile_input.py",
    "tests/test_server_mcp_fuzz.py",
    "tests/test_server_fuzz.py",
)
PYTEST_OPTIONS = ("--hypothesis-show-statistics", "-W", "ignore")
#: What the full runs showed and is not resolved.
OPEN = [
    "At 100 examples per operation, schemathesis reported one contract failure on "
    "`POST /v1/episodes` that did not reproduce when Hypothesis replayed it (a FlakyFailure, "
    "so it depends on the state earlier operations left in the shared server); it did not "
    "reproduce in a run of that operation alone. The test now prints the underlying "
    "failures so the next full run names it. CI size (12 examples) passes.",
    "In the crash run the kill usually landed before a worker's forget() returned, so few "
    "or no audit rows were acknowledged; the audit rows forgetting did write (hundreds) were "
    "checked after every kill against the state of their items (deleted items absent, "
    "archived archived, compressed compressed), and the acknowledged episodes it deleted "
    "were accounted for by their audit rows.",
    "Latency p95 under 24 clients is dominated by the two shared cores (embedding runs on "
    "the server's CPU for every write and search); the counts, not the latencies, are the "
    "result here.",
]
#: Bugs the hostile-input and crash runs found, fixed in the library with a regression test.
FOUND_AND_FIXED: list[tuple[str, str]] = [
    (
        "`semantic.query` with a NaN/inf or non-scalar `where` operand raised ChromaDB's "
        "`InvalidArgumentError` (not an omoide error)",
        "operands checked at the boundary (`ValidationError` naming `where.key.$op`); "
        "`test_filters_chroma_refuses_are_validation_errors`",
    ),
    (
        "`where_document` with an invalid `$regex` (or a non-string operand) raised ChromaDB's "
        "`InvalidArgumentError`",
        "Chroma's filter errors translated to `ValidationError('where_document')`; same test",
    ),
    (
        "`procedural.rollback(name, 10**30)` raised `OverflowError` from the SQLite driver",
        "a version beyond SQLite's integers is `NotFoundError`; "
        "`test_rollback_to_a_version_beyond_sqlite_integers_is_not_found`",
    ),
    (
        "importing an export whose procedure version lacks `version` (or a document lacks "
        "`state`) raised `KeyError`: a column of a composite INTEGER primary key was taken for "
        "the rowid and treated as optional",
        "only a lone INTEGER PRIMARY KEY is optional; a document's state is required; "
        "`test_import_refuses_a_record_without_a_key_column`, and the damaged-export property",
    ),
]


def run_fuzz(examples: int) -> tuple[list[tuple[str, str, str]], str, float]:
    """Run the fuzz tests with ``examples`` per property; per-test example counts."""
    env = {**os.environ, "OMOIDE_FUZZ_EXAMPLES": str(examples)}
    started = time.monotonic()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            *FUZZ_FILES,
            "-q",
            "-p",
            "no:cacheprovider",
            *PYTEST_OPTIONS,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.monotonic() - started
    rows: list[tuple[str, str, str]] = []
    current = None
    for line in proc.stdout.splitlines():
        test = re.match(r"^(tests/\S+::\S+?)(\[.*\])?:\s*$", line.strip())
        if test:
            current = test.group(0).rstrip(":")
            continue
        counts = re.search(r"(\d+) passing(?: examples?)?, (\d+) failing", line)
        if counts and current:
            rows.append((current.split("::")[1], counts.group(1), counts.group(2)))
            current = None
    summary = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr[-500:]
    return rows, summary, seconds


PARTS = ("crash", "concurrency", "fuzz")


def _previous_parts() -> dict[str, str]:
    """The subsections of the Reliability section already in RESULTS.md, by part."""
    text = RESULTS.read_text(encoding="utf-8") if RESULTS.exists() else ""
    found = re.search(r"<!-- reliability:start -->(.*?)<!-- reliability:end -->", text, re.S)
    parts: dict[str, str] = {}
    for block in (found.group(1) if found else "").split("\n### ")[1:]:
        for part, heading in zip(PARTS, HEADINGS, strict=True):
            if block.startswith(heading):
                parts[part] = "### " + block.strip()
    return parts


HEADINGS = ("Crashes", "Concurrency", "Hostile input")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--clients", type=int, default=24)
    parser.add_argument("--ops", type=int, default=50)
    parser.add_argument("--race-rounds", type=int, default=5)
    parser.add_argument("--race-processes", type=int, default=8)
    parser.add_argument("--fuzz-examples", type=int, default=200)
    parser.add_argument(
        "--only",
        choices=(*PARTS, "report"),
        action="append",
        help="run only this part (repeatable; report: none, rewrite the section); "
        "the other parts' figures already in RESULTS.md are kept",
    )
    parser.add_argument("--no-write", action="store_true", help="print, do not touch RESULTS.md")
    args = parser.parse_args(argv)
    chosen = args.only or list(PARTS)

    parts = _previous_parts()
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="omoide-reliability-") as tmp:
        if "crash" in chosen:
            print(f"crash: {args.kills} SIGKILLs (seed {args.seed}) ...", flush=True)
            crashed = crash.run(args.kills, args.seed, Path(tmp) / "crash" / "data")
            rows = crash.summary(crashed)
            for label, value in rows:
                print(f"  {label:55} {value}")
            problems += crashed.problems
            parts["crash"] = "### Crashes (SIGKILL at seeded random moments)\n\n" + table(
                ["figure", "value", "goal"], _with_goals(rows, CRASH_GOALS)
            )
        if "concurrency" in chosen:
            print(f"concurrency: {args.clients} clients × {args.ops} operations ...", flush=True)
            workdir = Path(tmp) / "concurrency"
            concurrent = concurrency.run(
                args.clients, args.ops, args.race_rounds, args.race_processes, workdir
            )
            rows = concurrency.summary(concurrent)
            for label, value in rows:
                print(f"  {label:45} {value}")
            problems += concurrent.errors + concurrent.lost + concurrent.race_problems
            parts["concurrency"] = (
                "### Concurrency (client processes against one server maintaining its store)"
                f"\n\n{args.ops} operations per client.\n\n"
                + table(["figure", "value", "goal"], _with_goals(rows, CONCURRENCY_GOALS))
            )
    if "fuzz" in chosen:
        print(f"fuzz: {args.fuzz_examples} examples per property ...", flush=True)
        fuzz_rows, fuzz_summary, fuzz_seconds = run_fuzz(args.fuzz_examples)
        for row in fuzz_rows:
            print("  ", *row)
        print("  pytest:", fuzz_summary)
        if " failed" in fuzz_summary:
            problems.append(f"fuzz: {fuzz_summary}")
        parts["fuzz"] = (
            f"### Hostile input ({args.fuzz_examples} examples per property; schemathesis: up "
            f"to {args.fuzz_examples} per REST operation and mode)\n\n"
            + table(["property", "passing examples", "failing"], fuzz_rows)
            + f"\n\npytest: {fuzz_summary} ({fuzz_seconds:.0f} s)"
        )

    body = "\n\n".join(
        [
            "## Reliability",
            f"`python -m bench.reliability` — {machine()}. Taken on a shared machine (two "
            "cores, other jobs running): latencies are noisy; the counts are not.",
            *(parts[p] for p in PARTS if p in parts),
            "### Open\n\n" + "\n".join(f"- {item}" for item in OPEN),
            "### Failures found and fixed\n\n"
            + (
                table(["bug", "fix and regression test"], FOUND_AND_FIXED)
                if FOUND_AND_FIXED
                else "None found."
            ),
        ]
    )
    if not args.no_write:
        print("wrote", write_section("reliability", body))
    for problem in problems[:30]:
        print("PROBLEM:", problem)
    return 1 if problems else 0


CRASH_GOALS = {
    "SIGKILLs": "≥ 200",
    "acknowledged writes lost": "0",
    "problems found": "0",
}
CONCURRENCY_GOALS = {
    "errors surfaced to clients": "0",
    'of which "database is locked"': "0",
    "writes acknowledged / lost": "… / 0",
    "winners per race": "1 each",
    "race problems": "0",
}


def _with_goals(
    rows: list[tuple[str, object]], goals: dict[str, str]
) -> list[tuple[str, object, str]]:
    return [(label, value, goals.get(label, "")) for label, value in rows]


if __name__ == "__main__":
    sys.exit(main())
