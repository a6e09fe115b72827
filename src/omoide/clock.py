"""Time, injected.

Everything in omoide that reads the clock takes it from a :class:`Clock`, so tests and
simulations control time (a year of memory in minutes) and never sleep for real.

* :class:`SystemClock` reads the real clock.
* :class:`ManualClock` stands still until told to move: ``set()``, ``advance()``; its
  ``sleep()`` advances it instead of waiting.

Datetimes are timezone-aware. Naive datetimes given to omoide are read as UTC.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Protocol, runtime_checkable

__all__ = ["Clock", "ManualClock", "SystemClock", "as_utc", "from_timestamp", "to_timestamp"]


@runtime_checkable
class Clock(Protocol):
    """Source of wall time, monotonic time and waiting."""

    def now(self) -> datetime:
        """The current time, timezone-aware."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes backwards (for timeouts and budgets)."""
        ...

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` (a manual clock advances instead)."""
        ...


class SystemClock:
    """The real clock. ``tz`` selects the zone of :meth:`now` (default: local zone)."""

    def __init__(self, tz: tzinfo | None = None) -> None:
        self._tz = tz

    def now(self) -> datetime:
        return datetime.now(self._tz).astimezone(self._tz)

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(max(0.0, seconds))


class ManualClock:
    """A clock that only moves when told to; thread-safe.

    >>> clock = ManualClock(datetime(2026, 1, 1, 9, 0, tzinfo=UTC))
    >>> clock.advance(days=3)
    >>> clock.now().day
    4
    """

    def __init__(self, start: datetime | None = None) -> None:
        if start is None:
            start = datetime(2026, 1, 1, tzinfo=UTC)
        self._now = start if start.tzinfo is not None else as_utc(start)
        self._mono = 0.0
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def monotonic(self) -> float:
        with self._lock:
            return self._mono

    def sleep(self, seconds: float) -> None:
        self.advance(seconds=max(0.0, seconds))

    def set(self, when: datetime) -> None:
        """Jump to ``when`` (may go backwards: the wall clock can; monotonic time does not)."""
        with self._lock:
            self._now = when if when.tzinfo is not None else as_utc(when)

    def advance(
        self,
        delta: timedelta | None = None,
        *,
        days: float = 0,
        hours: float = 0,
        minutes: float = 0,
        seconds: float = 0,
    ) -> None:
        """Move forward by ``delta`` and/or the given amounts (negative totals are refused):
        ``advance(timedelta(days=7))`` and ``advance(days=7)`` do the same."""
        delta = (delta or timedelta(0)) + timedelta(
            days=days, hours=hours, minutes=minutes, seconds=seconds
        )
        if delta < timedelta(0):
            raise ValueError("ManualClock.advance cannot go backwards; use set()")
        with self._lock:
            self._now += delta
            self._mono += delta.total_seconds()


def as_utc(value: datetime) -> datetime:
    """Return ``value`` as an aware UTC datetime (naive values are taken to be UTC)."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def to_timestamp(value: datetime) -> float:
    """Seconds since the epoch, the form every timestamp is stored in."""
    return as_utc(value).timestamp()


def from_timestamp(value: float) -> datetime:
    """The aware UTC datetime of a stored timestamp."""
    return datetime.fromtimestamp(value, tz=UTC)
