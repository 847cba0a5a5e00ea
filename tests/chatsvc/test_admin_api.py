"""The admin HTTP API through the real app: real SQLite + sqlite-vec, the real local
embedder, chat turns answered by the scripted upstream on loopback."""

from __future__ import annotations

import pytest

from chatsvc import Settings

ROUTES = [("POST", "/api/admin/users"), ("GET", "/api/admin/users"),
          ("DELETE", "/api/admin/users/x"), ("GET", "/api/admin/users/x/tokens"),
          ("POST", "/api/admin/users/x/tokens"), ("DELETE", "/api/admin/tokens/x"),
          ("POST", "/api/admin/keys"), ("GET", "/api/admin/keys"),
          ("DELETE", "/api/admin/keys/x")]


@pytest.fixture
def settings(upstream_settings) -> Settings:
    return upstream_settings


def _bearer(token: str, **extra: str) -> dict:
    return {"Authorization": f"Bearer {token}", **extra}


def _created(response) -> dict:
    assert response.status_code == 201, response.text
    return response.json()


def _user_count(client, admin) -> int:
    return client.get("/api/admin/users", headers=admin[1]).json()["total"]


@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_only_admins_reach_the_admin_api(client, services, admin, alice, method, path):
    _, key = services.stores.users.add("webui", kind="service")
    before = _user_count(client, admin)
    for headers in (alice[1], _bearer(key, **{"X-Chatsvc-User": "root"})):
        response = client.request(method, path, headers=headers, json={"name": "mallory"})
        assert response.status_code == 403, response.text
        assert response.json()["detail"] == "this route needs an admin token"
    assert _user_count(client, admin) == before + 1  # the end user "root", nobody else


def test_a_created_user_gets_a_token_shown_once(client, admin):
    made = _created(client.post("/api/admin/users", headers=admin[1], json={
        "name": "dana", "timezone": "Europe/Paris", "admin": True}))
    assert (made["name"], made["timezone"], made["is_admin"], made["kind"]) == \
        ("dana", "Europe/Paris", True, "user")
    me = client.get("/api/me", headers=_bearer(made["token"])).json()
    assert (me["id"], me["is_admin"]) == (made["id"], True)
    listed = client.get("/api/admin/users", headers=admin[1]).text
    assert made["token"].split(".")[1] not in listed
    assert client.post("/api/admin/users", headers=admin[1],
                       json={"name": "dana"}).status_code == 409


@pytest.mark.parametrize(("body", "field"), [
    ({}, "name"), ({"name": ""}, "name"), ({"name": "  "}, "name"), ({"name": 7}, "name"),
    ({"name": "x" * 201}, "name"), ({"name": "a\nb"}, "name"), ({"name": "a\x00"}, "name"),
    ({"name": "eve", "timezone": "Mars/Olympus"}, "timezone"),
    ({"name": "eve", "timezone": 1}, "timezone"), ({"name": "eve", "admin": "yes"}, "admin"),
    ({"name": "eve", "role": "admin"}, "role"), ([], "object"), ("eve", "object"),
])
def test_bad_user_bodies_are_400_and_create_nobody(client, admin, body, field):
    before = _user_count(client, admin)
    response = client.post("/api/admin/users", headers=admin[1], json=body)
    assert response.status_code == 400, response.text
    assert field in response.json()["detail"]
    assert _user_count(client, admin) == before


def test_users_are_listed_page_by_page_with_their_counts(client, admin, alice, bob):
    assert client.post("/api/facts", headers=alice[1], json={
        "category": "core", "fact": "Owns a kayak"}).status_code == 201
    assert client.post("/api/chat", headers=alice[1], json={
        "message": "hello", "stream": False}).status_code == 200
    body = client.get("/api/admin/users", headers=admin[1]).json()
    assert body["total"] == 3
    counts = {u["name"]: (u["messages"], u["facts"]) for u in body["users"]}
    assert counts == {"root": (0, 0), "alice": (2, 1), "bob": (0, 0)}
    pages = [client.get("/api/admin/users", headers=admin[1],
                        params={"limit": 1, "offset": n}).json()["users"] for n in range(3)]
    assert [p[0]["id"] for p in pages] == [u["id"] for u in body["users"]]
    for bad in ({"limit": 0}, {"limit": 201}, {"offset": -1}):
        assert client.get("/api/admin/users", headers=admin[1], params=bad).status_code == 400


def test_deleting_a_user_deletes_their_data_and_their_tokens_fail_at_once(
        client, services, admin, alice, bob):
    assert client.post("/api/facts", headers=alice[1], json={
        "category": "core", "fact": "Owns a kayak"}).status_code == 201
    assert client.delete(f"/api/admin/users/{alice[0].id}", headers=admin[1]).status_code == 204
    assert client.get("/api/me", headers=alice[1]).status_code == 401
    assert services.stores.db.scalar("SELECT count(*) FROM facts") == 0
    assert client.get("/api/me", headers=bob[1]).status_code == 200
    assert client.delete(f"/api/admin/users/{alice[0].id}", headers=admin[1]).status_code == 404


def test_tokens_are_added_and_revoked_one_by_one(client, admin, alice):
    path = f"/api/admin/users/{alice[0].id}/tokens"
    second = _created(client.post(path, headers=admin[1]))
    assert second["user_id"] == alice[0].id
    assert client.get("/api/me", headers=_bearer(second["token"])).json()["name"] == "alice"
    listed = client.get(path, headers=admin[1]).json()
    assert listed["total"] == 2 and second["token"] not in str(listed)
    first_id = alice[1]["Authorization"].split()[1].split(".")[0]
    assert [t["id"] for t in listed["tokens"]] == [first_id, second["id"]]
    assert client.delete(f"/api/admin/tokens/{first_id}", headers=admin[1]).status_code == 204
    assert client.get("/api/me", headers=alice[1]).status_code == 401
    assert client.get("/api/me", headers=_bearer(second["token"])).status_code == 200
    assert client.get(path, headers=admin[1]).json()["tokens"][0]["revoked_at"]
    assert client.delete("/api/admin/tokens/nope", headers=admin[1]).status_code == 404
    assert client.post("/api/admin/users/nope/tokens", headers=admin[1]).status_code == 404
    assert client.get("/api/admin/users/nope/tokens", headers=admin[1]).status_code == 404


def test_service_keys_are_made_listed_rotated_and_revoked(client, admin, alice):
    made = _created(client.post("/api/admin/keys", headers=admin[1], json={"name": "webui"}))
    ann = client.get("/api/me", headers=_bearer(made["token"], **{"X-Chatsvc-User": "ann"}))
    assert ann.status_code == 200
    listed = client.get("/api/admin/keys", headers=admin[1]).json()
    assert [k["id"] for k in listed["keys"]] == [made["id"]] and listed["total"] == 1
    assert made["token"] not in str(listed)
    # Rotation: a second key of the same front end reaches the same end users.
    rotated = _created(client.post(f"/api/admin/users/{made['user_id']}/tokens",
                                   headers=admin[1]))
    again = client.get("/api/me", headers=_bearer(rotated["token"], **{"X-Chatsvc-User": "ann"}))
    assert again.json()["id"] == ann.json()["id"]
    assert client.delete(f"/api/admin/keys/{made['id']}", headers=admin[1]).status_code == 204
    assert client.get("/api/me", headers=_bearer(
        made["token"], **{"X-Chatsvc-User": "ann"})).status_code == 401
    # A person's token is no service key: not revoked through the keys route.
    token_id = alice[1]["Authorization"].split()[1].split(".")[0]
    assert client.delete(f"/api/admin/keys/{token_id}", headers=admin[1]).status_code == 404
    assert client.get("/api/me", headers=alice[1]).status_code == 200
    # End users get no tokens of their own; deleting the front end deletes them.
    end_user = f"/api/admin/users/{ann.json()['id']}/tokens"
    assert client.post(end_user, headers=admin[1]).status_code == 400
    assert client.delete(f"/api/admin/users/{made['user_id']}",
                         headers=admin[1]).status_code == 204
    assert client.get(end_user, headers=admin[1]).status_code == 404


@pytest.mark.parametrize("body", [{}, {"name": ""}, {"name": "k", "admin": True}, []])
def test_bad_key_bodies_are_400(client, admin, body):
    response = client.post("/api/admin/keys", headers=admin[1], json=body)
    assert response.status_code == 400, response.text
    assert client.get("/api/admin/keys", headers=admin[1]).json()["total"] == 0
