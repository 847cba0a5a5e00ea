"""Optional AI dedup of the fact sheet: off by default, capped, never blocks the sheet."""

from __future__ import annotations

import asyncio
import json

import pytest

from chatsvc import Services
from chatsvc.testing import Reply


@pytest.fixture
def dedup_services(settings, local_embedder, upstream):
    def open_with(**changes):
        opened = Services.open(settings.with_overrides(
            llm_base_url=upstream.base_url, fact_sheet_ai_dedup=True, **changes),
            embedder=local_embedder)
        opened_all.append(opened)
        return opened

    opened_all = []
    yield open_with
    for opened in opened_all:
        opened.stores.db.close()


def _facts(s, user_id):
    return [s.stores.facts.create(user_id, category=c, fact=f).id
            for c, f in [("core", "Prefers tabs"), ("technical", "Avoids tabs"),
                         ("project", "Builds a linter")]]


def _sheet_facts(sheet):
    return [e["fact"] for e in json.loads(sheet.facts_json)]


def test_off_by_default_makes_no_request(llm_services, upstream, alice):
    _facts(llm_services, alice[0].id)
    sheet = asyncio.run(llm_services.extractor.regenerate_sheet(alice[0].id))
    assert sheet.dedup_log is None and sheet.fact_count == 3 and not upstream.requests


def test_dropped_facts_leave_the_sheet_and_are_logged(dedup_services, upstream, alice):
    s = dedup_services()
    ids = _facts(s, alice[0].id)
    upstream.script(Reply(chunks=['{"drop": ["f2", "f99"]}']))
    sheet = asyncio.run(s.extractor.regenerate_sheet(alice[0].id))
    prompt = upstream.requests[0].body["messages"][0]["content"]
    assert "f2 [technical] Avoids tabs" in prompt
    assert json.loads(sheet.dedup_log) == [ids[1]]
    assert _sheet_facts(sheet) == ["Prefers tabs", "Builds a linter"]
    assert s.stores.facts.get(alice[0].id, ids[1]).superseded_by is None  # the fact itself stays


@pytest.mark.parametrize("reply", [Reply(chunks=["not json"]), Reply(status=400)])
def test_failure_or_cost_cap_skips_dedup(dedup_services, upstream, alice, reply):
    s = dedup_services()
    _facts(s, alice[0].id)
    upstream.script(reply)
    sheet = asyncio.run(s.extractor.regenerate_sheet(alice[0].id))
    assert sheet.dedup_log is None and sheet.fact_count == 3
    capped = dedup_services(fact_sheet_dedup_max_tokens=50)
    sheet = asyncio.run(capped.extractor.regenerate_sheet(alice[0].id))
    assert sheet.dedup_log is None and len(upstream.requests) == 1
