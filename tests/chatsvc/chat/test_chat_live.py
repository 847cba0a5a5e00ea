"""Over a real socket (uvicorn): client disconnect, keep-alive pings."""

from __future__ import annotations

import json

import httpx
import pytest

from chatsvc.testing import Reply
from tests._waiting import wait_for


def test_disconnect_closes_the_upstream_and_saves_the_partial(live, alice, upstream, services):
    chunks = [f"word{i} " for i in range(200)]
    upstream.script(Reply(chunks=chunks, chunk_delay=0.02))
    seen, meta = [], None
    with httpx.Client(base_url=live, headers=alice[1], timeout=10) as http, http.stream(
        "POST", "/api/chat", json={"message": "tell me a long story"}
    ) as response:
        event = None
        for line in response.iter_lines():
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: "):
                data = json.loads(line[6:])
                if event == "meta":
                    meta = data
                elif event == "delta":
                    seen.append(data["content"])
                if len(seen) == 5:
                    break
    # Leaving the block closed the connection: the upstream stream must go within 1 s.
    wait_for(lambda: upstream.closed_early == 1, timeout=1.0)

    def saved():
        messages = services.stores.chats.messages(alice[0].id, meta["conversation_id"])
        return messages if len(messages) == 2 else None

    question, answer = wait_for(saved, timeout=2.0)
    assert question.content == "tell me a long story" and question.status == "complete"
    assert answer.status == "interrupted" and answer.id == meta["message_id"]
    assert answer.content.startswith("".join(seen))
    assert "".join(chunks).startswith(answer.content) and answer.content != "".join(chunks)
    assert answer.prefix_hash == meta["prefix_hash"] and answer.mode == "rag"


@pytest.fixture
def fast_pings(monkeypatch):
    monkeypatch.setenv("CHATSVC_SSE_PING", "0.2")


def test_idle_streams_get_ping_comments(fast_pings, live, alice, upstream):
    upstream.script(Reply(chunks=["slow", " answer"], chunk_delay=0.5))
    with httpx.Client(base_url=live, headers=alice[1], timeout=10) as http:
        response = http.post("/api/chat", json={"message": "hi"})
    lines = response.text.splitlines()
    assert ": ping" in lines
    events = [line[7:] for line in lines if line.startswith("event: ")]
    assert events == ["meta", "delta", "delta", "done"]
    assert response.headers["content-type"].startswith("text/event-stream")
