"""Dates a quote implies through its message's time: pure functions, no I/O.

A fact may resolve "yesterday" to the date it was ("Went to Lyon on 7 May 2023"); the
numbers and month names of that date then count as present in the quote.
"""

from __future__ import annotations

import calendar
import re
from datetime import date, datetime, timedelta

from chatsvc.extraction._words import NUMBER_WORDS

# (pattern, unit, offset): unit "d" (day), "m" (month) or "y" (year); a None offset
# takes the count captured by the pattern ("3 days ago").
_RELATIVE = [(re.compile(p), unit, offset) for p, unit, offset in (
    (r"\b(?:today|tonight|this (?:morning|afternoon|evening))\b|今天|今晚|今早", "d", 0),
    (r"\b(?:yesterday|last night)\b|昨天|昨晚", "d", -1),
    (r"前天", "d", -2),
    (r"\btomorrow\b|明天", "d", 1),
    (r"后天", "d", 2),
    (r"\blast week(?:end)?\b|上周|上个?星期|上个?礼拜", "d", -7),
    (r"\bnext week(?:end)?\b|下周|下个?星期", "d", 7),
    (r"\b(\w+) days? ago\b", "d", None),
    (r"\b(\w+) weeks? ago\b", "w", None),
    (r"\bthis month\b|这个月|本月", "m", 0),
    (r"\blast month\b|上个?月", "m", -1),
    (r"\bnext month\b|下个?月", "m", 1),
    (r"\b(\w+) months? ago\b", "m", None),
    (r"\bthis year\b|今年", "y", 0),
    (r"\blast year\b|去年", "y", -1),
    (r"前年", "y", -2),
    (r"\bnext year\b|明年", "y", 1),
    (r"\b(\w+) years? ago\b", "y", None),
)]
_ANY_RELATIVE = re.compile("|".join(f"(?:{p.pattern})" for p, _, _ in _RELATIVE))
_MONTHS = tuple(m.casefold() for m in calendar.month_name[1:])
_MONTH_IN_TEXT = re.compile(r"\b(?:" + "|".join(_MONTHS) + r")\b|\d{1,2}月")


def said_date(said_at: str | None) -> date | None:
    if not said_at:
        return None
    try:
        return datetime.fromisoformat(said_at.strip()).date()
    except ValueError:
        return None


def implied(folded_quote: str, said: date | None) -> tuple[set[str], set[str]]:
    """(numbers, names) of the dates the quote refers to relative to `said`."""
    numbers: set[str] = set()
    names: set[str] = set()
    if said is None:
        return numbers, names
    if _MONTH_IN_TEXT.search(folded_quote):  # "on May 7": the year is the message's
        numbers.add(str(said.year))
    if not _ANY_RELATIVE.search(folded_quote):  # most quotes: one scan, not eighteen
        return numbers, names
    for pattern, unit, offset in _RELATIVE:
        for found in pattern.finditer(folded_quote):
            count = offset if offset is not None else _count(found[1])
            if count is not None:
                _add(_shift(said, unit, count if offset is not None else -count), unit,
                     numbers, names)
    return numbers, names


def _count(word: str) -> int | None:
    if word.isdigit():
        return int(word)
    if word in ("a", "an"):
        return 1
    return NUMBER_WORDS.get(word)


def _shift(said: date, unit: str, count: int) -> date:
    if unit == "d":
        return said + timedelta(days=count)
    if unit == "w":
        return said + timedelta(weeks=count)
    if unit == "m":
        months = said.year * 12 + said.month - 1 + count
        return date(months // 12, months % 12 + 1, 1)
    return date(said.year + count, 1, 1)


def _add(day: date, unit: str, numbers: set[str], names: set[str]) -> None:
    numbers.add(str(day.year))
    if unit == "y":
        return
    numbers.add(str(day.month))
    names.add(_MONTHS[day.month - 1])
    if unit in ("d", "w"):
        numbers.add(str(day.day))
        names.add(calendar.day_name[day.weekday()].casefold())
