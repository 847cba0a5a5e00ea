"""The time a question asks about ("last May", "two weeks ago", "in 2023", "去年", "上个月"),
resolved against the moment it is asked, in the asker's timezone. Pure, no I/O.

Conversation search prefers (never restricts to) the messages written in the `Window`:
the date words may describe the event rather than the message, and what is said about
an event often comes days after it, so the window runs on past the period named
(`LATER`). The first phrase found decides, the most specific kinds first: a full date,
a month of a year, a day of a month, a month, a year, then relative days, weeks, months
and years. A question naming no time has no window.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

_MONTHS = {name.casefold(): n for n, name in enumerate(calendar.month_name) if n}
_MONTHS |= {abbr.casefold(): n for n, abbr in enumerate(calendar.month_abbr) if n and n != 5}
_WEEKDAYS = {name.casefold(): n for n, name in enumerate(calendar.day_name)}
_ZH_NUMBERS = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8,
               "九": 9, "十": 10, "十一": 11, "十二": 12}
_ZH_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
_COUNTS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
           "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
           "a couple of": 2, "couple of": 2, "a few": 3, "few": 3}
# How far past the period named a message still counts as in it: as long again, at
# least LATER_MIN ("last Saturday": what was said about it until Monday).
LATER_MIN = timedelta(days=2)

_MONTH = "(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_WEEKDAY = "(" + "|".join(_WEEKDAYS) + ")"
_COUNT = r"(\d{1,3}|" + "|".join(sorted(_COUNTS, key=len, reverse=True)) + ")"
_ZH_MONTH = r"(1[0-2]|[1-9]|十[一二]?|[一二三四五六七八九])\s*月"
_ZH_DAY = r"([12]?\d|3[01])\s*[日号]"


@dataclass(frozen=True)
class Window:
    """The moments a question refers to, UTC: `start` inclusive, `end` exclusive."""

    start: datetime
    end: datetime


def window(question: str, asked_at: datetime) -> Window | None:
    """The time `question` asks about, as of `asked_at` (aware, in the asker's zone), or
    None when it names none."""
    text = question.casefold()
    if not _ANY_TIME.search(text):  # most questions: one scan, not thirty
        return None
    today = asked_at.date()
    for pattern, resolve in _RULES:
        found = pattern.search(text)
        if found is None:
            continue
        try:
            period = resolve(found, today)
            return None if period is None else _window(*period, asked_at)
        except (ValueError, OverflowError):  # before year 1 or after 9999
            return None
    return None


def _window(first: date, last: date, asked_at: datetime) -> Window:
    """The days `first`..`last` in the asker's zone, with LATER after them, as UTC."""
    later = max(last - first + timedelta(days=1), LATER_MIN)
    start = datetime.combine(first, time(), asked_at.tzinfo)
    end = datetime.combine(last + timedelta(days=1), time(), asked_at.tzinfo) + later
    return Window(start.astimezone(UTC), end.astimezone(UTC))


def _month_days(year: int, month: int) -> tuple[date, date]:
    return date(year, month, 1), date(year, month, calendar.monthrange(year, month)[1])


def _day(year: int, month: int, day: int) -> tuple[date, date] | None:
    try:
        found = date(year, month, day)
    except ValueError:
        return None
    return found, found


def _recent_month(month: int, today: date, *, before_this: bool) -> tuple[date, date]:
    """The month `month` most recently begun (`before_this`: not the current one)."""
    year = today.year if month < today.month or (month == today.month and not before_this) \
        else today.year - 1
    return _month_days(year, month)


def _recent_day(month: int, day: int, today: date) -> tuple[date, date] | None:
    this_year = _day(today.year, month, day)
    if this_year is not None and this_year[0] <= today:
        return this_year
    return _day(today.year - 1, month, day)


def _weekday_before(weekday: int, today: date) -> tuple[date, date]:
    """The last `weekday` before today."""
    back = (today.weekday() - weekday) % 7 or 7
    found = today - timedelta(days=back)
    return found, found


def _last_week(today: date) -> tuple[date, date]:
    monday = today - timedelta(days=today.weekday() + 7)
    return monday, monday + timedelta(days=6)


def _last_weekend(today: date) -> tuple[date, date]:
    saturday, _ = _weekday_before(5, today)
    return saturday, saturday + timedelta(days=1)


def _months_back(today: date, count: int) -> tuple[date, date]:
    months = today.year * 12 + today.month - 1 - count
    return _month_days(months // 12, months % 12 + 1)


def _year(year: int) -> tuple[date, date]:
    return date(year, 1, 1), date(year, 12, 31)


def _count(word: str) -> int:
    return int(word) if word.isdigit() else _COUNTS[word]


def _zh_number(word: str) -> int:
    return int(word) if word.isdigit() else _ZH_NUMBERS[word]


def _days_back(days: int, today: date) -> tuple[date, date]:
    found = today - timedelta(days=days)
    return found, found


Resolve = Callable[[re.Match, date], "tuple[date, date] | None"]
_RELATIVE_DAYS = {"today": 0, "tonight": 0, "this morning": 0, "yesterday": 1,
                  "last night": 1, "the day before yesterday": 2, "今天": 0, "今晚": 0,
                  "昨天": 1, "昨晚": 1, "前天": 2}
# Every rule below needs one of these.
_ANY_TIME = re.compile(
    r"\d|[年月日号天晚周期拜]|\b(?:" + "|".join([*_MONTHS, *_WEEKDAYS]) +
    r"|yesterday|today|tonight|night|morning|ago|last|this|week|weekend|month|year)\b")
_RULES: list[tuple[re.Pattern, Resolve]] = [(re.compile(p), r) for p, r in (
    # 7 May 2023, 7 May, 2023, May 7th, 2023, 2023年5月7日
    (rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH},?\s+(\d{{4}})\b",
     lambda m, t: _day(int(m[3]), _MONTHS[m[2]], int(m[1]))),
    (rf"\b{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b",
     lambda m, t: _day(int(m[3]), _MONTHS[m[1]], int(m[2]))),
    (rf"(\d{{4}})\s*年\s*{_ZH_MONTH}\s*{_ZH_DAY}",
     lambda m, t: _day(int(m[1]), _zh_number(m[2]), int(m[3]))),
    # May 2023, 2023年5月
    (rf"\b{_MONTH},?\s+(?:of\s+)?(\d{{4}})\b",
     lambda m, t: _month_days(int(m[2]), _MONTHS[m[1]])),
    (rf"(\d{{4}})\s*年\s*{_ZH_MONTH}", lambda m, t: _month_days(int(m[1]), _zh_number(m[2]))),
    # May 7th, 7 May, 5月7日: the last one up to today
    (rf"\b{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?\b",
     lambda m, t: _recent_day(_MONTHS[m[1]], int(m[2]), t)),
    (rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}\b",
     lambda m, t: _recent_day(_MONTHS[m[2]], int(m[1]), t)),
    (rf"{_ZH_MONTH}\s*{_ZH_DAY}", lambda m, t: _recent_day(_zh_number(m[1]), int(m[2]), t)),
    # last May, in May, 五月
    (rf"\blast\s+{_MONTH}\b", lambda m, t: _recent_month(_MONTHS[m[1]], t, before_this=True)),
    (rf"\b(?:in|during)\s+{_MONTH}\b",
     lambda m, t: _recent_month(_MONTHS[m[1]], t, before_this=False)),
    (rf"去年\s*{_ZH_MONTH}", lambda m, t: _month_days(t.year - 1, _zh_number(m[1]))),
    (rf"(?<![上下这本个])(?<!\d){_ZH_MONTH}(?!份?[前后])",
     lambda m, t: _recent_month(_zh_number(m[1]), t, before_this=False)),
    # in 2023, 2023年
    (r"\b(?:in|during|of)\s+((?:19|20)\d{2})\b", lambda m, t: _year(int(m[1]))),
    (r"((?:19|20)\d{2})\s*年", lambda m, t: _year(int(m[1]))),
    # yesterday, last Tuesday, last weekend, last week, 三天前
    ("|".join(sorted(_RELATIVE_DAYS, key=len, reverse=True)),
     lambda m, t: _days_back(_RELATIVE_DAYS[m[0]], t)),
    (rf"\b(?:last|on|this past)\s+{_WEEKDAY}\b",
     lambda m, t: _weekday_before(_WEEKDAYS[m[1]], t)),
    (r"(?:上周|上个?星期|上个?礼拜)([一二三四五六日天])",
     lambda m, t: _weekday_before(_ZH_WEEKDAYS[m[1]], t)),
    (r"\blast\s+weekend\b|上个?周末", lambda m, t: _last_weekend(t)),
    (r"\blast\s+week\b|上周|上个?星期|上个?礼拜", lambda m, t: _last_week(t)),
    (rf"\b{_COUNT}\s+days?\s+ago\b", lambda m, t: _days_back(_count(m[1]), t)),
    (r"(\d{1,3}|[一二两三四五六七八九十])\s*天前", lambda m, t: _days_back(_zh_number(m[1]), t)),
    (rf"\b{_COUNT}\s+weeks?\s+ago\b",
     lambda m, t: _last_week(t - timedelta(weeks=_count(m[1]) - 1))),
    (r"(\d{1,3}|[一二两三四五六七八九十])\s*(?:个)?(?:周|星期|礼拜)前",
     lambda m, t: _last_week(t - timedelta(weeks=_zh_number(m[1]) - 1))),
    (r"\bthis\s+month\b|这个月|本月", lambda m, t: _months_back(t, 0)),
    (r"\blast\s+month\b|上个?月", lambda m, t: _months_back(t, 1)),
    (rf"\b{_COUNT}\s+months?\s+ago\b", lambda m, t: _months_back(t, _count(m[1]))),
    (r"(\d{1,2}|[一二两三四五六七八九十])\s*个月前",
     lambda m, t: _months_back(t, _zh_number(m[1]))),
    (r"\bthis\s+year\b|今年", lambda m, t: _year(t.year)),
    (r"\blast\s+year\b|去年", lambda m, t: _year(t.year - 1)),
    (r"前年", lambda m, t: _year(t.year - 2)),
    (rf"\b{_COUNT}\s+years?\s+ago\b", lambda m, t: _year(t.year - _count(m[1]))),
    (r"(\d{1,2}|[一二两三四五六七八九十])\s*年前", lambda m, t: _year(t.year - _zh_number(m[1]))),
)]
