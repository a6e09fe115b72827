"""Injected time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from omoide import Clock, ManualClock, SystemClock
from omoide.clock import as_utc, from_timestamp, to_timestamp


def test_manual_clock_moves_only_when_told() -> None:
    clock = ManualClock(datetime(2026, 1, 1, 9, 0, tzinfo=UTC))
    assert clock.now() == clock.now()
    clock.advance(days=1, hours=2)
    assert clock.now() == datetime(2026, 1, 2, 11, 0, tzinfo=UTC)
    before = clock.monotonic()
    clock.sleep(30)
    assert clock.monotonic() - before == 30
    assert clock.now() == datetime(2026, 1, 2, 11, 0, 30, tzinfo=UTC)
    clock.set(datetime(2025, 12, 31))
    assert clock.now() == datetime(2025, 12, 31, tzinfo=UTC)
    assert clock.monotonic() == before + 30  # set() does not move monotonic time
    with pytest.raises(ValueError):
        clock.advance(days=-1)


def test_clocks_satisfy_the_protocol_and_keep_zones() -> None:
    jst = timezone(timedelta(hours=9))
    assert isinstance(SystemClock(), Clock) and isinstance(ManualClock(), Clock)
    assert SystemClock(jst).now().utcoffset() == timedelta(hours=9)
    assert ManualClock(datetime(2026, 4, 1, 3, 0, tzinfo=jst)).now().hour == 3
    assert SystemClock().now().tzinfo is not None


def test_timestamps_round_trip_and_naive_means_utc() -> None:
    naive = datetime(2026, 5, 5, 12, 0)
    assert as_utc(naive) == datetime(2026, 5, 5, 12, 0, tzinfo=UTC)
    jst = datetime(2026, 5, 5, 21, 0, tzinfo=timezone(timedelta(hours=9)))
    assert to_timestamp(jst) == to_timestamp(naive)
    assert from_timestamp(to_timestamp(jst)) == jst
