"""The chat operations front ends offer, through HTTP with the scripted upstream:
regenerate (sibling answers), edit (a branch from `parent_id`), switching branch, and
that only the visible branch reaches the prompt, recall and the facts."""

from __future__ import annotations

import json

from chatsvc.testing import Reply
from store.facts import Evidence
from tests.chatsvc.chat.conftest import chat, read_events
from tests.chatsvc.recall.conftest import index_now  # noqa: F401 (a fixture)


def _conversation(client, headers, conversation_id: str) -> dict:
    response = client.get(f"/api/conversations/{conversation_id}", headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


def _contents(body: dict) -> list[str]:
    return [m["content"] for m in body["messages"]]


def _sent(upstream) -> list[str]:
    """The texts of the last upstream request's messages."""
    return [m["content"] for m in upstream.requests[-1].body["messages"]]


def _regenerate(client, headers, conversation_id: str, **body):
    return client.post(f"/api/conversations/{conversation_id}/regenerate", json=body,
                       headers=headers)


def test_regenerating_twice_keeps_three_sibling_answers_and_shows_the_newest(
    client, alice, upstream
):
    _, headers = alice
    upstream.script(Reply(chunks=["First ", "answer"]), Reply(chunks=["Second answer"]),
                    Reply(chunks=["Third answer"]), Reply(chunks=["Fine"]))
    events = chat(client, headers, "Name a colour")
    conversation_id = events[0][1]["conversation_id"]

    with client.stream("POST", f"/api/conversations/{conversation_id}/regenerate",
                       json={"stream": True}, headers=headers) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        text = "".join(response.iter_text())
    streamed = [line[7:] for line in text.splitlines() if line.startswith("event: ")]
    assert streamed == ["meta", "delta", "done"]
    second_id = json.loads(text.split("data: ", 1)[1].splitlines()[0])["message_id"]
    third = _regenerate(client, headers, conversation_id, stream=False)
    assert third.status_code == 200, third.text
    assert third.json()["content"] == "Third answer"
    assert third.json()["conversation_id"] == conversation_id
    # The question the regenerated answers were built for is the same, and the old
    # answers were not in their prompts.
    assert _sent(upstream)[-1] == "Name a colour"
    assert "First answer" not in _sent(upstream)

    body = _conversation(client, headers, conversation_id)
    assert _contents(body) == ["Name a colour", "Third answer"]
    question, answer = body["messages"]
    assert answer["id"] == third.json()["message_id"]
    assert answer["sibling_ids"][1:] == [second_id, answer["id"]]
    assert len(answer["sibling_ids"]) == 3 and answer["parent_id"] == question["id"]
    assert question["sibling_ids"] == [question["id"]] and question["parent_id"] is None

    chat(client, headers, "And another?", conversation_id)
    history = _sent(upstream)
    assert "Third answer" in history
    assert "First answer" not in history and "Second answer" not in history


def test_regenerate_is_refused_without_an_answer_to_replace(client, alice, bob, upstream,
                                                            services):
    user, headers = alice
    empty = client.post("/api/conversations/import", headers=headers, json={
        "format": "chatgpt", "conversations": [{"title": "Nothing", "current_node": "n1",
                                                "mapping": {"n1": {"id": "n1", "message": None,
                                                                   "parent": None}}}]})
    assert empty.status_code == 202, empty.text
    unanswered = client.post("/api/conversations/import", headers=headers, json={
        "conversations": [{"messages": [{"role": "user", "content": "Hello?"}]}]})
    for imported in (empty, unanswered):
        conversation_id = imported.json()["conversations"][0]["id"]
        refused = _regenerate(client, headers, conversation_id)
        assert refused.status_code == 409, refused.text
        assert refused.json()["extra"]["code"] == "nothing_to_regenerate"
        assert "POST /api/chat" in refused.json()["detail"]

    upstream.script(Reply(chunks=["Hi"]))
    conversation_id = chat(client, headers, "Hello")[0][1]["conversation_id"]
    assert _regenerate(client, bob[1], conversation_id).status_code == 404
    assert _regenerate(client, headers, "no-such-conversation").status_code == 404
    assert _regenerate(client, headers, conversation_id, stream="yes").status_code == 400
    # A turn holds the conversation (another worker's, say): regenerate waits its turn.
    services.stores.chats.start_turn(user.id, "meanwhile", conversation_id=conversation_id)
    busy = _regenerate(client, headers, conversation_id)
    assert busy.status_code == 409 and busy.json()["extra"]["code"] == "turn_in_progress"
    assert len(upstream.requests) == 1  # none of the refusals reached the model


def test_an_edit_branches_from_its_parent_and_the_old_branch_can_be_shown_again(
    client, alice, bob, upstream
):
    _, headers = alice
    upstream.script(*[Reply(chunks=[text]) for text in
                      ("A1", "A2", "A2 edited", "A3", "A1 again")])
    conversation_id = chat(client, headers, "Q1")[0][1]["conversation_id"]
    chat(client, headers, "Q2", conversation_id)
    q1, a1, q2, _ = _conversation(client, headers, conversation_id)["messages"]

    edited = read_events(client, headers, {"message": "Q2 edited", "parent_id": a1["id"],
                                           "conversation_id": conversation_id})
    assert edited[-1][0] == "done"
    sent = _sent(upstream)
    assert sent[-1] == "Q2 edited" and sent.index("Q1") < sent.index("A1")
    assert "Q2" not in sent and "A2" not in sent
    body = _conversation(client, headers, conversation_id)
    assert _contents(body) == ["Q1", "A1", "Q2 edited", "A2 edited"]
    assert body["messages"][2]["sibling_ids"] == [q2["id"], body["messages"][2]["id"]]
    assert body["messages"][2]["parent_id"] == a1["id"]
    exported = client.get("/api/export", headers=headers).json()["conversations"][0]
    assert [m["content"] for m in exported["messages"]] == _contents(body)
    assert [(m["content"], m["parent_id"]) for m in exported["off_branch"]] == [
        ("Q2", a1["id"]), ("A2", q2["id"])]

    shown = client.put(f"/api/conversations/{conversation_id}/branch", headers=headers,
                       json={"message_id": q2["id"]})
    assert shown.status_code == 200, shown.text
    assert _contents(shown.json()) == ["Q1", "A1", "Q2", "A2"]
    chat(client, headers, "Q3", conversation_id)
    assert "A2" in _sent(upstream) and "Q2 edited" not in _sent(upstream)
    assert _contents(_conversation(client, headers, conversation_id))[-2:] == ["Q3", "A3"]

    restarted = read_events(client, headers, {"message": "Q1 again", "parent_id": "root",
                                              "conversation_id": conversation_id})
    assert restarted[-1][0] == "done"
    body = _conversation(client, headers, conversation_id)
    assert _contents(body) == ["Q1 again", "A1 again"]
    assert body["messages"][0]["sibling_ids"] == [q1["id"], body["messages"][0]["id"]]


def test_bad_edits_and_branch_choices_change_nothing(client, alice, bob, upstream):
    _, headers = alice
    upstream.script(Reply(chunks=["A1"]), Reply(chunks=["B1"]))
    conversation_id = chat(client, headers, "Q1")[0][1]["conversation_id"]
    question, answer = _conversation(client, headers, conversation_id)["messages"]
    bobs = chat(client, bob[1], "Bob's")[0][1]["conversation_id"]
    bobs_answer = _conversation(client, bob[1], bobs)["messages"][1]["id"]

    def edit(**body):
        return client.post("/api/chat", headers=headers, json={"message": "x", **body})

    assert edit(parent_id=answer["id"]).status_code == 400  # no conversation_id
    assert edit(parent_id="", conversation_id=conversation_id).status_code == 400
    not_answer = edit(parent_id=question["id"], conversation_id=conversation_id)
    assert not_answer.status_code == 400 and "parent_id" in not_answer.json()["detail"]
    assert edit(parent_id=bobs_answer, conversation_id=conversation_id).status_code == 404
    assert edit(parent_id=answer["id"], conversation_id=bobs).status_code == 404

    branch = f"/api/conversations/{conversation_id}/branch"
    assert client.put(branch, headers=headers, json={"message_id": bobs_answer}
                      ).status_code == 404
    assert client.put(branch, headers=bob[1], json={"message_id": answer["id"]}
                      ).status_code == 404
    assert client.put(branch, headers=headers, json={"message_id": ""}).status_code == 400
    assert client.put(branch, headers=headers, json={}).status_code == 400
    assert _contents(_conversation(client, headers, conversation_id)) == ["Q1", "A1"]
    assert _contents(_conversation(client, bob[1], bobs)) == ["Bob's", "B1"]
    assert len(upstream.requests) == 2


def _sheet(client, headers) -> list[str]:
    return [f["id"] for f in client.get("/api/fact-sheet", headers=headers).json()["facts"]]


def _found(client, headers, query: str) -> set[str]:
    """The caller's messages a keyword search finds (a match, then its neighbours)."""
    response = client.get("/api/conversations/search", headers=headers,
                          params={"q": query, "mode": "keyword"})
    return {r["content"] for r in response.json()["results"]}


def test_an_abandoned_branch_leaves_recall_extraction_and_the_facts_it_alone_grounds(
    client, alice, upstream, services, index_now  # noqa: F811 (the fixture imported above)
):
    user, headers = alice
    upstream.script(Reply(chunks=["Noted"]), Reply(chunks=["Nice"]), Reply(chunks=["Ok"]))
    conversation_id = chat(client, headers, "I live in Lyon")[0][1]["conversation_id"]
    chat(client, headers, "My kayak is called Sputnik", conversation_id)
    first, answer, kayak, _ = _conversation(client, headers, conversation_id)["messages"]
    facts = services.stores.facts

    def grounded(text: str, *messages: dict) -> str:
        fact = facts.create(user.id, category="core", fact=text)
        facts.add_evidence(user.id, fact.id, [
            Evidence(m["id"], conversation_id, m["content"], m["created_at"]) for m in messages])
        return fact.id

    only_kayak = grounded("Has a kayak called Sputnik", kayak)
    both = grounded("Lives in Lyon and paddles", first, kayak)
    index_now()
    assert _found(client, headers, "Sputnik kayak") == {"My kayak is called Sputnik", "Nice"}
    assert client.post("/api/fact-sheet/generate", headers=headers).status_code == 201
    assert only_kayak in _sheet(client, headers)
    edit = {"message": "I have a canoe", "parent_id": answer["id"],
            "conversation_id": conversation_id}
    assert read_events(client, headers, edit)[-1][0] == "done"

    kept = client.get("/api/facts", headers=headers).json()["facts"]
    assert [f["id"] for f in kept] == [both]
    assert [e["message_id"] for e in kept[0]["evidence"]] == [first["id"]]
    pending = services.stores.extraction.pending(user.id, limit=100)
    assert kayak["id"] not in {m.id for m in pending}
    index_now()
    assert _found(client, headers, "Sputnik kayak") == set()
    assert _found(client, headers, "canoe") == {"I have a canoe", "Ok"}
    assert _sheet(client, headers) == [both]  # the sheet was made again without it


def test_rename_and_archive(client, alice, bob, upstream):
    _, headers = alice
    upstream.script(Reply(chunks=["A"]), Reply(chunks=["B"]))
    kept = chat(client, headers, "Kept")[0][1]["conversation_id"]
    archived = chat(client, headers, "Old")[0][1]["conversation_id"]
    url = f"/api/conversations/{archived}"

    renamed = client.patch(url, headers=headers, json={"title": "  Trip   to Lyon "})
    assert renamed.status_code == 200, renamed.text
    assert renamed.json()["title"] == "Trip to Lyon" and renamed.json()["archived"] is False
    assert client.patch(url, headers=headers, json={"archived": True}).json()["archived"]

    def listed(**params) -> list[str]:
        body = client.get("/api/conversations", headers=headers, params=params).json()
        assert body["total"] == len(body["conversations"])
        return [c["id"] for c in body["conversations"]]

    assert listed() == [kept]
    assert listed(archived="true") == [archived]
    assert _conversation(client, headers, archived)["title"] == "Trip to Lyon"

    for bad in ({}, {"title": ""}, {"title": "x" * 501}, {"archived": "yes"},
                {"title": "a\x00b"}, {"archived": 1}):
        response = client.patch(url, headers=headers, json=bad)
        assert response.status_code == 400, (bad, response.text)
    assert client.patch(url, headers=bob[1], json={"title": "Bob's now"}).status_code == 404
    assert client.patch("/api/conversations/nope", headers=headers,
                        json={"title": "x"}).status_code == 404
    body = _conversation(client, headers, archived)
    assert body["title"] == "Trip to Lyon" and body["archived"] is True
    assert client.patch(url, headers=headers, json={"archived": False}).status_code == 200
    assert set(listed()) == {kept, archived}


def test_feedback_up_down_and_clear(client, alice, bob, upstream):
    _, headers = alice
    upstream.script(Reply(chunks=["An answer"]))
    conversation_id = chat(client, headers, "A question")[0][1]["conversation_id"]
    question, answer = _conversation(client, headers, conversation_id)["messages"]
    url = f"/api/messages/{answer['id']}/feedback"

    up = client.put(url, headers=headers, json={"rating": "up"})
    assert up.status_code == 200, up.text
    assert up.json()["rating"] == "up" and up.json()["comment"] is None
    down = client.put(url, headers=headers, json={"rating": "down", "comment": " Wrong city "})
    assert down.json()["message_id"] == answer["id"]
    assert (down.json()["rating"], down.json()["comment"]) == ("down", "Wrong city")
    shown = _conversation(client, headers, conversation_id)["messages"]
    assert shown[1]["feedback"]["rating"] == "down" and shown[0]["feedback"] is None

    export = client.get("/api/export", headers=headers).json()
    exported = export["conversations"][0]["messages"][1]
    assert exported["feedback"]["comment"] == "Wrong city"

    for bad in ({"rating": "meh"}, {}, {"rating": "up", "comment": "x" * 2001},
                {"rating": 1}):
        assert client.put(url, headers=headers, json=bad).status_code == 400, bad
    on_question = client.put(f"/api/messages/{question['id']}/feedback", headers=headers,
                             json={"rating": "up"})
    assert on_question.status_code == 400
    assert client.put(url, headers=bob[1], json={"rating": "up"}).status_code == 404
    assert client.delete(url, headers=bob[1]).status_code == 404
    assert client.put("/api/messages/nope/feedback", headers=headers,
                      json={"rating": "up"}).status_code == 404
    assert _conversation(client, headers, conversation_id)["messages"][1]["feedback"][
        "rating"] == "down"

    assert client.delete(url, headers=headers).status_code == 204
    assert _conversation(client, headers, conversation_id)["messages"][1]["feedback"] is None
    assert client.delete(url, headers=headers).status_code == 204  # nothing left to clear
