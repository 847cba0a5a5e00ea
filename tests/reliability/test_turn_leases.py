"""A crash frees its conversations fast (issue 38 item 4). `chatsvc serve` killed
with SIGKILL in the middle of an answer and started again on its data dir takes the
conversation's next turn at once, the interrupted question kept; a replica killed
mid-answer leaves the conversation to the other once its lease lapsed; a process
starting beside a live one on the same data dir leaves the live one's turn alone."""

from __future__ import annotations

import json
import time

import httpx
import pytest
from httpx_sse import connect_sse

from chatsvc.testing import Reply, ServiceProcess
from tests.reliability.conftest import Replicas

# Slow enough to be killed in the middle: the whole answer would take minutes.
SLOW = Reply(chunks=[f"w{i} " for i in range(1000)], chunk_delay=0.1)
LEASE_SECONDS = 6.0  # the replicas' turn lease (default 15): a test waits one out


def messages(http: httpx.Client, conversation: str) -> list[tuple[str, str, str]]:
    stored = http.get(f"/api/conversations/{conversation}").json()["messages"]
    return [(m["role"], m["content"], m["status"]) for m in stored]


def next_turn(http: httpx.Client, conversation: str, message: str) -> httpx.Response:
    return http.post("/api/chat", json={"message": message, "conversation_id": conversation,
                                        "stream": False})


def leave_running(http: httpx.Client, message: str) -> str:
    """A resumable turn, left once its answer streams; its conversation's id."""
    with connect_sse(http, "POST", "/api/chat",
                     json={"message": message, "resumable": True}) as source:
        assert source.response.status_code == 200, source.response.read()
        events = source.iter_sse()
        conversation = json.loads(next(events).data)["conversation_id"]
        assert next(events).event == "delta"
    return conversation


@pytest.fixture
def lone(tmp_path, ollama, scripted):
    """A service of its own (the test kills it). Its turn lease is far longer than any
    restart: only the start-up's freeing can give the conversation back in time."""
    ollama.mode = "ok"
    scripted._queue.clear()
    child = ServiceProcess(tmp_path / "data", {
        "CHATSVC_EMBEDDINGS": "ollama",
        "OLLAMA_URL": ollama.url,
        "LLM_BASE_URL": scripted.base_url,
        "CHATSVC_KNOWLEDGE_LLM_TIERS": "off",
        "CHATSVC_TURN_LEASE_SECONDS": "600",
    })
    child.token = child.add_user("alice")
    yield child
    child.stop()


def test_a_service_killed_mid_answer_takes_the_next_turn_once_started_again(lone, scripted):
    headers = {"Authorization": f"Bearer {lone.token}"}
    lone.start()
    scripted.script(SLOW)  # after the start-up's warm-up, which asks the upstream too
    with httpx.Client(base_url=lone.url, headers=headers, timeout=30) as http, connect_sse(
            http, "POST", "/api/chat", json={"message": "the question before the crash"}
    ) as source:
        events = source.iter_sse()
        conversation = json.loads(next(events).data)["conversation_id"]
        assert [next(events).event for _ in range(3)] == ["delta"] * 3
        lone.process.kill()  # SIGKILL while it streams: no shutdown of any kind
        lone.process.wait(10)
    lone.start()
    restarted = time.monotonic()
    with httpx.Client(base_url=lone.url, headers=headers, timeout=30) as http:
        answer = next_turn(http, conversation, "the question after the crash")
        took = time.monotonic() - restarted
        stored = messages(http, conversation)
    assert answer.status_code == 200, answer.text
    assert took < 15, took
    assert stored == [
        ("user", "the question before the crash", "complete"),
        ("assistant", "", "interrupted"),  # the dead process's answer, marked at start-up
        ("user", "the question after the crash", "complete"),
        ("assistant", "ok", "complete")]
    assert "freed 1 conversation(s) whose turn died with process" in lone.log()
    assert lone.crashes() == [], lone.log()


@pytest.fixture
def two_replicas_env() -> dict[str, str]:
    return {"CHATSVC_TURN_LEASE_SECONDS": str(LEASE_SECONDS)}


def test_a_replica_killed_mid_answer_leaves_the_conversation_to_the_other(
        two_replicas: Replicas, scripted):
    scripted.script(SLOW)
    with two_replicas.client(two_replicas.a) as dying, \
            two_replicas.client(two_replicas.b) as other:
        conversation = leave_running(dying, "the question before the crash")
        two_replicas.a.process.kill()
        two_replicas.a.process.wait(10)
        killed = time.monotonic()
        # The dead replica's claim holds until its lease lapses (renewed every third of
        # it, so 4-6 s after the kill)...
        refused = next_turn(other, conversation, "too soon")
        assert refused.status_code == 409, refused.text
        while (answer := next_turn(other, conversation, "once it lapsed")).status_code == 409:
            assert time.monotonic() - killed < LEASE_SECONDS + 5, "the claim never lapsed"
            time.sleep(0.2)
        assert answer.status_code == 200, answer.text
        stored = messages(other, conversation)
    # ...and then the conversation takes the next turn; the refused ones stored nothing.
    assert [(role, content) for role, content, _ in stored] == [
        ("user", "the question before the crash"), ("assistant", ""),
        ("user", "once it lapsed"), ("assistant", "ok")]


@pytest.mark.parametrize("two_replicas_backend", ["sqlite"])
def test_a_process_starting_beside_a_live_one_leaves_its_turn_alone(
        two_replicas: Replicas, scripted):
    """Two services on one data dir (one SQLite file): B starts again while A answers,
    for longer than A's lease; A's claim stays held, renewed, until A's turn ends."""
    scripted.script(SLOW)
    with two_replicas.client(two_replicas.a) as live:
        conversation = leave_running(live, "a long story")
        two_replicas.b.stop()
        two_replicas.b.start()
        with two_replicas.client(two_replicas.b) as started:
            time.sleep(LEASE_SECONDS)  # past the lease A's turn began with
            refused = next_turn(started, conversation, "meanwhile")
            stopped = started.post(f"/api/conversations/{conversation}/stop")
            after = next_turn(started, conversation, "after the stop")
    assert refused.status_code == 409, refused.text
    assert stopped.status_code == 200 and stopped.json()["status"] == "interrupted", stopped.text
    assert after.status_code == 200, after.text
    assert "freed" not in two_replicas.b.log()
