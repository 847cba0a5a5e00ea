"""A user's timezone as a tzinfo: the one reading of `users.timezone`."""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError


def user_zone(timezone: str) -> tzinfo:
    """The zone named `timezone` (an unknown one counts as UTC)."""
    try:
        return ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        return UTC


def in_user_zone(moment: datetime, timezone: str) -> datetime:
    """`moment` in the zone named `timezone`: how a question's "last May" or "上个月" is
    read (context.question_dates). UTC where that zone would leave years 1-9999."""
    try:
        return moment.astimezone(user_zone(timezone))
    except OverflowError:
        return moment
