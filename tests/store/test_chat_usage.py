"""Token usage per model over a time range: what GET /api/usage is built on (both backends)."""

from __future__ import annotations

from store import AssistantReply, ModelUsage
from store.clock import new_id


def answer(stores, user_id, usage, cached=None, status="complete"):
    reply_id = new_id()
    conversation, question = stores.chats.start_turn(user_id, "question", reply_id=reply_id)
    stores.chats.finish_turn(user_id, conversation.id, AssistantReply(
        id=reply_id, content="answer", status=status, mode="rag", prefix_hash="h",
        usage=usage, cached_tokens=cached, question_id=question.id))


def test_usage_adds_up_each_models_answers_in_the_range(stores, users):
    alice, bob = users.add("alice")[0].id, users.add("bob")[0].id
    kimi = {"model": "kimi-k2-0905-preview", "finish_reason": "stop"}
    answer(stores, alice, {**kimi, "prompt_tokens": 1000, "completion_tokens": 10}, cached=800)
    answer(stores, alice, {**kimi, "prompt_tokens": 500, "completion_tokens": 5}, cached=0)
    # No cached figure reported: counted, but not in the cached share's denominator.
    answer(stores, alice, {**kimi, "prompt_tokens": 300, "completion_tokens": 3})
    answer(stores, alice, {"model": "local", "prompt_tokens": 40, "completion_tokens": 4,
                           "estimated": True})
    answer(stores, alice, None, status="error")  # a failed turn stores no usage
    answer(stores, bob, {**kimi, "prompt_tokens": 9999, "completion_tokens": 9})
    answer(stores, alice, {"prompt_tokens": 7, "completion_tokens": 1})  # before models

    found = stores.chats.usage(alice, "2000-01-01T00:00:00.000000Z", "9999-01-01T00:00:00Z")
    assert found == [
        ModelUsage("kimi-k2-0905-preview", turns=3, prompt_tokens=1800, completion_tokens=18,
                   cached_tokens=800, reported_prompt_tokens=1500),
        ModelUsage("local", turns=1, prompt_tokens=40, completion_tokens=4, estimated_turns=1),
        ModelUsage(None, turns=1, prompt_tokens=7, completion_tokens=1),
    ]


def test_usage_range_is_half_open(stores, users):
    alice = users.add("alice")[0].id
    answer(stores, alice, {"model": "m", "prompt_tokens": 1, "completion_tokens": 1})
    stored = stores.chats.messages(alice, stores.chats.list(alice)[0].id)[-1].created_at
    assert [u.turns for u in stores.chats.usage(alice, stored, "9999")] == [1]
    assert stores.chats.usage(alice, "2000", stored) == []
