"""Service keys acting for end users, through the real app: real SQLite + sqlite-vec, the
real local embedder, chat turns answered by the scripted upstream on loopback."""

from __future__ import annotations

import json

import pytest

from chatsvc import Settings
from tests.chatsvc.recall.conftest import index_now  # noqa: F401  (the indexer, now)


@pytest.fixture
def settings(upstream_settings) -> Settings:
    return upstream_settings


@pytest.fixture
def key(services):
    """(the service account, a function: end user id -> headers acting for them)."""
    account, token = services.stores.users.add("webui", kind="service")

    def acting_for(end_user: str, **extra: str) -> dict:
        return {"Authorization": f"Bearer {token}", "X-Chatsvc-User": end_user, **extra}

    return account, acting_for


def _fill(client, headers, fact: str, said: str) -> str:
    assert client.post("/api/facts", headers=headers, json={
        "category": "core", "fact": fact}).status_code == 201
    answer = client.post("/api/chat", headers=headers, json={"message": said, "stream": False})
    assert answer.status_code == 200, answer.text
    return answer.json()["conversation_id"]


def _sees(client, headers) -> dict:
    """What a caller can read: facts, conversations, conversation and fact search."""
    def get(path, **params):
        response = client.get(path, headers=headers, params=params)
        assert response.status_code == 200, response.text
        return response.json()

    return {
        "facts": [f["fact"] for f in get("/api/facts")["facts"]],
        "conversations": [c["id"] for c in get("/api/conversations")["conversations"]],
        "said": [r["content"] for r in get("/api/conversations/search", q="kayak")["results"]],
        "found": [r["fact"] for r in get("/api/facts/search", q="kayak")["results"]],
    }


def test_a_service_key_without_the_user_header_is_refused_naming_it(client, key):
    headers = key[1]("x")
    del headers["X-Chatsvc-User"]
    for method, path in (("GET", "/api/facts"), ("GET", "/api/me"), ("POST", "/mcp")):
        response = client.request(method, path, headers=headers)
        assert response.status_code == 400, (path, response.text)
        assert "X-Chatsvc-User" in response.json()["detail"]


def test_end_users_never_see_each_others_data(client, key, alice, index_now):  # noqa: F811
    ann, ben = key[1]("ann"), key[1]("ben")
    conversation = _fill(client, ann, "Owns a kayak", "I paddle my kayak on Sundays")
    _fill(client, ben, "Plays chess", "I play chess on Sundays")
    index_now()
    ann_sees = _sees(client, ann)
    assert ann_sees["facts"] == ann_sees["found"] == ["Owns a kayak"]
    assert ann_sees["conversations"] == [conversation]
    assert "I paddle my kayak on Sundays" in ann_sees["said"]
    for other in (ben, alice[1]):
        seen = _sees(client, other)
        assert "Owns a kayak" not in seen["facts"] + seen["found"]
        assert conversation not in seen["conversations"]
        assert "I paddle my kayak on Sundays" not in seen["said"]
        assert client.get(f"/api/conversations/{conversation}",
                          headers=other).status_code == 404


def test_two_front_ends_never_share_an_end_user(client, services, key):
    _, other_token = services.stores.users.add("librechat", kind="service")
    other = {"Authorization": f"Bearer {other_token}", "X-Chatsvc-User": "42"}
    _fill(client, key[1]("42"), "Owns a kayak", "hello")
    assert _sees(client, other)["facts"] == []
    assert client.get("/api/me", headers=other).json()["id"] != \
        client.get("/api/me", headers=key[1]("42")).json()["id"]


def test_a_plain_token_cannot_act_for_anyone_else(client, services, key, alice, bob):
    key[1]("ann")  # an end user that exists
    as_bob = {**alice[1], "X-Chatsvc-User": bob[0].id}
    response = client.post("/api/facts", headers=as_bob,
                           json={"category": "core", "fact": "Owns a kayak"})
    assert response.status_code == 403
    assert "X-Chatsvc-User" in response.json()["detail"]
    assert client.get("/api/facts", headers=bob[1]).json()["facts"] == []
    assert client.get("/api/facts", headers=alice[1]).json()["facts"] == []


def test_a_revoked_key_answers_401_at_once(client, services, key):
    account, acting_for = key
    assert client.get("/api/me", headers=acting_for("ann")).status_code == 200
    [issued], _ = services.stores.users.tokens(user_id=account.id)
    services.stores.users.revoke_token(issued.id)
    assert client.get("/api/me", headers=acting_for("ann")).status_code == 401


@pytest.mark.parametrize("value", ["", "   ", "x" * 257, "ann\x01", "ann\tben", "\x7f"])
def test_invalid_end_user_ids_are_400_and_create_nobody(client, services, key, value):
    before = len(services.stores.users.list())
    response = client.get("/api/me", headers=key[1](value))
    assert response.status_code == 400
    assert "X-Chatsvc-User" in response.json()["detail"]
    assert len(services.stores.users.list()) == before


def test_end_users_are_created_on_first_sight_with_their_display_name(client, key):
    first = client.get("/api/me", headers=key[1]("u-7", **{"X-Chatsvc-User-Name": "José".encode()}))
    assert first.status_code == 200
    assert first.json()["name"] == "José" and not first.json()["is_admin"]
    again = client.get("/api/me", headers=key[1]("u-7")).json()
    assert again == first.json()
    renamed = client.get("/api/me", headers=key[1]("u-7", **{"X-Chatsvc-User-Name": "Jo"}))
    assert renamed.json() == {**first.json(), "name": "Jo"}
    unnamed = client.get("/api/me", headers=key[1]("u-8")).json()
    assert unnamed["name"] == "u-8"


def _v1(client, headers, **body):
    response = client.post("/v1/chat/completions", headers=headers, json={
        "model": "kimi-k2-0905-preview", "messages": [{"role": "user", "content": "hi"}],
        **body})
    assert response.status_code == 200, response.text
    return response


def _prompt(upstream) -> str:
    return json.dumps(upstream.requests[-1].body["messages"])


def test_openai_user_field_names_the_end_user_and_the_header_wins(client, key, upstream):
    acting_for = key[1]
    assert client.post("/api/memory", headers=acting_for("ann"), json={
        "content": "Answers in French", "type": "preference", "scope": "global"}
    ).status_code == 201
    no_header = acting_for("ann")
    del no_header["X-Chatsvc-User"]
    _v1(client, no_header, user="ann")
    assert "Answers in French" in _prompt(upstream)
    _v1(client, acting_for("ben"), user="ann")
    assert "Answers in French" not in _prompt(upstream)
    refused = client.post("/v1/chat/completions", headers=no_header, json={
        "model": "kimi-k2-0905-preview", "messages": [{"role": "user", "content": "hi"}]})
    assert refused.status_code == 400
    assert "X-Chatsvc-User" in refused.json()["error"]["message"]  # OpenAI's error shape
    wrong = client.post("/v1/chat/completions", headers=no_header, json={
        "model": "kimi-k2-0905-preview", "user": 7, "messages": []})
    assert wrong.status_code == 400 and "user" in wrong.json()["error"]["message"]
    garbled = client.post("/v1/chat/completions", headers=no_header, content=b'{"user": ')
    assert garbled.status_code == 400, garbled.text


def test_a_plain_tokens_openai_user_field_is_only_a_label(client, alice, upstream):
    _v1(client, alice[1], user="someone-else")
    assert client.get("/api/me", headers=alice[1]).json()["name"] == "alice"


def test_without_auto_users_only_known_end_users_are_served(monkeypatch, client, key):
    known = client.get("/api/me", headers=key[1]("ann"))
    services = client.app.state.services
    monkeypatch.setattr(services, "settings",
                        services.settings.with_overrides(auto_users=False))
    assert client.get("/api/me", headers=key[1]("ann")).json() == known.json()
    response = client.get("/api/me", headers=key[1]("ben"))
    assert response.status_code == 403 and "CHATSVC_AUTO_USERS" in response.json()["detail"]


def test_header_names_are_settings(monkeypatch, upstream_settings, local_embedder):
    from litestar.testing import TestClient

    from chatsvc import Services, create_app

    monkeypatch.setenv("CHATSVC_USER_HEADER", "X-OpenWebUI-User-Id")
    monkeypatch.setenv("CHATSVC_USER_NAME_HEADER", "X-OpenWebUI-User-Name")
    services = Services.open(Settings.from_env(), embedder=local_embedder)
    _, token = services.stores.users.add("openwebui", kind="service")
    try:
        with TestClient(create_app(services=services)) as client:
            me = client.get("/api/me", headers={
                "Authorization": f"Bearer {token}", "X-OpenWebUI-User-Id": "9f1c",
                "X-OpenWebUI-User-Name": "Ada"})
            assert me.status_code == 200 and me.json()["name"] == "Ada"
            old = client.get("/api/me", headers={"Authorization": f"Bearer {token}",
                                                 "X-Chatsvc-User": "9f1c"})
            assert old.status_code == 400 and "X-OpenWebUI-User-Id" in old.json()["detail"]
    finally:
        services.stores.db.close()
