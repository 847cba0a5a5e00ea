"""Resumable answers on PostgreSQL, across two instances (two Services, two apps on one
database, as two replicas behind a load balancer): a turn started on A is re-attached
on B with nothing lost, and stopped from B. (Litestar's TestClient reads a response to
its end before it returns any of it, so A's client is a thread that never leaves:
tests/chatsvc/chat/test_resumable.py covers real disconnects.)"""

from __future__ import annotations

import json
import threading

import pytest
from httpx_sse import connect_sse
from litestar.testing import TestClient

from chatsvc import Services, Settings, create_app
from chatsvc.testing import Reply
from tests._pg import drop_schema, new_schema
from tests.chatsvc.chat.test_chat_live import wait_for

WORDS = [f"word{i} " for i in range(40)]


@pytest.fixture
def two_instances(pg_server_url, upstream_settings, local_embedder, monkeypatch):
    schema, url = new_schema(pg_server_url)
    monkeypatch.setenv("CHATSVC_DATABASE_URL", url)
    opened = [Services.open(Settings.from_env(), embedder=local_embedder) for _ in range(2)]
    clients = [TestClient(create_app(services=s)) for s in opened]
    for client in clients:
        client.__enter__()
    user, token = opened[0].stores.users.add("alice")
    yield opened[0], clients, user, {"Authorization": f"Bearer {token}"}
    for client, services in zip(clients, opened, strict=True):
        client.__exit__(None, None, None)
        services.stores.db.close()
    drop_schema(pg_server_url, schema)


def reading(client, headers, events: list) -> threading.Thread:
    """A resumable turn on `client`, its events read into `events` by a thread."""
    def read() -> None:
        with connect_sse(client, "POST", "/api/chat", headers=headers,
                         json={"message": "a story", "resumable": True}) as source:
            events.extend((int(e.id), e.event, json.loads(e.data)) for e in source.iter_sse())

    reader = threading.Thread(target=read)
    reader.start()
    return reader


def answer_of(services, user, conversation_id):
    messages = services.stores.chats.messages(user.id, conversation_id)
    return messages[-1] if messages[-1].status != "pending" else None


def started_on_a(two_instances, upstream, delay: float):
    """A turn streaming on instance A, read in a thread: (its events so far, the reader,
    the conversation id once its first delta is recorded)."""
    services, (client_a, _), user, headers = two_instances
    upstream.script(Reply(chunks=WORDS, chunk_delay=delay))
    events = []
    reader = reading(client_a, headers, events)
    wait_for(lambda: recorded_delta(services, user), timeout=10)
    return events, reader, recorded_delta(services, user)


def test_a_turn_started_on_one_instance_is_followed_on_the_other(two_instances, upstream):
    services, (_, client_b), user, headers = two_instances
    on_a, reader, conversation = started_on_a(two_instances, upstream, 0.05)
    # B follows from the first delta on (meta is 1, the first delta 2) while A streams.
    with connect_sse(client_b, "GET", f"/api/conversations/{conversation}/stream",
                     headers={**headers, "Last-Event-ID": "2"}) as source:
        assert source.response.status_code == 200
        on_b = [(int(e.id), e.event, json.loads(e.data)) for e in source.iter_sse()]
    reader.join(10)
    assert on_b[-1][1] == "done" and on_b[0][0] == 3
    assert on_a[:2] + on_b == on_a  # nothing lost, nothing twice
    answer = answer_of(services, user, conversation)
    assert answer.status == "complete" and answer.content == "".join(WORDS)
    said = "".join(d["content"] for _, kind, d in on_a[:2] + on_b if kind == "delta")
    assert said == answer.content


def test_stop_on_one_instance_ends_the_turn_running_on_the_other(two_instances, upstream):
    services, (_, client_b), user, headers = two_instances
    events, reader, conversation = started_on_a(two_instances, upstream, 0.1)
    stopped = client_b.post(f"/api/conversations/{conversation}/stop", headers=headers)
    reader.join(10)
    assert stopped.status_code == 200, stopped.text
    assert stopped.json()["status"] == "interrupted"
    assert events[-1][1:] == ("error", {"code": "stopped",
                                    "message": "the answer was stopped on request"})
    answer = answer_of(services, user, conversation)
    assert answer.status == "interrupted" and len(answer.content) < len("".join(WORDS))
    assert "".join(d["content"] for _, kind, d in events if kind == "delta") == answer.content


def recorded_delta(services, user) -> str | None:
    """The user's conversation once a delta of its turn is recorded."""
    for conversation in services.stores.chats.list(user.id):
        state = services.stores.turn_events.after(user.id, conversation.id, 0)
        if any(event.event == "delta" for event in state.events):
            return conversation.id
    return None
