"""Concurrency: many agent processes against one server, and processes racing for a directory.

**Server.** One process owns the data directory and runs ``omoide serve`` (the REST app with
its MCP endpoint, under uvicorn) while a maintenance thread in the same process runs
``Memory.maintain()`` (distil, forget, collection policies) in a loop. Client processes (half
over REST, half over MCP's streamable HTTP) each write and read a fixed number of operations:
record an episode, store a document, search episodes, read back what they wrote, query
knowledge. Each client counts its operations, the errors surfaced to it (a 5xx, a transport
failure, a tool error; "database is locked" counted apart) and its latencies, and reports
every acknowledged write. When the server has stopped, the data directory is opened again and
every acknowledged write must be there, readable. :mod:`bench.replicas` runs the same server
and clients as several replicas over PostgreSQL and a Chroma server.

**Race.** Processes wait for the same instant, then all open one embedded data directory with
no timeout: exactly one must win (it writes an episode and closes), every other one must get
:class:`~omoide.errors.StoreLockedError`, and the directory must then open with the winner's
episode in it.

``python -m bench.concurrency`` runs 24 clients; ``tests/test_concurrency.py`` runs a few.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
LOCKED = "database is locked"


def _env() -> dict[str, str]:
    path = str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": path, "PYTHONIOENCODING": "utf-8"}


def _spawn(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "bench.concurrency", *args],
        cwd=ROOT,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


# -- the server process ---------------------------------------------------------------------


#: Old episodes a server writes before the clients start (see :func:`_seed_old_episodes`).
OLD_EPISODES = 120


def _seed_old_episodes(mem: Any, count: int = OLD_EPISODES) -> None:
    """Old episodes (120 days and older), so maintenance has clusters to distil and items to
    forget while the clients run."""
    from datetime import timedelta

    now = mem.clock.now()
    topics = [
        ("error", "Deploy of service {} failed: the database migration timed out"),
        ("decision", "週次ミーティングで{}の価格を月額500円に決めた"),
        ("message", "Reminder {} about the team lunch on Friday"),
    ]
    mem.episodic.record_many(
        [
            {
                "agent_name": f"agent-{i % 4:02d}",
                "event_type": topics[i % 3][0],
                "description": topics[i % 3][1].format(f"#{i}"),
                "outcome": "Raised the migration timeout" if i % 3 == 0 else None,
                "importance": 0.3 if i % 3 == 2 else 0.6,
                "timestamp": now - timedelta(days=120 + i),
            }
            for i in range(count)
        ]
    )


def server(
    directory: Path, agents: int, info: Path, *, seed: bool = True, old: int = OLD_EPISODES
) -> int:
    """Open ``directory`` (its ``omoide.toml`` may name a shared store), serve it on a free
    port, and run its maintenance in a thread until SIGTERM. With ``seed``, first write
    ``old`` old episodes for maintenance to work on, and one API key per agent (on a shared
    store, the first replica does this for all).

    The maintenance thread calls ``Memory.maintain()`` — what the scheduler of ``omoide serve``
    calls daily — every 0.2 s: it takes the maintenance lock (a lock file, or on PostgreSQL an
    advisory lock that one replica of many holds), so a run another replica is doing is
    refused with StoreLockedError, counted apart from errors."""
    import socket

    import uvicorn

    from omoide import Memory
    from omoide.errors import StoreLockedError
    from omoide.server.rest import create_app
    from omoide.service.keys import KeyStore

    mem = Memory(directory)
    assert mem.db is not None
    keys: dict[str, str] = {}
    if seed:
        _seed_old_episodes(mem, old)
        store = KeyStore(mem.db, clock=mem.clock)
        keys = {f"agent-{i:02d}": store.add(f"agent-{i:02d}")[1] for i in range(agents)}
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(256)
    stop = threading.Event()
    runs = {"maintenance": 0, "refused": 0, "errors": 0}
    errors: list[str] = []
    spans: list[tuple[float, float]] = []  # each run's start (epoch s) and end, in the lock

    def maintain() -> None:
        while not stop.is_set():
            try:
                report = mem.maintain()
                runs["maintenance"] += 1
                begun = report.started_at.timestamp()
                spans.append((begun, begun + report.seconds))
            except StoreLockedError:
                runs["refused"] += 1
            except Exception as exc:  # reported, never hidden
                runs["errors"] += 1
                errors.append(f"{type(exc).__name__}: {exc}")
            stop.wait(0.2)

    thread = threading.Thread(target=maintain, daemon=True)
    thread.start()
    uv = uvicorn.Server(uvicorn.Config(create_app(mem), log_level="error", lifespan="on"))
    port = sock.getsockname()[1]
    # Written whole, then renamed: the parent polls for the file and must never read it
    # half-written (an empty file once failed a run).
    partial = info.with_name(info.name + ".partial")
    partial.write_text(json.dumps({"url": f"http://127.0.0.1:{port}", "keys": keys}), "utf-8")
    os.replace(partial, info)
    signal.signal(signal.SIGTERM, lambda *_: setattr(uv, "should_exit", True))
    uv.run(sockets=[sock])
    stop.set()
    thread.join()
    mem.close()
    print(json.dumps({**runs, "maintenance_errors": errors[:20], "spans": spans}))
    return 0


# -- the client processes -------------------------------------------------------------------


class _Tally:
    def __init__(self) -> None:
        self.ops = 0
        self.errors: list[str] = []
        self.latencies: list[float] = []
        self.episodes: list[str] = []
        self.documents: list[str] = []

    def timed(self, call: Any, *args: Any) -> Any:
        started = time.perf_counter()
        try:
            return call(*args)
        except Exception as exc:
            self.errors.append(f"{type(exc).__name__}: {exc}"[:300])
            return None
        finally:
            self.latencies.append((time.perf_counter() - started) * 1000)
            self.ops += 1

    def report(self) -> dict[str, Any]:
        return {
            "ops": self.ops,
            "errors": self.errors,
            "latencies": self.latencies,
            "episodes": self.episodes,
            "documents": self.documents,
        }


def _text(agent: str, i: int) -> str:
    return (
        f"{agent} decided step {i}: 価格は¥{500 + i}から — deploy {i} needs DATABASE_URL"
        if i % 2
        else f"{agent} の作業メモ {i}: the search index was rebuilt after release {i}"
    )


def rest_client(url: str, key: str, agent: str, ops: int) -> dict[str, Any]:
    """``ops`` operations over REST: writes, then reads of what was written and searches."""
    import httpx

    tally = _Tally()
    with httpx.Client(
        base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=300
    ) as client:

        def ok(method: str, path: str, body: Any = None) -> Any:
            response = client.request(method, path, json=body)
            if response.status_code >= 400:
                raise RuntimeError(f"HTTP {response.status_code}: {response.text[:200]}")
            return response.json()

        fresh: list[str] = []  # read back only these: maintenance may forget the old ones
        for i in range(ops):
            kind = i % 5
            if kind == 0:
                body: dict[str, Any] = {"event_type": "decision", "description": _text(agent, i)}
                # Agents may not backdate (the server seeds the old episodes maintenance
                # works on); a routine one is still fair game for forgetting later.
                old = bool(i % 2)
                if old:
                    body |= {"importance": 0.3}
                got = tally.timed(ok, "POST", "/v1/episodes", body)
                if got is not None:
                    tally.episodes.append(got["id"])
                    if not old:
                        fresh.append(got["id"])
            elif kind == 1:
                doc_id = f"{agent}-doc-{i}"
                body = {"documents": [_text(agent, i)], "ids": [doc_id]}
                got = tally.timed(ok, "POST", "/v1/collections/knowledge/documents", body)
                if got is not None:
                    tally.documents.extend(got["ids"])  # stored as agent:doc_id
            elif kind == 2:
                body = {"query": "価格 deploy", "top_k": 5}
                tally.timed(ok, "POST", "/v1/episodes/search", body)
            elif kind == 3 and fresh:
                last = fresh[-1]
                tally.timed(ok, "GET", f"/v1/episodes/{last}")
            else:
                body = {"query_text": "search index rebuilt", "n_results": 3}
                tally.timed(ok, "POST", "/v1/collections/knowledge/query", body)
    return tally.report()


def mcp_client(url: str, key: str, agent: str, ops: int) -> dict[str, Any]:
    """``ops`` tool calls over MCP's streamable HTTP transport."""
    import anyio
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    tally = _Tally()

    async def session() -> None:
        transport = streamable_http_client(
            f"{url}/mcp",
            http_client=create_mcp_http_client(headers={"Authorization": f"Bearer {key}"}),
        )
        async with Client(transport) as client:

            async def call(tool: str, arguments: dict[str, Any]) -> Any:
                started = time.perf_counter()
                try:
                    result = await client.call_tool(tool, arguments)
                    if result.is_error:
                        text = " ".join(getattr(p, "text", "") for p in result.content)
                        raise RuntimeError(f"tool error: {text[:200]}")
                    return result.structured_content
                except Exception as exc:
                    tally.errors.append(f"{type(exc).__name__}: {exc}"[:300])
                    return None
                finally:
                    tally.latencies.append((time.perf_counter() - started) * 1000)
                    tally.ops += 1

            for i in range(ops):
                kind = i % 4
                if kind == 0:
                    got = await call("remember", {"description": _text(agent, i)})
                    if got is not None:
                        tally.episodes.append(got["id"])
                elif kind == 1:
                    doc_id = f"{agent}-doc-{i}"
                    arguments = {"content": _text(agent, i), "id": doc_id}
                    if (got := await call("store_knowledge", arguments)) is not None:
                        tally.documents.extend(got["ids"])
                elif kind == 2:
                    await call("search_episodes", {"query": "価格 deploy", "top_k": 5})
                else:
                    await call("search_knowledge", {"query": "search index rebuilt"})

    anyio.run(session)
    return tally.report()


# -- the race -------------------------------------------------------------------------------


def racer(directory: Path, at: float) -> dict[str, Any]:
    """Wait for the wall-clock instant ``at``, then try to own ``directory`` at once."""
    from omoide import Memory
    from omoide.errors import OmoideError, StoreLockedError

    time.sleep(max(0.0, at - time.time()))
    try:
        mem = Memory(directory, lock_timeout=0)
    except StoreLockedError:
        return {"result": "locked"}
    except OmoideError as exc:
        return {"result": "error", "error": f"{type(exc).__name__}: {exc}"}
    try:
        episode = mem.episodic.record("racer", "success", f"won the race at {at}")
        time.sleep(0.5)  # hold the directory while the others try
        return {"result": "won", "episode": episode.id}
    finally:
        mem.close()


# -- the parent -----------------------------------------------------------------------------


@dataclass
class ConcurrencyResult:
    """What a concurrency run did and found."""

    clients: int = 0
    rest_clients: int = 0
    mcp_clients: int = 0
    ops: int = 0
    errors: list[str] = field(default_factory=list)
    locked_errors: int = 0
    writes: int = 0
    episodes: list[str] = field(default_factory=list)
    documents: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    unindexed: list[str] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    maintenance_runs: int = 0
    maintenance_refusals: int = 0
    maintenance_spans: list[tuple[float, float]] = field(default_factory=list)
    maintenance_errors: list[str] = field(default_factory=list)
    seconds: float = 0.0
    race_rounds: int = 0
    race_processes: int = 0
    race_winners: list[int] = field(default_factory=list)
    race_problems: list[str] = field(default_factory=list)

    @property
    def maintenance_overlaps(self) -> int:
        """How many maintenance runs began before an earlier one (of any server) ended: 0
        when the maintenance lock lets one run at a time."""
        overlaps, ended = 0, float("-inf")
        for begun, end in sorted(self.maintenance_spans):
            overlaps += begun < ended
            ended = max(ended, end)
        return overlaps

    @property
    def p95_ms(self) -> float:
        from bench.results import percentiles

        return percentiles(self.latencies)[1] if self.latencies else 0.0

    @property
    def p50_ms(self) -> float:
        from bench.results import percentiles

        return percentiles(self.latencies)[0] if self.latencies else 0.0


def _json_out(process: subprocess.Popen[str], timeout: float) -> tuple[Any, str]:
    out, err = process.communicate(timeout=timeout)
    lines = out.strip().splitlines()
    if process.returncode != 0 or not lines:
        return None, err[-3000:]
    return json.loads(lines[-1]), err


def start_server(
    directory: Path, agents: int, *, seed: bool = True, old: int = OLD_EPISODES
) -> subprocess.Popen[str]:
    """A server process over ``directory`` (see :func:`server`); it writes its URL and keys
    to :func:`info_path` once it listens."""
    args = ["--server", str(directory), "--agents", str(agents), "--old", str(old)]
    args += ["--info", str(info_path(directory)), *([] if seed else ["--no-seed"])]
    return _spawn(*args)


def info_path(directory: Path) -> Path:
    return directory.parent / f"{directory.name}-server.json"


def server_info(process: subprocess.Popen[str], directory: Path, timeout: float = 300) -> Any:
    """The URL and keys the server of ``directory`` wrote once listening (waits for them)."""
    info = info_path(directory)
    deadline = time.monotonic() + timeout
    while not info.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the server did not start: {process.communicate()[1][-3000:]}")
        time.sleep(0.1)
    return json.loads(info.read_text("utf-8"))


def run_clients(
    urls: list[str], keys: dict[str, str], ops: int, result: ConcurrencyResult
) -> list[dict[str, Any]]:
    """One client process per key, ``ops`` operations each, alternately REST and MCP; each
    (REST, MCP) pair goes to the next server of ``urls`` in turn, so every server serves both
    transports. Counts the clients and the wall time from the first start to the last exit."""
    started = time.monotonic()
    procs = []
    for i, (agent, key) in enumerate(sorted(keys.items())):
        transport = "rest" if i % 2 == 0 else "mcp"
        url = urls[(i // 2) % len(urls)]
        args = ["--key", key, "--agent", agent, "--ops", str(ops)]
        procs.append(_spawn(f"--{transport}-client", url, *args))
    reports = []
    for i, proc in enumerate(procs):
        report, err = _json_out(proc, timeout=3600)
        if report is None:
            result.errors.append(f"client {i} crashed: {err}")
            continue
        reports.append(report)
    result.seconds = time.monotonic() - started
    result.clients = len(procs)
    result.rest_clients = (len(procs) + 1) // 2
    result.mcp_clients = len(procs) // 2
    for report in reports:
        result.ops += report["ops"]
        result.errors += report["errors"]
        result.latencies += report["latencies"]
        result.episodes += report["episodes"]
        result.documents += report["documents"]
    result.writes = len(result.episodes) + len(result.documents)
    return reports


def stop_server(process: subprocess.Popen[str], result: ConcurrencyResult) -> None:
    """SIGTERM, then add the server's maintenance runs, refusals and errors to ``result``."""
    process.send_signal(signal.SIGTERM)
    summary, err = _json_out(process, timeout=300)
    if summary is None:
        result.maintenance_errors.append(f"server exit: {err}")
        return
    result.maintenance_runs += int(summary["maintenance"])
    result.maintenance_refusals += int(summary["refused"])
    result.maintenance_errors += summary["maintenance_errors"]
    result.maintenance_spans += [(float(a), float(b)) for a, b in summary["spans"]]


def check_writes(directory: Path, result: ConcurrencyResult, config: Any = None) -> None:
    """With every server stopped, open the store (``directory``, with ``config`` if given:
    a shared one) and check each acknowledged write: an episode must be readable (``get``)
    unless an audited deletion removed it; a document must be readable and settled (not left
    *pending*: read before opening, since opening completes such writes). Live ones whose
    vectors are missing from Chroma go to ``result.unindexed``: not lost, as the database
    keeps every vector, but searches miss them until the next resync."""
    from omoide import Config, Memory
    from omoide.clock import SystemClock
    from omoide.errors import NotFoundError
    from omoide.layers.episodic.chroma_vectors import EPISODES_COLLECTION
    from omoide.layers.episodic.rows import LIVE_SQL
    from omoide.memory import DB_NAME
    from omoide.storage.chroma import chroma_client, collection_name
    from omoide.storage.opening import open_database

    settings = config or Config()
    db = open_database(directory / DB_NAME, settings.storage.url, settings, SystemClock())
    try:
        sql = "SELECT id FROM semantic_docs WHERE collection = 'knowledge' AND state = 'pending'"
        pending = {r[0] for r in db.query(sql)}
    finally:
        db.close()
    result.lost += [f"document {d} left pending" for d in result.documents if d in pending]
    with Memory(directory, config=config) as mem:
        assert mem.db is not None
        deleted = "SELECT item_id FROM audit_log WHERE action = 'delete'"
        removed = {r[0] for r in mem.db.query(deleted)}
        for episode_id in result.episodes:
            try:
                mem.episodic.get(episode_id)
            except NotFoundError:
                if episode_id not in removed:
                    result.lost.append(f"episode {episode_id}")
        live_docs: list[str] = []
        for doc_id in result.documents:
            try:
                if mem.semantic.get("knowledge", doc_id).state == "active":
                    live_docs.append(doc_id)
            except NotFoundError:
                if doc_id not in removed:
                    result.lost.append(f"document {doc_id}")
        client = chroma_client(mem.path, mem.config.semantic)
        chunks = client.get_collection(collection_name(mem.config.semantic, "knowledge"))
        wanted = [f"{d}#0" for d in live_docs]
        found = set(chunks.get(ids=wanted, include=[])["ids"]) if wanted else set()
        result.unindexed += [f"document {d}" for d in live_docs if f"{d}#0" not in found]
        if mem.config.episodic.vector_store != "chroma":
            return  # episode vectors are in the database and the process's matrix
        rowids = dict(mem.db.query(f"SELECT id, rowid FROM episodes WHERE {LIVE_SQL}"))
        live = {str(rowids[e]): e for e in result.episodes if e in rowids}
        vectors = client.get_collection(collection_name(mem.config.semantic, EPISODES_COLLECTION))
        found = set(vectors.get(ids=list(live), include=[])["ids"]) if live else set()
        result.unindexed += [f"episode {e}" for rowid, e in live.items() if rowid not in found]


def run_server(clients: int, ops: int, directory: Path, result: ConcurrencyResult) -> None:
    """``clients`` processes (alternately REST and MCP), ``ops`` operations each."""
    srv = start_server(directory, clients)
    try:
        info = server_info(srv, directory)
        run_clients([info["url"]], info["keys"], ops, result)
    finally:
        stop_server(srv, result)
    result.locked_errors = sum(LOCKED in e for e in result.errors + result.maintenance_errors)
    check_writes(directory, result)


def run_race(rounds: int, processes: int, directory: Path, result: ConcurrencyResult) -> None:
    """``rounds`` races of ``processes`` processes opening one directory at the same instant."""
    from omoide import Memory

    result.race_rounds = rounds
    result.race_processes = processes
    won: list[str] = []
    for round_ in range(rounds):
        at = time.time() + 8.0  # time to import and reach the start line
        procs = [_spawn("--racer", str(directory), "--at", str(at)) for _ in range(processes)]
        outcomes = []
        for proc in procs:
            report, err = _json_out(proc, timeout=600)
            outcomes.append(report or {"result": "crashed", "error": err})
        winners = [o for o in outcomes if o["result"] == "won"]
        result.race_winners.append(len(winners))
        won += [w["episode"] for w in winners]
        if len(winners) != 1:
            result.race_problems.append(f"round {round_}: {len(winners)} winners")
        for o in outcomes:
            if o["result"] not in ("won", "locked"):
                result.race_problems.append(f"round {round_}: {o}")
    with Memory(directory) as mem:
        assert mem.db is not None
        if mem.db.scalar("PRAGMA integrity_check") != "ok":
            result.race_problems.append("integrity check failed after the races")
        for episode_id in won:
            if mem.episodic.get(episode_id) is None:
                result.race_problems.append(f"the winner's episode {episode_id} is missing")


def run(
    clients: int, ops: int, race_rounds: int, race_processes: int, workdir: Path
) -> ConcurrencyResult:
    result = ConcurrencyResult()
    (workdir / "served").mkdir(parents=True, exist_ok=True)
    (workdir / "raced").mkdir(parents=True, exist_ok=True)
    run_server(clients, ops, workdir / "served" / "data", result)
    run_race(race_rounds, race_processes, workdir / "raced" / "data", result)
    return result


def summary(result: ConcurrencyResult) -> list[tuple[str, object]]:
    """The figures of a concurrency run, as (label, value) rows."""
    return [
        (
            "client processes (REST + MCP)",
            f"{result.clients} ({result.rest_clients} + {result.mcp_clients})",
        ),
        ("operations", result.ops),
        ("errors surfaced to clients", len(result.errors)),
        ('of which "database is locked"', result.locked_errors),
        ("writes acknowledged / lost", f"{result.writes} / {len(result.lost)}"),
        ("latency p50 / p95, ms", f"{result.p50_ms:.0f} / {result.p95_ms:.0f}"),
        ("throughput, ops/s", f"{result.ops / result.seconds:.1f}" if result.seconds else "-"),
        (
            "maintenance runs during the load (errors)",
            f"{result.maintenance_runs} ({len(result.maintenance_errors)})",
        ),
        ("open races × processes", f"{result.race_rounds} × {result.race_processes}"),
        ("winners per race", ", ".join(map(str, result.race_winners))),
        ("race problems", len(result.race_problems)),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=24)
    parser.add_argument("--ops", type=int, default=50)
    parser.add_argument("--race-rounds", type=int, default=5)
    parser.add_argument("--race-processes", type=int, default=8)
    parser.add_argument("--server", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--agents", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--info", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--no-seed", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--old", type=int, default=OLD_EPISODES, help=argparse.SUPPRESS)
    parser.add_argument("--rest-client", help=argparse.SUPPRESS)
    parser.add_argument("--mcp-client", help=argparse.SUPPRESS)
    parser.add_argument("--key", help=argparse.SUPPRESS)
    parser.add_argument("--agent", help=argparse.SUPPRESS)
    parser.add_argument("--racer", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--at", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.server is not None:
        return server(args.server, args.agents, args.info, seed=not args.no_seed, old=args.old)
    if args.rest_client or args.mcp_client:
        client = rest_client if args.rest_client else mcp_client
        print(
            json.dumps(client(args.rest_client or args.mcp_client, args.key, args.agent, args.ops))
        )
        return 0
    if args.racer is not None:
        print(json.dumps(racer(args.racer, args.at)))
        return 0
    with tempfile.TemporaryDirectory(prefix="omoide-concurrency-") as tmp:
        result = run(args.clients, args.ops, args.race_rounds, args.race_processes, Path(tmp))
    for label, value in summary(result):
        print(f"{label:45} {value}")
    for problem in (result.errors + result.lost + result.race_problems)[:30]:
        print("PROBLEM:", problem)
    failed = result.errors or result.lost or result.race_problems or result.maintenance_errors
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
