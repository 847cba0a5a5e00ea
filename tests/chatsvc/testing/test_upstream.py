"""The scripted upstream behaves like an OpenAI-compatible server, through the real client."""

import time

import httpx
import openai
import pytest

from chatsvc.testing import Reply, ScriptedUpstream

MESSAGES = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "hi"}]


@pytest.fixture
def llm(upstream):
    return openai.OpenAI(base_url=upstream.base_url, api_key="test", max_retries=0, timeout=5)


def _stream_text(llm, messages=MESSAGES):
    stream = llm.chat.completions.create(
        model="m", messages=messages, stream=True, stream_options={"include_usage": True}
    )
    text, usage = "", None
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            text += chunk.choices[0].delta.content
        if chunk.usage:
            usage = chunk.usage
    return text, usage


def test_streams_scripted_chunks_and_records_the_request(upstream, llm):
    upstream.script(Reply(chunks=["Hel", "lo", "!"]))
    text, usage = _stream_text(llm)
    assert text == "Hello!"
    assert usage.completion_tokens > 0
    assert upstream.requests[0].body["messages"] == MESSAGES
    assert upstream.requests[0].headers["authorization"] == "Bearer test"


def test_cached_tokens_are_the_common_prefix_with_the_previous_request(upstream, llm):
    _, first = _stream_text(llm)
    assert first.prompt_tokens_details.cached_tokens == 0
    longer = [*MESSAGES, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "x"}]
    _, second = _stream_text(llm, longer)
    assert 0 < second.prompt_tokens_details.cached_tokens < second.prompt_tokens
    _, third = _stream_text(llm, longer)
    assert third.prompt_tokens_details.cached_tokens == third.prompt_tokens


def test_missing_cached_tokens_can_be_scripted(upstream, llm):
    upstream.script(Reply(report_cached_tokens=False))
    _, usage = _stream_text(llm)
    assert usage.prompt_tokens_details is None


@pytest.mark.parametrize(("status", "error"), [(500, openai.InternalServerError),
                                               (429, openai.RateLimitError)])
def test_errors_before_the_first_chunk(upstream, llm, status, error):
    upstream.script(Reply(status=status))
    with pytest.raises(error):
        _stream_text(llm)


def test_cut_mid_stream_raises_after_partial_text(upstream, llm):
    upstream.script(Reply(chunks=["a", "b", "c", "d"], cut_after=2))
    received = []
    stream = llm.chat.completions.create(model="m", messages=MESSAGES, stream=True)
    with pytest.raises(openai.APIError):
        for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                received.append(chunk.choices[0].delta.content)
    assert received == ["a", "b"]


def test_slow_tokens_are_spaced_out(upstream, llm):
    upstream.script(Reply(chunks=["a", "b", "c"], chunk_delay=0.1))
    started = time.monotonic()
    text, _ = _stream_text(llm)
    assert text == "abc"
    assert time.monotonic() - started >= 0.3


def test_hang_times_out_the_client(upstream):
    upstream.script(Reply(hang=True))
    client = openai.OpenAI(base_url=upstream.base_url, api_key="t", max_retries=0, timeout=0.5)
    with pytest.raises(openai.APITimeoutError):
        client.chat.completions.create(model="m", messages=MESSAGES)


def test_non_streaming_completion(upstream, llm):
    upstream.script(Reply(chunks=["whole ", "answer"]))
    completion = llm.chat.completions.create(model="m", messages=MESSAGES)
    assert completion.choices[0].message.content == "whole answer"
    assert completion.usage.prompt_tokens > 0


def test_broken_answers_can_be_scripted(upstream):
    url, body = f"{upstream.base_url}/chat/completions", {"messages": [], "stream": True}
    upstream.script(Reply(body="<html>down</html>"),
                    Reply(chunks=["a"], finish_reason=None, send_done=False),
                    Reply(chunks=["a", "b"], error_event="busy", one_write=True))
    page = httpx.post(url, json=body)
    assert (page.status_code, page.headers["content-type"], page.text) == (
        200, "text/html", "<html>down</html>")
    unfinished = httpx.post(url, json=body).text
    assert '"a"' in unfinished and '"finish_reason": "' not in unfinished
    assert "[DONE]" not in unfinished
    with httpx.stream("POST", url, json=body) as response:
        reads = list(response.iter_raw())
    assert len(reads) == 1 and b'"b"' in reads[0] and b'"busy"' in reads[0]


def test_the_default_answer_can_be_built_from_each_request():
    def echo(body: dict) -> Reply:
        return Reply(chunks=[body["messages"][-1]["content"].upper()])

    with ScriptedUpstream(default=echo) as upstream:
        llm = openai.OpenAI(base_url=upstream.base_url, api_key="t", max_retries=0, timeout=5)
        upstream.script(Reply(chunks=["scripted first"]))
        assert _stream_text(llm)[0] == "scripted first"
        assert _stream_text(llm)[0] == "HI"
        second = [{"role": "user", "content": "again"}]
        assert llm.chat.completions.create(
            model="m", messages=second).choices[0].message.content == "AGAIN"
