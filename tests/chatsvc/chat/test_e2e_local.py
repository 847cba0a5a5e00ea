"""End to end with the real local LLM (Gemma 3 270M on llama.cpp) and the real embedder."""

from __future__ import annotations

import httpx
import openai
import pytest
from httpx_sse import connect_sse

from chatsvc import Settings
from chatsvc.local_models import GEMMA

pytestmark = pytest.mark.slow


@pytest.fixture
def settings(isolated_env, local_llm, monkeypatch) -> Settings:
    monkeypatch.setenv("LLM_BASE_URL", local_llm.base_url)
    monkeypatch.setenv("LLM_MODEL", GEMMA.name)
    monkeypatch.setenv("LLM_MAX_TOKENS", "24")
    monkeypatch.setenv("CHATSVC_KNOWLEDGE_LLM_TIERS", "off")
    return Settings.from_env()


def test_api_chat_streams_a_real_answer(live, alice):
    kinds, text = [], []
    with httpx.Client(base_url=live, headers=alice[1], timeout=120) as http, connect_sse(
        http, "POST", "/api/chat", json={"message": "Say hello in one short sentence."}
    ) as source:
        for event in source.iter_sse():
            kinds.append(event.event)
            if event.event == "delta":
                text.append(event.json()["content"])
            if event.event in ("done", "error"):
                final = event.json()
    assert kinds[0] == "meta" and kinds[-1] == "done", final
    assert "".join(text).strip()
    # llama-cpp-python's server sends no usage when streaming: chatsvc counts it, says so,
    # and leaves the cached tokens unknown rather than a made-up 0.
    usage = final["usage"]
    assert usage["estimated"] is True and usage["cached_tokens"] is None
    assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
    assert final["finish_reason"] in ("stop", "length")


def test_v1_streams_a_real_answer_with_the_openai_client(live, alice):
    token = alice[1]["Authorization"].split()[1]
    with openai.OpenAI(base_url=f"{live}/v1", api_key=token, max_retries=0) as oai:
        stream = oai.chat.completions.create(
            model=GEMMA.name, max_tokens=24, stream=True,
            stream_options={"include_usage": True},
            messages=[{"role": "user", "content": "Name a colour."}],
        )
        chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text.strip()
    assert chunks[-1].choices == []  # the include_usage chunk, counted by chatsvc
    assert chunks[-1].usage.completion_tokens > 0
    assert chunks[-1].usage.model_extra == {"estimated": True}
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] in ("stop", "length")
