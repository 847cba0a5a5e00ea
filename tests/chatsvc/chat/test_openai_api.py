"""The OpenAI-compatible facade, driven by the official `openai` client."""

from __future__ import annotations

import openai
import pytest

from chatsvc.testing import Reply
from tests.chatsvc.chat.conftest import seed_user_data

HEADER = "POSSIBLY RELATED FACTS (Semantic search results based on the current message)"


def conversation():
    return [
        {"role": "system", "content": "Be terse."},
        {"role": "user", "content": "Where do I live?"},
        {"role": "assistant", "content": "Lisbon."},
        {"role": "user", "content": "And my cat?"},
    ]


def test_models_lists_the_configured_model(oai, settings):
    assert [m.id for m in oai.models.list()] == [settings.llm_model]


def test_completion_adds_the_stable_prefix_and_the_block(oai, live_client, alice, upstream,
                                                         settings):
    seed_user_data(live_client, alice[1])
    upstream.script(Reply(chunks=["Miso", "."]))
    result = oai.chat.completions.create(model=settings.llm_model, messages=conversation())
    assert result.choices[0].message.content == "Miso."
    assert result.choices[0].finish_reason == "stop"
    assert result.usage.prompt_tokens > 0
    assert result.usage.prompt_tokens_details.cached_tokens == 0
    sent = upstream.requests[0].body["messages"]
    assert sent[0]["role"] == "system" and "FACT SHEET" in sent[0]["content"]
    assert sent[1] == {"role": "system", "content": "Be terse."}
    # in_history (the default) places the block just before the current question.
    assert sent[2:-3] == conversation()[1:-1]
    assert sent[-3]["content"].startswith(HEADER) and sent[-2]["role"] == "assistant"
    assert sent[-1] == conversation()[-1]
    assert result.model_extra["chatsvc"]["mode"] == "rag"


def test_streaming_with_usage_and_a_stable_prefix(oai, upstream, settings):
    prefixes = []
    for turn in range(2):
        upstream.script(Reply(chunks=["a", "b", "c"]))
        stream = oai.chat.completions.create(
            model=settings.llm_model, messages=conversation()[: 2 + 2 * turn], stream=True,
            stream_options={"include_usage": True},
        )
        chunks = list(stream)
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert text == "abc"
        assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens > 0
        assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
        prefixes.append(upstream.requests[-1].body["messages"][0])
    assert prefixes[0] == prefixes[1]
    assert chunks[-1].usage.prompt_tokens_details.cached_tokens > 0


def test_streaming_without_include_usage_sends_no_usage_chunk(oai, upstream, settings):
    upstream.script(Reply(chunks=["x"]))
    chunks = list(oai.chat.completions.create(
        model=settings.llm_model, messages=conversation()[:2], stream=True))
    assert all(c.usage is None for c in chunks) and all(c.choices for c in chunks)


def test_upstream_failure_mid_stream_raises_in_the_client(oai, upstream, settings):
    upstream.script(Reply(chunks=["one", "two", "three"], cut_after=1))
    stream = oai.chat.completions.create(model=settings.llm_model,
                                         messages=conversation()[:2], stream=True)
    with pytest.raises(openai.APIError):
        list(stream)


def test_upstream_down_is_an_openai_shaped_502(oai, upstream, settings):
    upstream.script(*[Reply(status=500)] * 3)
    with pytest.raises(openai.APIStatusError) as caught:
        oai.chat.completions.create(model=settings.llm_model, messages=conversation()[:2])
    assert caught.value.status_code == 502
    assert caught.value.body["type"] == "server_error"


@pytest.mark.parametrize("messages, field", [
    ([], "messages"),
    ([{"role": "function", "content": "x"}], "messages[0].role"),
    ([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}], "messages"),
    ([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}],
     "messages[0]"),
])
def test_bad_messages_are_400_in_openai_shape(oai, settings, messages, field):
    with pytest.raises(openai.BadRequestError) as caught:
        oai.chat.completions.create(model=settings.llm_model, messages=messages)
    assert field in caught.value.body["message"]
    assert caught.value.body["type"] == "invalid_request_error"


def test_unknown_model_and_missing_key(oai, live):
    with pytest.raises(openai.NotFoundError):
        oai.chat.completions.create(model="gpt-nope", messages=conversation()[:2])
    anonymous = openai.OpenAI(base_url=f"{live}/v1", api_key="wrong.token", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        anonymous.models.list()
    anonymous.close()


def test_an_unfinished_answer_is_a_502_not_a_stop(oai, upstream, settings):
    upstream.script(Reply(chunks=["half"], finish_reason=None, send_done=False))
    with pytest.raises(openai.APIStatusError) as caught:
        oai.chat.completions.create(model=settings.llm_model, messages=conversation()[:2])
    assert caught.value.status_code == 502
    assert "finish reason" in caught.value.body["message"]


def test_an_unfinished_stream_ends_with_an_error_and_no_finish_chunk(oai, upstream, settings):
    upstream.script(Reply(chunks=["half"], finish_reason=None, send_done=False))
    stream = oai.chat.completions.create(model=settings.llm_model,
                                         messages=conversation()[:2], stream=True)
    received = []
    with pytest.raises(openai.APIError, match="finish reason"):
        for chunk in stream:
            received.append((chunk.choices[0].delta.content, chunk.choices[0].finish_reason))
    assert received == [("", None), ("half", None)]
