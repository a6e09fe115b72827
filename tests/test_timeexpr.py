"""Time expressions → ranges, relative to an injected "now" (Wednesday 2026-03-18 15:00 UTC)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from omoide.text.timeexpr import RECENT_DAYS, find_time_range

NOW = datetime(2026, 3, 18, 15, 0, tzinfo=UTC)  # a Wednesday


def d(month: int, day: int, year: int = 2026, hour: int = 0) -> datetime:
    return datetime(year, month, day, hour, tzinfo=UTC)


CASES = [
    # Japanese
    ("今日の作業", d(3, 18), NOW),
    ("昨日のエラー", d(3, 17), d(3, 18)),
    ("一昨日", d(3, 16), d(3, 17)),
    ("今週の決定", d(3, 16), NOW),
    ("先週の決定は？", d(3, 9), d(3, 16)),
    ("先々週", d(3, 2), d(3, 9)),
    ("先月のリリース", d(2, 1), d(3, 1)),
    ("今月", d(3, 1), NOW),
    ("去年の障害", d(1, 1, 2025), d(1, 1, 2026)),
    ("昨年", d(1, 1, 2025), d(1, 1, 2026)),
    ("3日前に話した件", d(3, 15), d(3, 16)),
    ("三日前", d(3, 15), d(3, 16)),
    ("3日前", d(3, 15), d(3, 16)),
    ("2週間前のデプロイ", d(3, 2), d(3, 9)),
    ("3か月前", d(12, 1, 2025), d(1, 1, 2026)),
    ("2年前", d(1, 1, 2024), d(1, 1, 2025)),
    ("過去7日間のログ", NOW - timedelta(days=7), NOW),
    ("ここ3日", NOW - timedelta(days=3), NOW),
    ("3月の売上", d(3, 1), NOW),  # the current month, up to now
    ("12月に決めた", d(12, 1, 2025), d(1, 1, 2026)),
    ("2024年3月5日の会議", d(3, 5, 2024), d(3, 6, 2024)),
    ("2025年の方針", d(1, 1, 2025), d(1, 1, 2026)),
    ("月曜日から", d(3, 16), NOW),
    ("先週の金曜日", d(3, 13), d(3, 14)),
    ("最近のバグ", NOW - timedelta(days=14), NOW),
    ("昨夜のアラート", d(3, 17, hour=18), d(3, 18, hour=6)),
    ("５日前", d(3, 13), d(3, 14)),  # full-width digit
    # English
    ("today", d(3, 18), NOW),
    ("what broke yesterday?", d(3, 17), d(3, 18)),
    ("the day before yesterday", d(3, 16), d(3, 17)),
    ("last week", d(3, 9), d(3, 16)),
    ("this week", d(3, 16), NOW),
    ("last month", d(2, 1), d(3, 1)),
    ("last year", d(1, 1, 2025), d(1, 1, 2026)),
    ("3 days ago", d(3, 15), d(3, 16)),
    ("three days ago", d(3, 15), d(3, 16)),
    ("a couple of weeks ago", d(3, 2), d(3, 9)),
    ("2 months ago", d(1, 1), d(2, 1)),
    ("in March", d(3, 1), NOW),
    ("in May 2023", d(5, 1, 2023), d(6, 1, 2023)),
    ("in December", d(12, 1, 2025), d(1, 1, 2026)),
    ("since Monday", d(3, 16), NOW),
    ("since last month", d(2, 1), NOW),
    ("last Friday", d(3, 13), d(3, 14)),
    ("on Tuesday", d(3, 17), d(3, 18)),
    ("on 11 August, 2023", d(8, 11, 2023), d(8, 12, 2023)),
    ("March 5", d(3, 5), d(3, 6)),
    ("the past 3 days", NOW - timedelta(days=3), NOW),
    ("in 2023", d(1, 1, 2023), d(1, 1, 2024)),
    ("this morning", d(3, 18), d(3, 18, hour=12)),
    ("last weekend", d(3, 14), d(3, 16)),
    ("recently", NOW - timedelta(days=14), NOW),
]


@pytest.mark.parametrize(("text", "start", "end"), CASES, ids=[c[0] for c in CASES])
def test_expression_becomes_range(text: str, start: datetime, end: datetime) -> None:
    found = find_time_range(text, NOW)
    assert found is not None, text
    assert (found.start, found.end) == (start, end)
    assert found.start < found.end <= NOW


def test_at_least_thirty_expressions_are_covered() -> None:
    assert len(CASES) >= 30


@pytest.mark.parametrize(
    "text",
    [
        "FastAPIのミドルウェア設計",
        "How do I deploy?",
        "May I ask a question?",  # "may" the verb is not May
        "記事を書く手順",
    ],
)
def test_texts_without_time_give_none(text: str) -> None:
    assert find_time_range(text, NOW) is None


def test_digits_are_not_split() -> None:
    found = find_time_range("13日前", NOW)
    assert found is not None
    assert found.start == d(3, 5)


def test_future_dates_are_not_ranges_of_the_past() -> None:
    # "in March" asked in January means last year's March, not a future one.
    january = datetime(2026, 1, 10, tzinfo=UTC)
    found = find_time_range("in March", january)
    assert found is not None
    assert found.start == d(3, 1, 2025)


def test_first_expression_wins_and_longest_at_a_position() -> None:
    found = find_time_range("先週の月曜日と昨日", NOW)
    assert found is not None
    assert found.expression == "先週の月曜日"
    assert (found.start, found.end) == (d(3, 9), d(3, 10))


def test_range_contains_and_tuple() -> None:
    found = find_time_range("yesterday", NOW)
    assert found is not None
    assert d(3, 17, hour=12) in found
    assert d(3, 18) not in found
    assert found.as_tuple() == (d(3, 17), d(3, 18))


def test_time_zone_of_now_is_kept() -> None:
    from zoneinfo import ZoneInfo

    tokyo = datetime(2026, 3, 18, 1, 0, tzinfo=ZoneInfo("Asia/Tokyo"))
    found = find_time_range("昨日", tokyo)
    assert found is not None
    assert found.start == datetime(2026, 3, 17, tzinfo=ZoneInfo("Asia/Tokyo"))


@pytest.mark.parametrize(
    "text",
    [
        "毎週土曜日は何時に起きる？",
        "毎週の月曜は定例です",
        "土曜ごとにバックアップを取る",
        "What time do I wake up on Saturday mornings?",
        "We deploy every Monday.",
        "Each friday we review the logs.",
        "I go running on Saturdays",
    ],
)
def test_a_weekday_said_of_every_week_names_no_day(text: str) -> None:
    assert find_time_range(text, NOW) is None


def test_a_weekday_said_once_still_names_its_day() -> None:
    for text, expression in (
        ("土曜日の朝は何時に起きた？", "土曜日"),
        ("先週の月曜日は何をした？", "先週の月曜日"),
        ("What did I do on Saturday morning?", "on Saturday"),
        ("last Monday nights were quiet", "last Monday"),
    ):
        found = find_time_range(text, NOW)
        assert found is not None and found.expression == expression, text


@pytest.mark.parametrize(
    "text",
    [
        "Which streaming service did I start using most recently?",
        "一番最近行った店は？",
        "最も最近の障害は？",
    ],
)
def test_most_recently_asks_for_the_newest_not_the_last_days(text: str) -> None:
    assert find_time_range(text, NOW) is None


def test_recently_alone_is_the_last_days() -> None:
    for text in ("What have I done recently?", "最近のエラー", "almost recently"):
        found = find_time_range(text, NOW)
        assert found is not None and found.start == NOW - timedelta(days=RECENT_DAYS), text


@pytest.mark.parametrize(
    "text",
    [
        "What is the Monday standup rule?",
        "What was decided in the Monday meeting?",
        "the Tuesday deploy freeze",
        "Monday-morning standup notes",
        "what do we do with today-delivery orders?",
        "月曜定例のルールは？",
        "火曜リリースの手順は？",
        "日曜大工の道具はどこ？",
    ],
)
def test_a_weekday_or_day_in_a_topic_s_name_names_no_day(text: str) -> None:
    assert find_time_range(text, NOW) is None


def test_a_time_said_after_a_topic_s_weekday_is_the_range() -> None:
    for text, expression in (
        ("What did we change about the Monday standup rule last month?", "last month"),
        ("月曜定例のルールは先月どう変わった？", "先月"),
        ("金曜レビューで先週何があった？", "先週"),
    ):
        found = find_time_range(text, NOW)
        assert found is not None and found.expression == expression, text


def test_a_weekday_run_into_a_time_of_day_still_names_its_day() -> None:
    for text, expression in (
        ("月曜朝に何があった？", "月曜"),
        ("月曜夜のデプロイ", "月曜"),
        ("月曜日中に終わらせた", "月曜日"),
        ("先週の月曜定例", "先週の月曜"),
        ("What did we ship Monday?", "Monday"),
        ("How do we handle same-day delivery today?", "today"),
    ):
        found = find_time_range(text, NOW)
        assert found is not None and found.expression == expression, text


def test_a_weekday_of_last_week_is_that_week_s_day() -> None:
    for text, start, end in (
        ("What did we do on Monday last week?", d(3, 9), d(3, 10)),
        ("the notes of Monday of last week", d(3, 9), d(3, 10)),
        ("since Monday last week", d(3, 9), NOW),
        ("on Monday", d(3, 16), d(3, 17)),  # this week's, as before
    ):
        found = find_time_range(text, NOW)
        assert found is not None and found.as_tuple() == (start, end), text
