"""LLM_CONTEXT_TOKENS: a long conversation keeps fitting a small model window."""

from __future__ import annotations

import pytest

from chatsvc.testing import Reply
from context.tokens import count_tokens
from tests.chatsvc.chat.conftest import chat, seed_user_data


@pytest.fixture
def small_window(monkeypatch):
    monkeypatch.setenv("LLM_CONTEXT_TOKENS", "5000")
    monkeypatch.setenv("LLM_MAX_TOKENS", "500")
    monkeypatch.setenv("CHATSVC_CONTEXT_TOKENS", "1000")


def test_the_history_is_cut_so_prompt_and_answer_fit(small_window, client, alice, upstream):
    seed_user_data(client, alice[1])
    conversation_id = None
    questions = [f"question {i}: " + "tell me more about this " * 80 for i in range(8)]
    for question in questions:
        upstream.script(Reply(chunks=["Short answer."]))
        events = chat(client, alice[1], question, conversation_id)
        assert events[-1][0] == "done"
        conversation_id = events[0][1]["conversation_id"]
    bodies = [r.body for r in upstream.requests]
    for body, question in zip(bodies, questions, strict=True):
        assert sum(count_tokens(m["content"]) for m in body["messages"]) <= 5000 - 500
        assert body["messages"][-1]["content"] == question
        assert body["max_tokens"] == 500
    # Without the window all eight would fit the 16,000-token history budget.
    last = [m["content"] for m in bodies[-1]["messages"]]
    assert questions[0] not in last and questions[-2] in last
