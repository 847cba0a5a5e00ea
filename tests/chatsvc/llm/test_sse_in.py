"""Reading the upstream's SSE bytes without the openai client's typed chunks."""

from __future__ import annotations

import json

import httpx2
import openai
import pytest

from chatsvc.llm._sse_in import Chunks, EventData

REQUEST = httpx2.Request("POST", "http://upstream/v1/chat/completions")


def chunk(content=None, finish_reason=None, **extra) -> bytes:
    delta = {"content": content} if content is not None else {}
    body = {"choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}], **extra}
    return f"data: {json.dumps(body)}\n\n".encode()


def test_events_split_anywhere_across_reads_come_out_whole():
    stream = chunk("Hel") + chunk("lo") + b"data: [DONE]\n\n"
    for cut in range(1, len(stream)):
        events = EventData()
        got = events.feed(stream[:cut]) + events.feed(stream[cut:])
        assert got == [stream.split(b"\n\n")[0][6:], stream.split(b"\n\n")[1][6:], b"[DONE]"]


def test_crlf_comments_other_fields_and_multiline_data():
    events = EventData()
    got = events.feed(b": keep-alive\r\n\r\nevent: x\r\ndata:{\"a\":\r")
    got += events.feed(b"\ndata: 1}\r\n\r")
    assert got == []  # the last \r may be half of \r\n
    assert events.feed(b"\n") == [b'{"a":\n1}']


def test_content_finish_reason_and_usage_in_either_place():
    chunks = Chunks(REQUEST)
    assert chunks.read(chunk("a")[6:-2]) == ["a"]
    assert chunks.read(chunk(finish_reason="stop")[6:-2]) == []
    openai_usage = {"prompt_tokens": 9, "completion_tokens": 1,
                    "prompt_tokens_details": {"cached_tokens": 8}}
    assert chunks.read(json.dumps({"choices": [], "usage": openai_usage}).encode()) == []
    assert (chunks.finish_reason, chunks.usage.cached_tokens) == ("stop", 8)
    kimi = {"choices": [{"delta": {}, "usage": {"prompt_tokens": 9, "cached_tokens": 5}}]}
    chunks.read(json.dumps(kimi).encode())
    assert chunks.usage.cached_tokens == 5
    assert not chunks.done
    assert chunks.read(b"[DONE]") == [] and chunks.done


def test_odd_but_valid_chunks_carry_no_text():
    chunks = Chunks(REQUEST)
    for odd in ({"choices": None}, {"choices": [None, {"delta": None}]},
                {"choices": [{"delta": {"content": None}}]},
                {"choices": [{"delta": {"content": ["not", "text"]}}]}, {"usage": "n/a"}):
        assert chunks.read(json.dumps(odd).encode()) == []
    assert (chunks.finish_reason, chunks.usage) == (None, None)


@pytest.mark.parametrize("data, message", [
    (b'{"error": {"message": "overloaded"}}', "overloaded"),
    (b'{"error": "x"}', "An error occurred during streaming"),
    (b"{not json", "invalid JSON"),
    (b"[1, 2]", "not an object"),
])
def test_error_events_and_garbage_raise_the_clients_api_error(data, message):
    with pytest.raises(openai.APIError, match=message) as raised:
        Chunks(REQUEST).read(data)
    assert not isinstance(raised.value, openai.APIStatusError)  # retried only before a token


def test_text_read_together_with_an_error_event_is_kept():
    error_event = b'data: {"error": {"message": "busy"}}\n\n'
    texts, error = Chunks(REQUEST).read_all(EventData().feed(chunk("one ") + error_event))
    assert texts == ["one "] and "busy" in str(error)


@pytest.mark.parametrize("content_type, body, reason", [
    ("text/html", b"<html><body>Bad Gateway</body></html>", "text/html, not a stream"),
    ("application/json", b'{"choices": [{"message": {"content": "hi"}}]}',
     "application/json, not a stream"),
    ("text/event-stream", b'data: {"choices": []}\n\ndata: [DONE]\n\n', "[DONE] but no finish"),
    ("text/event-stream", chunk("cut"), "without a finish reason or [DONE]"),
])
def test_a_body_that_ends_without_a_finish_reason_is_unfinished(content_type, body, reason):
    chunks = Chunks(REQUEST)
    _, error = chunks.read_all(EventData().feed(body))
    assert error is None
    assert reason in str(chunks.unfinished(content_type))
    chunks.read(chunk(finish_reason="stop")[6:-2])
    assert chunks.unfinished(content_type) is None


def test_tool_call_fragments_come_as_sent_and_finish_the_answer():
    from chatsvc.llm import ToolCallDelta, ToolCalls

    first = {"index": 0, "id": "call_a", "type": "function",
             "function": {"name": "lookup", "arguments": ""}}
    rest = [{"index": 0, "function": {"arguments": '{"q": '}},
            {"index": 0, "function": {"arguments": '"x"}'}}]
    chunks, calls = Chunks(REQUEST), ToolCalls()
    for fragment in (first, *rest):
        body = {"choices": [{"index": 0, "delta": {"tool_calls": [fragment]}}]}
        pieces = chunks.read(json.dumps(body).encode())
        assert pieces == [ToolCallDelta([fragment])]
        calls.add(pieces[0])
    chunks.read(chunk(finish_reason="tool_calls")[6:-2])
    assert chunks.unfinished("text/event-stream") is None
    assert calls.calls() == [{"id": "call_a", "type": "function",
                              "function": {"name": "lookup", "arguments": '{"q": "x"}'}}]


def test_a_call_header_repeated_in_every_fragment_counts_once():
    """llama.cpp's server (the bundled models) repeats a call's id, type and name in each
    fragment: appended, the name was "lookuplookuplookup"."""
    from chatsvc.llm import ToolCallDelta, ToolCalls

    head = {"index": 0, "id": "call_a", "type": "function"}
    sent = [{**head, "function": {"name": "lookup", "arguments": piece}}
            for piece in ('{"q": ', '"x"}', "")]
    calls = ToolCalls()
    relayed = [calls.add(ToolCallDelta([fragment])) for fragment in sent]
    assert calls.calls() == [{"id": "call_a", "type": "function",
                              "function": {"name": "lookup", "arguments": '{"q": "x"}'}}]
    assert relayed == [[sent[0]], [{"index": 0, "function": {"arguments": '"x"}'}}],
                       [{"index": 0, "function": {"arguments": ""}}]]
