"""GET /metrics moves as a user would expect after a turn, a cache hit and a fallback."""

from __future__ import annotations

import httpx
import pytest

from chatsvc import metrics
from chatsvc.testing import Reply
from tests.chatsvc.chat.conftest import chat, publish_posts, seed_user_data
from tests.chatsvc.metrics.conftest import METRICS_TOKEN, Scraper, labels


@pytest.fixture
def scraper(client):
    return Scraper(client.get)


def test_a_turn_then_a_cache_hit(client, alice, upstream, scraper, settings):
    model = settings.llm_model
    first = chat(client, alice[1], "Where do I live?")
    usage = first[-1][1]["usage"]
    moved = scraper.moved()
    assert moved[("chatsvc_turns_total", labels(mode="rag", status="complete"))] == 1
    assert moved[("chatsvc_tokens_total", labels(model=model, kind="prompt"))] == (
        usage["prompt_tokens"])
    assert moved[("chatsvc_tokens_total", labels(model=model, kind="completion"))] == (
        usage["completion_tokens"])
    for histogram in ("chatsvc_time_to_first_token_seconds", "chatsvc_turn_overhead_seconds"):
        assert moved[(f"{histogram}_count", ())] == 1
        assert moved[(f"{histogram}_sum", ())] > 0
    # A first request shares no prefix with anything: reported, and a full miss.
    assert usage["cached_tokens"] == 0
    assert moved[("chatsvc_prompt_cache_hit_ratio_bucket", labels(model=model, le="0.0"))] == 1

    # The same conversation again: the upstream serves the previous request from its cache.
    second = chat(client, alice[1], "And my cat?", first[0][1]["conversation_id"])
    usage = second[-1][1]["usage"]
    assert usage["cached_tokens"] > 0.5 * usage["prompt_tokens"]
    moved = scraper.moved()
    assert moved[("chatsvc_tokens_total", labels(model=model, kind="cached"))] == (
        usage["cached_tokens"])
    ratio = moved[("chatsvc_prompt_cache_hit_ratio_sum", labels(model=model))]
    assert ratio == pytest.approx(usage["cached_tokens"] / usage["prompt_tokens"])
    assert ("chatsvc_prompt_cache_hit_ratio_bucket", labels(model=model, le="0.0")) not in moved


def test_a_fallback_and_the_breaker_opening(client, alice, upstream, services, scraper,
                                            monkeypatch):
    from chatsvc.embeddings import OllamaEmbedder

    seed_user_data(client, alice[1])
    publish_posts(services)
    scraper.moved()
    closed = OllamaEmbedder("http://127.0.0.1:9", model=services.embedder.model,
                            dim=services.embedder.dim)
    monkeypatch.setattr(services.sources, "embedder", closed)
    assert chat(client, alice[1], "What is new?")[0][1]["mode"] == "fallback"
    moved = scraper.moved()
    assert moved[("chatsvc_turns_total", labels(mode="fallback", status="complete"))] == 1
    assert moved[("chatsvc_fallbacks_total", labels(cause="embeddings"))] == 1
    assert moved[("chatsvc_breaker_transitions_total",
                  labels(breaker="Ollama at http://127.0.0.1:9", state="open"))] == 1
    assert ("chatsvc_turns_total", labels(mode="rag", status="complete")) not in moved


def test_failed_turns_are_counted_by_error_code(client, alice, upstream, scraper):
    upstream.script(*[Reply(status=500)] * 3)  # the first try and both retries
    assert chat(client, alice[1], "hello")[-1][1]["code"] == "upstream_unavailable"
    moved = scraper.moved()
    assert moved[("chatsvc_turns_total", labels(mode="rag", status="upstream_unavailable"))] == 1
    assert ("chatsvc_time_to_first_token_seconds_count", ()) not in moved


def test_active_streams(live, alice, upstream):
    with httpx.Client(base_url=live, timeout=10) as http:
        scraper = Scraper(http.get)
        upstream.script(Reply(chunks=["a", "b", "c"], chunk_delay=0.3))
        with http.stream("POST", "/api/chat", json={"message": "slowly"},
                         headers=alice[1]) as answer:
            lines = answer.iter_lines()
            next(line for line in lines if line.startswith("event: delta"))
            assert scraper.moved()[("chatsvc_active_streams", ())] == 1
            list(lines)
        assert scraper.moved()[("chatsvc_active_streams", ())] == -1


def test_the_embedding_queue_is_what_the_indexer_reported(client, scraper):
    metrics.set_embedding_waiting("facts", 7)
    metrics.set_embedding_waiting("knowledge", 0)
    waiting = scraper.scrape()
    assert waiting[("chatsvc_embedding_queue_depth", labels(index="facts"))] == 7
    assert waiting[("chatsvc_embedding_queue_depth", labels(index="knowledge"))] == 0


@pytest.mark.parametrize(("token", "status"), [
    (None, 401), ("wrong-token-0123456789", 401), ("alice", 403), ("root", 200),
    (METRICS_TOKEN, 200),
])
def test_only_the_metrics_token_and_admins_may_scrape(client, alice, admin, token, status):
    tokens = {"alice": alice[1], "root": admin[1]}
    headers = tokens.get(token) or ({"Authorization": f"Bearer {token}"} if token else {})
    assert client.get("/metrics", headers=headers).status_code == status


def test_the_schema_documents_the_prometheus_text_format(client, admin):
    documented = client.get("/schema/openapi.json").json()["paths"]["/metrics"]["get"]
    served = client.get("/metrics", headers=admin[1]).headers["content-type"]
    assert list(documented["responses"]["200"]["content"]) == ["text/plain; version=0.0.4"]
    assert served.startswith("text/plain; version=0.0.4")


def test_feedback_is_counted_by_rating(client, alice, upstream, scraper):
    upstream.script(Reply(chunks=["An answer"]))
    conversation_id = chat(client, alice[1], "A question")[0][1]["conversation_id"]
    answer = client.get(f"/api/conversations/{conversation_id}",
                        headers=alice[1]).json()["messages"][1]["id"]
    scraper.moved()
    url = f"/api/messages/{answer}/feedback"
    for rating in ("up", "down", "down"):
        assert client.put(url, headers=alice[1], json={"rating": rating}).status_code == 200
    assert client.put(url, headers=alice[1], json={"rating": "meh"}).status_code == 400
    moved = scraper.moved()
    assert moved[("chatsvc_feedback_total", labels(rating="up"))] == 1
    assert moved[("chatsvc_feedback_total", labels(rating="down"))] == 2
