"""A user's timezone as a tzinfo: the one reading of `users.timezone`."""

from __future__ import annotations

from datetime import UTC, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError


def user_zone(timezone: str) -> tzinfo:
    """The zone named `timezone` (an unknown one counts as UTC)."""
    try:
        return ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        return UTC
