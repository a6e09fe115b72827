"""Time expressions in questions, in Japanese and English, as time ranges.

The router sends a question that names a time ("先週のエラー", "what did we decide last
week?") to the episodic store with a time range. :func:`find_time_range` reads the first
time expression of a text and returns the range it denotes, relative to ``now`` (always the
injected clock's time, never the real one), in ``now``'s time zone:

=========================================  =================================================
expression                                 range
=========================================  =================================================
今日 / today                                today 00:00 → now
昨日 / yesterday, 一昨日 / the day before…   that whole day
今週 / this week, 先週 / last week           the calendar week (weeks start on Monday)
今月, 先月 / this month, last month          the calendar month
今年, 去年・昨年 / this year, last year      the calendar year
3日前 / 3 days ago (also 時間, 週間, か月, 年)   the hour, day, week, month or year that long ago
過去7日・ここ3日 / past 7 days, last 3 weeks   that much time up to now
3月・3月に / in March (2024年3月, March 2024)   the most recent March that has begun
3月5日 / March 5, 2024年3月5日               that day
2023年 / in 2023                             that year
月曜日から・月曜以降 / since Monday           the most recent Monday → now
先週の月曜日 / last Monday, on Monday         that day (Monday last week: a week earlier)
毎週月曜 / every Monday, Monday mornings     none: a habit names no day
月曜定例 / the Monday standup                none: part of a topic (also today-delivery)
今朝 / this morning, 昨夜 / last night        the morning, the evening and night
最近 / recently                              the last 14 days
一番最近 / most recently                      none: the newest, whenever it was
=========================================  =================================================

Numbers may be written in ASCII or full-width digits, as kanji (三, 十二) or as English words
(three, a, a couple of). Texts without a time expression give ``None``.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

__all__ = ["TimeRange", "find_time_range"]

#: The span "recently" and "最近" cover.
RECENT_DAYS = 14


@dataclass(frozen=True)
class TimeRange:
    """A half-open range ``[start, end)`` that a time expression denotes (never past now)."""

    start: datetime
    end: datetime
    #: The expression as found in the (NFKC-normalised) text.
    expression: str

    def __contains__(self, when: object) -> bool:
        return isinstance(when, datetime) and self.start <= when < self.end

    def as_tuple(self) -> tuple[datetime, datetime]:
        """``(start, end)`` as the episodic store's ``time_range`` takes it."""
        return (self.start, self.end)


# -- numbers ----------------------------------------------------------------------------

_EN_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "a couple of": 2,
    "a couple": 2,
    "couple of": 2,
    "a few": 3,
    "few": 3,
    "several": 3,
}
_KANJI_DIGITS = {"一": 1, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_EN_NUM = r"(?:\d+|" + "|".join(sorted(map(re.escape, _EN_NUMBERS), key=len, reverse=True)) + ")"
_JA_NUM = r"(?:\d+|[一二三四五六七八九十]+|数)"


def _number(text: str) -> int:
    text = text.strip().lower()
    if text.isdigit():
        return int(text)
    if text in _EN_NUMBERS:
        return _EN_NUMBERS[text]
    if text == "数":  # 数日前: a few days ago
        return 3
    total, current = 0, 0
    for ch in text:
        if ch == "十":
            total += (current or 1) * 10
            current = 0
        else:
            current = _KANJI_DIGITS[ch]
    return total + current


_MONTHS_EN = {
    name: i + 1
    for i, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ]
    )
    for name in names
}
_MONTH_EN = r"(?:" + "|".join(sorted(_MONTHS_EN, key=len, reverse=True)) + r")\.?"
_WEEKDAYS_EN = {
    "monday": 0,
    "tuesday": 1,
    "wednesday": 2,
    "thursday": 3,
    "friday": 4,
    "saturday": 5,
    "sunday": 6,
}
_WEEKDAY_EN = r"(?:" + "|".join(_WEEKDAYS_EN) + r")"
_WEEKDAYS_JA = {"月": 0, "火": 1, "水": 2, "木": 3, "金": 4, "土": 5, "日": 6}
_WEEKDAY_JA = r"(?P<wd>[月火水木金土日])曜(?:日)?"


# -- calendar helpers ---------------------------------------------------------------------


def _day(now: datetime, offset: int = 0) -> datetime:
    return now.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=offset)


def _week(now: datetime, offset: int = 0) -> tuple[datetime, datetime]:
    monday = _day(now, -now.weekday()) + timedelta(weeks=offset)
    return monday, monday + timedelta(weeks=1)


def _month_start(year: int, month: int, tz: object) -> datetime:
    year += (month - 1) // 12
    month = (month - 1) % 12 + 1
    return datetime(year, month, 1, tzinfo=tz)  # type: ignore[arg-type]


def _month(now: datetime, offset: int = 0) -> tuple[datetime, datetime]:
    start = _month_start(now.year, now.month + offset, now.tzinfo)
    return start, _month_start(start.year, start.month + 1, now.tzinfo)


def _year(now: datetime, offset: int = 0) -> tuple[datetime, datetime]:
    year = now.year + offset
    return datetime(year, 1, 1, tzinfo=now.tzinfo), datetime(year + 1, 1, 1, tzinfo=now.tzinfo)


def _named_month(now: datetime, month: int, year: int | None) -> tuple[datetime, datetime]:
    """The month ``month`` of ``year``, or the most recent one that has begun."""
    if year is None:
        year = now.year if month <= now.month else now.year - 1
    start = _month_start(year, month, now.tzinfo)
    return start, _month_start(year, month + 1, now.tzinfo)


def _named_day(now: datetime, month: int, day: int, year: int | None) -> tuple[datetime, datetime]:
    if year is None:
        year = now.year if (month, day) <= (now.month, now.day) else now.year - 1
    start = datetime(year, month, day, tzinfo=now.tzinfo)
    return start, start + timedelta(days=1)


def _last_weekday(now: datetime, weekday: int, *, before_this_week: bool) -> datetime:
    """The most recent ``weekday`` (today counts), or that day of last week."""
    if before_this_week:
        return _week(now, -1)[0] + timedelta(days=weekday)
    return _day(now, -((now.weekday() - weekday) % 7))


def _ago(now: datetime, unit: str, n: int) -> tuple[datetime, datetime]:
    """The hour/day/week/month/year that lies ``n`` units before ``now``."""
    if unit == "minute":
        point = now - timedelta(minutes=n)
        return point - timedelta(minutes=1), point + timedelta(minutes=1)
    if unit == "hour":
        point = now - timedelta(hours=n)
        return point - timedelta(minutes=30), point + timedelta(minutes=30)
    if unit == "day":
        return _day(now, -n), _day(now, -n + 1)
    if unit == "week":
        return _week(now, -n)
    if unit == "month":
        return _month(now, -n)
    return _year(now, -n)


def _past(now: datetime, unit: str, n: int) -> tuple[datetime, datetime]:
    """The last ``n`` units up to ``now``."""
    seconds = {
        "minute": 60,
        "hour": 3600,
        "day": 86400,
        "week": 7 * 86400,
        "month": 30 * 86400,
        "year": 365 * 86400,
    }[unit]
    return now - timedelta(seconds=seconds * n), now


_UNIT_EN = {
    "minute": "minute",
    "min": "minute",
    "hour": "hour",
    "hr": "hour",
    "day": "day",
    "week": "week",
    "wk": "week",
    "month": "month",
    "year": "year",
    "yr": "year",
}
_UNIT_JA = {
    "分": "minute",
    "時間": "hour",
    "日": "day",
    "週間": "week",
    "週": "week",
    "か月": "month",
    "ヶ月": "month",
    "カ月": "month",
    "ケ月": "month",
    "ヵ月": "month",
    "月": "month",
    "年": "year",
}
_UNIT_EN_RE = r"(?P<unit>minute|min|hour|hr|day|week|wk|month|year|yr)s?"
_UNIT_JA_RE = r"(?P<unit>時間|週間|週|か月|ヶ月|カ月|ケ月|ヵ月|分|日|月|年)"


# -- the patterns -----------------------------------------------------------------------

Handler = Callable[[re.Match[str], datetime], tuple[datetime, datetime]]
_PATTERNS: list[tuple[re.Pattern[str], Handler]] = []


def _pattern(regex: str) -> Callable[[Handler], Handler]:
    def register(handler: Handler) -> Handler:
        _PATTERNS.append((re.compile(regex, re.IGNORECASE), handler))
        return handler

    return register


_B = r"(?<![A-Za-z0-9])"  # an English word starts here
_E = r"(?![A-Za-z0-9])"  # and ends here
_ND = r"(?<![0-9一二三四五六七八九十])"  # a Japanese number starts here


@_pattern(rf"{_ND}(?P<n>{_JA_NUM}){_UNIT_JA_RE}前")
def _ja_ago(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    return _ago(now, _UNIT_JA[m["unit"]], _number(m["n"]))


@_pattern(rf"(?:過去|ここ|最近|この){_ND}(?P<n>{_JA_NUM}){_UNIT_JA_RE}(?:間)?")
def _ja_past(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    return _past(now, _UNIT_JA[m["unit"]], _number(m["n"]))


@_pattern(rf"{_B}(?P<n>{_EN_NUM})\s+{_UNIT_EN_RE}\s+(?:ago|back|earlier){_E}")
def _en_ago(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    return _ago(now, _UNIT_EN[m["unit"].lower()], _number(m["n"]))


@_pattern(
    rf"{_B}(?:in\s+|over\s+|during\s+|for\s+)?(?:the\s+)?(?:past|last|previous)\s+"
    rf"(?P<n>{_EN_NUM})\s+{_UNIT_EN_RE}{_E}"
)
def _en_past(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    return _past(now, _UNIT_EN[m["unit"].lower()], _number(m["n"]))


_RELATIVE_JA: dict[str, Callable[[datetime], tuple[datetime, datetime]]] = {
    "今日": lambda now: (_day(now), now),
    "本日": lambda now: (_day(now), now),
    "昨日": lambda now: (_day(now, -1), _day(now)),
    "一昨日": lambda now: (_day(now, -2), _day(now, -1)),
    "おととい": lambda now: (_day(now, -2), _day(now, -1)),
    "今朝": lambda now: (_day(now), _day(now) + timedelta(hours=12)),
    "昨夜": lambda now: (_day(now, -1) + timedelta(hours=18), _day(now) + timedelta(hours=6)),
    "昨晩": lambda now: (_day(now, -1) + timedelta(hours=18), _day(now) + timedelta(hours=6)),
    "今週": lambda now: (_week(now)[0], now),
    "先週末": lambda now: (
        _week(now, -1)[0] + timedelta(days=5),
        _week(now, -1)[1],
    ),
    "先週": lambda now: _week(now, -1),
    "先々週": lambda now: _week(now, -2),
    "今月": lambda now: (_month(now)[0], now),
    "先月": lambda now: _month(now, -1),
    "先々月": lambda now: _month(now, -2),
    "今年": lambda now: (_year(now)[0], now),
    "去年": lambda now: _year(now, -1),
    "昨年": lambda now: _year(now, -1),
    "一昨年": lambda now: _year(now, -2),
    "おととし": lambda now: _year(now, -2),
    "最近": lambda now: (now - timedelta(days=RECENT_DAYS), now),
}


def _qualified(
    m: re.Match[str], before: re.Pattern[str], after: re.Pattern[str] | None = None
) -> bool:
    """True when the words just before (or after) the expression ``m`` found qualify it
    into naming no range: a superlative ("most recently"), a habit ("every Monday")."""
    if before.search(m.string[: m.start()]):
        return True
    return after is not None and bool(after.search(m.string[m.end() :]))


#: "most recently", "一番最近": the newest, whenever it was, not the last few days.
_SUPERLATIVE_JA = re.compile(r"(?:一番|いちばん|最も)$")
_SUPERLATIVE_EN = re.compile(r"(?<![A-Za-z])most\s+$", re.IGNORECASE)
#: A day word joined to the next by a hyphen is part of a name: "today-delivery orders",
#: "Monday-morning standup" (see the weekdays below).
_COMPOUND_AFTER_EN = re.compile(r"^-[A-Za-z]")


@_pattern("|".join(sorted(map(re.escape, _RELATIVE_JA), key=len, reverse=True)))
def _ja_relative(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    if m[0] == "最近" and _qualified(m, _SUPERLATIVE_JA):
        raise ValueError(m[0])
    return _RELATIVE_JA[m[0]](now)


_RELATIVE_EN: dict[str, Callable[[datetime], tuple[datetime, datetime]]] = {
    "today": lambda now: (_day(now), now),
    "earlier today": lambda now: (_day(now), now),
    "this morning": lambda now: (_day(now), _day(now) + timedelta(hours=12)),
    "yesterday": lambda now: (_day(now, -1), _day(now)),
    "the day before yesterday": lambda now: (_day(now, -2), _day(now, -1)),
    "last night": lambda now: (
        _day(now, -1) + timedelta(hours=18),
        _day(now) + timedelta(hours=6),
    ),
    "this week": lambda now: (_week(now)[0], now),
    "last week": lambda now: _week(now, -1),
    "the week before last": lambda now: _week(now, -2),
    "last weekend": lambda now: (_week(now, -1)[0] + timedelta(days=5), _week(now, -1)[1]),
    "this month": lambda now: (_month(now)[0], now),
    "last month": lambda now: _month(now, -1),
    "this year": lambda now: (_year(now)[0], now),
    "last year": lambda now: _year(now, -1),
    "past week": lambda now: _past(now, "week", 1),
    "past month": lambda now: _past(now, "month", 1),
    "past year": lambda now: _past(now, "year", 1),
    "recently": lambda now: (now - timedelta(days=RECENT_DAYS), now),
    "lately": lambda now: (now - timedelta(days=RECENT_DAYS), now),
}


@_pattern(
    _B
    + "(?:"
    + "|".join(sorted((p.replace(" ", r"\s+") for p in _RELATIVE_EN), key=len, reverse=True))
    + ")"
    + _E
)
def _en_relative(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    said = re.sub(r"\s+", " ", m[0].lower())
    if said == "recently" and _qualified(m, _SUPERLATIVE_EN):
        raise ValueError(m[0])
    if _COMPOUND_AFTER_EN.search(m.string[m.end() :]):
        raise ValueError(m[0])  # "today-delivery orders": part of a topic's name
    return _RELATIVE_EN[said](now)


@_pattern(
    rf"(?:(?P<y>\d{{4}})年)?{_ND}(?P<mo>\d{{1,2}}|[一二三四五六七八九十]+)月(?P<d>\d{{1,2}})日"
)
def _ja_date(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    return _named_day(now, _number(m["mo"]), int(m["d"]), int(m["y"]) if m["y"] else None)


@_pattern(rf"(?:(?P<y>\d{{4}})年)?{_ND}(?P<mo>\d{{1,2}}|[一二三四五六七八九十]+)月(?![曜])")
def _ja_month(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    month = _number(m["mo"])
    if not 1 <= month <= 12:
        raise ValueError(month)
    return _named_month(now, month, int(m["y"]) if m["y"] else None)


@_pattern(r"(?<![0-9])(?P<y>\d{4})年(?![0-9]{1,2}月|[一二三四五六七八九十]+月)")
def _ja_year(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    return _year(now, int(m["y"]) - now.year)


@_pattern(
    rf"{_B}(?:on\s+)?(?:(?P<mo>{_MONTH_EN})\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?"
    rf"|(?P<d2>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<mo2>{_MONTH_EN}))"
    rf"(?:,?\s+(?P<y>\d{{4}}))?{_E}"
)
def _en_date(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    month = _MONTHS_EN[(m["mo"] or m["mo2"]).lower().rstrip(".")]
    return _named_day(now, month, int(m["d"] or m["d2"]), int(m["y"]) if m["y"] else None)


@_pattern(rf"{_B}(?:(?:in|during|since)\s+)?(?P<mo>{_MONTH_EN})(?:,?\s+(?P<y>\d{{4}}))?{_E}")
def _en_month(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    word = m["mo"].lower().rstrip(".")
    explicit = m[0].lower().startswith(("in", "during", "since"))
    if not explicit and m["y"] is None and word in ("may", "mar", "jan", "jun", "dec", "sep"):
        raise ValueError(word)  # "may" the verb, "mar", ... need a preposition or a year
    start, end = _named_month(now, _MONTHS_EN[word], int(m["y"]) if m["y"] else None)
    if m[0].lower().startswith("since"):
        return start, now
    return start, end


@_pattern(rf"{_B}(?:in|during)\s+(?P<y>(?:19|20)\d{{2}}){_E}")
def _en_year(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    return _year(now, int(m["y"]) - now.year)


#: A weekday said of every week is a habit, not a day ("毎週土曜日", "土曜ごと", "every
#: Saturday", "on Saturday mornings"): it names no range.
_HABIT_BEFORE_JA = re.compile(r"毎週の?$|毎$")
_HABIT_AFTER_JA = re.compile(r"^(?:ごと|毎)")
_HABIT_BEFORE_EN = re.compile(r"(?<![A-Za-z])(?:every|each)\s+$", re.IGNORECASE)
_HABIT_AFTER_EN = re.compile(
    r"^\s+(?:mornings|afternoons|evenings|nights)(?![A-Za-z])", re.IGNORECASE
)


#: A weekday or a day named as part of a topic names no day either: in a compound ("月曜定例",
#: "火曜リリース": a weekday run into a noun, not into a time of day or a time relation;
#: "today-delivery orders") or after an article ("the Monday standup", "the Friday review").
_TIME_WORD_JA = "朝昼夜晩夕午深中頃以迄未早明前後分付"  # 月曜朝, 月曜日中, 月曜以前, 月曜付
_TOPIC_AFTER_JA = re.compile(rf"^(?![{_TIME_WORD_JA}])[\u3400-\u9fff\u30a0-\u30ff]")
_TOPIC_BEFORE_EN = re.compile(
    r"(?<![A-Za-z])(?:the|a|an|our|my|your|their|his|her|its)\s+$", re.IGNORECASE
)


@_pattern(rf"(?P<last>先週の?)?{_WEEKDAY_JA}(?P<since>から|以降|以来)?")
def _ja_weekday(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    if not m["last"] and _qualified(m, _HABIT_BEFORE_JA, _HABIT_AFTER_JA):
        raise ValueError(m[0])
    if not m["last"] and not m["since"] and _TOPIC_AFTER_JA.search(m.string[m.end() :]):
        raise ValueError(m[0])
    day = _last_weekday(now, _WEEKDAYS_JA[m["wd"]], before_this_week=bool(m["last"]))
    if m["since"]:
        return day, now
    return day, day + timedelta(days=1)


@_pattern(
    rf"{_B}(?P<pre>since|last|on)?\s*(?P<wd>{_WEEKDAY_EN})"
    rf"(?P<week>,?\s+(?:of\s+)?(?:last|the\s+previous)\s+week)?{_E}"
)
def _en_weekday(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    pre = (m["pre"] or "").lower()
    if pre in ("", "on") and _qualified(m, _HABIT_BEFORE_EN, _HABIT_AFTER_EN):
        raise ValueError(m[0])
    if not pre and not m["week"] and _qualified(m, _TOPIC_BEFORE_EN, _COMPOUND_AFTER_EN):
        raise ValueError(m[0])
    earlier = pre == "last" or bool(m["week"])  # "last Monday", "on Monday last week"
    day = _last_weekday(now, _WEEKDAYS_EN[m["wd"].lower()], before_this_week=earlier)
    if pre == "since":
        return day, now
    return day, day + timedelta(days=1)


@_pattern(rf"{_B}since\s+(?:last\s+)?(?P<unit>week|month|year){_E}")
def _en_since(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    unit = m["unit"].lower()
    start = {"week": _week, "month": _month, "year": _year}[unit](now, -1)[0]
    return start, now


@_pattern(r"(?P<unit>先週|先月|去年|昨年)(?:から|以降|以来)")
def _ja_since(m: re.Match[str], now: datetime) -> tuple[datetime, datetime]:
    start = {"先週": _week, "先月": _month, "去年": _year, "昨年": _year}[m["unit"]](now, -1)[0]
    return start, now


def find_time_range(text: str, now: datetime) -> TimeRange | None:
    """The range of the first time expression in ``text`` (the longest one at a position).

    ``now`` is the reference point (pass the injected clock's time); ranges are in its time
    zone. Returns ``None`` when ``text`` names no time.
    """
    normalised = unicodedata.normalize("NFKC", text)
    found: list[tuple[int, int, TimeRange]] = []
    for regex, handler in _PATTERNS:
        for m in regex.finditer(normalised):
            if not m[0].strip():
                continue
            try:
                start, end = handler(m, now)
            except (ValueError, KeyError, OverflowError):
                continue  # not a date after all (month 13, "may" the verb, ...)
            if start > now:
                continue
            end = min(end, now)  # nothing is recorded in the future
            found.append((m.start(), -(m.end() - m.start()), TimeRange(start, end, m[0].strip())))
    if not found:
        return None
    found.sort(key=lambda f: (f[0], f[1]))
    return found[0][2]
