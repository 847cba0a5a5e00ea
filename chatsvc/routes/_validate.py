"""Small request checks that answer 400 naming the field (beyond what types enforce).

`bad` is the one builder of those 400s: every route raises what it returns.
"""

from __future__ import annotations

import dataclasses
from functools import cache
from typing import get_type_hints

from litestar import Request
from litestar.exceptions import ValidationException

from chatsvc import source_types
from chatsvc._control import RULE as CONTROL_RULE
from chatsvc._control import has_control

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
    if has_control(value):
        raise bad(field, CONTROL_RULE)
    return value


def source_type(value: str | None, field: str = "source_type") -> str | None:
    if value is not None and not source_types.valid(value):
        raise bad(field, source_types.RULE)
    return value


def bounded(field: str, value: int, low: int, high: int) -> int:
    if not low <= value <= high:
        raise bad(field, f"must be between {low} and {high}")
    return value


async def strict_bools(request: Request, body: type) -> None:
    """Litestar converts a body leniently: 0, 1, "true" or "0" pass for a bool. Each bool
    field of the dataclass `body` must have been sent as true or false (a null is left
    to the conversion, which allows it where the field may be None)."""
    raw = await request.json()  # parsed once: Litestar keeps it
    for name in _bool_fields(body):
        value = raw.get(name) if isinstance(raw, dict) else None
        if value is not None and not isinstance(value, bool):
            raise bad(name, "must be true or false")


@cache
def _bool_fields(body: type) -> tuple[str, ...]:
    hints = get_type_hints(body)
    return tuple(f.name for f in dataclasses.fields(body) if hints[f.name] in (bool, bool | None))
