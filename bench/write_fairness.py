"""Write fairness: the latency of a small write while another agent's large write runs.

A real ``omoide serve`` runs in a subprocess (keys minted with the CLI). Agent ``designer``
makes small writes one after another (a one-line episode, then a one-line document,
alternately), first on the idle server, then while agent ``ceo`` stores large documents
(``--large-chars`` characters in all, within the per-request text budget). The figures are
the median and 90th percentile of the small writes' latency in both cases, and the ratio of
the medians (the goal is at most 2x). Before the embedder's work was sliced and queued fairly,
a 20 KB document held a one-line write for 20 s.

``python -m bench.write_fairness`` takes a minute or two on a small CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMOIDE_")}
    path = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    env.update(OMOIDE_HOME=str(home), PYTHONPATH=path, PYTHONIOENCODING="utf-8")
    return env


def _mint(env: dict[str, str], agent: str) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "omoide", "--json", "keys", "add", agent],
        env=env,
        check=True,
        capture_output=True,
        timeout=300,
    )
    key: str = json.loads(out.stdout)["key"]
    return key


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _small_write(client: httpx.Client, i: int) -> float:
    """One small write (an episode or a document, alternately); its latency in seconds."""
    started = time.perf_counter()
    if i % 2 == 0:
        response = client.post(
            "/v1/episodes", json={"event_type": "note", "description": f"one line {i}"}
        )
    else:
        response = client.post(
            "/v1/collections/knowledge/documents", json={"documents": [f"one-line fact {i}"]}
        )
    elapsed = time.perf_counter() - started
    if response.status_code != 201:
        raise RuntimeError(f"small write {i}: {response.status_code} {response.text[:200]}")
    return elapsed


def _large_documents(total_chars: int, count: int) -> list[str]:
    sentence = "The quarterly review of service {n} found the deploy window too narrow. "
    per_doc = total_chars // count
    docs = []
    for d in range(count):
        text, n = [], 0
        while sum(map(len, text)) < per_doc:
            text.append(sentence.format(n=f"{d}-{n}"))
            n += 1
        docs.append("".join(text)[:per_doc])
    return docs


def _summary(latencies: list[float]) -> dict[str, float]:
    ordered = sorted(latencies)
    return {
        "n": len(ordered),
        "median_ms": round(1000 * statistics.median(ordered), 1),
        "p90_ms": round(1000 * ordered[int(0.9 * (len(ordered) - 1))], 1),
        "max_ms": round(1000 * ordered[-1], 1),
    }


def run(*, large_chars: int, idle_writes: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="omoide-fairness-") as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        env = _env(home)
        keys = {agent: _mint(env, agent) for agent in ("ceo", "designer")}
        port = _free_port()
        server = subprocess.Popen(
            [sys.executable, "-m", "omoide", "serve", "--port", str(port)],
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert server.stderr is not None
            server.stderr.readline()
            threading.Thread(target=server.stderr.read, daemon=True).start()
            url = f"http://127.0.0.1:{port}"

            def client(agent: str) -> httpx.Client:
                return httpx.Client(
                    base_url=url,
                    headers={"Authorization": f"Bearer {keys[agent]}"},
                    timeout=3600,
                    transport=httpx.HTTPTransport(retries=20),
                )

            with client("designer") as small:
                for i in range(3):  # warm up: the models, the connection
                    _small_write(small, -1 - 2 * i)
                idle = [_small_write(small, i) for i in range(idle_writes)]
                large_done = threading.Event()
                large_result: dict[str, Any] = {}

                def large_write() -> None:
                    docs = _large_documents(large_chars, 10)
                    started = time.perf_counter()
                    with client("ceo") as ceo:
                        response = ceo.post(
                            "/v1/collections/knowledge/documents", json={"documents": docs}
                        )
                    large_result["status"] = response.status_code
                    large_result["seconds"] = round(time.perf_counter() - started, 1)
                    large_done.set()

                thread = threading.Thread(target=large_write)
                thread.start()
                time.sleep(1.0)  # let the large write reach the embedder
                loaded: list[float] = []
                i = idle_writes
                while not large_done.is_set():
                    loaded.append(_small_write(small, i))
                    i += 1
                thread.join()
            if server.poll() is not None:
                raise RuntimeError("the server died")
        finally:
            server.terminate()
            server.wait(timeout=60)
    idle_s, loaded_s = _summary(idle), _summary(loaded or [float("nan")])
    return {
        "large_write": {"chars": large_chars, "documents": 10, **large_result},
        "idle": idle_s,
        "under_load": loaded_s,
        "ratio_median": round(loaded_s["median_ms"] / idle_s["median_ms"], 2),
        "ratio_p90": round(loaded_s["p90_ms"] / idle_s["p90_ms"], 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--large-chars", type=int, default=60_000)
    parser.add_argument("--idle-writes", type=int, default=20)
    args = parser.parse_args(argv)
    result = run(large_chars=args.large_chars, idle_writes=args.idle_writes)
    print(json.dumps(result, indent=2))
    print(
        f"small write: idle median {result['idle']['median_ms']} ms, under load median "
        f"{result['under_load']['median_ms']} ms (p90 {result['under_load']['p90_ms']} ms) "
        f"while a {args.large_chars:,}-character store took "
        f"{result['large_write'].get('seconds')} s: ratio {result['ratio_median']}x "
        f"(goal <= 2x)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
