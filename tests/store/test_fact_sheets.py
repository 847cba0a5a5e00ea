"""FactSheets: inputs, retention (7 days, latest kept), per-user isolation."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from store import NotFound
from store.clock import iso
from store.fact_sheets import FactSheets

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
DAY = timedelta(days=1)


@pytest.fixture
def sheets(services):
    return FactSheets(services.stores.db)


def _save(sheets, user_id, at, body="[]"):
    return sheets.save(user_id, facts_json=body, fact_count=0, dedup_log=None, now=at)


def test_inputs_skip_superseded_facts_and_limit_records(services, sheets, alice):
    user, _ = alice
    facts = services.stores.facts
    new = facts.create(user.id, category="core", fact="Lives in Oslo").id
    old = facts.create(user.id, category="core", fact="Lives in Rome").id
    facts.supersede(old, by_id=new, at=iso(NOW))
    for hours in range(5):
        facts.record_extraction(old, user.id, message_id=None,
                                extracted_at=iso(NOW - timedelta(hours=hours)))
    facts.record_extraction(new, user.id, message_id=None, extracted_at=iso(NOW - 9 * DAY))
    inputs = sheets.inputs(user.id, records_limit=3, now=NOW)
    assert inputs.facts == [(new, "core", "Lives in Oslo")]
    # The window is the user's most recent records, whichever fact they belong to.
    assert [fact_id for fact_id, _ in inputs.records] == [old, old, old]


@pytest.mark.parametrize(
    ("ages_days", "kept_days"),
    [
        ([1, 3, 6.9], [0, 1, 3, 6.9]),
        ([1, 7.5, 30], [0, 1]),
        ([8, 9], [0]),
    ],
)
def test_retention_keeps_seven_days(sheets, alice, ages_days, kept_days):
    user, _ = alice
    for age in ages_days:
        _save(sheets, user.id, NOW - age * DAY)
    _save(sheets, user.id, NOW)
    kept = [(NOW - datetime.fromisoformat(s.created_at)) / DAY for s in sheets.list(user.id)]
    assert [round(k, 1) for k in kept] == kept_days


def test_retention_always_keeps_the_latest(sheets, alice):
    user, _ = alice
    _save(sheets, user.id, NOW - 40 * DAY)
    only = _save(sheets, user.id, NOW - 35 * DAY)
    assert sheets.prune(user.id, now=NOW) == 1
    assert [s.id for s in sheets.list(user.id)] == [only.id]
    assert sheets.latest(user.id).id == only.id


def test_retention_is_per_user(sheets, alice, bob):
    alice_user, bob_user = alice[0], bob[0]
    bobs = _save(sheets, bob_user.id, NOW - 20 * DAY)
    _save(sheets, bob_user.id, NOW - 15 * DAY)
    _save(sheets, alice_user.id, NOW)
    assert len(sheets.list(bob_user.id)) == 2
    sheets.prune(bob_user.id, now=NOW)
    assert bobs.id not in [s.id for s in sheets.list(bob_user.id)]


def test_latest_breaks_equal_times_by_insertion(sheets, alice):
    user, _ = alice
    _save(sheets, user.id, NOW, "[1]")
    second = _save(sheets, user.id, NOW, "[2]")
    assert sheets.latest(user.id).id == second.id


def test_another_users_sheet_is_not_found(sheets, alice, bob):
    sheet = _save(sheets, alice[0].id, NOW)
    assert sheets.get(alice[0].id, sheet.id) == sheet
    with pytest.raises(NotFound):
        sheets.get(bob[0].id, sheet.id)
    assert sheets.latest(bob[0].id) is None
