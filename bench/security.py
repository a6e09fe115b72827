"""Security: the hostile review's attacks, replayed against a real server and counted by class.

    python -m bench.security            # every class; writes the "security" section of RESULTS.md

``omoide serve`` runs in a subprocess on a fresh directory (team ``leads`` = ceo, cto; keys for
admin, ceo, cto and designer), so a crash is seen as a dead process. Each class of attack
sends its requests over REST (and MCP where the tool exists), then checks the server still
answers ``/healthz``. Per class it counts the attack requests, the 5xx answers (goal 0), the
crashes (goal 0) and the leaks — an attack whose outcome is not the safe one the security issue
asks for: another agent's item changed, taken over or revealed (goal 0). The regression tests
(``tests/test_security_*.py``) hold each outcome in CI; this script gives the tally.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench.results import machine, publish, table, terminate

ROOT = Path(__file__).resolve().parent.parent
AGENTS = ("admin", "ceo", "cto", "designer")
#: Team leads = ceo, cto; ceo may write never-forget items; a policy for the dry run.
CONFIG = """
[teams]
leads = ["ceo", "cto"]

[protection]
writers = ["ceo"]

[[forgetting.policies]]
name = "untouched_docs"
target_layer = "semantic"
condition = "access_count == 0"
action = "delete"
grace_period_days = 30
"""


@dataclass
class Tally:
    """What one class of attack did."""

    name: str
    attacks: int = 0
    five_xx: int = 0
    crashes: int = 0
    leaks: int = 0
    notes: list[str] = field(default_factory=list)

    def leak(self, what: str) -> None:
        self.leaks += 1
        self.notes.append(what)


@dataclass
class Server:
    """A running ``omoide serve`` with one key per agent."""

    url: str
    keys: dict[str, str]
    process: subprocess.Popen[bytes]
    directory: Path

    def client(self, agent: str) -> httpx.Client:
        return httpx.Client(
            base_url=self.url, headers={"Authorization": f"Bearer {self.keys[agent]}"}, timeout=300
        )

    def alive(self) -> bool:
        if self.process.poll() is not None:
            return False
        try:
            return httpx.get(f"{self.url}/healthz", timeout=30).status_code == 200
        except httpx.HTTPError:
            return False


def _omoide(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "omoide", *args],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=300,
    )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def running_server(directory: Path) -> Iterator[Server]:
    """Mint keys, start ``omoide serve`` on a free port, stop it at the end."""
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    directory.mkdir(parents=True)
    (directory / "omoide.toml").write_text(CONFIG, "utf-8")
    keys = {}
    for agent in AGENTS:
        extra = ["--admin"] if agent == "admin" else []
        out = _omoide("--path", str(directory), "--json", "keys", "add", agent, *extra, env=env)
        keys[agent] = json.loads(out.stdout)["key"]
    port = _free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "omoide",
            "serve",
            "--path",
            str(directory),
            "--port",
            str(port),
            "--no-maintenance",
            "--log-level",
            "warning",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    server = Server(f"http://127.0.0.1:{port}", keys, process, directory)
    try:
        deadline = time.monotonic() + 180
        while not server.alive():
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the server did not start")
            time.sleep(0.5)  # a benchmark, not a test: it waits for a real process
        yield server
    finally:
        terminate(process)


def _send(tally: Tally, client: httpx.Client, method: str, path: str, **kw: Any) -> httpx.Response:
    tally.attacks += 1
    response = client.request(method, path, **kw)
    if response.status_code >= 500:
        tally.five_xx += 1
        tally.notes.append(f"{method} {path}: {response.status_code}")
    return response


# -- the classes ------------------------------------------------------------------------------


def wide_filters(server: Server, tally: Tally) -> None:
    """1. Filters wide enough to crash ChromaDB: each must be a 422 naming the field."""
    attacker = server.client("designer")
    attacker.post("/v1/collections/knowledge/documents", json={"documents": ["a seed document"]})
    filters: list[dict[str, Any]] = []
    for terms in (101, 1_000, 8_500, 10_000):
        filters.append({"where": {"$or": [{"a": i} for i in range(terms)]}})
        filters.append({"where": {"$and": [{"a": {"$ne": i}} for i in range(terms)]}})
        filters.append({"where_document": {"$or": [{"$contains": f"w{i}"} for i in range(terms)]}})
    filters.append({"where": {"a": {"$in": list(range(100_000))}}})
    filters.append({"where": {"a": {"$nin": [str(i) for i in range(100_000)]}}})
    for extra in filters:
        body = {"query_text": "seed", "n_results": 3, **extra}
        response = _send(tally, attacker, "POST", "/v1/collections/knowledge/query", json=body)
        if response.status_code not in (413, 422):
            tally.leak(f"wide filter answered {response.status_code}")
    mcp_wide_filters(server, tally)


def mcp_wide_filters(server: Server, tally: Tally) -> None:
    """1 over MCP: ``search_knowledge`` with the same filters is a tool error, not a crash."""
    import anyio
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async def session() -> None:
        headers = {"Authorization": f"Bearer {server.keys['designer']}"}
        transport = streamable_http_client(
            f"{server.url}/mcp", http_client=create_mcp_http_client(headers=headers)
        )
        async with Client(transport) as client:
            for terms in (1_000, 10_000):
                tally.attacks += 1
                where = {"$or": [{"a": i} for i in range(terms)]}
                result = await client.call_tool(
                    "search_knowledge", {"query": "seed", "where": where}
                )
                if not result.is_error:
                    tally.leak(f"search_knowledge accepted a {terms}-term filter")

    anyio.run(session)


def promotion_squatting(server: Server, tally: Tally) -> None:
    """2. Plant episodes under the ids the victim's next evicted messages would get."""
    import hashlib

    victim, attacker = server.client("ceo"), server.client("designer")
    session = "planning"
    victim.put(f"/v1/working/{session}", json={"max_tokens": 300})
    attacker.put("/v1/working/probe", json={"max_tokens": 300})
    seen = attacker.post("/v1/working/probe/messages", json={"content": "hi", "importance": 0.1})
    last = max(int(m["id"] or 0) for m in _messages(attacker, "probe")) if seen else 0
    for message_id in range(last + 1, last + 41):  # the old, computable scheme
        digest = hashlib.sha256(f"ceo\x1f{session}\x1f{message_id}".encode()).hexdigest()
        body = {"event_type": "message", "description": "planted", "id": f"wm-{digest[:24]}"}
        if _send(tally, attacker, "POST", "/v1/episodes", json=body).status_code < 400:
            tally.leak("a wm- id was accepted from a client")
    texts = [f"重要な決定 {i}: 予算は {i}00 万円" for i in range(12)]
    promoted: list[str] = []
    for text in texts:
        added = victim.post(
            f"/v1/working/{session}/messages", json={"content": text, "importance": 0.9}
        ).json()
        promoted += [e["episode_id"] for e in added["evictions"] if e["promoted"]]
    cleared = victim.post(f"/v1/working/{session}/clear").json()
    promoted += [e["episode_id"] for e in cleared["evictions"] if e["promoted"]]
    held = {victim.get(f"/v1/episodes/{i}").json().get("description") for i in promoted}
    lost = len(set(texts) - held)
    if lost:
        tally.leak(f"{lost} of {len(texts)} important messages were not promoted intact")


def _messages(client: httpx.Client, session: str) -> list[dict[str, Any]]:
    view = client.get(f"/v1/working/{session}").json()
    return list(view.get("messages") or view.get("slots", {}).get("recent_msgs", []) or [])


def existence_oracles(server: Server, tally: Tally) -> None:
    """4. Another agent's private item must look exactly like an absent one."""
    victim, attacker = server.client("ceo"), server.client("designer")
    secret = "金庫の暗証番号は 4821 です"
    stored = victim.post(
        "/v1/collections/knowledge/documents", json={"documents": [secret], "scope": "private"}
    ).json()
    episode = victim.post(
        "/v1/episodes", json={"event_type": "note", "description": secret, "scope": "private"}
    ).json()
    hidden_ids = [(episode["id"], "episodic"), (stored["ids"][0], "semantic")]
    for item_id, layer in hidden_ids:
        a = _send(tally, attacker, "POST", "/v1/restore", json={"id": item_id, "layer": layer})
        absent = item_id[:-4] + "0000"
        b = _send(tally, attacker, "POST", "/v1/restore", json={"id": absent, "layer": layer})
        if (a.status_code, a.text.replace(item_id, "ID")) != (
            b.status_code,
            b.text.replace(absent, "ID"),
        ):
            tally.leak(f"restore: {a.status_code} {a.text[:80]} vs {b.status_code} {b.text[:80]}")
    paths = [
        f"/v1/episodes/{episode['id']}",
        f"/v1/collections/knowledge/documents/{stored['ids'][0]}",
    ]
    for path in paths:
        a, b = _send(tally, attacker, "GET", path), _send(tally, attacker, "GET", path + "x")
        if a.status_code != 404 or b.status_code != 404:
            tally.leak(f"GET {path}: {a.status_code} vs {b.status_code}")
    # Guessing the content: storing or restoring each guess answers alike for the right one.
    answers: set[tuple[int, str]] = set()
    for pin in range(4815, 4826):
        guess = f"金庫の暗証番号は {pin} です"
        body = {"documents": [guess], "scope": "private"}
        got = _send(tally, attacker, "POST", "/v1/collections/knowledge/documents", json=body)
        answers.add((got.status_code, "created" if got.status_code == 201 else got.text))
    if len(answers) != 1:
        tally.leak(f"storing guesses answered {sorted(answers)}")
    explicit_ids(victim, attacker, tally)


def explicit_ids(victim: httpx.Client, attacker: httpx.Client, tally: Tally) -> None:
    """4. Writing an explicit id (episode, document, procedure name) that the victim's private
    item holds answers as writing a free one, and leaves the victim's item as it was."""
    documents = "/v1/collections/knowledge/documents"
    writes: list[tuple[str, Callable[[str], dict[str, Any]]]] = [
        ("/v1/episodes", lambda i: {"event_type": "note", "description": "x", "id": i}),
        (documents, lambda i: {"documents": ["x"], "ids": [i]}),
        ("/v1/procedures", lambda i: {"name": i, "trigger": i, "template": "x"}),
    ]
    for n, (path, body) in enumerate(writes):
        held, free = f"vault-{n}", f"free-{n}"
        victim.post(path, json={**body(held), "scope": "private"})
        a = _send(tally, attacker, "POST", path, json=body(held))
        b = _send(tally, attacker, "POST", path, json=body(free))
        if a.status_code != b.status_code or a.text.count(held) != b.text.count(free):
            tally.leak(f"POST {path}: {a.status_code} {a.text[:80]} vs {b.status_code}")
        mine = victim.get(f"{path}/{held}")
        if mine.status_code != 200 or mine.json().get("agent_name") != "ceo":
            tally.leak(f"the victim's {path} item changed: {mine.text[:80]}")


def foreign_supersede(server: Server, tally: Tally) -> None:
    """3. Storing another agent's subject must not make its document superseded."""
    victim, attacker = server.client("ceo"), server.client("designer")
    meta = [{"subject": "pricing.floor"}]
    body = {"documents": ["価格の下限は¥500"], "ids": ["floor-v1"], "metadatas": meta}
    victim.post("/v1/collections/decisions/documents", json={**body, "scope": "global"})
    for i in range(5):
        body = {"documents": [f"価格の下限は¥{10 + i}"], "metadatas": meta, "scope": "global"}
        _send(tally, attacker, "POST", "/v1/collections/decisions/documents", json=body)
    got = victim.get("/v1/collections/decisions/documents/floor-v1").json()
    if got.get("superseded_by") is not None:
        tally.leak("the victim's decision was superseded by another agent")


def context_key_probe(server: Server, tally: Tally) -> None:
    """5. An outsider's probe in a leads thread must not score by the leads' words."""
    ceo, designer = server.client("ceo"), server.client("designer")
    words = ["Osaka", "layoffs", "Zephyrine", "Sapporo", "bonuses", "Quillory"]

    def record(client: httpx.Client, text: str, scope: str = "global") -> str:
        body = {"event_type": "message", "description": text, "scope": scope}
        body["context"] = {"thread": "leads-offsite"}
        return str(client.post("/v1/episodes", json=body).json()["id"])

    def score(word: str, probe: str) -> float:
        tally.attacks += 1
        body = {"query": word, "layers": ["episodic"], "budget_tokens": 100_000}
        items = designer.post("/v1/recall", json=body).json()["items"]
        return max([float(i["score"]) for i in items if str(i["id"]).endswith(probe)] or [0.0])

    record(ceo, "Agenda of the leads meeting.")
    probe = record(designer, "ok, noted", scope="team:leads")
    before = {w: score(w, probe) for w in words}
    text = "We open the Osaka office in May; the layoffs of Zephyrine staff stay confidential."
    record(ceo, text, scope="team:leads")
    after = {w: score(w, probe) for w in words}
    # The server's clock is real, so freshness moves every score a little between the two
    # rounds: a leak is a word whose score moves by more than that.
    moved = [w for w in words if abs(after[w] - before[w]) > 1e-3]
    if moved:
        tally.leak(f"the probe's score moved for {moved}")


def protected_spam(server: Server, tally: Tally) -> None:
    """7. Agents not listed may not write never-forget items; an admin purge removes one."""
    spammer, writer, admin = server.client("designer"), server.client("ceo"), server.client("admin")
    attempts: list[tuple[str, dict[str, Any]]] = [
        ("/v1/collections/feedback/documents", {"documents": ["永久に残る広告"]}),
        ("/v1/episodes", {"event_type": "security_incident", "description": "spam for ever"}),
        (
            "/v1/episodes",
            {"event_type": "note", "description": "spam", "tags": ["manifesto_rules"]},
        ),
        (
            "/v1/episodes",
            {"event_type": "feedback", "description": "spam", "context": {"source": "human"}},
        ),
    ]
    for path, body in attempts:
        if _send(tally, spammer, "POST", path, json=body).status_code < 400:
            tally.leak(f"an unlisted agent wrote a protected item through {path}")
    body = {"event_type": "security_incident", "description": "鍵が漏れたので交換した"}
    kept = writer.post("/v1/episodes", json=body)
    item = kept.json()["id"]
    if _send(tally, writer, "DELETE", f"/v1/episodes/{item}").status_code != 409:
        tally.leak("an ordinary delete removed a never-forget episode")
    body = {"id": item, "reason": "spam"}
    if _send(tally, spammer, "POST", "/v1/admin/purge", json=body).status_code != 403:
        tally.leak("a non-admin purged an item")
    if _send(tally, admin, "POST", "/v1/admin/purge", json=body).status_code != 200:
        tally.leak("the admin purge failed")
    audit = admin.get("/v1/audit", params={"item_id": item, "action": "purge"}).json()
    if not audit:
        tally.leak("the purge left no audit row")


def procedure_poisoning(server: Server, tally: Tally) -> None:
    """8. A catch-all trigger and a declared rate must not win; one agent's failures are bounded."""
    victim, attacker = server.client("ceo"), server.client("designer")
    body = {"name": "deploy_app", "trigger": "deploy|~デプロイ", "template": "test → build → ship"}
    name = victim.post("/v1/procedures", json={**body, "scope": "global"}).json()["name"]
    for trigger in ("*", "**", "?*", "deploy*|*"):
        body = {"name": f"evil{len(trigger)}", "trigger": trigger, "template": "rm -rf"}
        if _send(tally, attacker, "POST", "/v1/procedures", json=body).status_code < 400:
            tally.leak(f"trigger {trigger!r} was accepted")
    body = {"name": "evil", "trigger": "deploy the app", "template": "x", "success_rate": 1.0}
    if _send(tally, attacker, "POST", "/v1/procedures", json=body).status_code < 400:
        tally.leak("a shared procedure declared its own success rate")
    before = victim.get(f"/v1/procedures/{name}").json()["success_rate"]
    for _ in range(30):
        body = {"quality_score": 0, "success": False}
        _send(tally, attacker, "POST", f"/v1/procedures/{name}/outcomes", json=body)
    after = victim.get(f"/v1/procedures/{name}").json()["success_rate"]
    if after < before * 0.5:
        tally.leak(f"one agent's failures drove the rate from {before:.2f} to {after:.2f}")


def timestamps(server: Server, tally: Tally) -> None:
    """9. A timestamp later than the server's clock, or backdated by an agent, is refused."""
    attacker = server.client("designer")
    for stamp in ("9999-01-01T00:00:00Z", "2100-01-01T00:00:00Z", "2001-01-01T00:00:00Z"):
        body = {"event_type": "note", "description": "from elsewhen", "timestamp": stamp}
        response = _send(tally, attacker, "POST", "/v1/episodes", json=body)
        if response.status_code != 422:
            tally.leak(f"timestamp {stamp} answered {response.status_code}")


def dry_run_collisions(server: Server, tally: Tally) -> None:
    """10. A dry run reports only the caller's items, even when ids collide across collections."""
    ceo, designer = server.client("ceo"), server.client("designer")
    body = {"documents": ["CEO's private note on the merger"], "ids": ["collide-1"]}
    ceo.post("/v1/collections/knowledge/documents", json={**body, "scope": "private"})
    body = {"documents": ["a button component"], "ids": ["collide-1"], "scope": "private"}
    designer.post("/v1/collections/code/documents", json=body)
    report = _send(tally, designer, "POST", "/v1/forget", json={"dry_run": True}).json()
    text = json.dumps(report, ensure_ascii=False)
    if "merger" in text or text.count("collide-1") > 1:
        tally.leak("the dry run reported another agent's document")


def oversized_bodies(server: Server, tally: Tally) -> None:
    """6. A body past the limit is a 413, and the server keeps answering."""
    attacker = server.client("designer")
    body = {"documents": ["x" * (8 * 1024 * 1024)]}
    response = _send(tally, attacker, "POST", "/v1/collections/knowledge/documents", json=body)
    if response.status_code != 413:
        tally.leak(f"an 8 MiB body answered {response.status_code}")
    body = {"documents": ["y" * 90_000] * 3}  # under the body limit, over the text budget
    response = _send(tally, attacker, "POST", "/v1/collections/knowledge/documents", json=body)
    if response.status_code not in (413, 422):
        tally.leak(f"270,000 characters to embed answered {response.status_code}")


def index_outside_roots(server: Server, tally: Tally) -> None:
    """Also: an admin key indexes nothing outside ``server.index_roots`` (none configured)."""
    admin = server.client("admin")
    for path in ("/etc", "/", str(server.directory)):
        body = {"path": path, "dry_run": True}
        response = _send(tally, admin, "POST", "/v1/collections/knowledge/index", json=body)
        if response.status_code != 403:
            tally.leak(f"indexing {path} answered {response.status_code}")


def file_modes(server: Server, tally: Tally) -> None:
    """11. Nothing in the data directory is readable by other local users."""
    for path in [server.directory, *server.directory.rglob("*")]:
        tally.attacks += 1
        mode = stat.S_IMODE(path.lstat().st_mode)
        if mode & 0o077:
            tally.leak(f"{path.name} is {oct(mode)}")


CLASSES: list[tuple[str, Callable[[Server, Tally], None]]] = [
    ("1 wide filters (REST + MCP)", wide_filters),
    ("2 squatting promotion ids", promotion_squatting),
    ("3 superseding another agent's decision", foreign_supersede),
    ("4 existence oracles", existence_oracles),
    ("5 context-key word probes", context_key_probe),
    ("6 oversized bodies and text", oversized_bodies),
    ("7 permanent spam, admin purge", protected_spam),
    ("8 procedure poisoning", procedure_poisoning),
    ("9 future and backdated timestamps", timestamps),
    ("10 dry-run id collisions", dry_run_collisions),
    ("11 file permissions", file_modes),
    ("also: indexing outside the roots", index_outside_roots),
]


def run() -> list[Tally]:
    tallies = []
    with tempfile.TemporaryDirectory() as tmp, running_server(Path(tmp) / "data") as server:
        for name, attack in CLASSES:
            tally = Tally(name)
            try:
                attack(server, tally)
            except httpx.HTTPError as exc:
                tally.notes.append(f"transport: {type(exc).__name__}: {exc}")
            if not server.alive():
                tally.crashes += 1
                raise RuntimeError(f"the server died during {name}")
            tallies.append(tally)
    return tallies


#: What the review found, and what holds instead (each with its regression test).
CHANGED: list[tuple[str, str]] = [
    (
        "1 wide filters",
        "filters bounded in terms, `$in` values, operands and depth (422 naming "
        "the field); ChromaDB errors become `ValidationError` or `BackendError` (503)",
    ),
    (
        "2 promotion ids",
        "`wm-` ids keyed by a directory secret and owner-checked; client ids in "
        "generated prefixes refused (`ReservedIdError`)",
    ),
    ("3 foreign supersede", "a version chain is collection, subject, scope and owner"),
    (
        "4 existence oracles",
        "unreadable answers exactly as absent (404, same body); default ids "
        "hash the writer with the content; per-agent cache entries; chosen ids and "
        "procedure names are the writer's own (`agent:id`), so a write never collides",
    ),
    (
        "5 context keys",
        "a neighbour's words enter a key only if every reader of the episode, "
        "its owner included, may read the neighbour",
    ),
    (
        "6 stalls",
        "1 MiB body limit (413), 200,000-character text budget, embedding in slices "
        "on two engines in first-come order, stores embed outside the store lock",
    ),
    (
        "7 permanent spam",
        "never-forget writes only by admins and `[protection] writers`; "
        "audited admin purge through a grant the storage triggers check",
    ),
    (
        "8 procedure poisoning",
        "catch-all triggers refused, specificity before score, neutral "
        "prior for shared procedures, outcomes averaged per agent",
    ),
    (
        "9 timestamps",
        "future (> 5 min) refused; agents backdate at most 1 day; distilled "
        "knowledge rendered as `distilled from` its source agents",
    ),
    ("10 dry-run leak", "skipped and failed items filtered by layer, collection and id"),
    ("11 file modes", "directories 0700, files 0600 whatever the umask; tightened on open"),
    ("also: index", "through a server only under `server.index_roots`; admin's own scope"),
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true", help="print, do not write RESULTS.md")
    args = parser.parse_args(argv)
    tallies = run()
    rows = [(t.name, t.attacks, t.five_xx, t.crashes, t.leaks) for t in tallies]
    total = [
        sum(getattr(t, f) for t in tallies) for f in ("attacks", "five_xx", "crashes", "leaks")
    ]
    rows.append(("**all**", *total))
    attacks = table(("class", "attack requests", "5xx (goal 0)", "crashes (0)", "leaks (0)"), rows)
    from bench import write_fairness

    fair = write_fairness.run(large_chars=60_000, idle_writes=20)
    fairness = table(
        ("small write while another agent stores 60,000 characters", "value"),
        [
            (
                "idle server, median / p90 ms",
                f"{fair['idle']['median_ms']} / {fair['idle']['p90_ms']}",
            ),
            (
                "under the large write, median / p90 ms",
                f"{fair['under_load']['median_ms']} / {fair['under_load']['p90_ms']}",
            ),
            ("ratio of the medians (goal ≤ 2)", fair["ratio_median"]),
            ("the large write took, s", fair["large_write"].get("seconds")),
            ("before the change (same bench)", "25.9 ms idle, 15,211 ms under load: 587×"),
        ],
    )
    notes = [f"- {t.name}: {n}" for t in tallies for n in t.notes]
    body = "\n\n".join(
        [
            "### Security (`python -m bench.security`)",
            f"{machine()}. `omoide serve` in a subprocess; four agents (one admin, a team of "
            "two, an outsider) attack each other over REST and MCP. A leak is an attack whose "
            "outcome is not the safe one: another agent's item changed, taken over or revealed.",
            attacks,
            *(["Notes:\n" + "\n".join(notes)] if notes else []),
            fairness,
            "With `OMP_NUM_THREADS=1` in the server's environment the ratio was 1.36× (29.5 ms "
            "under load against 21.7 ms idle) but one large store embeds at half the speed "
            "(a 4,096-character slice: 1,094 ms against 582 ms), so it is an operator's choice, "
            "not the default. Earlier runs of the default gave 2.0, 2.31 and 2.34×: the goal "
            "is met only at the edge, because the two engines share two cores.",
            table(("finding", "what holds now"), CHANGED),
        ]
    )
    publish("security", body, write=not args.no_write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
