"""Crash harness: SIGKILL a worker at random moments and check that nothing was lost.

A worker process opens a data directory (which completes what the previous crash interrupted),
checks the store against every write acknowledged so far, reports the result, then loops:
record episodes, store documents (with subjects, so versions supersede each other), advance its
injected clock, and now and then distil and forget. Each call that returns is acknowledged on
the worker's stdout (one JSON line). The parent kills the worker with SIGKILL after a seeded
random delay, keeps the acknowledgements that reached it, and starts the next worker, which
checks them. A last worker only checks (and reruns distillation and forgetting twice to prove
the rerun adds no duplicates).

Checks after every kill:

* the store opens (recovery included) and SQLite's integrity check passes;
* every acknowledged episode, document and knowledge document is present (or its removal is
  in the audit log: forgetting may delete what is old enough);
* nothing is half-written: every episode has an embedding of the model's size and a full-text
  row; every distilled document's source episodes are marked with it, and no journal entry
  is left; every item's latest audit action matches its state; every active document has all
  its chunks in Chroma and every chunk in Chroma belongs to an active document; no document
  is left in a transitional state;
* rerunning distillation marks no episode twice and writes no second document for the same
  sources.

Full size (``python -m bench.crash``) kills 200 times; ``tests/test_crash.py`` runs the same
harness with a few kills.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BASE_TIME = datetime(2026, 1, 1, tzinfo=UTC)
TOPICS = [
    ("deploy", "The deploy failed because DATABASE_URL was missing", "Added DATABASE_URL"),
    ("pricing", "価格設定は¥500から始めることにした", None),
    ("search", "Vector search uses cosine similarity over HNSW", None),
    ("support", "顧客からの問い合わせに24時間以内に返信する", None),
]


# -- the worker -----------------------------------------------------------------------------


def _emit(kind: str, **data: Any) -> None:
    sys.stdout.write(json.dumps({"kind": kind, **data}, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def verify(mem: Any, acks: dict[str, Any]) -> list[str]:
    """Every problem found in the store opened as ``mem``, given the acknowledged writes."""
    problems: list[str] = []
    db = mem.db
    if db.scalar("PRAGMA integrity_check") != "ok":
        problems.append("sqlite integrity_check failed")
    episodes = {r["id"]: r for r in db.query("SELECT rowid, id, state, embedding FROM episodes")}
    docs = {
        (r["collection"], r["id"]): r
        for r in db.query("SELECT collection, id, state, chunk_count, metadata FROM semantic_docs")
    }
    audit_rows = db.query("SELECT layer, collection, item_id, action FROM audit_log ORDER BY id")
    removed = {
        (r["layer"], r["collection"], r["item_id"])
        for r in audit_rows
        if r["action"] in ("delete", "overflow")
    }
    last_action = {(r["layer"], r["collection"], r["item_id"]): r["action"] for r in audit_rows}

    # Acknowledged writes are present.
    for episode_id in acks.get("episode", []):
        if episode_id not in episodes and ("episodic", "", episode_id) not in removed:
            problems.append(f"acknowledged episode {episode_id} lost")
    for collection, doc_id in acks.get("document", []):
        if (collection, doc_id) not in docs and ("semantic", collection, doc_id) not in removed:
            problems.append(f"acknowledged document {collection}/{doc_id} lost")
    for doc_id in acks.get("knowledge", []):
        key = ("decisions", doc_id)
        if key not in docs and ("semantic", "decisions", doc_id) not in removed:
            problems.append(f"acknowledged knowledge {doc_id} lost")
    if len(audit_rows) < int(acks.get("audit", 0)):
        problems.append(f"audit log shrank: {len(audit_rows)} < {acks.get('audit')}")

    # Episodes: embedding of the right size, one full-text row each.
    size = mem.embedder.dimension * 4
    for row in episodes.values():
        if row["embedding"] is None or len(row["embedding"]) != size:
            problems.append(f"episode {row['id']} has no embedding of {size} bytes")
    fts = {r[0] for r in db.query("SELECT rowid FROM episodes_fts")}
    missing_fts = {r["rowid"] for r in episodes.values()} - fts
    if missing_fts:
        problems.append(f"{len(missing_fts)} episodes without a full-text row")

    # Distillation: knowledge and source marks together; no journal left; no duplicates.
    if db.scalar("SELECT COUNT(*) FROM distill_journal"):
        problems.append("distillation journal not empty after open")
    sources: dict[str, str] = {}
    for (_collection, doc_id), row in docs.items():
        meta = json.loads(row["metadata"])
        if meta.get("source") != "distillation":
            continue
        for source in str(meta.get("source_episodes", "")).split(","):
            if source in sources:
                problems.append(f"episode {source} distilled into {sources[source]} and {doc_id}")
            sources[source] = doc_id
            episode = db.query_one("SELECT distilled_into FROM episodes WHERE id = ?", (source,))
            if episode is not None and episode["distilled_into"] != doc_id:
                problems.append(f"episode {source} of knowledge {doc_id} not marked with it")
    for row in db.query("SELECT id, distilled_into FROM episodes WHERE distilled_into IS NOT NULL"):
        if ("decisions", row["distilled_into"]) not in docs and (
            "semantic",
            "decisions",
            row["distilled_into"],
        ) not in removed:
            problems.append(f"episode {row['id']} marked with missing {row['distilled_into']}")

    # The audit log and the items agree.
    expected = {"archive": ("archived",), "compress": ("compressed",)}
    for (layer, collection, item_id), action in last_action.items():
        row = episodes.get(item_id) if layer == "episodic" else docs.get((collection, item_id))
        if action == "delete" and row is not None:
            problems.append(f"{layer} {item_id}: audited delete but still present")
        elif action in expected and (row is None or row["state"] not in expected[action]):
            state = None if row is None else row["state"]
            problems.append(f"{layer} {item_id}: audited {action} but state {state}")
        elif action == "restore" and (row is None or row["state"] not in ("active", "compressed")):
            problems.append(f"{layer} {item_id}: audited restore but not live")

    # Chroma and the registry agree.
    for row in docs.values():
        if row["state"] not in ("active", "archived", "compressed"):
            problems.append(f"document {row['id']} left in state {row['state']}")
    for collection in mem.semantic.collections:
        got = mem.semantic._collection(collection).get(include=[])
        chunks = set(got["ids"])
        wanted = {
            f"{doc_id}#{i}"
            for (coll, doc_id), row in docs.items()
            if coll == collection and row["state"] in ("active", "compressed")
            for i in range(int(row["chunk_count"]))
        }
        if wanted - chunks:
            problems.append(f"{collection}: {len(wanted - chunks)} chunks missing from Chroma")
        if chunks - wanted:
            problems.append(f"{collection}: {len(chunks - wanted)} Chroma chunks without a record")
    return problems


def _knowledge_marks(mem: Any) -> tuple[int, int]:
    db = mem.db
    return (
        int(db.scalar("SELECT COUNT(*) FROM episodes WHERE distilled_into IS NOT NULL")),
        int(
            db.scalar(
                "SELECT COUNT(*) FROM semantic_docs WHERE collection = 'decisions' "
                "AND json_extract(metadata, '$.source') = 'distillation'"
            )
        ),
    )


def worker(directory: Path, acks_path: Path, seed: int, *, check_only: bool = False) -> int:
    """Open, verify, report; then write until killed (or, with ``check_only``, rerun the
    pipelines, verify again and exit)."""
    from omoide import Memory
    from omoide.clock import ManualClock

    acks = json.loads(acks_path.read_text(encoding="utf-8")) if acks_path.exists() else {}
    clock = ManualClock(BASE_TIME)
    started = time.monotonic()
    mem = Memory(directory, clock=clock)
    opened = time.monotonic() - started
    latest = mem.db.scalar("SELECT MAX(timestamp) FROM episodes")
    if latest is not None:
        clock.set(datetime.fromtimestamp(float(latest), UTC) + timedelta(days=1))
    problems = verify(mem, acks)
    mem.embedder.embed_passages(["warm up"])  # so the kill lands in the workload, not the load
    if check_only:
        before = _knowledge_marks(mem)
        mem.distill()
        mem.forget()
        middle = _knowledge_marks(mem)
        mem.distill()
        after = _knowledge_marks(mem)
        if middle != after:
            problems.append(f"rerunning distillation changed marks/documents: {middle} → {after}")
        problems += verify(mem, acks)
        _emit("checked", problems=problems, open_seconds=opened, before=before, after=after)
        mem.close()
        return 0
    _emit("ready", problems=problems, open_seconds=opened)

    rng = random.Random(seed)
    step = 0
    while True:
        step += 1
        for _ in range(3):
            topic, text, outcome = rng.choice(TOPICS)
            event = "error" if outcome else rng.choice(["decision", "message", "feedback"])
            episode = mem.episodic.record(
                f"agent-{rng.randrange(3)}",
                event,
                f"{text} (#{seed}-{step}-{rng.randrange(10**6)})",
                outcome=outcome,
                importance=rng.choice([0.2, 0.4, 0.6, 0.9]),
                tags=[topic],
            )
            _emit("episode", id=episode.id)
        topic, text, _ = rng.choice(TOPICS)
        doc_id = f"doc-{seed}-{step}"
        mem.semantic.store(
            "knowledge",
            [f"{text}. Revision {step} of the {topic} note. " * rng.choice([1, 3, 40])],
            [{"subject": topic}],
            ids=[doc_id],
            agent_name="writer",
        )
        _emit("document", collection="knowledge", id=doc_id)
        clock.advance(days=rng.choice([5, 15, 40]))
        if rng.random() < 0.4:
            report = mem.distill()
            _emit("knowledge", ids=list(report.knowledge_written))
            mem.forget()
            _emit("audit", count=int(mem.db.scalar("SELECT COUNT(*) FROM audit_log")))


# -- the parent -----------------------------------------------------------------------------


@dataclass
class CrashResult:
    """What a crash run did and found."""

    kills: int = 0
    survived: int = 0
    acknowledged: dict[str, int] = field(default_factory=dict)
    lost: int = 0
    problems: list[str] = field(default_factory=list)
    open_seconds: list[float] = field(default_factory=list)
    seconds: float = 0.0
    final_marks: tuple[int, int] = (0, 0)


class _Worker:
    """A worker process and a thread reading its acknowledgements."""

    def __init__(self, directory: Path, acks_path: Path, seed: int, check_only: bool) -> None:
        command = [sys.executable, "-m", "bench.crash", "--worker", str(directory)]
        command += ["--acks", str(acks_path), "--seed", str(seed)]
        if check_only:
            command.append("--check-only")
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        }
        self.process = subprocess.Popen(
            command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        )
        self.messages: list[dict[str, Any]] = []
        self.ready = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            try:
                message = json.loads(line)
            except ValueError:  # a line cut by the kill was never acknowledged
                continue
            self.messages.append(message)
            if message["kind"] in ("ready", "checked"):
                self.ready.set()
        self.ready.set()

    def finish(self) -> str:
        self.process.wait()
        self._reader.join()
        assert self.process.stderr is not None
        return self.process.stderr.read().decode("utf-8", "replace")


def run(kills: int, seed: int, directory: Path, *, max_delay: float = 4.0) -> CrashResult:
    """Kill a worker ``kills`` times at seeded random moments; check after each kill."""
    rng = random.Random(seed)
    result = CrashResult()
    acks: dict[str, Any] = {"episode": [], "document": [], "knowledge": [], "audit": 0}
    directory.parent.mkdir(parents=True, exist_ok=True)
    acks_path = directory.parent / f"{directory.name}.acks.json"
    started = time.monotonic()
    for index in range(kills + 1):
        acks_path.write_text(json.dumps(acks), encoding="utf-8")
        check_only = index == kills
        worker_ = _Worker(directory, acks_path, rng.randrange(10**9), check_only)
        worker_.ready.wait(timeout=600)
        if not check_only:
            time.sleep(rng.uniform(0.0, max_delay))
            worker_.process.send_signal(signal.SIGKILL)
        stderr = worker_.finish()
        first = worker_.messages[0] if worker_.messages else None
        if first is None or first["kind"] not in ("ready", "checked"):
            result.problems.append(f"worker {index} did not open the store: {stderr[-2000:]}")
            break
        result.open_seconds.append(float(first["open_seconds"]))
        problems = list(first["problems"])
        if index:
            result.survived += 1 if not problems else 0
        result.problems += [f"after kill {index}: {p}" for p in problems]
        result.lost += sum(1 for p in problems if " lost" in p)
        if check_only:
            result.final_marks = tuple(first["after"])  # type: ignore[assignment]
            if worker_.process.returncode != 0:
                result.problems.append(f"check worker failed: {stderr[-2000:]}")
            break
        result.kills += 1
        for message in worker_.messages[1:]:
            kind = message["kind"]
            if kind == "episode":
                acks["episode"].append(message["id"])
            elif kind == "document":
                acks["document"].append([message["collection"], message["id"]])
            elif kind == "knowledge":
                acks["knowledge"].extend(message["ids"])
            elif kind == "audit":
                acks["audit"] = message["count"]
    result.acknowledged = {
        "episodes": len(acks["episode"]),
        "documents": len(acks["document"]),
        "knowledge": len(acks["knowledge"]),
        "audit rows": int(acks["audit"]),
    }
    result.seconds = time.monotonic() - started
    acks_path.unlink(missing_ok=True)
    return result


def summary(result: CrashResult) -> list[tuple[str, object]]:
    """The figures of a crash run, as (label, value) rows."""
    acked = sum(result.acknowledged.values())
    kinds = ", ".join(f"{v} {k}" for k, v in result.acknowledged.items())
    marks = " / ".join(map(str, result.final_marks))
    opens = sorted(result.open_seconds)
    return [
        ("SIGKILLs", result.kills),
        ("kills survived (store opened, every check passed)", result.survived),
        ("writes acknowledged", f"{acked} ({kinds})"),
        ("acknowledged writes lost", result.lost),
        ("problems found", len(result.problems)),
        ("distilled episodes / knowledge documents at the end", marks),
        ("open + recovery, median s", f"{opens[len(opens) // 2]:.2f}" if opens else "-"),
        ("wall time, s", f"{result.seconds:.0f}"),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--max-delay", type=float, default=4.0)
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--acks", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--check-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is not None:
        return worker(args.worker, args.acks, args.seed, check_only=args.check_only)
    with tempfile.TemporaryDirectory(prefix="omoide-crash-") as tmp:
        result = run(args.kills, args.seed, Path(tmp) / "data", max_delay=args.max_delay)
    for label, value in summary(result):
        print(f"{label:55} {value}")
    for problem in result.problems[:50]:
        print("PROBLEM:", problem)
    return 1 if result.problems else 0


if __name__ == "__main__":
    sys.exit(main())
