"""Past one machine: client processes against 1, 2 and 3 ``omoide serve`` replicas sharing one
PostgreSQL database and one Chroma server, beside the embedded server, in one run.

    python -m bench.replicas --database-url postgresql://USER@HOST:PORT/postgres
    python -m bench.replicas --clients 4 --ops 10 --replicas 2 --database-url ...   # smaller

Each configuration runs the clients of :mod:`bench.concurrency` (half REST, half MCP; the same
agents, operations and texts every time) against fresh state: the embedded server over a new
data directory, or ``N`` replica processes, each with a data directory of its own whose
``omoide.toml`` names a new database (created on ``--database-url``'s server, dropped
afterwards) and a Chroma server this run starts in a temporary directory. Clients go to the
replicas in turn, a REST and an MCP client at a time, so each replica serves both transports.
The first replica writes the old episodes maintenance works on and the agents' API keys; every
replica runs maintenance in a thread as ``omoide serve`` does (``Memory.maintain()``, here every
0.2 s instead of daily), and the advisory lock in the database lets one run at a time: the
others' attempts are counted as refusals. When every replica has stopped, a new process's view
of the shared store must hold every acknowledged episode and document, readable.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.concurrency import (
    LOCKED,
    OLD_EPISODES,
    ConcurrencyResult,
    check_writes,
    run_clients,
    run_server,
    server_info,
    start_server,
    stop_server,
)
from bench.results import machine, table, write_section
from bench.shared_store import SharedStore, shared_store


@dataclass
class Configuration:
    """One configuration of the run and what it did."""

    label: str
    servers: int
    result: ConcurrencyResult
    seconds: float = 0.0  # from the first server's start to the check's end


def run_replicas(
    replicas: int,
    clients: int,
    ops: int,
    store: SharedStore,
    workdir: Path,
    old: int = OLD_EPISODES,
) -> ConcurrencyResult:
    """``clients`` client processes against ``replicas`` server processes over ``store``
    (the first writing ``old`` old episodes before the clients start)."""
    result = ConcurrencyResult()
    directories = [workdir / f"replica-{i + 1}" / "data" for i in range(replicas)]
    for directory in directories:
        store.write_toml(directory)
    # All start at once (one of them creates the tables, the others wait for it); the first
    # writes the agents' keys and the old episodes.
    servers = [start_server(d, clients, seed=i == 0, old=old) for i, d in enumerate(directories)]
    try:
        infos = [server_info(s, d) for s, d in zip(servers, directories, strict=True)]
        run_clients([info["url"] for info in infos], infos[0]["keys"], ops, result)
    finally:
        for process in servers:
            stop_server(process, result)
    result.locked_errors = sum(LOCKED in e for e in result.errors + result.maintenance_errors)
    check_writes(workdir / "reader" / "data", result, store.config())
    return result


def run(
    clients: int,
    ops: int,
    replicas: list[int],
    database_url: str,
    workdir: Path,
    embedded: bool = True,
) -> list[Configuration]:
    """The embedded server (unless not ``embedded``), then each replica count, in turn."""
    done: list[Configuration] = []
    if embedded:
        started = time.monotonic()
        result = ConcurrencyResult()
        (workdir / "embedded").mkdir(parents=True)
        run_server(clients, ops, workdir / "embedded" / "data", result)
        done.append(Configuration("embedded (SQLite + ChromaDB)", 1, result))
        done[-1].seconds = time.monotonic() - started
    for count in replicas:
        started = time.monotonic()
        place = workdir / f"replicas-{count}"
        with shared_store(database_url, place) as store:
            result = run_replicas(count, clients, ops, store, place)
        label = f"{count} replica{'s' * (count > 1)} (PostgreSQL + Chroma server)"
        done.append(Configuration(label, count, result, time.monotonic() - started))
    return done


def rows(done: list[Configuration]) -> list[list[object]]:
    """One row a configuration: the figures the issue asks for."""
    out: list[list[object]] = []
    for c in done:
        r = c.result
        out.append(
            [
                c.label,
                f"{r.clients} ({r.rest_clients} + {r.mcp_clients})",
                r.ops,
                f"{r.ops / r.seconds:.1f}" if r.seconds else "-",
                f"{r.p50_ms:.0f} / {r.p95_ms:.0f}",
                len(r.errors),
                f"{r.writes} / {len(r.lost)}",
                len(r.unindexed),
                f"{r.maintenance_runs} / {r.maintenance_refusals} / {r.maintenance_overlaps} "
                f"({len(r.maintenance_errors)})",
                f"{sum(end - begun for begun, end in r.maintenance_spans):.0f}",
                f"{c.seconds:.0f}",
            ]
        )
    return out


HEADERS = [
    "configuration",
    "client processes (REST + MCP)",
    "operations",
    "ops/s",
    "p50 / p95 ms",
    "errors",
    "writes acknowledged / lost",
    "vectors missing",
    "maintenance runs / refusals / overlaps (errors)",
    "maintenance busy s",
    "wall s",
]


def section(done: list[Configuration], clients: int, ops: int, replicas: list[int]) -> str:
    """The ``replicas`` section of bench/RESULTS.md."""
    counts = ",".join(map(str, replicas))
    return "\n\n".join(
        [
            "## Past one machine: replicas over PostgreSQL and a Chroma server",
            f"### Replicas under load (`python -m bench.replicas --clients {clients} --ops {ops} "
            f"--replicas {counts} --database-url postgresql://…`)",
            f"Machine: {machine()}; PostgreSQL, the Chroma server, every replica and every "
            f"client share its cores. {ops} operations per client (record, store a document, "
            "search episodes, read back, query knowledge), the same clients in each "
            "configuration, each configuration on fresh state. Goals: errors 0, writes lost 0. "
            "Lost: an acknowledged episode or document not readable by a new process after "
            "every server stopped. Vectors missing: acknowledged, still live, but absent from "
            "the Chroma collection (searches miss them until a resync). Maintenance: every "
            "server calls `Memory.maintain()` every 0.2 s; a refusal is an attempt made while "
            "another replica held the maintenance lock; overlaps (goal 0): runs that began "
            "before another server's run ended, by the times each run took inside the lock; "
            "busy: the time runs held it, summed. Ops/s: operations over the clients' wall "
            "time (their start-up included); wall: servers' start to the check's end.",
            table(HEADERS, rows(done)),
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=24)
    parser.add_argument("--ops", type=int, default=50, help="operations per client")
    parser.add_argument("--replicas", default="1,2,3", help="replica counts, e.g. 1,2,3")
    parser.add_argument(
        "--database-url",
        required=True,
        help="a PostgreSQL server whose user may CREATE DATABASE (one is made per configuration "
        "and dropped afterwards)",
    )
    parser.add_argument("--no-embedded", action="store_true", help="skip the embedded baseline")
    parser.add_argument("--write", action="store_true", help="write bench/RESULTS.md's section")
    args = parser.parse_args(argv)
    replicas = [int(n) for n in args.replicas.split(",") if n.strip()]
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="omoide-replicas-") as tmp:
        done = run(
            args.clients,
            args.ops,
            replicas,
            args.database_url,
            Path(tmp),
            embedded=not args.no_embedded,
        )
    body = section(done, args.clients, args.ops, replicas)
    print(body)
    print(f"\nwhole run: {time.monotonic() - started:.0f} s")
    problems = [
        f"{c.label}: {p}"
        for c in done
        for p in c.result.errors + c.result.lost + c.result.unindexed + c.result.maintenance_errors
    ]
    problems += [
        f"{c.label}: {c.result.maintenance_overlaps} overlapping maintenance runs"
        for c in done
        if c.result.maintenance_overlaps
    ]
    for problem in problems[:40]:
        print("PROBLEM:", problem)
    if args.write:
        print(f"written to {write_section('replicas', body)}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
