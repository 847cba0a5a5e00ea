"""The README's demo with the model `serve` bundles by default (Qwen2.5-Coder-1.5B):
tell it something, extract, ask in a new conversation, and the answer knows."""

from __future__ import annotations

import pytest

from chatsvc import Settings
from chatsvc.local_models import QWEN, LlamaServer
from chatsvc.testing import bundled_llm_cpu

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def qwen(tmp_path_factory):
    with LlamaServer(tmp_path_factory.mktemp("models"), model=QWEN, n_ctx=8192,
                     cpu=bundled_llm_cpu()) as server:
        yield server


@pytest.fixture
def settings(isolated_env, qwen, monkeypatch) -> Settings:
    # What `serve` sets for the bundled model (chatsvc/cli/_serve.py local_overrides).
    for name, value in {"LLM_BASE_URL": qwen.base_url, "LLM_MODEL": QWEN.name,
                        "LLM_SYSTEM_ROLE": QWEN.system_role, "LLM_MAX_TOKENS": "96",
                        "LLM_CONTEXT_TOKENS": "8192", "LLM_TIMEOUT": "600",
                        "CHATSVC_EXTRACT_JSON_MODE": "schema",
                        "CHATSVC_KNOWLEDGE_LLM_TIERS": "off"}.items():
        monkeypatch.setenv(name, value)
    return Settings.from_env()


def _chat(client, headers, message: str) -> dict:
    response = client.post("/api/chat", headers=headers, json={"message": message,
                                                               "stream": False})
    assert response.status_code == 200, response.text
    return response.json()


def test_what_it_was_told_comes_back_in_a_new_conversation(client, alice):
    told = _chat(client, alice[1], "Remember this: my dog is called Biscuit and I live in Lyon.")
    extracted = client.post("/api/facts/extract", headers=alice[1]).json()
    assert extracted["new_facts"] >= 1 and extracted["failed_batches"] == 0, extracted
    asked = _chat(client, alice[1], "What is my dog called, and where do I live?")
    assert asked["conversation_id"] != told["conversation_id"]
    assert "biscuit" in asked["content"].lower() and "lyon" in asked["content"].lower()
