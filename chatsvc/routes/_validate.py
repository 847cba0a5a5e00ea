"""Small request checks that answer 400 naming the field (beyond what types enforce).

`bad` is the one builder of those 400s: every route raises what it returns.
"""

from __future__ import annotations

import re

from litestar.exceptions import ValidationException

from chatsvc import source_types

# C0 controls and DEL, but tab, newline and carriage return: never meaningful in
# text a person wrote, and NUL truncates strings in C consumers downstream.
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
MAX_OFFSET = 10**9  # beyond it SQLite's 64-bit integers overflow (was a 500)


def bad(field: str, message: str) -> ValidationException:
    return ValidationException(
        detail=f"invalid value for {field}: {message}", extra=[{"key": field, "message": message}]
    )


def text(field: str, value: object, *, max_chars: int, required: bool = True) -> str:
    if not isinstance(value, str):
        raise bad(field, "must be a string")
    if required and not value.strip():
        raise bad(field, "must not be empty")
    if len(value) > max_chars:
        raise bad(field, f"must be at most {max_chars} characters")
    return plain(field, value)


def plain(field: str, value: str) -> str:
    """`value` unless it holds control characters (tab, CR and LF are fine)."""
    if CONTROL.search(value):
        raise bad(field, "must not contain control characters (NUL, ESC, ...)")
    return value


def source_type(value: str | None, field: str = "source_type") -> str | None:
    if value is not None and not source_types.valid(value):
        raise bad(field, source_types.RULE)
    return value


def bounded(field: str, value: int, low: int, high: int) -> int:
    if not low <= value <= high:
        raise bad(field, f"must be between {low} and {high}")
    return value
