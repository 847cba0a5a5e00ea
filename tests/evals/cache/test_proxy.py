"""The recording proxy: bodies recorded as sent, usage and TTFT read from the stream."""

from __future__ import annotations

import httpx

from chatsvc.testing import Reply, ScriptedUpstream
from evals.cache.proxy import RecordingProxy, fold_system


def test_fold_system_keeps_the_order_of_the_prefix():
    messages = [{"role": "system", "content": "S1"}, {"role": "system", "content": "S2"},
                {"role": "assistant", "content": "A0"}, {"role": "user", "content": "U1"},
                {"role": "user", "content": "U2"}]
    assert fold_system(messages) == [{"role": "assistant", "content": "A0"},
                                     {"role": "user", "content": "S1\n\nS2\n\nU1"},
                                     {"role": "user", "content": "U2"}]
    assert messages[3]["content"] == "U1"  # the recorded body is left alone
    assert fold_system([{"role": "user", "content": "hi"}]) == [
        {"role": "user", "content": "hi"}]


def test_proxy_relays_the_stream_and_records_body_usage_and_ttft():
    body = {"model": "m", "stream": True, "stream_options": {"include_usage": True},
            "messages": [{"role": "system", "content": "be brief"},
                         {"role": "user", "content": "hello"}]}
    with ScriptedUpstream() as upstream, RecordingProxy(
        upstream.base_url, max_tokens=5, fold_system_messages=True
    ) as proxy:
        upstream.script(Reply(chunks=["Hel", "lo"], chunk_delay=0.05))
        with httpx.stream("POST", f"{proxy.base_url}/chat/completions", json=body) as answer:
            text = "".join(answer.iter_text())
        forwarded = upstream.requests[0].body
    assert '"content": "Hel"' in text and "[DONE]" in text
    exchange = proxy.exchanges[0]
    assert exchange.body == body  # as the service sent it
    assert forwarded["max_tokens"] == 5
    assert forwarded["messages"] == [{"role": "user", "content": "be brief\n\nhello"}]
    assert exchange.usage["prompt_tokens"] > 0 and "prompt_tokens_details" in exchange.usage
    assert 0.04 < exchange.ttft_seconds <= exchange.total_seconds
