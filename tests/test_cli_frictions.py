"""The CLI frictions of issue 19, and ``omoide add`` (issue 22), through the real entry point:
``main()`` in this process, and ``python -m omoide`` in a subprocess where a pipe matters."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from omoide import Memory
from omoide.cli import main
from omoide.cli.commands import build_parser
from omoide.cli.console import shorten


class Run:
    """``main()`` in this process, with captured output and the exit code checked."""

    def __init__(self, capsys: pytest.CaptureFixture[str]) -> None:
        self.capsys = capsys

    def __call__(self, *args: str, code: int = 0) -> tuple[str, str]:
        self.capsys.readouterr()
        try:
            result = main(list(args))
        except SystemExit as exc:
            result = int(exc.code or 0)
        out, err = self.capsys.readouterr()
        assert result == code, f"exit {result} != {code}\nstdout:\n{out}\nstderr:\n{err}"
        return out, err


@pytest.fixture
def omoide(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Run:
    for name in ("OMOIDE_URL", "OMOIDE_API_KEY", "OMOIDE_AGENT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OMOIDE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "80")
    return Run(capsys)


def test_tables_show_whole_ids_and_a_unique_prefix_stands_for_one(omoide: Run) -> None:
    out, _ = omoide(
        "--agent", "ceo", "record", "decision", "価格は月額500円 " + "とても長い説明 " * 30
    )
    episode_id = out.split()[1]
    assert out.count("\n") == 1 and episode_id.startswith("ep-")
    listed, _ = omoide("episodes", "list")
    assert episode_id in listed  # never cut, even on an 80-column terminal
    shown, _ = omoide("episodes", "show", episode_id[:10])
    assert episode_id in shown
    omoide("--agent", "ceo", "record", "note", "another")
    _, err = omoide("episodes", "show", "ep-", code=1)
    assert "ambiguous" in err and episode_id in err
    omoide("--agent", "ceo", "episodes", "update", episode_id[:10], "--outcome", "決定済み")
    omoide("--agent", "ceo", "episodes", "delete", episode_id[:10])
    omoide("episodes", "show", episode_id, code=1)


def test_a_mistyped_path_creates_nothing(omoide: Run, tmp_path: Path) -> None:
    typo = tmp_path / "tpyo"
    _, err = omoide("--path", str(typo), "episodes", "list", code=1)
    assert str(typo) in err and "omoide init" in err
    omoide("--path", str(typo), "stats", code=1)
    omoide("--path", str(typo), "mcp", code=1)  # no --agent: refused before opening a store
    assert not typo.exists()
    omoide("--path", str(typo), "init")
    assert (typo / "omoide.db").exists()
    omoide("--path", str(typo), "episodes", "list")


def test_writes_answer_in_one_line_unless_asked(omoide: Run) -> None:
    out, _ = omoide("--agent", "ceo", "record", "error", "build failed")
    assert out.startswith("recorded ep-") and out.count("\n") == 1
    full, _ = omoide("--agent", "ceo", "-v", "record", "success", "build fixed")
    assert "distilled_at" in full
    omoide(
        "--agent", "ceo", "procedures", "register", "deploy", "deploy:*", "run the deploy script"
    )
    out, _ = omoide("--agent", "ceo", "procedures", "outcome", "deploy", "8")
    assert out.count("\n") == 1 and "deploy v1" in out and "1 runs" in out
    out, _ = omoide(
        "--agent", "ceo", "cache", "put", "https://example.com/r", "1 USD", "--source", "web"
    )
    assert out.count("\n") == 1 and out.startswith("cached ")


def test_json_errors_are_json_on_stderr_with_the_same_exit_code(omoide: Run) -> None:
    omoide("init")
    out, err = omoide("--json", "episodes", "show", "ep-nothing-here", code=1)
    body = json.loads(err)
    assert out == "" and body["error"] == "NotFoundError" and "ep-nothing-here" in body["detail"]
    _, err = omoide(
        "--json", "--agent", "ceo", "record", "decision", "x", "--importance", "7", code=1
    )
    assert json.loads(err)["field"] == "importance"


def test_add_takes_texts_or_json_lines(omoide: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    out, _ = omoide("--agent", "ceo", "add", "--session", "s1", "デプロイは金曜に決めた")
    assert "ceo/s1: 1 recorded" in out
    again, _ = omoide("--agent", "ceo", "add", "--session", "s1", "デプロイは金曜に決めた")
    assert "1 already present" in again
    lines = "\n".join(
        json.dumps(m)
        for m in ({"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"})
    )
    monkeypatch.setattr(sys, "stdin", __import__("io").StringIO(lines + "\n"))
    out, _ = omoide("--agent", "ceo", "--json", "add", "--session", "s2")
    report = json.loads(out)
    assert report["agent_name"] == "ceo" and len(report["episode_ids"]) == 2
    omoide("add", "--session", "s3", "no agent", code=1)  # a write needs an author


def test_every_argument_and_group_has_help() -> None:
    def walk(parser: argparse.ArgumentParser, name: str) -> list[str]:
        missing = []
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub_name, sub in action.choices.items():
                    if not sub.description:
                        missing.append(f"{name} {sub_name}: no description")
                    missing += walk(sub, f"{name} {sub_name}")
            elif not isinstance(action, argparse._HelpAction) and not action.help:
                missing.append(f"{name}: {action.dest}")
        return missing

    assert walk(build_parser(), "omoide") == []


def test_global_options_only_where_they_mean_something() -> None:
    parser = build_parser()
    with pytest.raises(SystemExit):
        parser.parse_args(["serve", "--url", "http://x"])
    names = parser.parse_args(["cache", "put", "URL", "text", "--source", "s"])
    assert names.cache_key == "URL"
    assert "URL_OR_NAME" in _help(parser, ["cache", "put"])


def _help(parser: argparse.ArgumentParser, path: list[str]) -> str:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and path:
            return _help(action.choices[path[0]], path[1:])
    return parser.format_help()


def test_text_is_cut_at_a_word_with_an_ellipsis() -> None:
    assert shorten("the quick brown fox jumps", 16) == "the quick brown…"
    assert shorten("価格は月額500円からに決めた", 10).endswith("…")
    assert shorten("short", 10) == "short"


def test_piping_into_head_prints_no_traceback(tmp_path: Path, embedder: Any, counter: Any) -> None:
    data = tmp_path / "data"
    with Memory(data, embedder=embedder, token_counter=counter) as mem:
        mem.episodic.record_many(
            [
                {"agent_name": "ceo", "event_type": "note", "description": f"note {i}"}
                for i in range(60)
            ]
        )
    env = {**os.environ, "OMOIDE_HOME": str(data)}
    command = f"{sys.executable} -m omoide export -q | head -c 10"
    done = subprocess.run(command, shell=True, env=env, capture_output=True, text=True, timeout=300)
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr


def test_stats_and_working_memory_figures_add_up(omoide: Run) -> None:
    omoide("--agent", "ceo", "pin", "s1", "rule", "必ずテストを書く", "--reason", "policy")
    out, _ = omoide("--agent", "ceo", "working", "s1")
    assert "in pins" in out and not out.startswith("ceo / s1: 0 of")
    out, _ = omoide("stats")
    assert "in pins" in out and "active episodes" in out


def test_the_demos_episode_count_is_what_episodes_list_shows(omoide: Run, tmp_path: Path) -> None:
    out, _ = omoide("demo", "--path", str(tmp_path / "demo"))
    line = next(x for x in out.splitlines() if x.startswith("Layer 2 episodic store:"))
    count = int(line.split(":")[1].split()[0])
    listed, _ = omoide(
        "--path", str(tmp_path / "demo"), "--json", "episodes", "list", "--limit", "1000"
    )
    assert len(json.loads(listed)) == count


def test_code_hits_show_path_line_and_symbol() -> None:
    import io

    from omoide.cli.console import Output
    from omoide.cli.views import show_hits

    hit = {
        "similarity": 0.9,
        "doc_id": "file-20700aa2deadbeef",
        "document": "def delete_expired(self): ...",
        "metadata": {
            "path": "retention.py",
            "line_start": 98,
            "symbol": "Retention.delete_expired",
        },
    }
    stream = io.StringIO()
    show_hits(Output(stream=stream), [hit])
    assert "retention.py:98 Retention.delete_expired" in stream.getvalue()
    assert "file-20700aa2" not in stream.getvalue()


def test_an_empty_run_says_why(omoide: Run, tmp_path: Path) -> None:
    """On a fresh store, distill and forget say why nothing happened."""
    data = str(tmp_path / "fresh")
    omoide("--path", data, "init")
    omoide("--path", data, "record", "--agent", "cto", "decision", "Use PostgreSQL")
    out, _ = omoide("--path", data, "distill")
    assert "0 candidates" in out and "freshness" in out and "days" in out
    out, _ = omoide("--path", data, "forget", "--dry-run")
    assert "would act on 0 items" in out
    assert any(line.startswith("  ") and len(line) > 20 for line in out.splitlines()[-2:])
