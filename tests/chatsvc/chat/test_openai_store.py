"""/v1 exchanges stored as turns of the user's conversations: found by the header or by
the request's earlier messages, stored once however often retried, never across users,
off with `"store": false` or CHATSVC_V1_STORE=0; extraction and recall see them."""

from __future__ import annotations

import json
import threading
import time

import pytest
from httpx_sse import connect_sse

from chatsvc._settings import DEFAULT_LLM_MODEL  # the scripted upstream answers as it
from chatsvc.testing import Reply, ToolCall
from tests._serving import serve
from tests.chatsvc.extraction.conftest import answer
from tests.chatsvc.recall.conftest import index_now  # noqa: F401 (a fixture)

HEADER = "X-Chatsvc-Conversation"
FIRST = [{"role": "system", "content": "Be terse."},
         {"role": "user", "content": "I keep three beehives in Lyon."}]
SECOND = [*FIRST, {"role": "assistant", "content": "Lovely."},
          {"role": "user", "content": "What should I plant for them?"}]


def _complete(client, headers, messages, *, stream=False, status=200, **body):
    payload = {"model": DEFAULT_LLM_MODEL, "messages": messages, "stream": stream, **body}
    if not stream:
        response = client.post("/v1/chat/completions", json=payload, headers=headers)
        assert response.status_code == status, response.text
        return response.json()
    with connect_sse(client, "POST", "/v1/chat/completions", json=payload,
                     headers=headers) as source:
        assert source.response.status_code == status
        return [e.data for e in source.iter_sse()]


def _conversations(client, headers):
    return client.get("/api/conversations", headers=headers).json()["conversations"]


def _messages(client, headers, conversation_id):
    body = client.get(f"/api/conversations/{conversation_id}", headers=headers).json()
    return [(m["role"], m["content"]) for m in body["messages"]]


def _only_conversation(client, headers):
    conversations = _conversations(client, headers)
    assert len(conversations) == 1, conversations
    return _messages(client, headers, conversations[0]["id"])


STORED = [("user", FIRST[1]["content"]), ("assistant", "Lovely."),
          ("user", SECOND[-1]["content"]), ("assistant", "Lavender.")]


@pytest.mark.parametrize("named", [False, True], ids=["by-messages", "by-header"])
@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_two_requests_are_one_conversation_of_four_messages(client, alice, upstream, named,
                                                            stream, index_now):  # noqa: F811
    headers = {**alice[1], **({HEADER: "owui-chat-1"} if named else {})}
    upstream.script(Reply(chunks=["Lovely."]), Reply(chunks=["Laven", "der."]))
    _complete(client, headers, FIRST, stream=stream)
    _complete(client, headers, SECOND, stream=stream)
    assert _only_conversation(client, alice[1]) == STORED
    index_now()
    hits = client.get("/api/conversations/search", headers=alice[1],
                      params={"q": "beehives in Lyon", "mode": "keyword"}).json()["results"]
    assert hits[0]["content"] == FIRST[1]["content"]


def test_retries_store_each_exchange_once(client, alice, upstream):
    upstream.script(*[Reply(chunks=["Lovely."])] * 10, *[Reply(chunks=["Lavender."])] * 10)
    for _ in range(10):
        _complete(client, alice[1], FIRST)
    for _ in range(10):
        _complete(client, alice[1], SECOND, stream=True)
    assert _only_conversation(client, alice[1]) == STORED


def test_a_named_conversation_is_its_users_only(client, alice, bob, upstream):
    upstream.script(Reply(chunks=["Lovely."]), Reply(chunks=["Hi bob."]),
                    Reply(chunks=["Lavender."]))
    _complete(client, {**alice[1], HEADER: "chat-1"}, FIRST)
    _complete(client, {**bob[1], HEADER: "chat-1"}, FIRST)  # the same name and words
    _complete(client, bob[1], SECOND)  # alice's stored prefix, unnamed
    [mine] = _conversations(client, alice[1])
    assert _messages(client, alice[1], mine["id"]) == STORED[:2]
    theirs = _conversations(client, bob[1])
    assert mine["id"] not in {c["id"] for c in theirs}
    assert sorted(m for c in theirs for m in _messages(client, bob[1], c["id"])) == sorted([
        *STORED[:1], ("assistant", "Hi bob."), *STORED])
    response = client.get(f"/api/conversations/{mine['id']}", headers=bob[1])
    assert response.status_code == 404 and "beehives" not in response.text


def test_the_answer_names_the_stored_conversation(client, alice, upstream):
    upstream.script(Reply(chunks=["Lovely."]), Reply(chunks=["Lovely."]))
    stored = _complete(client, alice[1], FIRST)["chatsvc"]["conversation_id"]
    assert stored == _conversations(client, alice[1])[0]["id"]
    assert _complete(client, alice[1], FIRST, store=False)["chatsvc"]["conversation_id"] is None


def test_store_false_stores_nothing(client, alice, upstream):
    upstream.script(Reply(chunks=["Lovely."]), Reply(chunks=["Lovely."]))
    _complete(client, alice[1], FIRST, store=False)
    _complete(client, {**alice[1], HEADER: "c"}, FIRST, stream=True, store=False)
    assert _conversations(client, alice[1]) == []


def test_the_service_setting_turns_storing_off(settings, local_embedder, upstream):
    with serve(settings.with_overrides(v1_store=False), local_embedder) as (_, client, carol):
        upstream.script(Reply(chunks=["Lovely."]))
        _complete(client, carol, FIRST, store=True)
        assert _conversations(client, carol) == []


@pytest.mark.parametrize(("headers", "body", "field"), [
    ({HEADER: " "}, {}, HEADER),
    ({HEADER: "x" * 201}, {}, HEADER),
    ({}, {"store": "no"}, "store"),
])
def test_bad_input_is_400_and_stores_nothing(client, alice, upstream, headers, body, field):
    error = _complete(client, {**alice[1], **headers}, FIRST, status=400, **body)["error"]
    assert field in error["message"]
    assert _conversations(client, alice[1]) == [] and upstream.requests == []


def test_an_upstream_failure_keeps_the_question_and_the_retry_answers_it(client, alice,
                                                                        upstream):
    upstream.script(*[Reply(status=500)] * 3)
    _complete(client, alice[1], FIRST, status=502)
    assert _only_conversation(client, alice[1]) == STORED[:1]
    upstream.script(Reply(chunks=["Lovely."]))
    _complete(client, alice[1], FIRST)
    assert _only_conversation(client, alice[1]) == STORED[:2]


def test_a_stream_cut_midway_keeps_the_question_and_not_the_partial_answer(client, alice,
                                                                          upstream):
    upstream.script(Reply(chunks=["Lov", "ely", "."], cut_after=1))
    events = _complete(client, alice[1], FIRST, stream=True)
    assert any('"error"' in data for data in events)
    assert _only_conversation(client, alice[1]) == STORED[:1]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_a_turn_with_tools_stores_its_question_and_final_answer(client, alice, upstream,
                                                                stream):
    tools = [{"type": "function", "function": {"name": "weather", "parameters": {}}}]
    upstream.script(Reply(chunks=[], tool_calls=[ToolCall("weather", '{"city": "Lyon"}')]))
    called = _complete(client, alice[1], FIRST, tools=tools)["choices"][0]["message"]
    assert _only_conversation(client, alice[1]) == STORED[:1]
    results = [*FIRST, called, {"role": "tool", "tool_call_id": called["tool_calls"][0]["id"],
                                "content": "sunny"}]
    upstream.script(Reply(chunks=["Lovely."]))
    _complete(client, alice[1], results, tools=tools, stream=stream)
    upstream.script(Reply(chunks=["Lavender."]))
    _complete(client, alice[1], [*results, *SECOND[2:]], tools=tools, stream=stream)
    assert _only_conversation(client, alice[1]) == STORED


def test_the_prefix_stays_byte_identical_across_turns_and_forks(client, alice, upstream):
    upstream.script(Reply(chunks=["Lovely."]), Reply(chunks=["Lavender."]),
                    Reply(chunks=["Clover."]))
    _complete(client, alice[1], FIRST)
    _complete(client, alice[1], SECOND)
    forked = [*SECOND[:-1], {"role": "user", "content": "Which bees are calm?"}]
    _complete(client, alice[1], forked)  # an edit in the client: a conversation of its own
    assert len(_conversations(client, alice[1])) == 2
    prefixes = {json.dumps(r.body["messages"][0]) for r in upstream.requests}
    assert len(prefixes) == 1, prefixes


def test_a_stored_turn_sends_the_prompt_an_unstored_one_sends(client, alice, upstream):
    upstream.script(Reply(chunks=["Lovely."]), Reply(chunks=["Lovely."]))
    _complete(client, alice[1], FIRST, store=False)
    _complete(client, alice[1], FIRST)
    unstored, stored = (r.body["messages"] for r in upstream.requests)
    assert stored == unstored


def test_extraction_stores_a_fact_from_a_v1_turn(client, alice, upstream):
    upstream.script(Reply(chunks=["Lovely."]))
    _complete(client, alice[1], FIRST)
    upstream.script(answer([("core", "Keeps three beehives in Lyon", "m1",
                             "I keep three beehives in Lyon")]))
    assert client.post("/api/facts/extract", headers=alice[1]).json()["new_facts"] == 1
    facts = client.get("/api/facts", headers=alice[1]).json()["facts"]
    assert [f["fact"] for f in facts] == ["Keeps three beehives in Lyon"]


def test_three_facts_said_on_v1_reach_a_new_conversations_prompt(client, alice, upstream,
                                                                index_now):  # noqa: F811
    said = ["I work as a nurse in Lyon.", "My daughter is called Ines.",
            "I play the cello on Sundays."]
    messages = []
    for text in said:
        messages.append({"role": "user", "content": text})
        upstream.script(Reply(chunks=["Noted."]))
        _complete(client, alice[1], messages)
        messages.append({"role": "assistant", "content": "Noted."})
    facts = [("core", "Works as a nurse in Lyon", "m1", said[0].rstrip(".")),
             ("core", "Has a daughter called Ines", "m3", said[1].rstrip(".")),
             ("core", "Plays the cello on Sundays", "m5", said[2].rstrip("."))]
    upstream.script(answer(facts))
    extracted = client.post("/api/facts/extract", headers=alice[1]).json()
    assert extracted["new_facts"] == 3 and extracted["fact_sheet_id"]
    upstream.script(Reply(chunks=["Hello."]))
    _complete(client, alice[1], [{"role": "user", "content": "Plan my week, please."}])
    prefix = upstream.requests[-1].body["messages"][0]["content"]
    assert all(fact in prefix for _, fact, _, _ in facts)
    index_now()
    for text in said:
        hits = client.get("/api/conversations/search", headers=alice[1],
                          params={"q": text, "mode": "keyword"}).json()["results"]
        assert text in [hit["content"] for hit in hits[:3]]


def test_an_answer_whose_conversation_goes_meanwhile_still_reaches_the_client(
        live_client, alice, upstream):
    upstream.script(Reply(chunks=["Lovely."], first_chunk_delay=1.0))
    answered = {}

    def ask() -> None:
        answered["body"] = _complete(live_client, alice[1], FIRST)

    asking = threading.Thread(target=ask)
    asking.start()
    deadline = time.monotonic() + 10
    while not upstream.requests:
        assert time.monotonic() < deadline, "the question never reached the upstream"
        time.sleep(0.02)
    [conversation] = _conversations(live_client, alice[1])
    assert live_client.delete(f"/api/conversations/{conversation['id']}",
                              headers=alice[1]).status_code == 204
    asking.join(10)
    assert answered["body"]["choices"][0]["message"]["content"] == "Lovely."
    assert _conversations(live_client, alice[1]) == []
