"""Stored times: ISO-8601 UTC text that sorts as time, and what a client may send."""

from datetime import UTC, datetime

import pytest

from store.clock import iso, parse_moment


def test_stored_times_sort_as_text_in_every_year():
    moments = [datetime(999, 1, 1, tzinfo=UTC), datetime(2026, 11, 25, 2, 30, tzinfo=UTC)]
    assert [iso(m) for m in moments] == ["0999-01-01T00:00:00.000000Z",
                                         "2026-11-25T02:30:00.000000Z"]
    assert sorted(iso(m) for m in reversed(moments)) == [iso(m) for m in moments]


@pytest.mark.parametrize(("text", "expected"), [
    ("2026-11-01", "2026-11-01T00:00:00.000000Z"),
    ("2026-11-01T12:00:00Z", "2026-11-01T12:00:00.000000Z"),
    (" 2026-11-01T12:00:00+02:00 ", "2026-11-01T10:00:00.000000Z"),
    ("2026-11-01T12:00:00", "2026-11-01T12:00:00.000000Z"),  # no zone: UTC
])
def test_a_client_time_is_read_as_utc(text, expected):
    assert iso(parse_moment(text)) == expected


@pytest.mark.parametrize("text", [
    "last May", "", "0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00",
    "2026-01-01T00:00:00Z\x00", "２０２６-01-01",
    "1" * 5000, "2026-01-01T00:00:00." + "1" * 30,  # read as times by fromisoformat
])
def test_anything_else_is_a_value_error(text):
    with pytest.raises(ValueError):
        parse_moment(text)
