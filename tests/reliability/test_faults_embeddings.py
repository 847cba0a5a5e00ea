"""Ollama failing under a real `chatsvc serve`: the chat answers in fallback mode.

Each fault: the turn still streams to `done`, the meta event says why it is
degraded, both messages are stored complete, no traceback, bounded latency.
"""

from __future__ import annotations

import time
from contextlib import contextmanager

import httpx
import pytest

from chatsvc.testing import Reply
from chatsvc.warmup import WARM_QUERY
from tests.chatsvc.recall.conftest import wait_until_indexed
from tests.reliability.conftest import (
    EMBED_RETRIES,
    EMBED_TIMEOUT,
    auth,
    chat_turn,
    stored,
)
from tests.reliability.ollama_server import OllamaServer

# Worst case before the fallback: every attempt times out, plus backoff, plus a
# loaded 2-core machine's scheduling.
FALLBACK_BOUND = EMBED_TIMEOUT * (EMBED_RETRIES + 1) + 0.1 + 3.0


def assert_fallback_turn(service, scripted, message: str, reason: str):
    scripted.script(Reply(chunks=["still ", "here"]))
    turn = chat_turn(service, "alice", message)
    assert turn.kinds == ["meta", "delta", "delta", "done"], turn.events
    assert turn.meta["mode"] == "fallback"
    assert reason in turn.meta["degraded_reason"], turn.meta["degraded_reason"]
    assert turn.seconds < FALLBACK_BOUND
    assert stored(service, "alice", turn.meta["conversation_id"]) == [
        ("user", message, "complete"), ("assistant", "still here", "complete")]
    return turn


@pytest.mark.parametrize("mode, reason", [
    ("slow", "ReadTimeout"),
    ("error_500", "HTTP 500"),
    ("eof", "embeddings unavailable"),
    ("garbage", "unexpected embeddings response"),
    ("wrong_dim", "384-d vectors but 768-d are configured"),
])
def test_ollama_misbehaving_gives_a_fallback_turn(fault, ollama, scripted, mode, reason):
    ollama.mode = mode
    assert_fallback_turn(fault, scripted, f"hello while Ollama is {mode}", reason)


def test_ollama_down_fails_fast_once_the_breaker_is_open(fault, ollama, scripted):
    ollama.stop()
    first = assert_fallback_turn(fault, scripted, "anyone there?", "unreachable")
    calls = ollama.embed_calls
    second = assert_fallback_turn(fault, scripted, "still down?", "failing fast")
    assert ollama.embed_calls == calls  # the open breaker sent nothing
    assert second.first_event_seconds < max(first.first_event_seconds, 1.0) + 0.5
    health = httpx.get(f"{fault.url}/health")
    assert health.status_code == 200 and health.json()["status"] == "degraded"
    assert health.json()["checks"]["embeddings"]["ok"] is False


@contextmanager
def _answering_late(ollama, seconds: float = EMBED_TIMEOUT / 2):
    """Ollama answers each request after `seconds` (within the client's timeout)."""
    slow = ollama.slow_seconds
    ollama.mode, ollama.slow_seconds = "slow", seconds
    try:
        yield
    finally:
        ollama.mode, ollama.slow_seconds = "ok", slow


def _timings(service, scripted, message: str) -> tuple[str, set[str]]:
    """(mode, the step names of the JSON turn's Server-Timing header)."""
    scripted.script(Reply(chunks=["ok"]))
    response = httpx.post(f"{service.url}/api/chat", headers=auth(service, "alice"),
                          json={"message": message, "stream": False}, timeout=30)
    assert response.status_code == 200, response.text
    names = {part.split(";")[0].strip() for part in response.headers["server-timing"].split(",")}
    return response.json()["mode"], names


def test_the_keyword_work_runs_beside_the_embedding_only_while_it_waits_for_ollama(
        fault, ollama, scripted):
    with _answering_late(ollama):
        mode, names = _timings(fault, scripted, "where did I park the zeppelin?")
    assert mode == "rag" and {"keywords", "embed", "search"} <= names
    ollama.stop()
    _timings(fault, scripted, "anyone there?")  # notices, opens the breaker
    mode, names = _timings(fault, scripted, "still down?")
    # The breaker failed the embedding at once: no keyword work for a fallback turn.
    assert mode == "fallback" and "keywords" not in names and "embed" in names


def test_an_openai_client_turn_embeds_its_question_once_beside_the_stable_layers(
        fault, ollama, scripted):
    scripted.script(Reply(chunks=["grounded"]))
    question = "which zeppelin did I book?"
    with _answering_late(ollama):
        response = httpx.post(
            f"{fault.url}/v1/chat/completions", headers=auth(fault, "alice"), timeout=30,
            json={"model": fault.settings.llm_model,
                  "messages": [{"role": "user", "content": question}]})
    assert response.status_code == 200, response.text
    assert response.json()["chatsvc"]["mode"] == "rag"
    assert response.json()["choices"][0]["message"]["content"] == "grounded"
    assert ollama.asked(question) == 1


def _searches(service, query: str) -> list[dict]:
    """The caller's hybrid conversation search and knowledge search for `query`."""
    with httpx.Client(base_url=service.url, headers=auth(service, "alice"), timeout=30) as http:
        found = [http.get("/api/conversations/search", params={"q": query}),
                 http.post("/api/knowledge/search", json={"query": query})]
    assert [r.status_code for r in found] == [200, 200], [r.text for r in found]
    return [r.json() for r in found]


def test_hybrid_searches_embed_their_query_once_while_ollama_answers_late(
        fault, ollama, scripted):
    scripted.script(Reply(chunks=["noted"]))
    chat_turn(fault, "alice", "the zeppelin hangar is in Friedrichshafen")
    note = httpx.post(f"{fault.url}/api/knowledge/documents", headers=auth(fault, "alice"),
                      json={"title": "Hangars", "content": "The zeppelin hangar opens at 9."})
    assert note.status_code == 202, note.text
    with httpx.Client(base_url=fault.url) as http:
        status = wait_until_indexed(http, auth(fault, "alice"), timeout=20.0)
    assert status["indexed"] == status["messages"], status
    with _answering_late(ollama):
        conversations, knowledge = _searches(fault, "zeppelin hangar")
    assert ollama.asked("zeppelin hangar") == 2  # once per search, no more
    for found in (conversations, knowledge):
        assert (found["mode"], found["degraded_reason"]) == ("hybrid", None)
    assert any("Friedrichshafen" in hit["content"] for hit in conversations["results"])
    assert "opens at 9" in knowledge["results"][0]["snippet"]
    ollama.stop()
    _searches(fault, "anyone there?")  # notices, opens the breaker
    for found in _searches(fault, "zeppelin hangar"):
        assert found["mode"] == "keyword" and "failing fast" in found["degraded_reason"]
        assert found["results"], found  # the keyword half still finds them


def test_search_with_ollama_down_is_503_naming_the_cause(fault, ollama):
    ollama.stop()
    response = httpx.get(f"{fault.url}/api/facts/search", params={"q": "cats"},
                         headers=auth(fault, "alice"))
    assert response.status_code == 503
    assert "unreachable" in response.json()["detail"]


def test_saving_a_fact_with_ollama_failing_still_saves_it(fault, ollama):
    ollama.mode = "error_500"
    response = httpx.post(f"{fault.url}/api/facts", headers=auth(fault, "bob"),
                          json={"category": "core", "fact": "Keeps bees on the roof"})
    assert response.status_code == 201, response.text
    listed = httpx.get(f"{fault.url}/api/facts", headers=auth(fault, "bob")).json()
    assert [f["fact"] for f in listed["facts"]] == ["Keeps bees on the roof"]


def test_a_slow_ollama_holds_a_turn_no_longer_than_the_embedding_deadline(
    monkeypatch, upstream
):
    """Retried to the end, 4 attempts timing out at 1 s would hold the turn 4+ s; the
    turn's embedding deadline (0.6 s) answers in fallback mode instead."""
    from litestar.testing import TestClient

    from chatsvc import Services, Settings, create_app
    from tests.chatsvc.chat.conftest import chat, publish_posts

    slow = OllamaServer(slow_seconds=3.0).start()
    slow.mode = "slow"
    for name, value in {"CHATSVC_EMBEDDINGS": "ollama", "OLLAMA_URL": slow.url,
                        "LLM_BASE_URL": upstream.base_url, "CHATSVC_KNOWLEDGE_LLM_TIERS": "off",
                        "CHATSVC_EMBED_TIMEOUT": "1", "CHATSVC_EMBED_RETRIES": "3",
                        "CHATSVC_EMBED_RETRY_BACKOFF": "0.05",
                        "CHATSVC_CHAT_EMBED_DEADLINE": "0.6"}.items():
        monkeypatch.setenv(name, value)
    services = Services.open(Settings.from_env())
    try:
        _, token = services.stores.users.add("carol")
        publish_posts(services)
        with TestClient(create_app(services=services)) as client:
            upstream.script(Reply(chunks=["still ", "here"]))
            started = time.monotonic()
            events = chat(client, {"Authorization": f"Bearer {token}"}, "anything new?")
            seconds = time.monotonic() - started
        meta = events[0][1]
        assert [kind for kind, _ in events] == ["meta", "delta", "delta", "done"]
        assert meta["mode"] == "fallback"
        assert "no query embedding within 0.6 s" in meta["degraded_reason"]
        # The query's embedding was cut short during its first attempt: no retries (the
        # stored messages' own embeddings come later, from the background indexer).
        queries = [t for texts in slow.inputs for t in texts if t.startswith("search_query")
                   and t != f"search_query: {WARM_QUERY}"]  # the start-up warm-up's own
        assert queries == ["search_query: anything new?"]
        assert seconds < 2.5, seconds
    finally:
        services.stores.db.close()
        slow.stop()
