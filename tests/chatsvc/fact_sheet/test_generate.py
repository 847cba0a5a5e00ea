"""Generating sheets from the database, the chat-context reader and the HTTP routes."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from chatsvc.fact_sheet import context_facts, generate
from store.clock import iso
from store.facts import Facts

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def _seed_facts(db, user_id):
    facts, ids = Facts(db), {}
    rows = [("core", "Name is Ana", [1, 30]), ("project", "Builds a CLI", [2]),
            ("transient", "Has a cold", []), ("technical", "Uses Go", [800])]
    for category, text, hours in rows:
        ids[text] = facts.create(user_id, category=category, fact=text).id
        for h in hours:
            facts.record_extraction(ids[text], user_id, message_id=None,
                                    extracted_at=iso(NOW - timedelta(hours=h)))
    return ids


def test_generate_scores_and_saves(services, alice):
    user, _ = alice
    ids = _seed_facts(services.stores.db, user.id)
    sheet = generate(services.stores.fact_sheets, user.id, now=NOW)
    entries = json.loads(sheet.facts_json)
    assert [(e["fact"], e["score"]) for e in entries] == [
        ("Name is Ana", 10 * (8 + 4)), ("Uses Go", 6 * 0.5), ("Builds a CLI", 4 * 8),
        ("Has a cold", 0),
    ]
    assert entries[0]["id"] == ids["Name is Ana"]
    assert sheet.fact_count == 4 and sheet.dedup_log is None


def test_regeneration_with_unchanged_data_is_byte_identical(services, alice, bob):
    user, _ = alice
    _seed_facts(services.stores.db, user.id)
    first = generate(services.stores.fact_sheets, user.id, now=NOW)
    _seed_facts(services.stores.db, bob[0].id)  # another user's data changes nothing here
    second = generate(services.stores.fact_sheets, user.id, now=NOW + timedelta(minutes=5))
    assert second.id != first.id
    assert second.facts_json.encode() == first.facts_json.encode()


def test_context_facts_latest_pinned_and_pruned(services, alice):
    user, _ = alice
    assert context_facts(services.stores.fact_sheets, user.id).sheet_id is None
    _seed_facts(services.stores.db, user.id)
    old = generate(services.stores.fact_sheets, user.id, now=NOW - timedelta(days=5))
    Facts(services.stores.db).create(user.id, category="core", fact="Likes tea")
    pinned = generate(services.stores.fact_sheets, user.id, now=NOW - timedelta(days=1))
    latest = context_facts(services.stores.fact_sheets, user.id)
    assert latest.sheet_id == pinned.id
    shown = [(e["category"], e["fact"]) for e in latest.entries]
    assert shown[0] == ("core", "Name is Ana") and ("core", "Likes tea") in shown
    assert [e["id"] for e in latest.entries] == [e["id"] for e in json.loads(pinned.facts_json)]
    assert context_facts(services.stores.fact_sheets, user.id, pinned_id=old.id).sheet_id == old.id
    generate(services.stores.fact_sheets, user.id, now=NOW + timedelta(days=3))  # prunes `old`
    fallback = context_facts(services.stores.fact_sheets, user.id, pinned_id=old.id)
    assert fallback.sheet_id == services.stores.fact_sheets.latest(user.id).id


def test_routes_empty_generate_and_isolation(client, services, alice, bob):
    user, headers = alice
    empty = client.get("/api/fact-sheet", headers=headers)
    assert empty.status_code == 200
    assert empty.json() == {"id": None, "facts": [], "created_at": None, "fact_count": 0,
                            "dedup_log": None}
    _seed_facts(services.stores.db, user.id)
    created = client.post("/api/fact-sheet/generate", headers=headers)
    assert created.status_code == 201
    body = created.json()
    assert body["fact_count"] == 4
    assert set(body["facts"][0]) == {"id", "category", "fact", "score"}
    assert client.get("/api/fact-sheet", headers=headers).json() == body
    assert client.get("/api/fact-sheet", headers=bob[1]).json()["facts"] == []
    assert client.get("/api/fact-sheet").status_code == 401
