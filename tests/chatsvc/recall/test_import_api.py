"""POST /api/conversations/import: native and ChatGPT bodies, dedup, limits, bad input."""

import json
from pathlib import Path

import pytest
from litestar.testing import TestClient

from chatsvc import Services, create_app

CHATGPT = json.loads((Path(__file__).parent / "chatgpt_conversations.json").read_text())
TRIP = {"title": "Trip", "messages": [
    {"role": "user", "content": "We went to Lisbon in May.", "name": "Caroline",
     "created_at": "2023-05-08T13:56:00+02:00"},
    {"role": "assistant", "content": "Lovely! Did you see the trams?"},
]}


def _import(client, headers, body):
    return client.post("/api/conversations/import", headers=headers, json=body)


def test_import_answers_ids_in_input_order_and_stores_names_and_times(client, alice):
    _, headers = alice
    second = {"messages": [{"role": "user", "content": "second conversation"}]}
    response = _import(client, headers, {"conversations": [TRIP, second]})
    assert response.status_code == 202, response.text
    first, other = response.json()["conversations"]
    stored = client.get(f"/api/conversations/{first['id']}", headers=headers).json()
    assert stored["title"] == "Trip"
    assert [(m["id"], m["role"], m["name"], m["content"], m["created_at"])
            for m in stored["messages"]] == [
        (first["message_ids"][0], "user", "Caroline", "We went to Lisbon in May.",
         "2023-05-08T11:56:00.000000Z"),
        (first["message_ids"][1], "assistant", None, "Lovely! Did you see the trams?",
         stored["messages"][1]["created_at"]),
    ]
    titles = client.get(f"/api/conversations/{other['id']}", headers=headers).json()["title"]
    assert titles == "second conversation"


def test_importing_the_same_conversation_again_creates_nothing(client, alice, bob):
    _, headers = alice
    first = _import(client, headers, {"conversations": [TRIP]}).json()
    again = _import(client, headers, {"conversations": [TRIP]}).json()
    assert again == first
    assert client.get("/api/conversations", headers=headers).json()["total"] == 1
    # Another user importing the same file gets their own copy.
    theirs = _import(client, bob[1], {"conversations": [TRIP]}).json()
    assert theirs["conversations"][0]["id"] != first["conversations"][0]["id"]


def _chatgpt(mapping: dict, current: object = "b") -> dict:
    return {"format": "chatgpt",
            "conversations": [{"title": "G", "mapping": mapping, "current_node": current}]}


def _node(**message) -> dict:
    """Node "b" holding a user message, `message` overriding its fields."""
    return {"b": {"parent": None, "message": {
        "author": {"role": "user"}, "content": {"parts": ["hi"]}, **message}}}


@pytest.mark.parametrize(("body", "field"), [
    ([TRIP], "body"),
    ({"conversations": {}}, "conversations"),
    ({"conversations": [TRIP], "format": "slack"}, "format"),
    ({"conversations": [TRIP, {"messages": []}]}, "conversations[1].messages"),
    ({"conversations": [TRIP, {"messages": [{"role": "system", "content": "x"}]}]},
     "conversations[1].messages[0].role"),
    ({"conversations": [{"messages": [TRIP["messages"][0], {"role": "user", "content": " "}]}]},
     "conversations[0].messages[1].content"),
    ({"conversations": [{"messages": [{"role": "user", "content": "a\x1bb"}]}]},
     "conversations[0].messages[0].content"),
    ({"conversations": [{"messages": [{"role": "user", "content": "x", "name": 3}]}]},
     "conversations[0].messages[0].name"),
    ({"conversations": [{"messages": [{"role": "user", "content": "x",
                                       "created_at": "last May"}]}]},
     "conversations[0].messages[0].created_at"),
    ({"conversations": [{"title": "", "messages": TRIP["messages"]}]}, "conversations[0].title"),
    ({"format": "chatgpt", "conversations": [{"mapping": {}, "current_node": "x"}]},
     "conversations[0].current_node"),
    # found by fuzzing: each was a 500
    ({"conversations": [{"messages": [{"role": "user", "content": "x",
                                       "created_at": "0001-01-01T00:00:00+01:00"}]}]},
     "conversations[0].messages[0].created_at"),
    (_chatgpt({"b": {"parent": None}}, current=[]), "conversations[0].current_node"),
    (_chatgpt({"b": {"message": None, "parent": {}}}), "conversations[0].mapping.b.parent"),
    (_chatgpt(_node(author="user")), "conversations[0].mapping.b.message.author"),
    (_chatgpt(_node(content="text")), "conversations[0].mapping.b.message.content"),
    (_chatgpt(_node(content={"parts": 5})), "conversations[0].mapping.b.message.content.parts"),
])
def test_bad_input_is_400_naming_the_field_and_nothing_is_written(client, alice, body, field):
    _, headers = alice
    response = _import(client, headers, body)
    assert response.status_code == 400, response.text
    assert response.json()["extra"][0]["key"] == field
    assert response.json()["detail"].startswith(f"invalid value for {field}: ")
    assert client.get("/api/conversations", headers=headers).json()["total"] == 0


def test_a_bare_chatgpt_export_is_400_saying_how_to_send_it(client, alice):
    _, headers = alice
    response = _import(client, headers, CHATGPT)  # conversations.json as it comes
    assert response.status_code == 400, response.text
    assert '{"format": "chatgpt", "conversations": <its list>}' in response.json()["detail"]
    assert client.get("/api/conversations", headers=headers).json()["total"] == 0


def test_bytes_that_are_not_json_are_400(client, alice):
    response = client.post("/api/conversations/import", headers={
        **alice[1], "Content-Type": "application/json"}, content=b'{"conversations": [')
    assert response.status_code == 400 and response.json()["extra"][0]["key"] == "body"


def test_the_route_has_its_own_body_limit(settings, local_embedder, make_user, monkeypatch):
    big = {"conversations": [{"messages": [{"role": "user", "content": "x" * 20000}]}] * 20}
    assert len(json.dumps(big)) > settings.max_body_bytes  # over the app's limit...
    services = Services.open(settings.with_overrides(import_max_bytes=600_000),
                             embedder=local_embedder)
    try:
        _, token = services.stores.users.add("erin")
        headers = {"Authorization": f"Bearer {token}"}
        with TestClient(create_app(services=services)) as client:
            assert _import(client, headers, big).status_code == 202  # ...not over its own
            bigger = {"conversations": big["conversations"] * 2}
            assert _import(client, headers, bigger).status_code == 413
            assert client.post("/api/chat", headers=headers,
                               json={"message": "x" * 300_000}).status_code == 413
    finally:
        services.stores.db.close()


def test_chatgpt_export_imports_the_visible_branch_only(client, alice):
    _, headers = alice
    response = _import(client, headers, {"format": "chatgpt", "conversations": CHATGPT})
    assert response.status_code == 202, response.text
    kyoto, empty = response.json()["conversations"]
    stored = client.get(f"/api/conversations/{kyoto['id']}", headers=headers).json()
    assert stored["title"] == "Kyoto trip planning"
    assert [(m["role"], m["content"], m["created_at"]) for m in stored["messages"]] == [
        ("user", "I'm going to Kyoto in April. Where should I stay?",
         "2024-03-02T10:00:05.000000Z"),
        ("assistant", "Stay near Gion: it is central and walkable.\nBook early for April.",
         "2024-03-02T10:00:09.000000Z"),
        ("user", "My budget is 120 euros a night.", "2024-03-02T10:02:00.000000Z"),
        ("assistant", "Then look at machiya guesthouses around Higashiyama.",
         "2024-03-02T10:02:04.000000Z"),
    ]
    assert kyoto["message_ids"] == [m["id"] for m in stored["messages"]]
    assert empty["message_ids"] == []  # only a system prompt: kept, without messages
    again = _import(client, headers, {"format": "chatgpt", "conversations": CHATGPT}).json()
    assert again == response.json()


def test_a_long_chatgpt_branch_is_imported_whole(client, alice):
    # The cycle check was a list: 45k nodes held the event loop for 20 s (found by fuzzing).
    _, headers = alice
    nodes = 30_000
    mapping = {f"n{i}": {"parent": f"n{i - 1}" if i else None,
                         "message": {"author": {"role": "user"},
                                     "content": {"parts": [f"step {i}"]}} if i % 1000 == 0
                         else None} for i in range(nodes)}
    response = _import(client, headers, _chatgpt(mapping, current=f"n{nodes - 1}"))
    assert response.status_code == 202, response.text
    stored = client.get(f"/api/conversations/{response.json()['conversations'][0]['id']}",
                        headers=headers).json()
    assert [m["content"] for m in stored["messages"]] == [f"step {i}" for i in range(0, nodes,
                                                                                       1000)]
