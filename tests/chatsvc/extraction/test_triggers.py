"""Embedding failure during extraction, the background schedule and the CLI."""

from __future__ import annotations

import asyncio
import time

from chatsvc import Services
from chatsvc.cli import main
from chatsvc.extraction import schedule
from tests import _seed
from tests.chatsvc.extraction.conftest import answer


def _chat(services, user_id, text):
    conv = _seed.conversation(services.stores.db, user_id)
    return _seed.message(services.stores.db, user_id, conv, text)


def test_new_facts_wait_for_backfill_when_embeddings_are_down(settings, upstream, alice):
    # A real OpenAI-compatible embeddings client pointed at a closed port.
    down = settings.with_overrides(
        llm_base_url=upstream.base_url, embeddings="openai", embed_url="http://127.0.0.1:9/v1",
        embed_model="multilingual-e5-small", embed_timeout_seconds=1.0,
    ).validated()
    s = Services.open(down)
    try:
        user = alice[0]
        _chat(s, user.id, "I keep bees.")
        upstream.script(answer([("core", "Keeps bees", "m1", "I keep bees.")]))
        result = asyncio.run(s.extractor.run_user(user.id))
        assert result.new_facts == 1 and result.fact_sheet_id is not None
        assert [job.text for job in s.stores.facts.unembedded(limit=10)] == ["Keeps bees"]
    finally:
        asyncio.run(s.aclose())


def test_schedule_runs_for_users_with_new_messages(llm_services, upstream, alice, bob):
    s = llm_services
    # The same words for both: the schedule takes the users in an order of its own.
    _chat(s, alice[0].id, "I keep bees.")
    _chat(s, bob[0].id, "I keep bees.")
    upstream.script(*[answer([("core", "Keeps bees", "m1", "I keep bees.")])] * 2)

    async def scheduled():
        async with schedule(s.extractor, 0.05):
            deadline = time.monotonic() + 10
            while s.extractor.queue.users_with_pending() and time.monotonic() < deadline:
                await asyncio.sleep(0.05)

    asyncio.run(scheduled())
    assert s.extractor.queue.users_with_pending() == []
    assert s.stores.facts.list(alice[0].id)[1] == 1 and s.stores.facts.list(bob[0].id)[1] == 1


def test_schedule_off_does_nothing(llm_services, upstream, alice):
    _chat(llm_services, alice[0].id, "I keep bees.")

    async def idle():
        async with schedule(llm_services.extractor, 0):
            await asyncio.sleep(0.2)

    asyncio.run(idle())
    assert not upstream.requests


def test_cli_extracts_for_one_user(services, upstream, alice, bob, monkeypatch, capsys):
    monkeypatch.setenv("LLM_BASE_URL", upstream.base_url)
    _chat(services, alice[0].id, "I keep bees.")
    _chat(services, bob[0].id, "I grow tomatoes.")
    upstream.script(answer([("core", "Keeps bees", "m1", "I keep bees.")]))
    assert main(["extract-facts", "--user", "alice"]) == 0
    assert "alice: 1 messages, 1 new" in capsys.readouterr().out
    assert services.stores.facts.list(alice[0].id)[1] == 1
    assert services.extractor.queue.users_with_pending() == [bob[0].id]
    assert main(["extract-facts", "--user", "nobody"]) == 1
