"""/v1 for tool users: tools pass through, tool calls come back exactly as OpenAI
streams them, and their results are accepted in the next request's history."""

from __future__ import annotations

import json

import openai
import pytest

from chatsvc.testing import Reply, ToolCall
from chatsvc.testing._upstream import _tool_call_deltas, prompt_tokens
from tests.chatsvc.chat.conftest import message_block, seed_user_data

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}
CALLS = [ToolCall("get_weather", '{"city": "Lisbon"}', id="call_1", argument_chunks=3),
         ToolCall("get_weather", '{"city": "Porto"}', id="call_2")]
QUESTION = [{"role": "user", "content": "Weather in Lisbon and Porto?"}]


def _fragments(stream) -> list[dict]:
    return [call.model_dump(exclude_none=True) for chunk in stream if chunk.choices
            for call in chunk.choices[0].delta.tool_calls or ()]


def _sent_fragments(calls) -> list[dict]:
    """What the scripted upstream streamed, fragment by fragment."""
    return [delta for index, call in enumerate(calls) for delta in _tool_call_deltas(index, call)]


def test_streamed_tool_calls_are_relayed_exactly(oai, upstream, settings):
    upstream.script(Reply(chunks=[], tool_calls=CALLS))
    chunks = list(oai.chat.completions.create(
        model=settings.llm_model, messages=QUESTION, stream=True, tools=[WEATHER],
        tool_choice="auto", parallel_tool_calls=True, stream_options={"include_usage": True}))
    assert _fragments(chunks) == _sent_fragments(CALLS)
    assert len(_fragments(chunks)) == 1 + 3 + 1 + 2  # per call a head, then its pieces
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"
    assert chunks[-1].usage.prompt_tokens > 0 and chunks[-1].usage.completion_tokens >= 0
    body = upstream.requests[0].body
    assert (body["tools"], body["tool_choice"], body["parallel_tool_calls"]) == (
        [WEATHER], "auto", True)


def test_whole_answer_with_tool_calls_and_usage(oai, upstream, settings):
    upstream.script(Reply(chunks=[], tool_calls=CALLS))
    result = oai.chat.completions.create(model=settings.llm_model, messages=QUESTION,
                                         tools=[WEATHER])
    choice = result.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    assert [c.model_dump() for c in choice.message.tool_calls] == [
        call.wire(i) for i, call in enumerate(CALLS)]
    assert result.usage.prompt_tokens > 0


@pytest.mark.parametrize("stream", [False, True])
def test_a_tool_call_cut_inside_its_arguments_finishes_with_length(oai, upstream, settings,
                                                                   stream):
    # llama.cpp's server says "tool_calls" when max_tokens cut the arguments; OpenAI, "length".
    cut = ToolCall("get_weather", '{"city": "Lisbon, Portugal | Porto', id="call_1")
    upstream.script(Reply(chunks=[], tool_calls=[cut]), Reply(chunks=[], tool_calls=CALLS))
    finishes = []
    for _ in range(2):
        result = oai.chat.completions.create(model=settings.llm_model, messages=QUESTION,
                                             tools=[WEATHER], max_tokens=12, stream=stream)
        finishes.append([c.choices[0].finish_reason for c in result if c.choices][-1]
                        if stream else result.choices[0].finish_reason)
    assert finishes == ["length", "tool_calls"]  # whole arguments keep their reason


def _with_results(calls) -> list[dict]:
    assistant = {"role": "assistant", "content": None,
                 "tool_calls": [call.wire(i) for i, call in enumerate(calls)]}
    results = [{"role": "tool", "tool_call_id": call.wire(i)["id"], "content": f"sunny {i}"}
               for i, call in enumerate(calls)]
    return [*QUESTION, assistant, *results]


def test_tool_results_follow_the_question_and_keep_the_cache(oai, live_client, alice, upstream,
                                                             settings):
    seed_user_data(live_client, alice[1])
    upstream.script(Reply(chunks=[], tool_calls=CALLS), Reply(chunks=["Sunny both."]))
    oai.chat.completions.create(model=settings.llm_model, messages=QUESTION, tools=[WEATHER])
    result = oai.chat.completions.create(model=settings.llm_model,
                                         messages=_with_results(CALLS), tools=[WEATHER])
    assert result.choices[0].message.content == "Sunny both."
    first, second = (r.body["messages"] for r in upstream.requests)
    assert second[:len(first)] == first  # an append-only extension: the whole first is cached
    assert message_block({"messages": first}) != ""  # the block stays before the question
    assistant, *results = second[len(first):]
    assert assistant == {"role": "assistant", "content": "",
                         "tool_calls": [call.wire(i) for i, call in enumerate(CALLS)]}
    assert results == _with_results(CALLS)[2:]
    # All of the first request is cached (its last token may merge with what follows).
    assert result.usage.prompt_tokens_details.cached_tokens >= len(prompt_tokens(first)) - 1


def test_response_format_passes_through(oai, upstream, settings):
    upstream.script(Reply(chunks=['{"a": 1}']))
    schema = {"type": "json_schema",
              "json_schema": {"name": "a", "schema": {"type": "object"}}}
    oai.chat.completions.create(model=settings.llm_model, messages=QUESTION,
                                response_format=schema)
    assert upstream.requests[0].body["response_format"] == schema


@pytest.mark.parametrize("extra, field", [
    ({"tools": [{"type": "function", "function": {"name": "bad name"}}]}, "tools"),
    ({"tools": []}, "tools"),
    ({"tool_choice": "auto"}, "tool_choice"),
    ({"tools": [WEATHER], "tool_choice": "sometimes"}, "tool_choice"),
    ({"tools": [WEATHER], "tool_choice": {"type": "function", "function": {"name": "x"}}},
     "tool_choice"),
    ({"parallel_tool_calls": "yes"}, "parallel_tool_calls"),
    ({"response_format": {"type": "xml"}}, "response_format"),
    ({"messages": [*QUESTION, {"role": "tool", "tool_call_id": "nope", "content": "x"}]},
     "messages[1].tool_call_id"),
    ({"messages": [*QUESTION, {"role": "assistant", "tool_calls": [{"id": "c"}]}]},
     "messages[1].tool_calls[0]"),
    ({"messages": [*QUESTION, {"role": "assistant", "tool_calls": []}]},
     "messages[1].tool_calls"),
    ({"messages": [*_with_results(CALLS)[:3], {"role": "assistant", "content": "hm"},
                   _with_results(CALLS)[3]]}, "messages"),
])
def test_bad_tool_shapes_are_400_before_any_work(oai, upstream, settings, extra,
                                                  field):
    body = {"model": settings.llm_model, "messages": QUESTION, **extra}
    with pytest.raises(openai.BadRequestError) as caught:
        oai.chat.completions.create(**body)
    assert field in caught.value.body["message"]
    assert caught.value.body["type"] == "invalid_request_error"
    assert upstream.requests == []


def test_langchain_bind_tools_round_trip(live, alice, upstream, settings):
    from langchain_core.messages import HumanMessage, ToolMessage
    from langchain_openai import ChatOpenAI

    def get_weather(city: str) -> str:
        """The weather in a city."""
        return "sunny"

    token = alice[1]["Authorization"].split()[1]
    model = ChatOpenAI(model=settings.llm_model, base_url=f"{live}/v1", api_key=token,
                       max_retries=0, stream_usage=True).bind_tools([get_weather])
    upstream.script(Reply(chunks=[], tool_calls=CALLS[:1]),
                    Reply(chunks=[], tool_calls=CALLS[:1]), Reply(chunks=["Sunny."]))
    question = HumanMessage("Weather in Lisbon?")
    called = model.invoke([question])
    assert called.tool_calls == [{"name": "get_weather", "args": {"city": "Lisbon"},
                                  "id": "call_1", "type": "tool_call"}]
    streamed = None
    for piece in model.stream([question]):
        streamed = piece if streamed is None else streamed + piece
    assert streamed.tool_calls == called.tool_calls
    assert streamed.usage_metadata["input_tokens"] > 0
    answer = model.invoke([question, called, ToolMessage("sunny", tool_call_id="call_1")])
    assert answer.content == "Sunny." and answer.usage_metadata["input_tokens"] > 0
    sent = upstream.requests[-1].body
    assert sent["tools"][0]["function"]["name"] == "get_weather"
    assert sent["messages"][-1] == {"role": "tool", "content": "sunny",
                                    "tool_call_id": "call_1"}
    assert json.loads(sent["messages"][-2]["tool_calls"][0]["function"]["arguments"]) == {
        "city": "Lisbon"}
