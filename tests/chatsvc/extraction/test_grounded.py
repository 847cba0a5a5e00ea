"""Grounded extraction end to end against the scripted upstream: only facts whose quotes
are the user's own words are stored, with their evidence; the rest is counted."""

from __future__ import annotations

import asyncio

from litestar.testing import TestClient
from prometheus_client import REGISTRY

from chatsvc import create_app
from tests import _seed
from tests.chatsvc.extraction.conftest import answer


def _run(services, user_id):
    return asyncio.run(services.extractor.run_user(user_id))


def _chat(services, user_id, *turns, conversation=None):
    db = services.stores.db
    conversation = conversation or _seed.conversation(db, user_id)
    return conversation, [_seed.message(db, user_id, conversation, text, role=role)
                          for role, text in turns]


def _facts(services, user_id):
    return sorted(f.fact for f in services.stores.facts.list(user_id, limit=200)[0])


def _rejected(reason):
    return REGISTRY.get_sample_value("chatsvc_facts_rejected_total", {"reason": reason}) or 0


def test_an_answer_in_the_old_shape_stores_nothing(llm_services, upstream, alice):
    s, user = llm_services, alice[0]
    _chat(s, user.id, ("user", "I keep bees."))
    before = _rejected("no_evidence")
    upstream.script(answer([("core", "Keeps bees"), ("core", "Works as a nurse in Lyon")]))
    result = _run(s, user.id)
    assert result.new_facts == 0 and result.rejected["no_evidence"] == 2
    assert result.processed_messages == 1 and _facts(s, user.id) == []
    assert _rejected("no_evidence") == before + 2


def test_stored_facts_are_counted_by_category(llm_services, upstream, alice):
    s, user = llm_services, alice[0]
    _chat(s, user.id, ("user", "I write Rust at work."))
    sample = ("chatsvc_facts_extracted_total", {"category": "technical"})
    before = REGISTRY.get_sample_value(*sample) or 0
    upstream.script(answer([("technical", "Writes Rust at work", "m1", "I write Rust at work.")]))
    assert _run(s, user.id).new_facts == 1
    assert REGISTRY.get_sample_value(*sample) == before + 1


def test_quotes_that_are_not_the_users_own_words_are_refused(llm_services, upstream, alice):
    s, user = llm_services, alice[0]
    _chat(s, user.id, ("user", "What is my dog called, and where do I live?"),
          ("assistant", "Your dog is called Max and you live in Lyon."),
          ("user", "I work night shifts at the hospital."))
    upstream.script(answer([
        ("core", "Has a dog called Max", "a2", "Your dog is called Max"),  # the assistant's
        ("core", "Is called Max", "m2", "Your dog is called Max"),  # no user message m2
        ("core", "Lives in Lyon", "m1", "I live in Lyon"),  # not in m1
        ("core", "Has a cat", "m9", "I have a cat"),  # no such message
        ("core", "Works night shifts at the hospital", "m3", "I work night shifts at the hospital"),
    ]))
    result = _run(s, user.id)
    assert result.new_facts == 1, result
    # A label the request never showed is a fabricated citation: its quote is nowhere.
    assert result.rejected["not_user"] == 1 and result.rejected["quote_not_found"] == 3
    assert _facts(s, user.id) == ["Works night shifts at the hospital"]


def test_a_quote_must_be_in_the_part_of_the_message_the_request_showed(settings, local_embedder,
                                                                      upstream, alice):
    from chatsvc import Services

    s = Services.open(settings.with_overrides(
        llm_base_url=upstream.base_url, extract_max_input_tokens=2600,
        extract_max_output_tokens=500), embedder=local_embedder)
    try:
        user = alice[0]
        _chat(s, user.id, ("user", "I keep bees. " + "filler words here " * 3000
                           + "I also play the cello."))
        upstream.script(answer([("core", "Plays the cello", "m1", "I also play the cello."),
                                ("core", "Keeps bees", "m1", "I keep bees.")]))
        result = _run(s, user.id)
        assert result.rejected["quote_not_found"] == 1 and _facts(s, user.id) == ["Keeps bees"]
    finally:
        s.stores.db.close()


def test_quotes_may_differ_from_the_message_in_case_width_and_spacing(llm_services, upstream,
                                                                      alice):
    s, user = llm_services, alice[0]
    _chat(s, user.id, ("user", "Remember this: my dog is called  Biscuit and I live in Lyon."))
    upstream.script(answer([("core", "Has a dog called Biscuit and lives in Lyon", "m1",
                             "MY DOG IS CALLED BISCUIT and I live in Ｌｙｏｎ")]))
    result = _run(s, user.id)
    assert result.new_facts == 1, result
    [fact] = s.stores.facts.list(user.id)[0]
    [evidence] = s.stores.facts.evidence(user.id, [fact.id])[fact.id]
    assert evidence.quote == "MY DOG IS CALLED BISCUIT and I live in Ｌｙｏｎ"


def test_forget_is_honoured_only_when_the_user_asked(llm_services, upstream, alice):
    s, user = llm_services, alice[0]
    lyon = s.stores.facts.create(user.id, category="core", fact="Lives in Lyon")
    _chat(s, user.id, ("user", "I had a long day."))
    upstream.script(answer(forget=["f1"]))  # nobody asked
    assert _run(s, user.id).forgotten == 0
    assert s.stores.facts.get(user.id, lyon.id)
    _chat(s, user.id, ("user", "Please forget that I live in Lyon."))
    upstream.script(answer(forget=["f1"]))
    assert _run(s, user.id).forgotten == 1
    assert _facts(s, user.id) == []


def test_the_user_sees_what_was_forgotten_and_which_message_asked(
        llm_services, upstream, alice, bob):
    s, (user, headers) = llm_services, alice
    s.stores.facts.create(user.id, category="core", fact="Lives in Lyon")
    conversation, [asking] = _chat(s, user.id, ("user", "Forget that I live in Lyon."))
    upstream.script(answer(forget=["f1"]))
    assert _run(s, user.id).forgotten == 1
    with TestClient(create_app(services=s)) as client:
        [forget] = client.get("/api/facts/forgotten", headers=headers).json()["forgotten"]
        assert (forget["facts"], forget["message_id"], forget["conversation_id"]) == (
            1, asking, conversation)
        assert "Lyon" not in str(forget)  # the asking message holds the words, not this
        assert client.get("/api/export", headers=headers).json()["forgotten"] == [forget]
        assert client.get("/api/facts/forgotten", headers=bob[1]).json() == {"forgotten": []}
        assert client.get("/api/facts/forgotten?limit=0", headers=headers).status_code == 400
        client.delete(f"/api/conversations/{conversation}", headers=headers)
        [kept] = client.get("/api/facts/forgotten", headers=headers).json()["forgotten"]
        assert (kept["facts"], kept["message_id"], kept["conversation_id"]) == (1, None, None)


def test_a_repeated_fact_becomes_a_mention_with_its_new_quote(llm_services, upstream, alice):
    s, user = llm_services, alice[0]
    _, [first] = _chat(s, user.id, ("user", "I keep bees in my garden."))
    upstream.script(answer([("core", "Keeps bees in the garden", "m1",
                             "I keep bees in my garden.")]))
    assert _run(s, user.id).new_facts == 1
    _, [second] = _chat(s, user.id, ("user", "As I said, I keep bees in my garden!"))
    upstream.script(answer([("core", "Keeps bees in the garden.", "m1",
                             "I keep bees in my garden!")]))
    result = _run(s, user.id)
    assert (result.new_facts, result.referenced) == (0, 1), result
    [fact] = s.stores.facts.list(user.id)[0]
    assert fact.mention_count == 2
    quotes = s.stores.facts.evidence(user.id, [fact.id])[fact.id]
    assert [q.message_id for q in quotes] == [first, second]


def test_facts_that_differ_in_a_number_stay_apart(llm_services, upstream, alice):
    # 0.014 apart with e5-small, within CHATSVC_FACT_DUPLICATE_DISTANCE: only the year
    # tells them apart.
    s, user = llm_services, alice[0]
    said = "I keep bees in the garden behind the house every weekend since {}."
    for year in (2001, 2003):
        _chat(s, user.id, ("user", said.format(year)))
        upstream.script(answer([
            ("core", f"Keeps bees in the garden behind the house every weekend since {year}",
             "m1", said.format(year))]))
        assert _run(s, user.id).new_facts == 1
    assert len(_facts(s, user.id)) == 2


def test_different_facts_of_one_topic_stay_apart(llm_services, upstream, alice):
    s, user = llm_services, alice[0]
    _chat(s, user.id, ("user", "I keep bees in my garden."), ("user", "I keep chickens too."))
    upstream.script(answer([("core", "Keeps bees in the garden", "m1", "I keep bees"),
                            ("core", "Keeps chickens", "m2", "I keep chickens too.")]))
    assert _run(s, user.id).new_facts == 2


def test_deleting_a_conversation_deletes_the_facts_resting_only_on_it(llm_services, upstream,
                                                                     alice):
    s, (user, headers) = llm_services, alice
    saved_by_hand = s.stores.facts.create(user.id, category="core", fact="Likes tea")
    first, _ = _chat(s, user.id, ("user", "I keep bees."), ("user", "I live in Lyon."))
    upstream.script(answer([("core", "Keeps bees", "m1", "I keep bees."),
                            ("core", "Lives in Lyon", "m2", "I live in Lyon.")]))
    _run(s, user.id)
    _chat(s, user.id, ("user", "Still in Lyon, I live in Lyon."))
    upstream.script(answer([("core", "Lives in Lyon", "m1", "I live in Lyon.")]))
    _run(s, user.id)
    with TestClient(create_app(services=s)) as client:
        assert client.delete(f"/api/conversations/{first}", headers=headers).status_code == 204
        facts = client.get("/api/facts", headers=headers).json()["facts"]
        assert sorted(f["fact"] for f in facts) == ["Likes tea", "Lives in Lyon"]
        lyon = next(f for f in facts if f["fact"] == "Lives in Lyon")
        assert [e["conversation_id"] for e in lyon["evidence"]] != [first]
        assert len(lyon["evidence"]) == 1
        sheet = client.get("/api/fact-sheet", headers=headers).json()
        assert "Keeps bees" not in str(sheet) and "Lives in Lyon" in str(sheet)
        assert client.get(f"/api/facts/{saved_by_hand.id}", headers=headers).json()[
            "evidence"] == []
        assert client.delete(f"/api/conversations/{first}", headers=headers).status_code == 404


def test_another_users_conversation_id_deletes_nothing(llm_services, upstream, alice, bob):
    s = llm_services
    conversation, _ = _chat(s, alice[0].id, ("user", "I keep bees."))
    upstream.script(answer([("core", "Keeps bees", "m1", "I keep bees.")]))
    _run(s, alice[0].id)
    with TestClient(create_app(services=s)) as client:
        assert client.delete(f"/api/conversations/{conversation}",
                             headers=bob[1]).status_code == 404
    assert _facts(s, alice[0].id) == ["Keeps bees"]


def test_the_api_and_the_export_show_each_facts_evidence(llm_services, upstream, alice):
    s, (user, headers) = llm_services, alice
    conversation, [message] = _chat(s, user.id, ("user", "I play the cello."))
    upstream.script(answer([("core", "Plays the cello", "m1", "I play the cello")]))
    with TestClient(create_app(services=s)) as client:
        result = client.post("/api/facts/extract", headers=headers).json()
        assert result["new_facts"] == 1 and set(result["rejected"]) == {
            "no_evidence", "not_user", "quote_not_found", "unsupported", "not_a_statement"}
        [fact] = client.get("/api/facts", headers=headers).json()["facts"]
        expected = [{"message_id": message, "conversation_id": conversation,
                     "quote": "I play the cello", "said_at": fact["evidence"][0]["said_at"]}]
        assert fact["evidence"] == expected
        assert client.get(f"/api/facts/{fact['id']}", headers=headers).json()[
            "evidence"] == expected
        export = client.get("/api/export", headers=headers).json()
        assert export["facts"][0]["evidence"] == expected
        [exported] = export["conversations"]
        assert exported["id"] == conversation and exported["messages"][0]["id"] == message
