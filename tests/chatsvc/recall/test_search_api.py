"""GET /api/conversations/search and /index-status: modes, bounds, isolation, degradation,
and the background indexer catching up after imports."""

import asyncio

import pytest
from litestar.testing import TestClient

from chatsvc import create_app
from store.facts import Evidence
from tests.chatsvc.recall.conftest import wait_until_indexed

CONVERSATIONS = {"conversations": [
    {"title": "Pets", "messages": [
        {"role": "user", "content": "My dog Biscuit learned to fetch the newspaper.",
         "name": "Caroline", "created_at": "2023-05-08T10:00:00Z"},
        {"role": "assistant", "content": "What a clever dog!",
         "created_at": "2023-05-08T10:00:05Z"}]},
    {"title": "Work", "messages": [
        {"role": "user", "content": "I started a new job as a nurse at the city hospital.",
         "name": "Caroline", "created_at": "2023-07-01T09:00:00Z"}]},
]}


def _search(client, headers, **query):
    response = client.get("/api/conversations/search", headers=headers, params=query)
    assert response.status_code == 200, response.text
    return response.json()


@pytest.fixture
def imported(client, alice, index_now):
    ids = client.post("/api/conversations/import", headers=alice[1],
                      json=CONVERSATIONS).json()["conversations"]
    index_now()
    return ids


def test_every_mode_finds_the_message_with_its_fields(client, alice, imported):
    pets, _work = imported
    for mode in ("hybrid", "semantic", "keyword"):
        body = _search(client, alice[1], q="What is the name of Caroline's dog?", mode=mode)
        assert (body["mode"], body["degraded_reason"]) == (mode, None)
        # The reply's key carries the turn it answered (`context` keys): both come first.
        top = body["results"][:2]
        assert {r["message_id"] for r in top} == set(pets["message_ids"])
        said = next(r for r in top if r["role"] == "user")
        assert said == {"message_id": pets["message_ids"][0], "conversation_id": pets["id"],
                        "role": "user", "name": "Caroline",
                        "content": "My dog Biscuit learned to fetch the newspaper.",
                        "created_at": "2023-05-08T10:00:00.000000Z", "score": said["score"]}


def test_limit_and_date_bounds(client, alice, imported):
    _pets, work = imported
    assert len(_search(client, alice[1], q="Caroline", limit=1)["results"]) == 1
    later = _search(client, alice[1], q="Caroline job dog", after="2023-06-01")
    assert [r["message_id"] for r in later["results"]] == work["message_ids"]
    earlier = _search(client, alice[1], q="Caroline job dog", before="2023-06-01T00:00:00Z")
    assert work["message_ids"][0] not in [r["message_id"] for r in earlier["results"]]


def test_another_users_messages_are_never_returned(client, alice, bob, imported):
    assert _search(client, bob[1], q="Caroline dog Biscuit")["results"] == []
    assert client.get("/api/conversations/index-status", headers=bob[1]).json() == {
        "messages": 0, "indexed": 0}
    assert client.get("/api/conversations/index-status", headers=alice[1]).json() == {
        "messages": 3, "indexed": 3}


@pytest.mark.parametrize(("query", "field"), [
    ({}, "q"), ({"q": "  "}, "q"), ({"q": "x", "limit": 0}, "limit"),
    ({"q": "x", "limit": 51}, "limit"), ({"q": "x", "mode": "fuzzy"}, "mode"),
    ({"q": "x", "after": "yesterday"}, "after"), ({"q": "x", "before": "2023-13-01"}, "before"),
    ({"q": "x", "after": "2023-06-01", "before": "2023-05-01"}, "after"),  # an empty range
    ({"q": "x", "after": "2023-06-01T00:00:00Z", "before": "2023-06-01"}, "after"),
])
def test_bad_queries_are_400_naming_the_field(client, alice, query, field):
    response = client.get("/api/conversations/search", headers=alice[1], params=query)
    assert response.status_code == 400, response.text
    assert response.json()["extra"][0]["key"] == field


def test_the_background_indexer_catches_up_after_an_import(client, alice):
    assert client.post("/api/conversations/import", headers=alice[1],
                       json=CONVERSATIONS).status_code == 202
    assert wait_until_indexed(client, alice[1]) == {"messages": 3, "indexed": 3}
    assert _search(client, alice[1], q="nurse hospital", mode="semantic")["results"]


def test_messages_left_unindexed_are_picked_up_when_the_service_starts(services, make_user):
    user, headers = make_user("dora")
    services.stores.chats.start_turn(user.id, "stored before a crash, never indexed")
    with TestClient(create_app(services=services)) as client:
        assert wait_until_indexed(client, headers) == {"messages": 1, "indexed": 1}


def test_search_is_keyword_only_while_embeddings_are_down(embedder_down):
    services, client, headers = embedder_down
    client.post("/api/conversations/import", headers=headers, json=CONVERSATIONS)
    # The messages wait for their vectors, but their keys (full text) are built.
    status = wait_until_indexed(client, headers, timeout=3)
    assert status == {"messages": 3, "indexed": 0}
    assert services.stores.messages.pending_count() == 3
    waiting = client.get("/health", headers=headers).json()["checks"]
    assert waiting["embeddings_waiting"] == {
        "ok": False, "detail": "waiting: messages 3; the embedding service is down",
        "counts": {"facts": 0, "memory": 0, "knowledge": 0, "messages": 3}}
    for mode in ("hybrid", "semantic"):
        body = _search(client, headers, q="dog Biscuit", mode=mode)
        assert body["mode"] == "keyword"
        assert body["degraded_reason"].startswith("embeddings unavailable")
        assert any(r["content"].startswith("My dog Biscuit")
                   for r in body["results"][:2])


def test_every_api_that_takes_a_time_refuses_an_unreadable_one_in_the_same_words(
        client, alice):
    rule = "must be an ISO-8601 date or time, e.g. 2026-11-01 or 2026-11-01T12:00:00Z"
    refused = [
        client.get("/api/conversations/search", headers=alice[1],
                   params={"q": "x", "after": "last May"}),
        client.get("/api/usage", headers=alice[1], params={"from": "last May"}),
        client.post("/api/conversations/import", headers=alice[1], json={"conversations": [
            {"messages": [{"role": "user", "content": "x", "created_at": "last May"}]}]}),
    ]
    assert [r.status_code for r in refused] == [400, 400, 400]
    assert [r.json()["detail"].split(": ", 1)[1] for r in refused] == [rule] * 3
    assert client.get("/api/conversations/index-status", headers=alice[1]).json()[
        "messages"] == 0  # the refused import wrote nothing


def test_a_fact_quoting_a_message_leads_a_search_phrased_like_it_there_until_deleted(
        client, services, alice, bob, imported):
    """The fact is stored as extraction stores it (text, vector, quote); the search and the
    delete go through the API."""
    _pets, work = imported
    nurse = work["message_ids"][0]
    fact_text = "She is employed in healthcare"  # a speaker's name would not be embedded

    def score(headers) -> float | None:
        body = _search(client, headers, q=fact_text, mode="semantic")
        return next((r["score"] for r in body["results"] if r["message_id"] == nurse), None)

    own = score(alice[1])
    [vector] = asyncio.run(services.embedder.embed_documents([fact_text]))
    facts = services.stores.facts
    fact = facts.create(alice[0].id, category="core", fact=fact_text, embedding=vector)
    facts.add_evidence(alice[0].id, fact.id, [Evidence(
        nurse, work["id"], "I started a new job as a nurse", "2023-07-01T09:00:00Z")])
    keyed = score(alice[1])
    assert keyed > own + 0.02  # the fact's key is nearer the question than the turn's own
    assert score(bob[1]) is None  # nothing of Alice's reaches Bob
    assert client.delete(f"/api/facts/{fact.id}", headers=bob[1]).status_code == 404
    assert score(alice[1]) == pytest.approx(keyed)
    assert client.delete(f"/api/facts/{fact.id}", headers=alice[1]).status_code == 204
    assert score(alice[1]) == pytest.approx(own)
