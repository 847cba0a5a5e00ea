"""Resumable answers across replicas: a turn running in one `chatsvc serve` is
re-attached, and stopped, through another, on one PostgreSQL (issue 23 item 5) and on
one SQLite file.

The SQLite pair is what `serve --workers 2` runs, with the process chosen by the
port. Under `--workers 2` the kernel chose: it gave one worker all of 20 connections
in a row (measured with the /proc socket table on this machine), so a test could not
reach the other one.
"""

from __future__ import annotations

import json

import httpx
import pytest
from httpx_sse import connect_sse

from chatsvc.testing import Reply
from tests.chatsvc.chat.test_chat_live import wait_for
from tests.reliability.conftest import Replicas

WORDS = [f"w{i} " for i in range(80)]


@pytest.fixture(params=["postgresql", "sqlite"])
def two_replicas_backend(request) -> str:
    return request.param


def left_turn(replicas: Replicas, deltas: int) -> list[tuple]:
    """A resumable turn's first events on replica A, then hang up."""
    seen = []
    with replicas.client(replicas.a) as http, connect_sse(
            http, "POST", "/api/chat", json={"message": "a story", "resumable": True}
    ) as source:
        assert source.response.status_code == 200
        for event in source.iter_sse():
            seen.append((int(event.id), event.event, json.loads(event.data)))
            if sum(kind == "delta" for _, kind, _ in seen) == deltas:
                break
    return seen


def last_answer(http: httpx.Client, conversation: str) -> dict:
    return http.get(f"/api/conversations/{conversation}").json()["messages"][-1]


def test_a_turn_on_one_replica_is_re_attached_through_the_other(two_replicas, scripted):
    scripted.script(Reply(chunks=WORDS, chunk_delay=0.03))
    first = left_turn(two_replicas, 3)
    conversation = first[0][2]["conversation_id"]
    path = f"/api/conversations/{conversation}/stream"
    with two_replicas.client(two_replicas.b) as other, connect_sse(
            other, "GET", path, headers={"Last-Event-ID": str(first[-1][0])}) as source:
        assert source.response.status_code == 200
        rest = [(int(e.id), e.event, json.loads(e.data)) for e in source.iter_sse()]
        assert rest[-1][1] == "done"
        wait_for(lambda: last_answer(other, conversation)["status"] != "pending", 10)
        answer = last_answer(other, conversation)
    ids = [ident for ident, _, _ in first + rest]
    assert ids == list(range(1, len(ids) + 1))
    assert answer["status"] == "complete" and answer["content"] == "".join(WORDS)
    said = "".join(d["content"] for _, kind, d in first + rest if kind == "delta")
    assert said == answer["content"]


def test_stop_through_the_other_replica_keeps_the_partial_answer(two_replicas, scripted):
    scripted.script(Reply(chunks=WORDS, chunk_delay=0.05))
    first = left_turn(two_replicas, 2)
    conversation = first[0][2]["conversation_id"]
    with two_replicas.client(two_replicas.b) as other:
        stopped = other.post(f"/api/conversations/{conversation}/stop")
        answer = last_answer(other, conversation)
    assert stopped.status_code == 200, stopped.text
    assert stopped.json()["status"] == "interrupted"
    assert answer["status"] == "interrupted"
    assert 0 < len(answer["content"]) < len("".join(WORDS))
