"""The nightly maintenance job: the schedule, the lock, and months of simulated nights."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from omoide import ManualClock, Memory
from omoide.errors import ConfigError, StoreLockedError
from omoide.pipelines.scheduler import LAST_RUN_KEY, MAINTENANCE_LOCK, Schedule, Scheduler
from omoide.storage import DirectoryLock


def test_schedule_parsing() -> None:
    assert Schedule.parse("03:00") == Schedule(3, 0)
    assert Schedule.parse(" 7:05 ") == Schedule(7, 5)
    tokyo = Schedule.parse("03:00 Asia/Tokyo")
    assert tokyo.zone == ZoneInfo("Asia/Tokyo")
    for bad in ("3", "24:00", "03:60", "03:00 Mars/Olympus", "at three", ""):
        with pytest.raises(ConfigError, match=r"distill\.schedule"):
            Schedule.parse(bad)


def test_schedule_slots() -> None:
    at3 = Schedule(3, 0)
    noon = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
    assert at3.following(noon) == datetime(2026, 3, 3, 3, 0, tzinfo=UTC)
    assert at3.latest(noon) == datetime(2026, 3, 2, 3, 0, tzinfo=UTC)
    two = datetime(2026, 3, 2, 2, 0, tzinfo=UTC)
    assert at3.following(two) == datetime(2026, 3, 2, 3, 0, tzinfo=UTC)
    assert at3.latest(two) == datetime(2026, 3, 1, 3, 0, tzinfo=UTC)
    exactly = datetime(2026, 3, 2, 3, 0, tzinfo=UTC)
    assert at3.latest(exactly) == exactly and at3.following(exactly) > exactly
    # In a named zone: 03:00 in Tokyo is 18:00 UTC the day before.
    tokyo = Schedule.parse("03:00 Asia/Tokyo")
    assert tokyo.following(noon) == datetime(2026, 3, 2, 18, 0, tzinfo=UTC)


def test_a_bad_schedule_is_refused_with_the_configuration() -> None:
    from omoide.core.config import Config

    with pytest.raises(ConfigError, match=r"distill\.schedule"):
        Config.from_dict({"distill": {"schedule": "3am"}})


def test_due_times(mem: Memory, clock: ManualClock) -> None:
    scheduler = Scheduler(mem)
    # A new store has nothing due until the next 03:00.
    assert scheduler.last_run() is None
    assert scheduler.due() == datetime(2026, 3, 3, 3, 0, tzinfo=UTC)
    assert scheduler.run_pending() is None
    clock.set(datetime(2026, 3, 3, 3, 0, tzinfo=UTC))
    report = scheduler.run_pending()
    assert report is not None and report.started_at == clock.now()
    assert scheduler.last_run() == clock.now()
    assert scheduler.due() == datetime(2026, 3, 4, 3, 0, tzinfo=UTC)
    # A process that was down at 03:00 makes up the missed run once, at start.
    clock.set(datetime(2026, 3, 6, 15, 0, tzinfo=UTC))
    assert scheduler.due() == datetime(2026, 3, 6, 3, 0, tzinfo=UTC)
    assert scheduler.run_pending() is not None
    assert scheduler.due() == datetime(2026, 3, 7, 3, 0, tzinfo=UTC)


def test_run_forever_runs_daily_at_three(mem: Memory, clock: ManualClock) -> None:
    scheduler = Scheduler(mem, poll_seconds=600)
    assert scheduler.run_forever(max_runs=3) == 3
    assert [r.started_at for r in scheduler.reports] == [
        datetime(2026, 3, d, 3, 0, tzinfo=UTC) for d in (3, 4, 5)
    ]
    stop = threading.Event()
    stop.set()
    assert scheduler.run_forever(stop=stop) == 0


def test_runs_never_overlap(mem: Memory, clock: ManualClock) -> None:
    holder = DirectoryLock(mem.path, name=MAINTENANCE_LOCK)
    holder.acquire()
    try:
        with pytest.raises(StoreLockedError, match="already running"):
            mem.maintain()
        scheduler = Scheduler(mem)
        clock.set(datetime(2026, 3, 3, 3, 0, tzinfo=UTC))
        assert scheduler.run_pending() is None
        assert scheduler.skipped == 1
        assert scheduler.last_run() is None
    finally:
        holder.release()
    assert scheduler.run_pending() is not None


def test_runs_never_overlap_across_processes(mem: Memory) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                """
                import sys
                from omoide.storage import DirectoryLock
                lock = DirectoryLock(sys.argv[1], name=sys.argv[2])
                lock.acquire()
                print("locked", flush=True)
                sys.stdin.readline()
                """
            ),
            str(mem.path),
            MAINTENANCE_LOCK,
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with pytest.raises(StoreLockedError):
            mem.maintain()
    finally:
        holder.communicate("\n", timeout=30)
    assert mem.maintain().forget.dry_run is False


def test_months_of_nightly_maintenance(mem: Memory, clock: ManualClock) -> None:
    """Twenty weeks of an agent's life, maintained every night at 03:00."""
    services = ["api", "web", "billing", "search", "auth", "cart", "mail"]
    scheduler = Scheduler(mem, poll_seconds=3 * 3600)
    chatter, errors, feedback, decisions = [], [], [], []
    for week in range(20):
        chatter.append(
            mem.episodic.record("cto", "message", f"ok, thanks ({week})", importance=0.2).id
        )
        errors.append(
            mem.episodic.record(
                "cto",
                "error",
                f"Deploy of service {services[week % 7]} failed: the database migration timed out",
                outcome="raised the migration timeout",
            ).id
        )
        if week % 4 == 0:
            feedback.append(
                mem.episodic.record(
                    "ceo",
                    "feedback",
                    f"Please write shorter status reports (week {week})",
                    importance=0.3,
                    context={"source": "human"},
                ).id
            )
        if week % 5 == 0:
            decision = f"decision-{week}"
            mem.semantic.store(
                "decisions",
                [f"Release train leaves every week, rev {week}"],
                [{"subject": "release-cadence"}],
                ids=[decision],
            )
            decisions.append(decision)
        assert scheduler.run_forever(max_runs=7) == 7

    assert len(scheduler.reports) == 140
    assert all(r.started_at.hour == 3 and r.started_at.minute == 0 for r in scheduler.reports)
    assert mem.db is not None

    # Old experience became knowledge, with every source marked (or, for chatter that was
    # distilled and then forgotten, deleted with an audit row).
    knowledge = [
        d for d in mem.semantic.documents("decisions") if d.metadata.get("source") == "distillation"
    ]
    deleted = {a.item_id for a in mem.audit(policy="stale_episodes", limit=1000)}
    for doc in knowledge:
        for source in str(doc.metadata["source_episodes"]).split(","):
            into = mem.db.scalar("SELECT distilled_into FROM episodes WHERE id = ?", (source,))
            assert into == doc.id or (into is None and source in deleted)
    sources = {s for d in knowledge for s in str(d.metadata["source_episodes"]).split(",")}
    assert len(sources & set(errors)) >= 10
    assert any("database migration timed out" in d.document for d in knowledge)

    # Stale chatter was forgotten after three months; recent chatter is still there.
    assert deleted and deleted <= set(chatter)
    assert set(chatter[:6]) <= deleted and not deleted & set(chatter[-12:])
    # Resolved errors older than 60 days were compressed, not lost.
    compressed = {a.item_id for a in mem.audit(policy="resolved_errors", limit=1000)}
    assert set(errors[:10]) <= compressed
    for episode_id in compressed:
        assert mem.episodic.get(episode_id).state == "compressed"
    # Human feedback, however unimportant and stale, is all still there, untouched.
    for episode_id in feedback:
        episode = mem.episodic.get(episode_id)
        assert episode.protected and episode.state == "active"
    # Superseded decisions older than 30 days were archived; the current one is live.
    states = {d: mem.semantic.get("decisions", d).state for d in decisions}
    assert states[decisions[-1]] == "active"
    assert all(states[d] == "archived" for d in decisions[:-1])
    hits = mem.semantic.query("decisions", "when does the release train leave", n_results=1)
    assert [h.doc_id for h in hits] == [decisions[-1]]


def test_the_cron_command_runs_once(tmp_path: Path) -> None:
    data = tmp_path / "cron"
    result = subprocess.run(
        [sys.executable, "-m", "omoide.cli.schedule", str(data), "--once"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
        check=False,
    )
    assert result.returncode == 0, result.stderr
    line = json.loads(result.stdout.strip().splitlines()[-1])
    assert line["distill"]["candidates"] == 0
    assert set(line["forget"]) == {
        "stale_episodes",
        "superseded_decisions",
        "low_value_knowledge",
        "resolved_errors",
    }
    with Memory(data) as mem:
        assert mem.db is not None
        stamp = float(mem.db.get_meta(LAST_RUN_KEY) or 0)
        started = datetime.fromisoformat(line["started_at"])
        assert abs(stamp - started.timestamp()) < timedelta(hours=1).total_seconds()


def test_background_maintenance_runs_when_due_and_stops(mem: Memory, clock: ManualClock) -> None:
    from omoide.pipelines.scheduler import BackgroundMaintenance

    background = BackgroundMaintenance(mem, poll_seconds=3600)
    background.start()
    try:
        assert background.wait_checked(1, timeout=60)
        assert background.scheduler.reports == []  # not due before 03:00 tomorrow
        clock.set(datetime(2026, 3, 3, 3, 0, tzinfo=UTC))
        background.wake()
        assert background.wait_checked(2, timeout=120)
        assert len(background.scheduler.reports) == 1
        assert background.scheduler.reports[0].retention is not None
        assert background.scheduler.last_run() == clock.now()
        background.wake()  # checked again at once: not due until the next night
        assert background.wait_checked(3, timeout=60)
        assert len(background.scheduler.reports) == 1
    finally:
        background.stop()
    assert background._thread is not None and not background._thread.is_alive()
    assert background.errors == []


def test_background_maintenance_survives_a_failed_run(mem: Memory, clock: ManualClock) -> None:
    from omoide.pipelines.scheduler import BackgroundMaintenance

    background = BackgroundMaintenance(mem, poll_seconds=3600)
    calls: list[int] = []

    def broken(**_: object) -> None:
        calls.append(1)
        raise RuntimeError("disk full")

    mem.maintain = broken  # type: ignore[method-assign]
    clock.set(datetime(2026, 3, 3, 3, 0, tzinfo=UTC))
    background.start()
    try:
        assert background.wait_checked(1, timeout=60)
        background.wake()
        assert background.wait_checked(2, timeout=60)
    finally:
        background.stop()
    assert len(calls) == 2 and background.errors[0] == "RuntimeError: disk full"
