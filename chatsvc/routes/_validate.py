"""Small request checks that answer 400 naming the field (beyond what types enforce).

`bad` is the one builder of those 400s: every route raises what it returns.
"""

from __future__ import annotations

import dataclasses
import re
from datetime import datetime
from functools import cache
from typing import get_type_hints

from litestar import Request
from litestar.exceptions import ValidationException
from litestar.params import QueryParameter

from chatsvc import source_types
from chatsvc._control import RULE as CONTROL_RULE
from chatsvc._control import has_control
from store.clock import MOMENT_RULE, parse_moment

MAX_OFFSET = 10**9  # beyond it SQLite's 64-bit integers overflow (was a 500)


def bad(field: str, message: str) -> ValidationException:
    return ValidationException(
        detail=f"invalid value for {field}: {message}", extra=[{"key": field, "message": message}]
    )


def moment(field: str, raw: str) -> datetime:
    """A client's ISO date (midnight UTC) or time (no zone: UTC), as an aware datetime."""
    try:
        return parse_moment(raw)
    except ValueError:
        raise bad(field, MOMENT_RULE) from None


def in_order(start_field: str, start: datetime | None, end_field: str,
             end: datetime | None) -> None:
    """A 400 naming `start_field` unless `start` is before `end` (either missing: fine)."""
    if start is not None and end is not None and start >= end:
        raise bad(start_field, f"must be before {end_field}")


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


async def single_query_values(request: Request) -> None:
    """The app's before-request hook: a query parameter sent twice (`?limit=1&limit=500`)
    is 400, where Litestar would silently use one of the values; so is an int or bool
    one written otherwise than as its type (`limit=1.0`, `pinned=1`), which it converts."""
    for name in request.query_params:
        if len(request.query_params.getall(name)) > 1:
            raise bad(name, "must be given once")
    for name, kind in _strict_query(request.route_handler):
        raw = request.query_params.get(name)
        if raw is not None and not _QUERY_FORMS[kind].fullmatch(raw):
            raise bad(name, _STRICT[kind])


# How an int or bool query parameter must be written (msgspec also takes "1.0", "1e1"
# and "+5" for an int, "1", "0" for a bool).
_QUERY_FORMS = {int: re.compile(r"-?[0-9]+"), bool: re.compile(r"true|false")}


@cache
def _strict_query(handler: object) -> tuple[tuple[str, type], ...]:
    """(query key, int or bool) of each such query parameter of a route handler."""
    found = []
    for name, field in handler.parsed_fn_signature.parameters.items():
        if isinstance(field.kwarg_definition, QueryParameter):
            key = field.kwarg_definition.query or name
            found += [(key, kind) for kind in _STRICT if field.annotation in (kind, kind | None)]
    return tuple(found)


def source_type(value: str | None, field: str = "source_type") -> str | None:
    if value is not None and not source_types.valid(value):
        raise bad(field, source_types.RULE)
    return value


def bounded(field: str, value: int, low: int, high: int) -> int:
    if not low <= value <= high:
        raise bad(field, f"must be between {low} and {high}")
    return value


# The JSON type a body field of each of these types must have been sent as, and the
# rule its 400 states: Litestar converts leniently (0, 1, "true" pass for a bool; "5"
# and 5.0 for an int).
_STRICT = {bool: "must be true or false", int: "must be a whole number"}


async def strict_scalars(request: Request, body: type) -> None:
    """Each bool or int field of the dataclass `body` must have been sent as a JSON bool
    or integer (a null is left to the conversion, which allows it where the field may
    be None). `type(...) is` also keeps true and false out of an int."""
    raw = await request.json()  # parsed once: Litestar keeps it
    for name, kind in _strict_fields(body):
        value = raw.get(name) if isinstance(raw, dict) else None
        if value is not None and type(value) is not kind:
            raise bad(name, _STRICT[kind])


@cache
def _strict_fields(body: type) -> tuple[tuple[str, type], ...]:
    hints = get_type_hints(body)
    return tuple((f.name, kind) for f in dataclasses.fields(body) for kind in _STRICT
                 if hints[f.name] in (kind, kind | None))
