"""Ids and timestamps. Times are ISO-8601 UTC strings with a Z, sortable as text."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime


def new_id() -> str:
    return uuid.uuid4().hex


def utc_now() -> datetime:
    return datetime.now(UTC)


def iso(moment: datetime) -> str:
    # isoformat, not strftime: %Y writes the year 999 as "999", which sorts after 2026
    return moment.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def now_iso() -> str:
    return iso(utc_now())


MAX_MOMENT_CHARS = 40
# What a client is told when `parse_moment` refuses its text (every API that takes a time).
MOMENT_RULE = "must be an ISO-8601 date or time, e.g. 2026-11-01 or 2026-11-01T12:00:00Z"


def parse_moment(text: str) -> datetime:
    """A client's ISO-8601 date or time as an aware UTC datetime (no zone: UTC).
    ValueError for anything else: control or non-ASCII characters (which
    `fromisoformat` lets through in places), more than MAX_MOMENT_CHARS, or a time
    that leaves years 1-9999 when moved to UTC."""
    text = text.strip()
    # Length: `fromisoformat` reads 5,000 digits as a basic-format time with endless
    # fractional seconds; the longest real one ("...T10:00:00.123456789+05:30") is 35.
    if len(text) > MAX_MOMENT_CHARS or not (text.isascii() and text.isprintable()):
        raise ValueError("not an ISO-8601 time")
    moment = datetime.fromisoformat(text)
    try:
        return moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)
    except OverflowError:
        raise ValueError("out of range once moved to UTC") from None


def parse_iso(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))
