"""Admission of chat turns over a real socket: one turn per conversation at a time
(409), answers linked to their question, a per-user cap on concurrent turns (429)."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from httpx_sse import connect_sse

from chatsvc.testing import Reply
from tests.chatsvc.chat.conftest import read_events
from tests.chatsvc.chat.test_chat_live import wait_for

SLOW = Reply(chunks=[f"part{i} " for i in range(10)], chunk_delay=0.1)  # about 1 s


def stream_turn(base: str, headers: dict, body: dict, started: threading.Event | None = None,
                meta: dict | None = None) -> list[tuple[str, dict]]:
    """A streamed turn to its end; `started` is set (and `meta` filled) at its meta event."""
    events = []
    with httpx.Client(base_url=base, headers=headers, timeout=30) as http, \
            connect_sse(http, "POST", "/api/chat", json=body) as source:
        assert source.response.status_code == 200, source.response.read()
        for event in source.iter_sse():
            events.append((event.event, json.loads(event.data)))
            if event.event == "meta" and started is not None:
                meta.update(events[-1][1])
                started.set()
    return events


def test_a_second_turn_while_the_first_streams_is_409(live, alice, upstream):
    upstream.script(SLOW)
    started, meta = threading.Event(), {}
    with ThreadPoolExecutor(1) as pool:
        first = pool.submit(stream_turn, live, alice[1], {"message": "first question"},
                            started, meta)
        assert started.wait(10)
        body = {"message": "second question", "conversation_id": meta["conversation_id"]}
        refused = httpx.post(f"{live}/api/chat", json=body, headers=alice[1], timeout=10)
        assert first.result()[-1][0] == "done"
    assert refused.status_code == 409, refused.text
    assert refused.json()["extra"] == {"code": "turn_in_progress",
                                       "conversation_id": meta["conversation_id"]}
    assert len(upstream.requests) == 1  # the refused turn asked nothing
    # Once the answer is in, the same message is taken; each answer names its question.
    second = httpx.post(f"{live}/api/chat", json={**body, "stream": False}, headers=alice[1],
                        timeout=10)
    assert second.status_code == 200, second.text
    stored = httpx.get(f"{live}/api/conversations/{meta['conversation_id']}",
                       headers=alice[1]).json()["messages"]
    assert [(m["role"], m["content"]) for m in stored] == [
        ("user", "first question"), ("assistant", SLOW.content),
        ("user", "second question"), ("assistant", "ok")]
    assert [m["reply_to"] for m in stored] == [None, stored[0]["id"], None, stored[2]["id"]]


def test_a_client_that_leaves_frees_its_conversation(live, alice, upstream):
    upstream.script(Reply(chunks=[f"w{i} " for i in range(200)], chunk_delay=0.02))
    with httpx.Client(base_url=live, headers=alice[1], timeout=10) as http, \
            connect_sse(http, "POST", "/api/chat", json={"message": "long story"}) as source:
        events = source.iter_sse()
        conversation_id = next(events).json()["conversation_id"]
        assert next(events).event == "delta"  # the upstream is streaming: leave now
    wait_for(lambda: upstream.closed_early == 1, timeout=2.0)
    body = {"message": "shorter, please", "conversation_id": conversation_id, "stream": False}
    answer = httpx.post(f"{live}/api/chat", json=body, headers=alice[1], timeout=10)
    assert answer.status_code == 200, answer.text


@pytest.fixture
def two_streams(monkeypatch):
    monkeypatch.setenv("CHATSVC_MAX_STREAMS_PER_USER", "2")


def test_a_user_runs_at_most_the_configured_streams(two_streams, live, alice, bob, upstream,
                                                    services):
    upstream.script(SLOW, SLOW)
    events = [threading.Event(), threading.Event()]
    with ThreadPoolExecutor(2) as pool:
        streams = [pool.submit(stream_turn, live, alice[1], {"message": f"story {i}"}, ev, {})
                   for i, ev in enumerate(events)]
        assert all(ev.wait(10) for ev in events)
        over = httpx.post(f"{live}/api/chat", json={"message": "a third", "stream": False},
                          headers=alice[1], timeout=10)
        openai = httpx.post(f"{live}/v1/chat/completions", headers=alice[1], timeout=10, json={
            "model": services.settings.llm_model, "messages": [{"role": "user", "content": "x"}]})
        other = httpx.post(f"{live}/api/chat", json={"message": "bob's", "stream": False},
                           headers=bob[1], timeout=10)
        assert [s.result()[-1][0] for s in streams] == ["done", "done"]
    assert over.status_code == 429 and over.headers["retry-after"] == "2"
    assert over.json()["extra"] == {"code": "too_many_streams"}
    assert "at most 2 chat turns at once" in over.json()["detail"]
    assert openai.status_code == 429 and openai.json()["error"]["type"] == "rate_limit_error"
    assert other.status_code == 200, other.text  # another user is not held back
    # Nothing of the refused turns was stored; the slots come back when streams end.
    titles = {c["title"] for c in httpx.get(f"{live}/api/conversations",
                                            headers=alice[1]).json()["conversations"]}
    assert titles == {"story 0", "story 1"}
    wait_for(lambda: services.slots.held(alice[0].id) == 0, timeout=2.0)
    again = httpx.post(f"{live}/api/chat", json={"message": "now?", "stream": False},
                       headers=alice[1], timeout=10)
    assert again.status_code == 200, again.text


def test_a_turn_that_could_not_be_prepared_frees_its_conversation(client, alice, services):
    assert client.post("/api/fact-sheet/generate", headers=alice[1]).status_code == 201
    services.stores.db.execute("UPDATE fact_sheets SET facts_json = '{'")  # corrupt data
    first = read_events(client, alice[1], {"message": "hello"})
    assert first == [("error", {"code": "internal", "message": "the turn could not be prepared"})]
    [conversation] = client.get("/api/conversations", headers=alice[1]).json()["conversations"]
    body = {"message": "again", "conversation_id": conversation["id"]}
    # Not 409: the failed turn let go of the conversation (stream and JSON alike).
    assert read_events(client, alice[1], body)[-1][1]["code"] == "internal"
    assert client.post("/api/chat", json={**body, "stream": False},
                       headers=alice[1]).status_code == 500
    assert read_events(client, alice[1], body)[-1][1]["code"] == "internal"
    # The questions stay; no empty answer is left `pending` (it is stored while preparing).
    stored = client.get(f"/api/conversations/{conversation['id']}", headers=alice[1]).json()
    assert [m["role"] for m in stored["messages"]] == ["user"] * 4
