"""Conversational recall in the chat turn: what was said in another conversation (or in
the trimmed-away part of this one) comes back in the per-message block and in
`sources` as type `message`; what the prompt shows already never does."""

from __future__ import annotations

import asyncio

import pytest

from chatsvc.reindex import backfill
from chatsvc.testing import Reply
from store.facts import Evidence
from tests.chatsvc.chat.conftest import chat
from tests.chatsvc.recall.test_question_search import recent_dinners

SAID = "My sister Ophelia moved to Tromsø last winter."


@pytest.fixture
def index_now(services):
    return lambda: asyncio.run(backfill(services.stores.messages, services.embedder))


def _block(upstream) -> str:
    """The per-message block of the last upstream request ('' when none was sent)."""
    messages = upstream.requests[-1].body["messages"]
    found = [m["content"] for m in messages if m["content"].startswith("POSSIBLY RELATED")]
    return found[0] if found else ""


def test_a_fact_said_in_another_conversation_comes_back_with_its_source(
    client, alice, upstream, index_now
):
    _, headers = alice
    upstream.script(Reply(chunks=["Noted."]), Reply(chunks=["Ophelia."]))
    first = chat(client, headers, SAID)[0][1]["conversation_id"]
    said = client.get(f"/api/conversations/{first}", headers=headers).json()["messages"][0]
    index_now()

    meta = chat(client, headers, "Where does my sister live now?")[0][1]
    assert meta["conversation_id"] != first
    block = _block(upstream)
    assert f"] User: {SAID}" in block
    assert block.index("EXCERPTS OF EARLIER CONVERSATIONS") < block.index(SAID) < block.index(
        "untrusted data")
    recalled = [s for s in meta["sources"] if s["type"] == "message"]
    source = next(s for s in recalled if s["id"] == said["id"])
    assert source == {"type": "message", "id": said["id"], "conversation_id": first,
                      "speaker": "User", "created_at": said["created_at"], "text": SAID,
                      "score": source["score"], "layer": "message"}
    assert source["score"] > 0
    # Only excerpts the block shows are listed, and no other message of the user.
    assert {s["id"] for s in recalled} <= {said["id"], *[
        m["id"] for m in client.get(f"/api/conversations/{first}", headers=headers)
        .json()["messages"]]}


def test_the_visible_history_is_never_repeated_as_an_excerpt(client, alice, upstream, index_now):
    _, headers = alice
    upstream.script(Reply(chunks=["Noted."]), Reply(chunks=["Tromsø."]))
    conversation = chat(client, headers, SAID)[0][1]["conversation_id"]
    index_now()
    meta = chat(client, headers, "Where did my sister Ophelia move?", conversation)[0][1]
    assert SAID not in _block(upstream)  # it is right there in the history
    assert [s for s in meta["sources"] if s["type"] == "message"] == []


def test_a_name_sent_with_the_message_is_stored_and_indexed(client, alice, upstream, index_now):
    _, headers = alice
    upstream.script(Reply(chunks=["Hi Ann."]))
    response = client.post("/api/chat", headers=headers, json={
        "message": "I keep bees on my roof.", "name": " Ann ", "stream": False})
    assert response.status_code == 200, response.text
    conversation = response.json()["conversation_id"]
    stored = client.get(f"/api/conversations/{conversation}", headers=headers).json()
    assert [(m["role"], m["name"]) for m in stored["messages"]] == [
        ("user", "Ann"), ("assistant", None)]
    index_now()
    found = client.get("/api/conversations/search", headers=headers,
                       params={"q": "Ann bees", "mode": "keyword"}).json()["results"]
    assert ("user", "Ann", "I keep bees on my roof.") in [
        (r["role"], r["name"], r["content"]) for r in found]
    bad = client.post("/api/chat", headers=headers, json={"message": "x", "name": ""})
    assert bad.status_code == 400 and bad.json()["extra"][0]["key"] == "name"


def test_the_earlier_messages_of_a_time_the_message_names_score_higher(
    client, alice, upstream, index_now
):
    # The same dinner last month and four months ago: the turn reads "last month" from
    # its own time, so last month's scores higher; the other is still recalled.
    _, headers = alice
    imported = client.post("/api/conversations/import", headers=headers, json=recent_dinners())
    assert imported.status_code == 202, imported.text
    index_now()
    upstream.script(Reply(chunks=["With Wang."]))
    meta = chat(client, headers, "Where did we have dinner with friends last month?")[0][1]
    scores = {s["text"][-4:]: s["score"] for s in meta["sources"] if s["type"] == "message"}
    assert scores.keys() == {"ang.", " Li."}
    assert scores["ang."] > scores[" Li."]


def test_a_fact_quoting_an_earlier_message_brings_it_into_the_turn(
        client, services, alice, upstream, index_now, monkeypatch):
    """The turn's block of related facts and its recall's fact keys come from one search
    of the user's facts."""
    user, headers = alice
    upstream.script(Reply(chunks=["Noted."]), Reply(chunks=["The bakery."]))
    said = "Monday was my first shift, flour everywhere."
    first = chat(client, headers, said)[0][1]["conversation_id"]
    message = client.get(f"/api/conversations/{first}", headers=headers).json()["messages"][0]
    index_now()
    question = "Where does she work these days?"
    [vector] = asyncio.run(services.embedder.embed_documents([question]))
    fact = services.stores.facts.create(user.id, category="core",
                                        fact="Works at a bakery", embedding=vector)
    services.stores.facts.add_evidence(user.id, fact.id, [Evidence(
        message["id"], first, said, message["created_at"])])

    def second_search(*args, **kwargs):
        raise AssertionError("the turn searched the user's facts twice")

    monkeypatch.setattr(services.stores.facts, "cited", second_search)
    meta = chat(client, headers, question)[0][1]
    assert said in _block(upstream) and "Works at a bakery" in _block(upstream)
    assert message["id"] in [s["id"] for s in meta["sources"] if s["type"] == "message"]
