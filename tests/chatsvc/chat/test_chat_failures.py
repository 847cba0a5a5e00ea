"""Upstream failures, retries, fallback, and never losing the user's message."""

from __future__ import annotations

import pytest

from chatsvc import Services
from chatsvc.embeddings import _local
from chatsvc.testing import Reply
from evals.chat_clients import server_timing
from tests.chatsvc.chat.conftest import chat, publish_posts, seed_user_data


def stored(client, headers, conversation_id):
    response = client.get(f"/api/conversations/{conversation_id}", headers=headers)
    assert response.status_code == 200
    return [(m["role"], m["content"], m["status"]) for m in response.json()["messages"]]


def test_500_before_the_first_token_is_retried(client, alice, upstream):
    upstream.script(Reply(status=500), Reply(status=503), Reply(chunks=["fine", " now"]))
    events = chat(client, alice[1], "hello")
    assert [kind for kind, _ in events] == ["meta", "delta", "delta", "done"]
    assert len(upstream.requests) == 3
    assert upstream.requests[0].body == upstream.requests[2].body
    conversation = events[0][1]["conversation_id"]
    assert stored(client, alice[1], conversation) == [
        ("user", "hello", "complete"), ("assistant", "fine now", "complete")]


def test_a_stream_cut_before_any_token_is_retried(client, alice, upstream):
    upstream.script(Reply(chunks=["never"], cut_after=0), Reply(chunks=["second try"]))
    events = chat(client, alice[1], "hello")
    assert events[-1][0] == "done" and len(upstream.requests) == 2


def test_400_is_not_retried_and_the_user_message_stays(client, alice, upstream):
    upstream.script(Reply(status=400, error_message="bad request"))
    events = chat(client, alice[1], "hello")
    assert [kind for kind, _ in events] == ["meta", "error"]
    assert events[-1][1]["code"] == "upstream_unavailable"
    assert len(upstream.requests) == 1
    conversation = events[0][1]["conversation_id"]
    assert stored(client, alice[1], conversation) == [
        ("user", "hello", "complete"), ("assistant", "", "error")]


def test_retries_are_bounded(client, alice, upstream):
    upstream.script(*[Reply(status=500)] * 5)
    events = chat(client, alice[1], "hello")
    assert events[-1] == ("error", events[-1][1]) and events[-1][1]["code"] == (
        "upstream_unavailable")
    assert len(upstream.requests) == 3  # 1 + LLM_RETRIES (2)


def test_cut_mid_stream_gives_an_error_event_and_saves_the_partial(client, alice, upstream):
    upstream.script(Reply(chunks=["one ", "two ", "three ", "four"], cut_after=2))
    events = chat(client, alice[1], "count")
    assert [kind for kind, _ in events] == ["meta", "delta", "delta", "error"]
    assert events[-1][1]["code"] == "upstream_error"
    assert len(upstream.requests) == 1  # after the first token: no retry
    conversation = events[0][1]["conversation_id"]
    assert stored(client, alice[1], conversation) == [
        ("user", "count", "complete"), ("assistant", "one two ", "error")]
    # The partial answer is history for the next turn.
    upstream.script(Reply(chunks=["ok"]))
    chat(client, alice[1], "go on", conversation)
    history = upstream.requests[-1].body["messages"][-3:]
    assert history == [{"role": "user", "content": "count"},
                       {"role": "assistant", "content": "one two "},
                       {"role": "user", "content": "go on"}]


def test_json_variant(client, alice, upstream):
    upstream.script(Reply(chunks=["Hel", "lo"]))
    response = client.post("/api/chat", json={"message": "hi", "stream": False},
                           headers=alice[1])
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"conversation_id", "message_id", "content", "mode", "degraded_reason",
                         "prefix_hash", "sources", "tool_calls", "finish_reason", "usage"}
    assert body["content"] == "Hello" and body["mode"] == "rag"
    assert body["usage"]["cached_tokens"] == 0 and body["usage"]["prompt_tokens"] > 0
    timing = response.headers["server-timing"]
    names = ("save_question", "history", "stable", "embed", "search", "prepare")
    assert all(f"{name};dur=" in timing for name in names)


def _timing_names(client, headers, upstream, message: str) -> set[str]:
    """The step names of a JSON turn's Server-Timing header."""
    upstream.script(Reply(chunks=["ok"]))
    response = client.post("/api/chat", json={"message": message, "stream": False},
                           headers=headers)
    assert response.status_code == 200, response.text
    return set(server_timing(response.headers["server-timing"]))


def test_the_bundled_model_embeds_a_short_question_beside_its_keyword_ranking(
        client, alice, upstream, monkeypatch):
    monkeypatch.setattr(_local, "_all_cores", lambda: 2)
    _timing_names(client, alice[1], upstream, "hello")  # the model is loaded
    long = " ".join(["where did I leave the blue bicycle after the long ride home?"] * 5)
    assert "keywords" not in _timing_names(client, alice[1], upstream, long)  # every core
    # `keywords`: ranked while one core embedded the question. Only while it still runs:
    # a loaded machine may finish the embedding before the question is even stored.
    assert any("keywords" in _timing_names(client, alice[1], upstream, "where did I park?")
               for _ in range(3))


def test_json_variant_upstream_down_is_502_and_keeps_the_message(client, alice, upstream):
    upstream.script(*[Reply(status=500)] * 3)
    response = client.post("/api/chat", json={"message": "hi", "stream": False},
                           headers=alice[1])
    assert response.status_code == 502
    extra = response.json()["extra"]
    assert stored(client, alice[1], extra["conversation_id"]) == [
        ("user", "hi", "complete"), ("assistant", "", "error")]


def test_missing_cached_tokens_is_null_not_zero(client, alice, upstream):
    upstream.script(Reply(chunks=["x"], report_cached_tokens=False))
    done = chat(client, alice[1], "hi")[-1][1]
    assert done["usage"]["cached_tokens"] is None and done["usage"]["prompt_tokens"] > 0


@pytest.mark.parametrize("body, field", [
    ({}, "message"), ({"message": "   "}, "message"), ({"message": 5}, "message"),
    ({"message": "x" * 40_000}, "message"), ({"message": "hi", "stream": "yes"}, "stream"),
    ({"message": "hi", "project_id": " "}, "project_id"),
])
def test_bad_input_is_400_naming_the_field_and_writes_nothing(client, alice, body, field):
    response = client.post("/api/chat", json=body, headers=alice[1])
    assert response.status_code == 400
    assert field in response.json()["detail"]
    assert client.get("/api/conversations", headers=alice[1]).json() == {
        "conversations": [], "total": 0}


def test_conversations_are_private(client, alice, bob, upstream):
    upstream.script(Reply(chunks=["a"]))
    conversation = chat(client, alice[1], "secret")[0][1]["conversation_id"]
    assert client.get(f"/api/conversations/{conversation}", headers=bob[1]).status_code == 404
    assert client.delete(f"/api/conversations/{conversation}",
                         headers=bob[1]).status_code == 404
    response = client.post("/api/chat", json={"message": "x", "conversation_id": conversation},
                           headers=bob[1])
    assert response.status_code == 404
    assert client.get("/api/conversations/nope", headers=alice[1]).status_code == 404
    assert stored(client, alice[1], conversation) == [
        ("user", "secret", "complete"), ("assistant", "a", "complete")]
    listed = client.get("/api/conversations", headers=alice[1]).json()["conversations"]
    assert [c["id"] for c in listed] == [conversation] and listed[0]["title"] == "secret"
    assert client.get("/api/conversations", headers=bob[1]).json() == {
        "conversations": [], "total": 0}
    assert client.delete(f"/api/conversations/{conversation}",
                         headers=alice[1]).status_code == 204
    assert client.get(f"/api/conversations/{conversation}", headers=alice[1]).status_code == 404


def test_fallback_when_embeddings_fail_keeps_the_prefix(
    client, alice, upstream, services, monkeypatch
):
    from chatsvc.embeddings import OllamaEmbedder

    seed_user_data(client, alice[1])
    publish_posts(services)
    first = chat(client, alice[1], "Where do I live?")
    assert first[0][1]["mode"] == "rag"
    closed = OllamaEmbedder("http://127.0.0.1:9", model=services.embedder.model,
                            dim=services.embedder.dim)
    monkeypatch.setattr(services.sources, "embedder", closed)
    second = chat(client, alice[1], "And my cat?", first[0][1]["conversation_id"])
    meta = second[0][1]
    assert [kind for kind, _ in second][-1] == "done"
    assert meta["mode"] == "fallback" and "embeddings unavailable" in meta["degraded_reason"]
    found = [s for s in meta["sources"] if s["layer"] == "message"]
    assert [(s["type"], s["title"]) for s in found] == [
        ("post", "Post 3"), ("post", "Post 2"), ("post", "Post 1")]
    # The stable prefix is unchanged, and so are its items among the sources.
    stable = [s for s in meta["sources"] if s["layer"] == "stable"]
    assert stable == [s for s in first[0][1]["sources"] if s["layer"] == "stable"]
    assert [s["type"] for s in stable] == ["fact"] * 3 + ["memory"]
    assert meta["prefix_hash"] == first[0][1]["prefix_hash"]
    rag, fallback = (r.body["messages"] for r in upstream.requests)
    assert rag[0] == fallback[0]
    # The turn's block goes just before its question (in_history, the default layout).
    assert fallback[-3]["content"].startswith("RECENT POSTS")
    assert "[Post 3]\nExcerpt 3" in fallback[-3]["content"]


def test_fallback_with_ollama_on_a_closed_port(monkeypatch, upstream):
    monkeypatch.setenv("CHATSVC_EMBEDDINGS", "ollama")
    monkeypatch.setenv("OLLAMA_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("LLM_BASE_URL", upstream.base_url)
    monkeypatch.setenv("CHATSVC_KNOWLEDGE_LLM_TIERS", "off")
    services = Services.open(Settings_from_env())
    try:
        _fallback_turn(services, upstream, "embeddings unavailable")
    finally:
        services.stores.db.close()


def test_fallback_without_sqlite_vec(monkeypatch, upstream, local_embedder):
    monkeypatch.setenv("CHATSVC_SQLITE_VEC_PATH", "/nonexistent")
    monkeypatch.setenv("LLM_BASE_URL", upstream.base_url)
    monkeypatch.setenv("CHATSVC_KNOWLEDGE_LLM_TIERS", "off")
    services = Services.open(Settings_from_env(), embedder=local_embedder)
    try:
        assert not services.stores.db.vector_state.ok
        _fallback_turn(services, upstream, "vector store unavailable")
    finally:
        services.stores.db.close()


def Settings_from_env():
    from chatsvc import Settings

    return Settings.from_env()


def _fallback_turn(services, upstream, reason):
    from litestar.testing import TestClient

    from chatsvc import create_app

    _, token = services.stores.users.add("carol")
    headers = {"Authorization": f"Bearer {token}"}
    publish_posts(services)
    with TestClient(create_app(services=services)) as client:
        upstream.script(Reply(chunks=["still ", "answering"]))
        events = chat(client, headers, "What is new on the blog?")
    meta = events[0][1]
    assert [kind for kind, _ in events] == ["meta", "delta", "delta", "done"]
    assert meta["mode"] == "fallback" and reason in meta["degraded_reason"]
    assert [(s["type"], s["title"]) for s in meta["sources"]] == [
        ("post", "Post 3"), ("post", "Post 2"), ("post", "Post 1")]
    block = upstream.requests[-1].body["messages"][-3]["content"]
    assert block.startswith("RECENT POSTS") and "[Post 1]\nExcerpt 1" in block
    assert "Post 0" not in block
