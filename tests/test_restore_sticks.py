"""A restore sticks (issue 19): the next forgetting run leaves a restored item alone for
``forgetting.restore_exemption_days``, ``keep`` keeps it for good, and both are audited."""

from __future__ import annotations

from pathlib import Path

import pytest

from omoide import ManualClock, Memory
from omoide.cli import main
from omoide.core.config import Config


def acted_on(mem: Memory, item_id: str) -> list[str]:
    report = mem.forget()
    return [a.policy for p in report.policies for a in p.acted if a.item_id == item_id]


def skipped(mem: Memory, item_id: str) -> list[str]:
    report = mem.forget(dry_run=True)
    return [why for p in report.policies for i, why in p.skipped if i == item_id]


def test_a_restored_episode_is_left_alone_for_the_exemption_period(
    mem: Memory, clock: ManualClock
) -> None:
    note = mem.episodic.record("ceo", "error", "deploy failed", outcome="set DATABASE_URL")
    clock.advance(days=90)
    assert acted_on(mem, note.id) == ["resolved_errors"]
    mem.restore(note.id, layer="episodic")
    assert mem.episodic.get(note.id).state == "active"
    assert acted_on(mem, note.id) == []  # not taken again by the same policy
    assert any("restored" in why and "30 days" in why for why in skipped(mem, note.id))
    clock.advance(days=31)
    assert acted_on(mem, note.id) == ["resolved_errors"]  # the period is over
    restores = mem.audit(note.id, action="restore")
    assert len(restores) == 1 and restores[0].policy == "restore"


def test_restore_keep_keeps_it_against_forgetting_for_good(mem: Memory, clock: ManualClock) -> None:
    note = mem.episodic.record("ceo", "error", "build broke", outcome="pinned the compiler")
    clock.advance(days=90)
    assert acted_on(mem, note.id) == ["resolved_errors"]
    mem.lifecycle.restore(note.id, layer="episodic", keep=True)
    clock.advance(days=4000)
    assert acted_on(mem, note.id) == []
    assert "kept on restore (restore --keep)" in skipped(mem, note.id)
    (kept,) = mem.audit(note.id, action="keep")
    assert (
        kept.policy == "restore" and kept.run_id == mem.audit(note.id, action="restore")[0].run_id
    )


def test_the_period_is_configurable(tmp_path: Path) -> None:
    (tmp_path / "omoide.toml").write_text(
        "[forgetting]\nrestore_exemption_days = 7\n", encoding="utf-8"
    )
    assert Config.from_toml(tmp_path / "omoide.toml").forgetting.restore_exemption_days == 7


def test_the_cli_restores_and_keeps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("OMOIDE_HOME", str(home))
    for name in ("OMOIDE_URL", "OMOIDE_API_KEY", "OMOIDE_AGENT"):
        monkeypatch.delenv(name, raising=False)
    with Memory(home) as mem:
        note = mem.episodic.record("ceo", "note", "archived by hand", importance=0.1)
        mem.lifecycle.apply("episodic", note.id, "archive", policy="p", reason="r", run_id="run")
    capsys.readouterr()
    assert main(["restore", note.id[:12], "--keep"]) == 0
    out = capsys.readouterr().out
    assert note.id in out and "kept against forgetting for good" in out
    with Memory(home) as mem:
        assert [e.action for e in mem.audit(note.id)][:2] == ["keep", "restore"]
