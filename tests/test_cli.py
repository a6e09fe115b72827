"""The ``omoide`` command: through its real entry point, on temporary data directories."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import httpx
import pytest

from conftest import LiveServer
from omoide import Memory
from omoide.cli import COMMANDS, main
from omoide.cli.console import display_width

OMOIDE = Path(sys.executable).with_name("omoide")


class Run:
    """``main()`` in this process, with captured output."""

    def __init__(self, capsys: pytest.CaptureFixture[str]) -> None:
        self.capsys = capsys

    def __call__(self, *args: str, code: int = 0) -> tuple[str, str]:
        self.capsys.readouterr()
        try:
            result = main(list(args))
        except SystemExit as exc:  # argparse: --help, usage errors
            result = int(exc.code or 0)
        out, err = self.capsys.readouterr()
        assert result == code, f"exit {result} != {code}\nstdout:\n{out}\nstderr:\n{err}"
        return out, err

    def json(self, *args: str) -> Any:
        return json.loads(self("--json", *args)[0])


@pytest.fixture
def omoide(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Run:
    for name in ("OMOIDE_URL", "OMOIDE_API_KEY", "OMOIDE_AGENT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OMOIDE_HOME", str(tmp_path / "home"))
    return Run(capsys)


# -- the parser --------------------------------------------------------------------------


@pytest.mark.parametrize("command", [c.name for c in COMMANDS])
def test_every_command_has_help(omoide: Run, command: str) -> None:
    out, _ = omoide(*command.split(), "--help")
    spec = next(c for c in COMMANDS if c.name == command)
    assert spec.help.split(" (")[0][:30] in " ".join(out.split())
    assert out.startswith(f"usage: omoide {command}")


def test_top_level_help_lists_the_commands(omoide: Run) -> None:
    out, _ = omoide("--help")
    for name in (
        "record",
        "episodes",
        "store",
        "query",
        "pin",
        "procedures",
        "stats",
        "export",
        "import",
        "serve",
        "mcp",
        "keys",
        "demo",
        "init",
    ):
        assert f"    {name}" in out


def test_usage_errors_exit_2(omoide: Run) -> None:
    _, err = omoide("procedures", "rollback", "x", "zero", code=2)
    assert "invalid _positive value" in err or "invalid" in err


# -- local commands ----------------------------------------------------------------------


def test_init_creates_the_directory_and_a_commented_config(omoide: Run, tmp_path: Path) -> None:
    result = omoide.json("init")
    assert result["created"] is True and Path(result["path"]) == tmp_path / "home"
    config = Path(result["config"]).read_text(encoding="utf-8")
    assert all(line.startswith("#") for line in config.splitlines() if line)
    assert omoide.json("init")["created"] is False


def test_record_and_search_print_japanese_in_aligned_tables(omoide: Run) -> None:
    decision = "新機能の優先順位をセキュリティ > パフォーマンスに決定"
    omoide("--agent", "ceo", "record", "decision", decision, "--tag", "priority")
    omoide(
        "record",
        "--agent",
        "cto",
        "error",
        "Deploy failed: DATABASE_URL was not set",
        "--outcome",
        "set it and re-ran",
    )
    out, _ = omoide("episodes", "search", "優先順位は？")
    lines = out.splitlines()
    assert "新機能の優先順位をセキュリティ > パフォーマンスに決定" in out
    header, rule = lines[0], lines[1]
    # Columns line up in display cells: each row's agent column starts under its heading.
    column = display_width(header[: header.index("agent")])
    for row in lines[2:]:
        agent = "ceo" if "ceo" in row else "cto"
        assert display_width(row[: row.index(f"  {agent} ") + 2]) == column
    assert set(rule) <= {"-", " "}


def test_json_output_round_trips(omoide: Run) -> None:
    episode = omoide.json(
        "--agent",
        "ceo",
        "record",
        "feedback",
        "価格設定は¥500から",
        "--context",
        '{"channel": "slack"}',
        "--importance",
        "0.95",
    )
    assert episode["context"] == {"channel": "slack"} and episode["importance"] == 0.95
    shown = omoide.json("episodes", "show", episode["id"])
    assert shown["description"] == "価格設定は¥500から"
    listed = omoide.json("episodes", "list", "--by", "ceo")
    assert [e["id"] for e in listed] == [episode["id"]]
    updated = omoide.json(
        "--agent", "ceo", "episodes", "update", episode["id"], "--outcome", "了解"
    )
    assert updated["outcome"] == "了解"
    omoide.json("episodes", "delete", episode["id"])
    _, err = omoide("episodes", "show", episode["id"], code=1)
    assert "not found" in err


def test_writes_need_an_agent_and_bad_input_is_reported(omoide: Run) -> None:
    _, err = omoide("record", "decision", "who am I?", code=1)
    assert "agent_name" in err
    _, err = omoide("--agent", "ceo", "record", "decision", "x", "--importance", "3", code=1)
    assert "importance" in err
    _, err = omoide("--agent", "ceo", "record", "decision", "x", "--context", "{oops", code=1)
    assert "--context" in err
    assert omoide.json("stats")["layers"]["episodic"]["episodes"] == 0


def test_agent_view_sees_only_that_agents_scopes(omoide: Run) -> None:
    secret = omoide.json(
        "--agent", "cto", "record", "decision", "private plan", "--scope", "private"
    )
    assert omoide.json("--agent", "ceo", "episodes", "search", "plan") == []
    assert [e["id"] for e in omoide.json("episodes", "search", "plan")] == [secret["id"]]
    _, err = omoide("--agent", "ceo", "episodes", "delete", secret["id"], code=1)
    assert "not found" in err


def test_knowledge_commands(omoide: Run, tmp_path: Path) -> None:
    doc = tmp_path / "fastapi.md"
    doc.write_text("FastAPI middleware wraps every request: use it for auth and timing.", "utf-8")
    stored = omoide.json(
        "--agent",
        "cto",
        "store",
        "knowledge",
        "ChromaDBはベクトルDBです。",
        "--file",
        str(doc),
        "--id",
        "chroma",
        "--id",
        "fastapi",
        "--meta",
        "topic=db",
        "--meta",
        "reviewed=true",
    )
    assert stored["ids"] == ["chroma", "fastapi"]
    hits = omoide.json("query", "knowledge", "where does request timing go?")
    assert hits[0]["doc_id"] == "fastapi" and hits[0]["metadata"]["reviewed"] is True
    assert hits[0]["relevance"] > 0
    nearest = omoide.json(
        "query", "knowledge", "where does request timing go?", "--rank", "meaning"
    )
    assert nearest[0]["relevance"] is None and nearest[0]["doc_id"] == "fastapi"
    out, _ = omoide("query", "knowledge", "ベクトル検索", "-n", "1")
    assert "ChromaDBはベクトルDBです。" in out
    assert {d["id"] for d in omoide.json("documents", "list", "knowledge")} == {"chroma", "fastapi"}
    assert omoide.json("documents", "show", "knowledge", "chroma")["agent_name"] == "cto"
    assert {c["name"]: c["documents"] for c in omoide.json("collections")}["knowledge"] == 2
    omoide("documents", "delete", "knowledge", "chroma")
    _, err = omoide("query", "nowhere", "x", code=1)
    assert "unknown collection" in err


def test_procedure_commands(omoide: Run) -> None:
    omoide(
        "--agent",
        "ceo",
        "procedures",
        "register",
        "write_article",
        "write_article|~記事",
        "見出し → 下書き",
    )
    omoide("procedures", "outcome", "write_article", "8.5")
    omoide("procedures", "outcome", "write_article", "2", "--failed")
    evolved = omoide.json("procedures", "evolve", "write_article", "読者 → 見出し → 下書き")
    assert evolved["version"] == 2
    history = omoide.json("procedures", "history", "write_article")
    assert [(v["version"], v["execution_count"]) for v in history] == [(1, 2), (2, 0)]
    out, _ = omoide("procedures", "list")
    assert "write_article" in out and "読者 → 見出し → 下書き" in out
    back = omoide.json("procedures", "rollback", "write_article", "1")
    assert back["template"] == "見出し → 下書き"
    out, _ = omoide("procedures", "match", "技術記事を書く")
    assert out.startswith("best for '技術記事を書く': write_article v1")
    assert omoide.json("procedures", "show", "write_article")["execution_count"] == 2


def test_working_memory_commands(omoide: Run) -> None:
    _, err = omoide("pin", "planning", "floor", "¥500未満にしない", code=1)
    assert "agent" in err
    omoide("--agent", "ceo", "pin", "planning", "floor", "¥500未満にしない", "--reason", "運営")
    out, _ = omoide("--agent", "ceo", "working", "planning")
    assert "- floor: ¥500未満にしない (pinned: 運営)" in out
    omoide("--agent", "ceo", "unpin", "planning", "floor")
    assert omoide.json("--agent", "ceo", "working", "planning")["pins"] == []


def test_stats_per_layer_and_agent(omoide: Run) -> None:
    omoide("--agent", "ceo", "record", "decision", "one")
    omoide("--agent", "cto", "record", "decision", "two")
    omoide("--agent", "cto", "store", "code", "def f(): pass")
    stats = omoide.json("stats")
    agents = {a["agent"]: a for a in stats["agents"]}
    assert agents["ceo"]["episodes"] == 1 and agents["cto"]["documents"] == 1
    assert stats["layers"]["semantic"]["collections"]["code"]["documents"] == 1
    assert stats["storage"]["database_bytes"] > 0
    out, _ = omoide("stats")
    assert "2 episodic" in out and "Agents" in out


def test_export_then_import_into_an_empty_directory(omoide: Run, tmp_path: Path) -> None:
    omoide("--agent", "operator", "record", "feedback", "価格設定は¥500からスタートして")
    omoide("--agent", "cto", "record", "error", "deploy failed", "--outcome", "fixed")
    omoide("--agent", "cto", "store", "knowledge", "ChromaDBはベクトルDBです。")
    omoide("procedures", "register", "deploy", "deploy:*", "test → deploy", "--agent", "cto")
    omoide("--agent", "ceo", "pin", "s", "k", "keep this")
    dump = tmp_path / "dump.jsonl"
    _, err = omoide("export", str(dump))
    assert "export: " in err and "(100%)" in err  # progress, on stderr
    other = tmp_path / "other"
    report = omoide.json("--path", str(other), "import", str(dump))
    assert report["imported"]["episode"] == 2 and report["imported"]["working_pin"] == 1
    before = omoide.json("episodes", "search", "価格はいくら？")
    after = omoide.json("--path", str(other), "episodes", "search", "価格はいくら？")
    # The real clock moved between the two searches: scores agree up to freshness drift.
    assert [e["id"] for e in after] == [e["id"] for e in before]
    assert [e["score"] for e in after] == pytest.approx([e["score"] for e in before], abs=1e-6)
    assert omoide.json("--path", str(other), "stats")["layers"] == omoide.json("stats")["layers"]
    out, _ = omoide("--path", str(other), "import", str(dump))
    assert "skipped" in out


def test_export_to_standard_output(omoide: Run) -> None:
    omoide("--agent", "ceo", "record", "decision", "決定")
    out, _ = omoide("export", "--quiet", "--no-embeddings")
    records = [json.loads(line) for line in out.splitlines()]
    assert records[0]["kind"] == "header" and records[-1]["kind"] == "end"
    assert records[1]["description"] == "決定" and "embedding" not in records[1]


def test_key_commands(omoide: Run) -> None:
    minted = omoide.json("keys", "add", "ceo", "--label", "laptop")
    assert minted["key"].startswith("omk_") and minted["agent_name"] == "ceo"
    out, _ = omoide("keys", "add", "admin", "--admin")
    assert "shown only now" in out
    assert {k["agent_name"] for k in omoide.json("keys", "list")} == {"ceo", "admin"}
    omoide("keys", "revoke", minted["id"])
    assert {k["agent_name"] for k in omoide.json("keys", "list")} == {"admin"}
    assert len(omoide.json("keys", "list", "--all")) == 2


def test_a_directory_owned_by_a_server_gets_a_hint(omoide: Run, tmp_path: Path) -> None:
    with Memory(tmp_path / "home"):
        _, err = omoide("stats", code=1)
    assert "in use" in err and "--url" in err


def test_demo_runs(omoide: Run, tmp_path: Path) -> None:
    out, _ = omoide("demo", "--path", str(tmp_path / "demo"))
    assert "Layer 2 episodic store" in out and "デプロイ失敗はどう直した？" in out
    # The nightly maintenance distils the four similar deploy failures into knowledge.
    assert "distilled 1 cluster(s) of similar episodes into 1 knowledge document(s)" in out
    assert "knowledge: " in out and "migration timed out" in out
    # Recall crosses layers: the operator's Japanese feedback answers an English question.
    answer = out.split("Q: What did the operator say about pricing?\n", 1)[1].splitlines()[0]
    assert "operator: 価格設定は¥500からスタートして" in answer


# -- through a server --------------------------------------------------------------------


def test_the_cli_talks_to_a_running_server(omoide: Run, live_server: LiveServer) -> None:
    url, key = live_server.url, live_server.keys["ceo"]
    assert omoide.json("--url", url, "--key", key, "whoami")["agent"] == "ceo"
    episode = omoide.json("--url", url, "--key", key, "record", "decision", "サーバー経由の決定")
    assert episode["agent_name"] == "ceo"
    found = omoide.json("--url", url, "--key", key, "episodes", "search", "サーバー経由")
    assert episode["id"] in [e["id"] for e in found]
    stats = omoide.json("--url", url, "--key", key, "stats")
    assert stats["storage"] is None
    _, err = omoide("--url", url, "--key", key, "--agent", "cto", "whoami", code=1)
    assert "the API key decides the agent" in err
    _, err = omoide("--url", url, "--key", key, "export", code=1)
    assert "admin" in err
    _, err = omoide("--url", url, "whoami", code=1)
    assert "no API key" in err
    out, _ = omoide("--url", url, "--key", live_server.keys["admin"], "export", "--quiet")
    assert json.loads(out.splitlines()[0])["kind"] == "header"


# -- the installed entry point, as separate processes --------------------------------------


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMOIDE_", "PYTHONIO"))}
    env.update(OMOIDE_HOME=str(tmp_path / "home"), LC_ALL="C", LANG="C")
    return env


def test_the_installed_command_prints_japanese_in_a_c_locale(tmp_path: Path) -> None:
    env = _env(tmp_path)
    subprocess.run(
        [OMOIDE, "--agent", "ceo", "record", "decision", "藍色をブランド色にする"],
        env=env,
        check=True,
        capture_output=True,
        timeout=120,
    )
    listed = subprocess.run(
        [OMOIDE, "episodes", "list"], env=env, check=True, capture_output=True, timeout=120
    )
    assert "藍色をブランド色にする" in listed.stdout.decode("utf-8")


def test_demo_needs_no_extras(tmp_path: Path) -> None:
    """The README's first command works on the base install: no server, MCP or rich."""
    code = textwrap.dedent(
        """
        import importlib.abc, sys
        class Missing(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in {"fastapi", "uvicorn", "mcp", "rich", "starlette"}:
                    raise ImportError(f"{name} is not installed")
        sys.meta_path.insert(0, Missing())
        from omoide.cli import main
        raise SystemExit(main(["demo"]))
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], env=_env(tmp_path), capture_output=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr.decode()
    assert "== Recall (" in proc.stdout.decode("utf-8")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_serve_then_use_the_same_memory_from_the_cli(tmp_path: Path) -> None:
    env = _env(tmp_path)
    minted = subprocess.run(
        [OMOIDE, "--json", "keys", "add", "ceo", "--admin"],
        env=env,
        check=True,
        capture_output=True,
        timeout=120,
    )
    key = json.loads(minted.stdout)["key"]
    port = _free_port()
    server = subprocess.Popen(
        [OMOIDE, "serve", "--port", str(port)], env=env, stderr=subprocess.PIPE, text=True
    )
    try:
        assert server.stderr is not None
        assert "serving" in server.stderr.readline()
        transport = httpx.HTTPTransport(retries=20)
        with httpx.Client(
            base_url=f"http://127.0.0.1:{port}",
            transport=transport,
            headers={"Authorization": f"Bearer {key}"},
            timeout=60,
        ) as client:
            assert client.get("/healthz").json()["status"] == "ok"
            created = client.post(
                "/v1/episodes", json={"event_type": "decision", "description": "RESTで記録"}
            )
            assert created.status_code == 201
        through = subprocess.run(
            [
                OMOIDE,
                "--url",
                f"http://127.0.0.1:{port}",
                "--key",
                key,
                "--json",
                "episodes",
                "list",
            ],
            env=env,
            check=True,
            capture_output=True,
            timeout=120,
        )
        assert json.loads(through.stdout)[0]["description"] == "RESTで記録"
    finally:
        server.send_signal(signal.SIGINT)
        assert server.wait(timeout=60) == 0
    # The server is gone, so the directory is free for the CLI again.
    local = subprocess.run(
        [OMOIDE, "--json", "episodes", "list"],
        env=env,
        check=True,
        capture_output=True,
        timeout=120,
    )
    assert json.loads(local.stdout)[0]["description"] == "RESTで記録"


# -- pipelines -----------------------------------------------------------------------------


def test_recall_forget_maintain_audit_restore(omoide: Run) -> None:
    omoide("--agent", "ceo", "record", "decision", "価格は月額500円からに決めた")
    out, _ = omoide("--agent", "ceo", "recall", "価格はいくら？", "--budget", "300")
    assert "月額500円" in out and "tokens" in out
    context = omoide.json("--agent", "ceo", "recall", "価格", "--layer", "episodic")
    assert context["layers"] == ["episodic"] and context["items"]
    # A read needs no author: the local operator recalls without --agent (issue 19).
    out, _ = omoide("recall", "価格")
    assert "月額500円" in out

    out, _ = omoide("forget", "--dry-run")
    assert "stale_episodes" in out and "would act on" in out
    report = omoide.json("maintain")
    assert set(report) >= {"distill", "forget", "retention"}
    out, _ = omoide("maintain")
    assert "maintenance started" in out and "collections:" in out

    omoide("--agent", "ceo", "store", "knowledge", "古い手順書", "--id", "manual")
    with Memory(Path(os.environ["OMOIDE_HOME"])) as mem:
        mem.lifecycle.apply(
            "semantic",
            "manual",
            "archive",
            collection="knowledge",
            policy="manual",
            reason="superseded by the wiki",
            run_id="r1",
        )
    out, _ = omoide("audit", "--policy", "manual")
    assert "manual" in out and "superseded by the wiki" in out
    assert omoide.json("audit", "manual", "--layer", "semantic")[0]["action"] == "archive"
    out, _ = omoide("restore", "manual", "--collection", "knowledge")
    assert "restored manual in semantic/knowledge" in out
    _, err = omoide("restore", "manual", code=1)
    assert "not archived" in err


def test_index_collections_and_cache(omoide: Run, tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "app.py").write_text(
        "def hello():\n    return 'こんにちは'\n\n\ndef bye():\n    pass\n"
    )
    (root / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00binary")
    out, err = omoide("index", str(root), "--collection", "code", "--no-git")
    assert "indexed 1 of 2 files" in out and "logo.png" in out
    assert "files" in err  # the progress reporter writes to stderr
    again = omoide.json("index", str(root), "-c", "code", "--no-git", "-q")
    assert again["files_unchanged"] == 1 and again["documents"] == 0

    out, _ = omoide("collections")
    lines = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    assert "archive_lowest" in lines["decisions"] and "365 d" in lines["decisions"]
    assert "forever" in lines["code"] and " 2 " in lines["code"]  # two functions
    out, _ = omoide("stats")
    assert "cap" in out and "30000" in out

    entry = omoide.json(
        "--agent",
        "bot",
        "cache",
        "put",
        "https://example.com/rates",
        "1 USD = 150 JPY",
        "--source",
        "example.com",
        "--ttl-days",
        "2",
    )
    assert entry["metadata"]["source"] == "example.com"
    out, _ = omoide("cache", "get", "https://example.com/rates")
    assert "1 USD = 150 JPY" in out
    _, err = omoide("cache", "get", "https://example.com/other", code=1)
    assert "not found" in err.lower()


def test_pipelines_through_a_server(omoide: Run, live_server: LiveServer) -> None:
    url, ceo, admin = live_server.url, live_server.keys["ceo"], live_server.keys["admin"]
    omoide("--url", url, "--key", ceo, "record", "decision", "サーバー経由の価格決定")
    context = omoide.json("--url", url, "--key", ceo, "recall", "価格決定")
    assert context["agent_name"] == "ceo" and context["items"]
    assert omoide.json("--url", url, "--key", ceo, "forget", "--dry-run")["dry_run"] is True
    _, err = omoide("--url", url, "--key", ceo, "maintain", code=1)
    assert "admin" in err
    report = omoide.json("--url", url, "--key", admin, "maintain")
    assert "retention" in report
    assert isinstance(omoide.json("--url", url, "--key", ceo, "audit", "--limit", "3"), list)
    key = f"https://example.com/{os.getpid()}-cli"
    omoide("--url", url, "--key", ceo, "cache", "put", key, "内容", "--source", "ex")
    assert omoide.json("--url", url, "--key", ceo, "cache", "get", key)["document"] == "内容"
    rows = omoide.json("--url", url, "--key", ceo, "collections")
    assert {r["name"] for r in rows} >= {"knowledge", "code", "decisions", "feedback"}
