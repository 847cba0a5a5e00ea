"""How an answer's stream ends under a real `chatsvc serve`: an upstream 200 that is not
a whole answer, the conversation deleted mid-answer, SIGTERM and kill -9 mid-answer.

Each time the client's stream ends with `done` or an `error` event, and the stored
answer says what happened: `complete` only when the upstream said it had finished.
"""

from __future__ import annotations

import json
import signal
import threading

import httpx
import pytest
from httpx_sse import connect_sse

from chatsvc.testing import Reply, ServiceProcess
from tests._waiting import wait_for
from tests.reliability.conftest import auth, chat_turn, stored

COMPLETION = {"object": "chat.completion", "choices": [
    {"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}]}
# A 200 that holds no answer, every time (the first try and both retries).
NO_ANSWER = {
    "html page": Reply(body="<html><body><h1>502 Bad Gateway</h1></body></html>"),
    "completion, not a stream": Reply(body=json.dumps(COMPLETION),
                                      content_type="application/json"),
    "chunks without choices": Reply(body='data: {"choices": []}\n\ndata: [DONE]\n\n',
                                    content_type="text/event-stream"),
    "stream with no finish": Reply(chunks=[], finish_reason=None),
}
SLOW = Reply(chunks=[f"w{i} " for i in range(30)], chunk_delay=0.05)  # steady: no stall


@pytest.mark.parametrize("reply", NO_ANSWER.values(), ids=NO_ANSWER)
def test_a_200_without_an_answer_is_an_error_not_an_empty_answer(fault, scripted, reply):
    scripted.script(reply, reply, reply)
    before = len(scripted.requests)
    turn = chat_turn(fault, "alice", "hello?")
    assert turn.kinds == ["meta", "error"]
    assert turn.last[1]["code"] == "upstream_incomplete", turn.last
    assert len(scripted.requests) - before == 3  # retried: nothing was said yet
    assert stored(fault, "alice", turn.meta["conversation_id"]) == [
        ("user", "hello?", "complete"), ("assistant", "", "error")]


def test_tokens_then_a_close_without_finish_or_done_keep_the_partial_as_error(fault, scripted):
    scripted.script(Reply(chunks=["one ", "two"], finish_reason=None, send_done=False))
    turn = chat_turn(fault, "alice", "count")
    assert turn.kinds == ["meta", "delta", "delta", "error"]
    assert turn.last[1]["code"] == "upstream_incomplete"
    assert stored(fault, "alice", turn.meta["conversation_id"])[1] == (
        "assistant", "one two", "error")


def test_unfinished_answer_without_streaming_is_502(fault, scripted):
    scripted.script(Reply(chunks=["one ", "two"], finish_reason=None, send_done=False))
    response = httpx.post(f"{fault.url}/api/chat", headers=auth(fault, "alice"), timeout=30,
                          json={"message": "count", "stream": False})
    assert response.status_code == 502
    extra = response.json()["extra"]
    assert extra["code"] == "upstream_incomplete"
    assert stored(fault, "alice", extra["conversation_id"])[1] == (
        "assistant", "one two", "error")


def test_an_error_event_read_with_tokens_keeps_them_and_is_not_retried(fault, scripted):
    scripted.script(Reply(chunks=["one ", "two"], error_event="overloaded", one_write=True))
    before = len(scripted.requests)
    turn = chat_turn(fault, "alice", "count")
    assert turn.kinds == ["meta", "delta", "delta", "error"]
    assert turn.last[1]["code"] == "upstream_error" and "overloaded" in turn.last[1]["message"]
    assert len(scripted.requests) - before == 1
    assert stored(fault, "alice", turn.meta["conversation_id"])[1] == (
        "assistant", "one two", "error")


def test_deleting_the_conversation_mid_answer_ends_the_stream_with_an_error(fault, scripted):
    scripted.script(SLOW)
    events = []
    with httpx.Client(base_url=fault.url, headers=auth(fault, "alice"), timeout=30) as http, \
            connect_sse(http, "POST", "/api/chat", json={"message": "long"}) as source:
        for event in source.iter_sse():
            events.append((event.event, json.loads(event.data)))
            if len(events) == 2:  # meta and the first delta
                conversation = events[0][1]["conversation_id"]
                assert http.delete(f"/api/conversations/{conversation}").status_code == 204
    kinds = [kind for kind, _ in events]
    assert kinds == ["meta", *["delta"] * len(SLOW.chunks), "error"]
    assert events[-1][1]["code"] == "conversation_deleted"
    assert httpx.get(f"{fault.url}/api/conversations/{conversation}",
                     headers=auth(fault, "alice")).status_code == 404


def test_deleting_the_conversation_mid_answer_without_streaming_is_404(fault, scripted):
    scripted.script(SLOW)
    before = len(scripted.requests)
    answered = {}

    def ask() -> None:
        answered["response"] = httpx.post(
            f"{fault.url}/api/chat", headers=auth(fault, "alice"), timeout=30,
            json={"message": "long", "stream": False})

    asking = threading.Thread(target=ask)
    asking.start()
    wait_for(lambda: len(scripted.requests) > before)
    conversations = httpx.get(f"{fault.url}/api/conversations", headers=auth(fault, "alice"))
    conversation = conversations.json()["conversations"][0]["id"]
    assert httpx.delete(f"{fault.url}/api/conversations/{conversation}",
                        headers=auth(fault, "alice")).status_code == 204
    asking.join(30)
    response = answered["response"]
    assert response.status_code == 404, response.text
    assert response.json()["extra"]["code"] == "conversation_deleted"


def child(data_dir, ollama, scripted) -> ServiceProcess:
    return ServiceProcess(data_dir, {
        "CHATSVC_EMBEDDINGS": "ollama", "OLLAMA_URL": ollama.url,
        "LLM_BASE_URL": scripted.base_url, "CHATSVC_KNOWLEDGE_LLM_TIERS": "off",
    })


@pytest.fixture
def doomed(tmp_path, ollama, scripted):
    """A service of its own, for a test that stops or kills it."""
    ollama.mode = "ok"
    scripted._queue.clear()
    service = child(tmp_path / "data", ollama, scripted)
    service.tokens = {"alice": service.add_user("alice")}
    with service:
        yield service


def stream_until(service: ServiceProcess, deltas: int, then) -> list[tuple[str, dict]]:
    """Stream a turn; after `deltas` deltas call `then()` and read on to the end."""
    events = []
    with httpx.Client(base_url=service.url, headers=auth(service, "alice"), timeout=30) as http, \
            connect_sse(http, "POST", "/api/chat", json={"message": "long"}) as source:
        try:
            for event in source.iter_sse():
                events.append((event.event, json.loads(event.data)))
                if len(events) == 1 + deltas:
                    then()
        except httpx.TransportError:  # the server is gone
            pass
    return events


def saved_answer(service: ServiceProcess, conversation_id: str) -> tuple[str, str]:
    with service.database() as db:
        row = db.execute("SELECT content, status FROM messages WHERE conversation_id = $id "
                         "AND role = 'assistant'", {"id": conversation_id}).fetchone()
    return row["content"], row["status"]


def test_sigterm_mid_answer_sends_a_shutdown_error_and_keeps_the_partial(doomed, scripted):
    scripted.script(SLOW)
    events = stream_until(doomed, 3, lambda: doomed.process.send_signal(signal.SIGTERM))
    assert events[-1][0] == "error" and events[-1][1]["code"] == "shutdown", events[-3:]
    doomed.process.wait(15)  # uvicorn exits by the signal, after a graceful shutdown
    assert "Application shutdown complete" in doomed.log()
    said = "".join(data["content"] for kind, data in events if kind == "delta")
    assert 0 < len(said) < len("".join(SLOW.chunks))
    assert saved_answer(doomed, events[0][1]["conversation_id"]) == (said, "interrupted")
    assert doomed.crashes() == [], doomed.log()


def test_kill_9_mid_answer_leaves_a_pending_answer_the_next_start_interrupts(
        doomed, scripted, ollama):
    scripted.script(SLOW)
    events = stream_until(doomed, 2, doomed.process.kill)
    doomed.process.wait(5)
    conversation = events[0][1]["conversation_id"]
    assert saved_answer(doomed, conversation) == ("", "pending")
    restarted = child(doomed.data_dir, ollama, scripted)
    restarted.tokens = doomed.tokens
    with restarted:
        assert stored(restarted, "alice", conversation) == [
            ("user", "long", "complete"), ("assistant", "", "interrupted")]
