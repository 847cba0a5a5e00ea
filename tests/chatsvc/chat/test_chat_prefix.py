"""Against the scripted upstream: byte-stable prefix over 10 turns, block placement,
history without per-message blocks, snapshot pinning."""

from __future__ import annotations

import json
import time

import pytest

from chatsvc.testing import Reply
from context.assemble import canonical
from tests.chatsvc.chat.conftest import chat, seed_user_data

HEADER = "POSSIBLY RELATED FACTS (Semantic search results based on the current message)"
QUESTIONS = [
    "Where do I live?", "What is my cat called?", "Which language do I write?",
    "What am I building?", "How is chatsvc deployed?", "Do I prefer tea or coffee?",
    "Summarise what you know about me", "What database do I use?", "Any tips for nginx?",
    "Thanks, that is all",
]


def run_conversation(client, headers, upstream, questions):
    conversation_id, metas, dones = None, [], []
    for i, question in enumerate(questions):
        upstream.script(Reply(chunks=[f"Answer {i} ", "part two"]))
        events = chat(client, headers, question, conversation_id)
        kinds = [kind for kind, _ in events]
        assert kinds[0] == "meta" and kinds[-1] == "done" and set(kinds[1:-1]) == {"delta"}
        meta = events[0][1]
        conversation_id = meta["conversation_id"]
        metas.append(meta)
        dones.append(events[-1][1])
    return conversation_id, metas, dones


def test_ten_turns_keep_the_stable_prefix_byte_identical(client, alice, upstream):
    seed_user_data(client, alice[1], document=True)
    _, metas, dones = run_conversation(client, alice[1], upstream, QUESTIONS)
    bodies = [r.body for r in upstream.requests]
    assert len(bodies) == 10
    prefixes = {canonical(body["messages"][:1]) for body in bodies}
    assert len(prefixes) == 1
    system = bodies[0]["messages"][0]["content"]
    assert "FACT SHEET" in system and "Lives in Lisbon" in system
    assert "USER MEMORY" in system and "Answer briefly" in system
    assert {m["prefix_hash"] for m in metas} == {metas[0]["prefix_hash"]}
    assert all(m["mode"] == "rag" and m["degraded_reason"] is None for m in metas)
    # "How is chatsvc deployed?": the sources name what the block holds.
    kinds = {s["type"] for s in metas[4]["sources"]}
    assert {"fact", "chunk"} <= kinds
    chunk = next(s for s in metas[4]["sources"] if s["type"] == "chunk")
    assert chunk["title"] == "Deploy notes" and "score" in chunk
    assert "[Deploy notes] chatsvc is deployed" in bodies[4]["messages"][1]["content"]
    # The scripted upstream caches the longest common prefix: at least the system message.
    assert all(d["usage"]["cached_tokens"] > 200 for d in dones[1:])

    for turn, body in enumerate(bodies):
        messages = body["messages"]
        assert messages[1]["role"] == "user" and messages[1]["content"].startswith(HEADER)
        assert messages[2]["role"] == "assistant" and messages[2]["content"].startswith(
            "Understood.")
        history = messages[3:-1]
        assert len(history) == 2 * turn
        for i, message in enumerate(history):
            assert HEADER not in message["content"]
            assert message == ({"role": "user", "content": QUESTIONS[i // 2]} if i % 2 == 0
                               else {"role": "assistant", "content": f"Answer {i // 2} part two"})
        assert messages[-1] == {"role": "user", "content": QUESTIONS[turn]}
        assert sum(HEADER in m["content"] for m in messages) == 1
        assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


@pytest.fixture
def before_last_user(monkeypatch):
    monkeypatch.setenv("CHATSVC_CONTEXT_STRATEGY", "before_last_user")


def test_before_last_user_places_the_block_before_the_current_message(
    before_last_user, client, alice, upstream
):
    seed_user_data(client, alice[1])
    _, _, dones = run_conversation(client, alice[1], upstream, QUESTIONS[:3])
    bodies = [r.body["messages"] for r in upstream.requests]
    assert len({canonical(m[:1]) for m in bodies}) == 1
    for turn, messages in enumerate(bodies):
        assert messages[-3]["content"].startswith(HEADER)
        assert messages[-2]["content"].startswith("Understood.")
        assert messages[-1]["content"] == QUESTIONS[turn]
        assert len(messages) == 1 + 2 * turn + 3
        assert all(HEADER not in m["content"] for m in messages[:-3])
    # History now sits inside the cached prefix: the cached part grows turn by turn.
    cached = [d["usage"]["cached_tokens"] for d in dones]
    assert 0 < cached[1] < cached[2]


@pytest.fixture
def in_history(monkeypatch):
    monkeypatch.setenv("CHATSVC_CONTEXT_STRATEGY", "in_history")


def test_in_history_requests_extend_the_previous_one(in_history, client, alice, upstream,
                                                    services):
    seed_user_data(client, alice[1], document=True)
    questions = ["Where do I live?", "How is chatsvc deployed?", "Where do I live again?"]
    conversation_id, _, dones = run_conversation(client, alice[1], upstream, questions)
    bodies = [r.body["messages"] for r in upstream.requests]
    for turn in (1, 2):
        previous, current = bodies[turn - 1], bodies[turn]
        assert current[: len(previous)] == previous
        assert current[len(previous)] == {"role": "assistant",
                                          "content": f"Answer {turn - 1} part two"}
        assert current[-1] == {"role": "user", "content": questions[turn]}
    # The upstream served all but the newest turn from its cache.
    cached = [d["usage"]["cached_tokens"] for d in dones]
    prompt = [d["usage"]["prompt_tokens"] for d in dones]
    assert cached[1] > 0.7 * prompt[1] and cached[2] > 0.8 * prompt[2]
    # The block is stored with its question; no item is sent twice.
    stored = services.stores.chats.messages(alice[0].id, conversation_id)
    blocks = [m.context for m in stored if m.role == "user"]
    assert blocks[0].startswith(HEADER) and "Lives in Lisbon" in blocks[0]
    lines = [line for block in blocks if block for line in block.split("\n")
             if line.startswith("[")]
    assert len(lines) == len(set(lines)) > 0
    # The conversation API shows what the user said, not the blocks.
    shown = client.get(f"/api/conversations/{conversation_id}", headers=alice[1]).json()
    assert [m["content"] for m in shown["messages"] if m["role"] == "user"] == questions


def test_snapshot_is_pinned_until_its_ttl(monkeypatch, client, alice, upstream, services):
    seed_user_data(client, alice[1])
    first = chat(client, alice[1], "hello")[0][1]
    # New data and a regenerated sheet: the running conversation keeps its prefix...
    client.post("/api/facts", json={"category": "core", "fact": "Speaks Portuguese"},
                headers=alice[1])
    assert client.post("/api/fact-sheet/generate", headers=alice[1]).status_code == 201
    second = chat(client, alice[1], "again", first["conversation_id"])[0][1]
    assert second["prefix_hash"] == first["prefix_hash"]
    assert "Speaks Portuguese" not in upstream.requests[1].body["messages"][0]["content"]
    stored = json.loads(services.stores.chats.get(alice[0].id, first["conversation_id"]).snapshot)
    assert stored["fact_sheet_id"] and stored["memory_version"]
    # ...while a new conversation sees the new sheet...
    fresh = chat(client, alice[1], "new conversation")[0][1]
    assert fresh["prefix_hash"] != first["prefix_hash"]
    assert "Speaks Portuguese" in upstream.requests[2].body["messages"][0]["content"]
    # ...and so does the first one once its snapshot is older than the TTL.
    monkeypatch.setattr(services.sources, "settings",
                        services.settings.with_overrides(snapshot_ttl_seconds=0.2))
    time.sleep(0.25)
    third = chat(client, alice[1], "and now?", first["conversation_id"])[0][1]
    assert third["prefix_hash"] != first["prefix_hash"]
    assert "Speaks Portuguese" in upstream.requests[3].body["messages"][0]["content"]


@pytest.fixture
def fold_settings(settings):
    return settings.with_overrides(llm_system_role="fold").validated()


def test_fold_sends_the_stable_prefix_at_the_head_of_the_first_user_message(
    fold_settings, local_embedder, upstream, make_user
):
    """For chat formats without a system role (local Gemma) the prefix still arrives first."""
    from litestar.testing import TestClient

    from chatsvc import Services, create_app

    services = Services.open(fold_settings, embedder=local_embedder)
    try:
        with TestClient(create_app(services=services)) as client:
            _, headers = make_user_in(services)
            seed_user_data(client, headers)
            first_turn = chat(client, headers, "Where do I live?")
            chat(client, headers, "And my cat?", first_turn[0][1]["conversation_id"])
    finally:
        services.stores.db.close()
    for request in upstream.requests:
        messages = request.body["messages"]
        assert all(m["role"] != "system" for m in messages)
        assert messages[0]["role"] == "user"
        assert "Lives in Lisbon" in messages[0]["content"]  # the fact sheet, from the prefix
    first, second = (r.body["messages"][0]["content"] for r in upstream.requests[-2:])
    # The folded prefix is the same bytes in both turns, so the server's cache still hits.
    shared = first[:next((i for i, (a, b) in enumerate(zip(first, second, strict=False))
                          if a != b), min(len(first), len(second)))]
    assert "Lives in Lisbon" in shared and "USER MEMORY" in shared


def make_user_in(services):
    user, token = services.stores.users.add("folder")
    return user, {"Authorization": f"Bearer {token}"}
