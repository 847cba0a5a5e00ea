"""Resumable answers, re-attaching and stopping, over a real socket (uvicorn): event
ids, an answer that outlives its client, a replay that continues exactly where the
client left, a stop that keeps the partial answer, and other users kept out."""

from __future__ import annotations

import json
import threading

import httpx
import pytest
from httpx_sse import connect_sse

from chatsvc.testing import Reply
from tests.chatsvc.chat.test_chat_live import wait_for

WORDS = [f"word{i} " for i in range(60)]


def sse_events(source) -> list[tuple[int, str, dict]]:
    return [(int(e.id), e.event, json.loads(e.data)) for e in source.iter_sse()]


def start_and_leave(base: str, headers: dict, *, deltas: int, **body) -> list[tuple]:
    """POST /api/chat, read events until `deltas` deltas came, then hang up."""
    seen = []
    with httpx.Client(base_url=base, headers=headers, timeout=10) as http, \
            connect_sse(http, "POST", "/api/chat",
                        json={"message": "tell me a story", **body}) as source:
        assert source.response.status_code == 200, source.response.read()
        for event in source.iter_sse():
            seen.append((int(event.id), event.event, json.loads(event.data)))
            if sum(kind == "delta" for _, kind, _ in seen) == deltas:
                break
    return seen


def reattach(base: str, headers: dict, conversation_id: str, last_id: int | None = None):
    extra = {} if last_id is None else {"Last-Event-ID": str(last_id)}
    with httpx.Client(base_url=base, headers={**headers, **extra}, timeout=10) as http, \
            connect_sse(http, "GET", f"/api/conversations/{conversation_id}/stream") as source:
        if source.response.status_code != 200:
            return source.response.status_code, []
        return 200, sse_events(source)


def text_of(events: list[tuple]) -> str:
    return "".join(data["content"] for _, kind, data in events if kind == "delta")


def stored_answer(services, user, conversation_id: str):
    messages = services.stores.chats.messages(user.id, conversation_id)
    return messages[-1] if len(messages) == 2 and messages[-1].status != "pending" else None


def test_every_event_of_a_turn_has_an_increasing_id(live, alice, upstream):
    upstream.script(Reply(chunks=["a", "b", "c"]))
    with httpx.Client(base_url=live, headers=alice[1], timeout=10) as http, \
            connect_sse(http, "POST", "/api/chat", json={"message": "hi"}) as source:
        events = sse_events(source)
    assert [kind for _, kind, _ in events] == ["meta", "delta", "delta", "delta", "done"]
    assert [ident for ident, _, _ in events] == [1, 2, 3, 4, 5]


def test_a_resumable_answer_outlives_its_client_and_replays_exactly(live, alice, upstream,
                                                                    services):
    upstream.script(Reply(chunks=WORDS, chunk_delay=0.02))
    first = start_and_leave(live, alice[1], deltas=5, resumable=True)
    conversation = first[0][2]["conversation_id"]
    # Re-attached mid-answer: the rest, from the next id on, up to `done`.
    status, rest = reattach(live, alice[1], conversation, first[-1][0])
    assert status == 200 and rest[-1][1] == "done"
    ids = [ident for ident, _, _ in first + rest]
    assert ids == list(range(1, len(ids) + 1))  # no gap, no duplicate
    answer = wait_for_answer(services, alice[0], conversation)
    assert answer.status == "complete" and answer.content == "".join(WORDS)
    assert text_of(first) + text_of(rest) == answer.content
    assert upstream.closed_early == 0  # the client left; the upstream was read to its end
    # After the end the whole turn is still kept: a reload replays it from the start.
    status, replay = reattach(live, alice[1], conversation)
    assert status == 200 and replay == first + rest


def wait_for_answer(services, user, conversation_id: str):
    wait_for(lambda: stored_answer(services, user, conversation_id), timeout=10)
    return stored_answer(services, user, conversation_id)


@pytest.fixture
def resumable_default(monkeypatch):
    monkeypatch.setenv("CHATSVC_RESUMABLE", "1")


def test_resumable_is_the_default_with_the_setting(resumable_default, upstream, services,
                                                    alice, live):
    upstream.script(Reply(chunks=WORDS, chunk_delay=0.01))
    first = start_and_leave(live, alice[1], deltas=2)
    answer = wait_for_answer(services, alice[0], first[0][2]["conversation_id"])
    assert answer.status == "complete" and answer.content == "".join(WORDS)
    # ... and a request may still ask for the old behaviour.
    upstream.script(Reply(chunks=WORDS, chunk_delay=0.02))
    first = start_and_leave(live, alice[1], deltas=2, resumable=False)
    wait_for(lambda: upstream.closed_early == 1, timeout=2)
    answer = wait_for_answer(services, alice[0], first[0][2]["conversation_id"])
    assert answer.status == "interrupted"


def test_a_client_that_leaves_a_plain_answer_ends_its_recorded_stream(live, alice, upstream,
                                                                     services):
    upstream.script(Reply(chunks=WORDS, chunk_delay=0.02))
    first = start_and_leave(live, alice[1], deltas=3)
    conversation = first[0][2]["conversation_id"]
    wait_for(lambda: upstream.closed_early == 1, timeout=2)
    answer = wait_for_answer(services, alice[0], conversation)
    assert answer.status == "interrupted"
    status, replay = reattach(live, alice[1], conversation)
    assert status == 200 and replay[-1][1:] == ("error", {
        "code": "interrupted",
        "message": "the stream ended before the answer (the client went away)"})
    assert text_of(replay) == answer.content


def test_stop_ends_the_running_answer_and_keeps_it_interrupted(live, alice, upstream,
                                                               services):
    upstream.script(Reply(chunks=WORDS, chunk_delay=0.05))
    first = start_and_leave(live, alice[1], deltas=2, resumable=True)
    conversation = first[0][2]["conversation_id"]
    stopped = httpx.post(f"{live}/api/conversations/{conversation}/stop", headers=alice[1])
    assert stopped.status_code == 200, stopped.text
    assert stopped.json() == {"conversation_id": conversation, "status": "interrupted",
                              "message_id": first[0][2]["message_id"]}
    answer = stored_answer(services, alice[0], conversation)
    assert answer.status == "interrupted" and 0 < len(answer.content) < len("".join(WORDS))
    status, rest = reattach(live, alice[1], conversation, first[-1][0])
    assert status == 200 and rest[-1][1] == "error" and rest[-1][2]["code"] == "stopped"
    assert text_of(first) + text_of(rest) == answer.content
    # Nothing runs now: stop has nothing to do.
    again = httpx.post(f"{live}/api/conversations/{conversation}/stop", headers=alice[1])
    assert again.status_code == 204


def test_nothing_running_and_nothing_after_the_id_is_204(live, alice, upstream, live_client):
    upstream.script(Reply(chunks=["a", "b"]))
    answer = httpx.post(f"{live}/api/chat", headers=alice[1], timeout=10,
                        json={"message": "hi", "stream": False}).json()
    conversation = answer["conversation_id"]
    assert reattach(live, alice[1], conversation) == (204, [])  # nothing recorded
    upstream.script(Reply(chunks=["a", "b"]))
    with httpx.Client(base_url=live, headers=alice[1], timeout=10) as http, \
            connect_sse(http, "POST", "/api/chat",
                        json={"message": "again", "conversation_id": conversation}) as source:
        events = sse_events(source)
    assert reattach(live, alice[1], conversation, events[-1][0]) == (204, [])
    url = f"/api/conversations/{conversation}/stream"
    by_query = live_client.get(url, params={"last_event_id": str(events[-2][0])},
                               headers=alice[1])
    assert by_query.status_code == 200 and "event: done" in by_query.text
    for bad in ("x", "-1", "1.5"):
        refused = live_client.get(url, headers={**alice[1], "Last-Event-ID": bad})
        assert refused.status_code == 400, refused.text


def test_another_users_conversation_is_404_and_keeps_running(live, alice, bob, upstream,
                                                             services):
    upstream.script(Reply(chunks=WORDS, chunk_delay=0.02))
    first = start_and_leave(live, alice[1], deltas=2, resumable=True)
    conversation = first[0][2]["conversation_id"]
    assert reattach(live, bob[1], conversation, 0)[0] == 404
    assert httpx.post(f"{live}/api/conversations/{conversation}/stop",
                      headers=bob[1]).status_code == 404
    assert reattach(live, bob[1], "nosuchconversation")[0] == 404
    answer = wait_for_answer(services, alice[0], conversation)
    assert answer.status == "complete" and answer.content == "".join(WORDS)


def test_resumable_needs_a_stream(client, alice):
    refused = client.post("/api/chat", headers=alice[1],
                          json={"message": "hi", "stream": False, "resumable": True})
    assert refused.status_code == 400 and "resumable" in refused.text


def test_stop_ends_an_answer_asked_without_streaming(live, alice, upstream, services):
    upstream.script(Reply(chunks=WORDS, chunk_delay=0.05))
    answers = []
    asking = threading.Thread(target=lambda: answers.append(httpx.post(
        f"{live}/api/chat", headers=alice[1], timeout=30,
        json={"message": "a story", "stream": False})))
    asking.start()
    wait_for(lambda: services.stores.chats.list(alice[0].id), timeout=10)
    conversation = services.stores.chats.list(alice[0].id)[0].id
    wait_for(lambda: len(services.stores.chats.messages(alice[0].id, conversation)) == 2, 10)
    stopped = httpx.post(f"{live}/api/conversations/{conversation}/stop", headers=alice[1])
    asking.join(10)
    assert stopped.status_code == 200 and stopped.json()["status"] == "interrupted"
    assert answers[0].status_code == 502 and answers[0].json()["extra"]["code"] == "stopped"


def test_stop_names_the_regenerated_answer_not_its_older_sibling(live, alice, upstream,
                                                                 services):
    upstream.script(Reply(chunks=["first"]), Reply(chunks=WORDS, chunk_delay=0.05))
    conversation = httpx.post(f"{live}/api/chat", headers=alice[1], timeout=10, json={
        "message": "a story", "stream": False}).json()["conversation_id"]
    answers = []
    asking = threading.Thread(target=lambda: answers.append(httpx.post(
        f"{live}/api/conversations/{conversation}/regenerate", headers=alice[1], timeout=30,
        json={"stream": False})))
    asking.start()
    wait_for(lambda: len(services.stores.chats.messages(alice[0].id, conversation)) == 3, 10)
    stopped = httpx.post(f"{live}/api/conversations/{conversation}/stop", headers=alice[1])
    asking.join(10)
    assert answers[0].status_code == 502 and answers[0].json()["extra"]["code"] == "stopped"
    assert stopped.status_code == 200
    assert stopped.json() == {"conversation_id": conversation, "status": "interrupted",
                              "message_id": answers[0].json()["extra"]["message_id"]}
