import contextlib

import openai
import pytest

from chatsvc.local_models import GEMMA, QWEN

pytestmark = pytest.mark.slow


def test_local_llm_streams_a_chat_completion_through_the_openai_client(local_llm):
    client = openai.OpenAI(base_url=local_llm.base_url, api_key="local", timeout=60)
    stream = client.chat.completions.create(
        model=GEMMA.name,
        messages=[{"role": "user", "content": "Name one colour."}],
        stream=True,
        max_tokens=16,
    )
    pieces = [c.choices[0].delta.content for c in stream
              if c.choices and c.choices[0].delta.content]
    assert len(pieces) >= 2, "expected a streamed answer in several chunks"
    assert "".join(pieces).strip()


def test_local_llm_lists_its_model(local_llm):
    client = openai.OpenAI(base_url=local_llm.base_url, api_key="local")
    assert [m.id for m in client.models.list()] == [GEMMA.name]


def test_serving_on_the_local_llm_takes_its_window(monkeypatch):
    from chatsvc import Settings
    from chatsvc.cli._serve import local_overrides

    monkeypatch.delenv("LLM_BASE_URL")
    monkeypatch.setenv("CHATSVC_LOCAL_MODELS", "auto")
    with contextlib.ExitStack() as stack:
        settings = local_overrides(Settings.from_env(), stack)
        # By default the instruction-tuned model, whose chat template has a system role.
        assert (settings.llm_model, settings.llm_system_role) == (QWEN.name, "system")
        # Prompts and extraction requests are cut to fit llama.cpp's n_ctx.
        assert settings.llm_context_tokens == 8192
        assert settings.extract_max_input_tokens == 8192
        assert settings.llm_max_tokens == 512  # a small model rambles otherwise
        monkeypatch.setenv("LLM_CONTEXT_TOKENS", "4096")
        assert local_overrides(Settings.from_env(), stack).llm_context_tokens == 4096
        monkeypatch.setenv("CHATSVC_LOCAL_LLM", GEMMA.name)
        gemma = local_overrides(Settings.from_env(), stack)
        # Gemma's chat format drops system messages: they are folded into the user's.
        assert (gemma.llm_model, gemma.llm_system_role) == (GEMMA.name, "fold")
