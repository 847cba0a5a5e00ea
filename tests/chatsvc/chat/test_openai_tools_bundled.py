"""/v1 `tools` when the LLM is a bundled local model: llama.cpp calls a tool only when
`tool_choice` names it, so a request that leaves the choice to the model is a 400 naming
the model, never an answer that silently ignores its tools; a named tool (or "required"
with one tool) is a real tool call, checked against the real local model."""

from __future__ import annotations

import json

import httpx
import openai
import pytest

from chatsvc import Settings
from chatsvc.local_models import GEMMA
from chatsvc.testing import Reply, ToolCall
from tests._serving import serve
from tests.chatsvc.chat.test_openai_tools import QUESTION, WEATHER
from tests.chatsvc.test_warmup import wait_warm

NAMED = {"type": "function", "function": {"name": "get_weather"}}
CLOCK = {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object"}}}


@pytest.fixture
def settings(upstream_settings, monkeypatch) -> Settings:
    """The scripted upstream answering as the bundled model, which it stands in for."""
    monkeypatch.setenv("LLM_MODEL", GEMMA.name)
    return Settings.from_env()


@pytest.fixture(autouse=True)
def warm(live, upstream):
    """The start-up warm-up sends a bundled model one completion: it must have had its
    answer before a test scripts its own (it took the test's reply in a CI run)."""
    with httpx.Client(base_url=live) as client:
        wait_warm(client)
    upstream.requests.clear()


@pytest.mark.parametrize("extra", [
    {}, {"tool_choice": "auto"}, {"tool_choice": "required", "tools": [WEATHER, CLOCK]}])
def test_leaving_the_choice_to_the_bundled_model_is_400_naming_it(oai, upstream, extra):
    body = {"model": GEMMA.name, "messages": QUESTION, "tools": [WEATHER], **extra}
    with pytest.raises(openai.BadRequestError) as caught:
        oai.chat.completions.create(**body)
    message = caught.value.body["message"]
    assert message.startswith("invalid value for tool_choice: ")
    assert f"the bundled local model '{GEMMA.name}'" in message
    assert "name the tool" in message and "LLM_BASE_URL" in message
    assert upstream.requests == []  # checked before anything is searched or sent


def test_required_with_one_tool_is_sent_as_that_tool(oai, upstream):
    upstream.script(Reply(chunks=[], tool_calls=[ToolCall("get_weather", '{"city": "Lisbon"}',
                                                          id="call_1")]))
    result = oai.chat.completions.create(model=GEMMA.name, messages=QUESTION, tools=[WEATHER],
                                         tool_choice="required")
    assert result.choices[0].finish_reason == "tool_calls"
    assert upstream.requests[0].body["tool_choice"] == NAMED


def test_none_sends_no_tools(oai, upstream):
    upstream.script(Reply(chunks=["Sunny."]))
    result = oai.chat.completions.create(model=GEMMA.name, messages=QUESTION, tools=[WEATHER],
                                         tool_choice="none", parallel_tool_calls=False)
    assert result.choices[0].message.content == "Sunny."
    assert not {"tools", "tool_choice", "parallel_tool_calls"} & set(upstream.requests[0].body)


@pytest.fixture
def real_model(isolated_env, local_llm, local_embedder, monkeypatch):
    """(client, headers) of the app whose LLM is the real bundled Gemma on llama.cpp."""
    monkeypatch.setenv("LLM_BASE_URL", local_llm.base_url)
    monkeypatch.setenv("LLM_MODEL", GEMMA.name)
    with serve(Settings.from_env(), local_embedder) as served:
        yield served[1], served[2]


@pytest.mark.slow
@pytest.mark.parametrize("stream", [False, True])
def test_the_real_bundled_model_calls_the_named_tool(real_model, stream):
    client, headers = real_model
    body = {"model": GEMMA.name, "messages": QUESTION, "tools": [WEATHER],
            "tool_choice": "required", "max_tokens": 40, "stream": stream,
            "temperature": 0}  # greedy: sampled, Gemma 270M once rambled past max_tokens
    response = client.post("/v1/chat/completions", json=body, headers=headers, timeout=300)
    assert response.status_code == 200, response.text
    if stream:
        chunks = [json.loads(line[6:]) for line in response.text.splitlines()
                  if line.startswith("data: {")]
        fragments = [f for c in chunks for f in c["choices"][0]["delta"].get("tool_calls", [])]
        names = [f["function"]["name"] for f in fragments if "name" in f.get("function", {})]
        assert names == ["get_weather"]  # the call's header once, as OpenAI streams it
        arguments = "".join(f["function"].get("arguments", "") for f in fragments)
        finish = chunks[-1]["choices"][0]["finish_reason"]
    else:
        choice = response.json()["choices"][0]
        (call,) = choice["message"]["tool_calls"]
        assert call["function"]["name"] == "get_weather"
        arguments, finish = call["function"]["arguments"], choice["finish_reason"]
    assert finish == "tool_calls"
    # llama.cpp's grammar makes it a JSON object with the schema's keys, though it lets a
    # raw line break into a string (Gemma 270M wrote one): not strict JSON.
    assert isinstance(json.loads(arguments, strict=False)["city"], str)
