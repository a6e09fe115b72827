"""The daily maintenance job: distill, then forget (the article runs it at 03:00).

:meth:`Memory.maintain <omoide.memory.Memory.maintain>` runs it once, holding
``maintenance.lock`` in the data directory so two runs never overlap — across threads and
processes. A :class:`Scheduler` runs it every day at ``distill.schedule`` (``"03:00"``, local
time of the clock; ``"03:00 Asia/Tokyo"`` names a zone) inside a long-running process; a run
missed while the process was down is made up once when it starts again. For cron::

    python -m omoide.cli.schedule ./omoide-data --once          # 0 3 * * *  (crontab)
    python -m omoide.cli.schedule ./omoide-data                  # or stay up and run daily

Time comes from the injected clock: with a :class:`~omoide.clock.ManualClock` a month of
nightly runs takes a moment and nothing sleeps for real.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Protocol

from omoide.clock import Clock, from_timestamp, to_timestamp
from omoide.core.config import Config
from omoide.core.policies import Schedule
from omoide.errors import ConfigError, StoreLockedError
from omoide.pipelines.distill import DistillReport
from omoide.pipelines.forgetting import ForgetReport
from omoide.storage import Database

if TYPE_CHECKING:
    from omoide.pipelines.retention import RetentionReport

__all__ = [
    "MAINTENANCE_LOCK",
    "BackgroundMaintenance",
    "Maintained",
    "MaintenanceReport",
    "Schedule",
    "Scheduler",
    "maintenance_run",
]

_log = logging.getLogger("omoide.pipelines.scheduler")

MAINTENANCE_LOCK = "maintenance.lock"
#: Meta key holding the time of the last completed maintenance run.
LAST_RUN_KEY = "maintenance_last_run"
#: Earlier than any run: "unless a run completed after" this means "unless one ever did".
EARLIEST = datetime.min.replace(tzinfo=UTC)


@dataclass(frozen=True)
class MaintenanceReport:
    """One maintenance run: its distillation, forgetting and collection-policy reports."""

    started_at: datetime
    distill: DistillReport
    forget: ForgetReport
    seconds: float
    retention: RetentionReport | None = None


class Maintained(Protocol):
    """What the scheduler runs: a memory with a configuration, a clock, a database (for the
    time of the last run, shared by every process) and a ``maintain()`` — the
    :class:`~omoide.memory.Memory` facade, named by what is needed so this module sits below it."""

    @property
    def config(self) -> Config: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def db(self) -> Database: ...

    def maintain(self, *, unless_run_after: datetime | None = None) -> MaintenanceReport:
        """Run distillation, forgetting and collection policies once (unless a run
        completed after ``unless_run_after``: StoreLockedError)."""
        ...


class Maintainable(Protocol):
    """What one run calls: the store's database and clock, and the run's three parts."""

    @property
    def clock(self) -> Clock: ...

    @property
    def db(self) -> Database: ...

    def distill(self) -> DistillReport: ...

    def forget(self) -> ForgetReport: ...

    def enforce_collections(self) -> RetentionReport: ...


def last_run(db: Database) -> datetime | None:
    """When maintenance last completed on the store of ``db`` (by any process), if ever."""
    value = db.get_meta(LAST_RUN_KEY)
    return None if value is None else from_timestamp(float(value))


def maintenance_run(
    memory: Maintainable, unless_run_after: datetime | None = None
) -> MaintenanceReport:
    """One run (distill, forget, collection policies), its time recorded; the caller holds
    the maintenance lock. A run that completed after ``unless_run_after`` means this one is
    no longer due: StoreLockedError, as when another run holds the lock."""
    done = last_run(memory.db)
    if unless_run_after is not None and done is not None and done > unless_run_after:
        raise StoreLockedError(f"maintenance already ran at {done.isoformat()} (another process)")
    started_at = memory.clock.now()
    started = memory.clock.monotonic()
    distilled = memory.distill()
    forgotten = memory.forget()
    retained = memory.enforce_collections()
    memory.db.set_meta(LAST_RUN_KEY, repr(to_timestamp(memory.clock.now())))
    seconds = memory.clock.monotonic() - started
    return MaintenanceReport(started_at, distilled, forgotten, seconds, retained)


class Scheduler:
    """Runs ``memory.maintain()`` daily at the configured time; see the module docstring."""

    def __init__(
        self,
        memory: Maintained,
        *,
        schedule: str | None = None,
        clock: Clock | None = None,
        poll_seconds: float = 30.0,
    ) -> None:
        self.memory = memory
        self.schedule = Schedule.parse(schedule or memory.config.distill.schedule)
        self.clock = clock or memory.clock
        if poll_seconds <= 0:
            raise ConfigError("poll_seconds: must be > 0")
        self.poll_seconds = poll_seconds
        self.started = self.clock.now()
        self.reports: list[MaintenanceReport] = []
        self.skipped = 0

    def last_run(self) -> datetime | None:
        """When maintenance last completed on this store (by any process), if ever."""
        return last_run(self.memory.db)

    def due(self, now: datetime | None = None) -> datetime:
        """When the next run is due: the first slot after the last run (or after this
        scheduler started, for a store never maintained). Slots missed while no process was
        running are made up by one run, due at once."""
        now = now or self.clock.now()
        slot = self.schedule.following(self.last_run() or self.started)
        return max(slot, self.schedule.latest(now)) if slot <= now else slot

    def run_pending(self) -> MaintenanceReport | None:
        """Run maintenance if it is due and no other run holds the lock."""
        seen = self.last_run()
        if self.clock.now() < self.due():
            return None
        try:  # a run another process completes meanwhile makes this one no longer due
            report = self.memory.maintain(unless_run_after=seen or EARLIEST)
        except StoreLockedError:
            self.skipped += 1
            return None
        self.reports.append(report)
        return report

    def run_forever(
        self, *, stop: threading.Event | None = None, max_runs: int | None = None
    ) -> int:
        """Wait for each due time and run; return after ``max_runs`` runs or when ``stop``
        is set (checked every ``poll_seconds``). Returns the number of runs."""
        runs = 0
        while (stop is None or not stop.is_set()) and (max_runs is None or runs < max_runs):
            now = self.clock.now()
            due = self.due(now)
            if now >= due:
                if self.run_pending() is not None:
                    runs += 1
                else:
                    self.clock.sleep(self.poll_seconds)
                continue
            self.clock.sleep(min((due - now).total_seconds(), self.poll_seconds))
        return runs


class BackgroundMaintenance:
    """A :class:`Scheduler` in a daemon thread of a long-running process (``omoide serve``).

    The process that serves a data directory owns it (a separate ``python -m
    omoide.cli.schedule`` would get StoreLockedError), so it runs the daily job itself. The
    thread checks when the next run is due, waits until then (at most ``poll_seconds``, on
    an event, so :meth:`stop` returns at once) and runs it; :meth:`wake` makes it check now.
    A run that fails is logged and retried at the next check; the thread keeps going.
    """

    def __init__(
        self,
        memory: Maintained,
        *,
        schedule: str | None = None,
        clock: Clock | None = None,
        poll_seconds: float = 30.0,
    ) -> None:
        self.scheduler = Scheduler(
            memory, schedule=schedule, clock=clock, poll_seconds=poll_seconds
        )
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._checked = threading.Condition()
        self._checks = 0
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._loop, name="omoide-maintenance", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        """Check now whether a run is due (instead of at the next poll)."""
        self._wake.set()

    def stop(self, timeout: float | None = 60.0) -> None:
        """Stop the thread (a run in progress completes first)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def wait_checked(self, checks: int, timeout: float) -> bool:
        """Block until the thread has checked ``checks`` times since it started."""
        with self._checked:
            return self._checked.wait_for(lambda: self._checks >= checks, timeout)

    @property
    def checks(self) -> int:
        with self._checked:
            return self._checks

    def _loop(self) -> None:
        scheduler = self.scheduler
        while not self._stop.is_set():
            self._wake.clear()
            try:
                scheduler.run_pending()
            except Exception as exc:
                self.errors.append(f"{type(exc).__name__}: {exc}")
                _log.exception("omoide: maintenance failed; retrying at the next check")
            with self._checked:
                self._checks += 1
                self._checked.notify_all()
            if self._stop.is_set():
                break
            try:
                now = scheduler.clock.now()
                due = scheduler.due(now)
            except Exception:
                _log.exception("omoide: maintenance cannot read its schedule")
                due = now
            wait = (
                scheduler.poll_seconds
                if now >= due
                else min((due - now).total_seconds(), scheduler.poll_seconds)
            )
            self._wake.wait(wait)
