"""The extraction job end to end against the scripted upstream: real SQLite, real
embedder, real OpenAI client."""

from __future__ import annotations

import asyncio
import logging

from chatsvc.extraction._prompt import chat_tokens
from chatsvc.testing import Reply
from context.tokens import DEFAULT_TOKENIZER
from tests import _seed
from tests.chatsvc.extraction.conftest import answer


def _run(services, user_id):
    return asyncio.run(services.extractor.run_user(user_id))


def _unprocessed(services, user_id):
    return services.extractor.queue.unprocessed_count(user_id)


def _mentions(services, user_id):
    rows = services.stores.db.connection().execute(
        "SELECT fact_id, message_id FROM fact_extractions WHERE user_id = ? ORDER BY id",
        (user_id,)).fetchall()
    return [tuple(row) for row in rows]


def _chat(services, user_id, *turns):
    db = services.stores.db
    conv = _seed.conversation(db, user_id)
    return [_seed.message(db, user_id, conv, text, role=role) for role, text in turns]


def test_new_facts_are_saved_mentioned_embedded_and_put_on_the_sheet(llm_services, upstream,
                                                                     alice):
    s, user = llm_services, alice[0]
    ids = _chat(s, user.id, ("user", "I'm a nurse in Lyon."), ("assistant", "Nice!"),
                ("user", "I write Python scripts for the ward."))
    upstream.script(answer([("core", "Works as a nurse in Lyon", "m1", "I'm a nurse in Lyon"),
                            ("technical", "Writes Python scripts", "m3",
                             "I write Python scripts")]))
    result = _run(s, user.id)
    assert (result.new_facts, result.referenced, result.superseded) == (2, 0, 0)
    assert result.processed_messages == 3 and result.failed_batches == 0
    facts, _ = s.stores.facts.list(user.id)
    assert sorted(f.fact for f in facts) == ["Works as a nurse in Lyon", "Writes Python scripts"]
    # Provenance: the message each fact's quote was copied from.
    by_text = {f.fact: f.id for f in facts}
    assert set(_mentions(s, user.id)) == {(by_text["Works as a nurse in Lyon"], ids[0]),
                                         (by_text["Writes Python scripts"], ids[2])}
    evidence = s.stores.facts.evidence(user.id, list(by_text.values()))
    [nurse] = evidence[by_text["Works as a nurse in Lyon"]]
    assert (nurse.message_id, nurse.quote) == (ids[0], "I'm a nurse in Lyon")
    assert s.stores.facts.vector_count(user.id) == 2
    assert s.stores.fact_sheets.latest(user.id).id == result.fact_sheet_id
    assert s.stores.fact_sheets.latest(user.id).fact_count == 2
    assert _unprocessed(s, user.id) == 0
    body = upstream.requests[0].body
    assert body["response_format"] == {"type": "json_object"}
    assert body["max_tokens"] == s.settings.extract_max_output_tokens
    [message] = body["messages"]
    prompt = message["content"]
    assert message["role"] == "user" and "(none)" in prompt
    assert "\nm3 user [" in prompt and "]: I write Python scripts for the ward." in prompt
    assert "\na2 assistant [" in prompt


def test_re_mentions_record_extractions_without_duplicates(llm_services, upstream, alice):
    s, user = llm_services, alice[0]
    lyon = s.stores.facts.create(user.id, category="core", fact="Works as a nurse in Lyon")
    tea = s.stores.facts.create(user.id, category="core", fact="Likes green tea")
    _chat(s, user.id, ("user", "Back from my shift in Lyon, making green tea."))
    upstream.script(answer([("core", "Likes green tea", "m1", "making green tea")],
                           referenced=["f2", "f2", "f99"]))
    result = _run(s, user.id)
    prompt = upstream.requests[0].body["messages"][0]["content"]
    refs = {line.split(" ", 1)[0]: line for line in prompt.splitlines() if line[:1] == "f"}
    # Most recent first: tea (f1) then Lyon (f2).
    assert "Likes green tea" in refs["f1"] and "Works as a nurse in Lyon" in refs["f2"]
    assert (result.new_facts, result.referenced) == (0, 2)
    assert s.stores.facts.list(user.id)[1] == 2
    assert s.stores.facts.get(user.id, lyon.id).mention_count == 1
    assert s.stores.facts.get(user.id, tea.id).mention_count == 1


def test_known_facts_are_the_sheet_merged_with_the_30_most_recent(llm_services, upstream, alice):
    s, user = llm_services, alice[0]
    on_sheet = [s.stores.facts.create(user.id, category=("core", "technical")[i % 2],
                               fact=f"Sheet fact {i}") for i in range(40)]
    asyncio.run(s.extractor.run_user(user.id))  # nothing pending: no sheet, no request
    assert not upstream.requests and s.stores.fact_sheets.latest(user.id) is None
    from chatsvc.fact_sheet import generate
    from store.clock import utc_now
    generate(s.stores.fact_sheets, user.id, now=utc_now())
    later = [s.stores.facts.create(user.id, category="transient", fact=f"Later fact {i}")
             for i in range(35)]
    _chat(s, user.id, ("user", "hello"))
    upstream.script(answer())
    _run(s, user.id)
    prompt = upstream.requests[0].body["messages"][0]["content"]
    assert all(f.fact in prompt for f in on_sheet)
    assert all(f.fact + "\n" in prompt + "\n" for f in later[5:])
    assert not any(f"{f.fact}\n" in prompt for f in later[:5])
    assert [line.split(" ")[0] for line in prompt.splitlines() if line[:1] == "f"] == [
        f"f{n}" for n in range(1, 71)]


def test_supersession_retires_only_the_named_fact(llm_services, upstream, alice):
    s, user = llm_services, alice[0]
    rome = s.stores.facts.create(user.id, category="core", fact="Lives in Rome")
    cat = s.stores.facts.create(user.id, category="core", fact="Has a cat")
    msg = _chat(s, user.id, ("user", "We moved to Oslo last month, the cat too."))[0]
    # f1 = cat (most recent), f2 = Rome. Bad supersede entries are ignored.
    upstream.script(answer([("core", "Moved to Oslo", "m1", "We moved to Oslo last month")],
                           referenced=["f1"], superseded=[("f2", 0), ("f9", 0), ("f1", 5)]))
    result = _run(s, user.id)
    assert (result.new_facts, result.referenced, result.superseded) == (1, 1, 1)
    old = s.stores.facts.get(user.id, rome.id)
    oslo = next(f for f in s.stores.facts.list(user.id)[0] if f.fact == "Moved to Oslo")
    assert old.superseded_by == oslo.id and old.valid_to is not None
    assert s.stores.facts.get(user.id, cat.id).superseded_by is None
    assert (rome.id, msg) not in _mentions(s, user.id)  # kept, not deleted, not re-mentioned
    sheet_facts = s.stores.fact_sheets.latest(user.id).facts_json
    assert "Moved to Oslo" in sheet_facts and "Lives in Rome" not in sheet_facts


def test_malformed_json_gets_one_repair(llm_services, upstream, alice):
    s, user = llm_services, alice[0]
    _chat(s, user.id, ("user", "I play the cello."))
    upstream.script(Reply(chunks=['{"new_facts": [ oops }']),
                    answer([("core", "Plays the cello", "m1", "I play the cello.")]))
    result = _run(s, user.id)
    assert result.new_facts == 1 and result.failed_batches == 0
    repair = upstream.requests[1].body["messages"]
    assert repair[:1] == upstream.requests[0].body["messages"]
    assert repair[1] == {"role": "assistant", "content": '{"new_facts": [ oops }'}
    assert "invalid JSON" in repair[2]["content"]


def test_malformed_twice_skips_with_a_log_line_and_keeps_messages(llm_services, upstream,
                                                                 alice, caplog):
    s, user = llm_services, alice[0]
    _chat(s, user.id, ("user", "I play the cello."), ("user", "And the piano."))
    upstream.script(Reply(chunks=["no json"]), Reply(chunks=['["a list"]']))
    with caplog.at_level(logging.WARNING, logger="chatsvc.extraction"):
        result = _run(s, user.id)
    assert result.failed_batches == 1 and result.processed_messages == 0
    assert result.fact_sheet_id is None and "malformed JSON" in result.errors[0]
    assert "skipped 2 messages" in caplog.text
    assert _unprocessed(s, user.id) == 2 and s.stores.facts.list(user.id)[1] == 0
    upstream.script(answer([("core", "Plays the cello", "m1", "I play the cello.")]))
    assert _run(s, user.id).processed_messages == 2  # nothing was lost


def test_folded_system_role_sends_no_system_message(settings, local_embedder, upstream, alice):
    from chatsvc import Services

    s = Services.open(settings.with_overrides(llm_base_url=upstream.base_url,
                                              llm_system_role="fold", fact_sheet_ai_dedup=True),
                      embedder=local_embedder)
    try:
        _chat(s, alice[0].id, ("user", "I play the cello."))
        upstream.script(Reply(chunks=["no json"]),
                        answer([("core", "Plays the cello", "m1", "I play the cello.")]),
                        Reply(chunks=['{"drop": []}']))
        assert _run(s, alice[0].id).new_facts == 1
        assert len(upstream.requests) == 3  # extraction, its repair, the sheet's dedup
        for request in upstream.requests:
            roles = [m["role"] for m in request.body["messages"]]
            assert "system" not in roles and roles[0] == "user"
    finally:
        s.stores.db.close()


def test_upstream_error_stops_the_run_and_keeps_messages(llm_services, upstream, alice):
    s, user = llm_services, alice[0]
    _chat(s, user.id, ("user", "one"))
    _chat(s, user.id, ("user", "two"))
    upstream.script(Reply(status=400))
    result = _run(s, user.id)
    assert result.failed_batches == 1 and "LLM request failed" in result.errors[0]
    assert len(upstream.requests) == 1  # the second conversation was not tried
    assert _unprocessed(s, user.id) == 2


def test_input_cap_splits_batches_and_truncates_a_huge_message(settings, local_embedder,
                                                               upstream, alice):
    from chatsvc import Services

    cap = 2600
    s = Services.open(settings.with_overrides(
        llm_base_url=upstream.base_url, extract_max_input_tokens=cap,
        extract_max_output_tokens=500, extract_json_mode="off"), embedder=local_embedder)
    try:
        user = alice[0]
        words = " ".join(f"word{i}" for i in range(150))
        _chat(s, user.id, *[("user", f"{n}: {words}") for n in range(12)],
              ("user", "huge " * 5000))
        for _ in range(20):
            upstream.script(answer())
        result = asyncio.run(s.extractor.run_user(user.id))
        sizes = [chat_tokens(r.body["messages"], DEFAULT_TOKENIZER)
                 for r in upstream.requests]
        assert len(sizes) >= 3 and max(sizes) <= cap - 500
        assert "response_format" not in upstream.requests[0].body
        assert result.processed_messages == 13 and _unprocessed(s, user.id) == 0
    finally:
        s.stores.db.close()


def test_nothing_is_processed_twice(llm_services, upstream, alice, bob):
    s, user = llm_services, alice[0]
    _chat(s, user.id, ("user", "I like chess."))
    _chat(s, bob[0].id, ("user", "I like go."))
    upstream.script(answer([("core", "Likes chess", "m1", "I like chess.")]),
                    answer([("core", "Likes go", "m1", "I like go.")]))

    async def twice():
        return await asyncio.gather(s.extractor.run_user(user.id),
                                    s.extractor.run_user(user.id))

    first, second = asyncio.run(twice())
    assert (first.processed_messages, second.processed_messages) == (1, 0)
    assert second.fact_sheet_id is None and len(upstream.requests) == 1
    assert _unprocessed(s, bob[0].id) == 1  # alice's run never touches bob
    results = asyncio.run(s.extractor.run_all())
    assert list(results) == [bob[0].id] and len(upstream.requests) == 2
    assert asyncio.run(s.extractor.run_all()) == {}
    assert len(upstream.requests) == 2


def test_a_batch_processed_elsewhere_rolls_back(llm_services, alice):
    from chatsvc.extraction import _apply
    from chatsvc.extraction._grounding import Checked, Grounded
    from chatsvc.extraction._prompt import Extraction
    from store.clock import utc_now
    from store.extraction import AlreadyProcessed
    from store.facts import Evidence

    s, user = llm_services, alice[0]
    _chat(s, user.id, ("user", "I like chess."))
    messages = s.extractor.queue.pending(user.id, limit=10)
    s.extractor.queue.mark_processed([messages[0].id], at=utc_now())  # the other process
    quote = Evidence(messages[0].id, messages[0].conversation_id, "I like chess.",
                     messages[0].created_at)
    checked = Checked(facts=[Grounded("core", "Likes chess", (quote,))], positions={0: 0})
    try:
        _apply.apply(s.stores.db, s.stores.facts, s.extractor.queue, user_id=user.id,
                     messages=messages, known=[], extraction=Extraction([], [], [], []),
                     checked=checked, vectors=[None], now=utc_now(), duplicate_distance=0.02)
    except AlreadyProcessed:
        pass
    else:
        raise AssertionError("expected AlreadyProcessed")
    assert s.stores.facts.list(user.id)[1] == 0


def test_route_runs_for_the_caller(llm_services, upstream, alice, bob):
    from litestar.testing import TestClient

    from chatsvc import create_app

    s = llm_services
    _chat(s, alice[0].id, ("user", "I like chess."))
    _chat(s, bob[0].id, ("user", "I like go."))
    upstream.script(answer([("core", "Likes chess", "m1", "I like chess.")]))
    with TestClient(create_app(services=s)) as client:
        response = client.post("/api/facts/extract", headers=alice[1])
        assert response.status_code == 200
        body = response.json()
        assert {k: body[k] for k in ("new_facts", "referenced", "superseded")} == {
            "new_facts": 1, "referenced": 0, "superseded": 0}
        assert body["fact_sheet_id"] == client.get("/api/fact-sheet", headers=alice[1]).json()["id"]
        upstream.script(Reply(status=500), Reply(status=500))
        failed = client.post("/api/facts/extract", headers=bob[1])
        assert failed.status_code == 200 and failed.json()["failed_batches"] == 1
        assert failed.json()["fact_sheet_id"] is None
        assert client.post("/api/facts/extract").status_code == 401
