"""Snapshot pinning: round trip, versions, freshness."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from context import MemoryItem, pinned
from tests.context.test_assemble import SNAPSHOT


def test_json_round_trip_is_exact():
    text = SNAPSHOT.to_json()
    assert pinned(text, SNAPSHOT.taken_at, 60) == SNAPSHOT
    assert SNAPSHOT.to_json() == text  # deterministic serialisation


def test_versions_follow_content_only():
    later = replace(SNAPSHOT, taken_at=SNAPSHOT.taken_at + timedelta(hours=1))
    assert later.memory_version == SNAPSHOT.memory_version
    assert later.docs_version == SNAPSHOT.docs_version
    edited = replace(SNAPSHOT, memory=(MemoryItem("m1", "preference", "Answer at length"),))
    assert edited.memory_version != SNAPSHOT.memory_version


def test_pinned_until_the_ttl():
    text = SNAPSHOT.to_json()
    start = SNAPSHOT.taken_at
    assert pinned(text, start + timedelta(seconds=59), 60) is not None
    assert pinned(text, start + timedelta(seconds=60), 60) is None
    assert pinned(text, start - timedelta(seconds=1), 60) is None  # clock went back


def test_missing_or_damaged_snapshot_means_take_a_new_one():
    now = datetime(2026, 11, 21, tzinfo=UTC)
    assert pinned(None, now, 60) is None
    assert pinned('{"taken_at": "2026-11-21T00:00:00+00:00"}', now, 60) is None
    assert pinned("not json", now, 60) is None
