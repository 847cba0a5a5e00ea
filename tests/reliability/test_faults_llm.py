"""The LLM upstream and the client failing under a real `chatsvc serve`.

Each fault: the user's message is stored complete, the assistant's message is
stored with the status that says what happened (partial text kept), the client
gets a clear `error` event, no traceback, bounded latency.
"""

from __future__ import annotations

import json

import httpx

from chatsvc.testing import Reply
from tests._waiting import wait_for
from tests.reliability.conftest import (
    FIRST_TOKEN_TIMEOUT,
    SEND_TIMEOUT,
    auth,
    chat_turn,
    stored,
)

SLACK = 3.0  # scheduling on a loaded 2-core machine


def test_500_before_the_first_token_every_time(fault, scripted):
    scripted.script(*[Reply(status=500)] * 3)
    turn = chat_turn(fault, "alice", "hello?")
    assert turn.kinds == ["meta", "error"]
    assert turn.last[1]["code"] == "upstream_unavailable"
    assert "500" in turn.last[1]["message"]
    assert turn.seconds < SLACK
    assert stored(fault, "alice", turn.meta["conversation_id"]) == [
        ("user", "hello?", "complete"), ("assistant", "", "error")]


def test_429_before_the_first_token_is_retried(fault, scripted):
    scripted.script(Reply(status=429, error_message="rate limited"), Reply(chunks=["ok"]))
    before = len(scripted.requests)
    turn = chat_turn(fault, "alice", "busy?")
    assert turn.kinds == ["meta", "delta", "done"]
    assert len(scripted.requests) - before == 2
    assert stored(fault, "alice", turn.meta["conversation_id"]) == [
        ("user", "busy?", "complete"), ("assistant", "ok", "complete")]


def test_429_that_persists_is_an_error_not_a_hang(fault, scripted):
    scripted.script(*[Reply(status=429, error_message="rate limited")] * 3)
    turn = chat_turn(fault, "alice", "still busy?")
    assert turn.kinds == ["meta", "error"] and "429" in turn.last[1]["message"]
    assert turn.seconds < SLACK
    assert stored(fault, "alice", turn.meta["conversation_id"])[1] == ("assistant", "", "error")


def test_connection_cut_mid_stream_keeps_the_partial(fault, scripted):
    scripted.script(Reply(chunks=["one ", "two ", "three"], cut_after=2))
    before = len(scripted.requests)
    turn = chat_turn(fault, "alice", "count")
    assert turn.kinds == ["meta", "delta", "delta", "error"]
    assert turn.last[1]["code"] == "upstream_error"
    assert len(scripted.requests) - before == 1  # never retried after text went out
    assert stored(fault, "alice", turn.meta["conversation_id"]) == [
        ("user", "count", "complete"), ("assistant", "one two ", "error")]


def test_tokens_slower_than_the_send_timeout_still_complete(fault, scripted):
    # The send timeout bounds one write to a stuck client, not the gap between tokens.
    delay = SEND_TIMEOUT * 1.6
    scripted.script(Reply(chunks=["slow ", "but ", "fine"], chunk_delay=delay))
    turn = chat_turn(fault, "alice", "take your time")
    assert turn.kinds == ["meta", "delta", "delta", "delta", "done"]
    assert delay * 3 <= turn.seconds < delay * 3 + SLACK
    assert stored(fault, "alice", turn.meta["conversation_id"])[1] == (
        "assistant", "slow but fine", "complete")


def test_upstream_hang_ends_at_the_first_token_timeout(fault, scripted):
    scripted.script(Reply(hang=True), Reply(hang=True), Reply(hang=True))
    turn = chat_turn(fault, "alice", "are you there?")
    assert turn.kinds == ["meta", "error"]
    assert turn.last[1]["code"] == "timeout", turn.last
    assert FIRST_TOKEN_TIMEOUT <= turn.seconds < FIRST_TOKEN_TIMEOUT + SLACK
    assert stored(fault, "alice", turn.meta["conversation_id"]) == [
        ("user", "are you there?", "complete"), ("assistant", "", "error")]


def test_client_disconnect_mid_stream_saves_an_interrupted_reply(fault, scripted):
    chunks = [f"w{i} " for i in range(100)]
    scripted.script(Reply(chunks=chunks, chunk_delay=0.02))
    closed_before = scripted.closed_early
    seen, meta, event = [], None, None
    with httpx.Client(base_url=fault.url, headers=auth(fault, "alice"), timeout=10) as http, \
            http.stream("POST", "/api/chat", json={"message": "a long story"}) as response:
        for line in response.iter_lines():
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: ") and event == "meta":
                meta = json.loads(line[6:])
            elif line.startswith("data: ") and event == "delta":
                seen.append(json.loads(line[6:])["content"])
                if len(seen) == 3:
                    break
    wait_for(lambda: scripted.closed_early > closed_before, timeout=SLACK)

    def saved():
        messages = stored(fault, "alice", meta["conversation_id"])
        return messages if len(messages) == 2 else None

    (question, answer) = wait_for(saved, timeout=SLACK)
    assert question == ("user", "a long story", "complete")
    assert answer[0] == "assistant" and answer[2] == "interrupted"
    assert answer[1].startswith("".join(seen)) and answer[1] != "".join(chunks)
