"""The limits of an answer: first token, stall, LLM_TIMEOUT for answers not streamed,
and `finish_reason` on every answer that was cut (chatsvc.chat._limits)."""

from __future__ import annotations

import json
import logging

import pytest

from chatsvc.testing import Reply
from tests._waiting import wait_for
from tests.chatsvc.chat.conftest import chat
from tests.chatsvc.chat.test_chat_failures import stored

FIRST_TOKEN, STALL, TOTAL = 3.0, 1.0, 0.5


@pytest.fixture
def settings(upstream_settings):
    return upstream_settings.with_overrides(
        llm_first_token_timeout_seconds=FIRST_TOKEN, llm_stall_timeout_seconds=STALL,
        llm_timeout_seconds=TOTAL)


def _ask(client, headers, message: str = "tell me a long story") -> dict:
    response = client.post("/api/chat", json={"message": message, "stream": False},
                           headers=headers)
    return response.status_code, response.json()


def test_a_steady_stream_longer_than_llm_timeout_completes(client, alice, upstream):
    chunks = [f"w{i} " for i in range(20)]  # ~1 s in all, over LLM_TIMEOUT (0.5 s)
    upstream.script(Reply(chunks=chunks, chunk_delay=0.05))
    events = chat(client, alice[1], "tell me a long story")
    assert events[-1][0] == "done" and events[-1][1]["finish_reason"] == "stop"
    assert "".join(data["content"] for kind, data in events if kind == "delta") == "".join(chunks)
    assert stored(client, alice[1], events[0][1]["conversation_id"])[-1] == (
        "assistant", "".join(chunks), "complete")


def test_a_slow_first_token_is_not_a_stall(client, alice, upstream):
    upstream.script(Reply(chunks=["after ", "a long ", "prefill"], first_chunk_delay=1.5 * STALL))
    events = chat(client, alice[1], "a long prompt")
    assert events[-1][0] == "done" and events[-1][1]["finish_reason"] == "stop"


def test_a_stall_cuts_the_answer_and_keeps_the_partial(client, alice, upstream, caplog):
    upstream.script(Reply(chunks=["one ", "two ", "three"], stall_after=2))
    with caplog.at_level(logging.INFO, logger="chatsvc.chat"):
        events = chat(client, alice[1], "count")
    assert [kind for kind, _ in events] == ["meta", "delta", "delta", "done"]
    done = events[-1][1]
    assert done["finish_reason"] == "timeout" and done["usage"]["completion_tokens"] > 0
    assert stored(client, alice[1], events[0][1]["conversation_id"]) == [
        ("user", "count", "complete"), ("assistant", "one two ", "interrupted")]
    # The stalled upstream request was closed (the upstream notices within its 20 ms poll).
    wait_for(lambda: upstream.closed_early == 1, timeout=2.0)
    assert any("LLM_STALL_TIMEOUT" in r.getMessage() and r.levelno == logging.WARNING
               for r in caplog.records), caplog.text
    # The partial answer is history for the next turn.
    upstream.script(Reply(chunks=["three"]))
    chat(client, alice[1], "go on", events[0][1]["conversation_id"])
    assert upstream.requests[-1].body["messages"][-2] == {"role": "assistant",
                                                           "content": "one two "}


def test_no_first_token_is_an_error_timeout(client, alice, upstream):
    upstream.script(Reply(hang=True))
    events = chat(client, alice[1], "hello")
    assert [kind for kind, _ in events] == ["meta", "error"]
    error = events[-1][1]
    assert error["code"] == "timeout" and "LLM_FIRST_TOKEN_TIMEOUT" in error["message"]
    assert len(upstream.requests) == 1  # a wait is not retried
    assert stored(client, alice[1], events[0][1]["conversation_id"]) == [
        ("user", "hello", "complete"), ("assistant", "", "error")]


def test_the_token_cap_is_named_on_done_and_in_the_json_answer(client, alice, upstream):
    upstream.script(Reply(chunks=["cut ", "mid"], finish_reason="length"),
                    Reply(chunks=["cut ", "mid"], finish_reason="length"))
    events = chat(client, alice[1], "ramble")
    assert events[-1][0] == "done" and events[-1][1]["finish_reason"] == "length"
    status, body = _ask(client, alice[1], "ramble again")
    assert status == 200 and (body["content"], body["finish_reason"]) == ("cut mid", "length")


def test_a_json_answer_still_has_llm_timeout_in_all(client, alice, upstream):
    upstream.script(Reply(chunks=[f"w{i} " for i in range(40)], chunk_delay=0.05))
    status, body = _ask(client, alice[1])
    assert status == 200 and body["finish_reason"] == "timeout"
    assert body["content"] and "w39" not in body["content"]
    assert stored(client, alice[1], body["conversation_id"])[-1] == (
        "assistant", body["content"], "interrupted")


def test_a_whole_json_answer_says_stop(client, alice, upstream):
    upstream.script(Reply(chunks=["Hel", "lo"]))
    status, body = _ask(client, alice[1], "hi")
    assert status == 200 and body["finish_reason"] == "stop"


def _openai(client, headers, model: str, *, stream: bool):
    response = client.post("/v1/chat/completions", headers=headers, json={
        "model": model, "messages": [{"role": "user", "content": "count"}], "stream": stream})
    if not stream:
        return response.status_code, response.json()
    return response.status_code, [json.loads(line[6:]) for line in response.text.splitlines()
                                  if line.startswith("data: {")]


def test_openai_facade_relays_length_and_reports_a_stall_as_an_error(
    client, alice, upstream, settings
):
    upstream.script(Reply(chunks=["cut"], finish_reason="length"))
    status, body = _openai(client, alice[1], settings.llm_model, stream=False)
    assert status == 200 and body["choices"][0]["finish_reason"] == "length"
    upstream.script(Reply(chunks=["cut"], finish_reason="length"))
    status, chunks = _openai(client, alice[1], settings.llm_model, stream=True)
    assert [c["choices"][0]["finish_reason"] for c in chunks] == [None, None, "length"]
    # A stall is not a finish reason OpenAI clients know: an error, after the text.
    upstream.script(Reply(chunks=["one ", "two"], stall_after=1))
    status, chunks = _openai(client, alice[1], settings.llm_model, stream=True)
    assert chunks[1]["choices"][0]["delta"] == {"content": "one "}
    assert chunks[-1]["error"]["code"] == "timeout" and "choices" not in chunks[-1]
