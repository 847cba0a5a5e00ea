"""Users never reach each other's data; admin-only routes stay admin-only.

Every route of the app that takes an id is listed here (a new one fails the
coverage test until it is added). Bob uses Alice's ids: each answers 404 with
the body a missing id gets, and the database is byte-for-byte unchanged.
"""

from __future__ import annotations

import time

import pytest

from chatsvc import Settings
from chatsvc.testing import Reply
from tests.chatsvc.chat.conftest import PNG_URL, chat
from tests.chatsvc.knowledge_jobs import add_document

# (method, route) -> (which of Alice's objects, JSON body)
OWNED = {
    ("GET", "/api/facts/{fact_id:str}"): ("fact", None),
    ("PATCH", "/api/facts/{fact_id:str}"): ("fact", {"fact": "hijacked"}),
    ("DELETE", "/api/facts/{fact_id:str}"): ("fact", None),
    ("PATCH", "/api/memory/{memory_id:str}"): ("memory", {"content": "hijacked"}),
    ("DELETE", "/api/memory/{memory_id:str}"): ("memory", None),
    ("GET", "/api/knowledge/{entry_id:str}"): ("entry", None),
    ("DELETE", "/api/knowledge/{entry_id:str}"): ("entry", None),
    ("PATCH", "/api/knowledge/{entry_id:str}"): ("entry", {"pinned": True}),
    ("POST", "/api/knowledge/{entry_id:str}/reindex"): ("entry", None),
    ("GET", "/api/knowledge/jobs/{job_id:str}"): ("job", None),
    ("GET", "/api/conversations/{conversation_id:str}"): ("conversation", None),
    ("DELETE", "/api/conversations/{conversation_id:str}"): ("conversation", None),
    ("GET", "/api/conversations/{conversation_id:str}/stream"): ("conversation", None),
    ("POST", "/api/conversations/{conversation_id:str}/stop"): ("conversation", None),
    ("PATCH", "/api/conversations/{conversation_id:str}"): ("conversation",
                                                           {"title": "hijacked"}),
    ("PUT", "/api/conversations/{conversation_id:str}/branch"): ("conversation",
                                                                {"message_id": "x"}),
    ("POST", "/api/conversations/{conversation_id:str}/regenerate"): ("conversation",
                                                                     {"stream": False}),
    ("PUT", "/api/messages/{message_id:str}/feedback"): ("answer", {"rating": "down"}),
    ("DELETE", "/api/messages/{message_id:str}/feedback"): ("answer", None),
    ("GET", "/api/images/{image_id:str}"): ("image", None),
    ("GET", "/api/posts/{post_id:str}"): ("draft", None),  # an admin's unpublished post
}
ADMIN_ONLY = {
    ("POST", "/api/posts"): {"title": "t", "content": "c", "published": True},
    ("PATCH", "/api/posts/{post_id:str}"): {"title": "defaced"},
    ("DELETE", "/api/posts/{post_id:str}"): None,
    ("POST", "/api/admin/users"): {"name": "mallory", "admin": True},
    ("GET", "/api/admin/users"): None,
    ("DELETE", "/api/admin/users/{user_id:str}"): None,
    ("GET", "/api/admin/users/{user_id:str}/tokens"): None,
    ("POST", "/api/admin/users/{user_id:str}/tokens"): None,
    ("DELETE", "/api/admin/tokens/{token_id:str}"): None,
    ("POST", "/api/admin/keys"): {"name": "mallory"},
    ("GET", "/api/admin/keys"): None,
    ("DELETE", "/api/admin/keys/{key_id:str}"): None,
}
# Litestar's schema UI assets and the console's static files (path traversal: test_security).
NOT_AN_OBJECT = {("GET", "/schema/{path:str}"), ("GET", "/static/{file_path:path}"),
                 ("HEAD", "/static/{file_path:path}")}


@pytest.fixture
def settings(upstream_settings, monkeypatch) -> Settings:
    """The scripted upstream, seeing images (Alice's objects include one)."""
    monkeypatch.setenv("LLM_VISION", "true")
    return Settings.from_env()


def http_handlers(client):
    """(route, handler) of every HTTP route; the ASGI mount /mcp checks its own callers
    (tests/chatsvc/tools)."""
    return [(route, handler) for route in client.app.routes
            for handler in getattr(route, "route_handlers", ())]


def app_routes(client) -> set[tuple[str, str]]:
    return {(method, route.path) for route, handler in http_handlers(client)
            for method in handler.http_methods if method != "OPTIONS"}


def db_digest(services) -> dict[str, list[tuple]]:
    """Every row of every real table (virtual tables are read through their shadows)."""
    conn = services.stores.db.connection()
    names = [row[0] for row in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
        "AND sql NOT LIKE 'CREATE VIRTUAL%' ORDER BY name")]
    return {name: sorted(map(tuple, conn.execute(f'SELECT * FROM "{name}"')), key=repr)
            for name in names}


def settled(services) -> None:
    """Wait for the background indexing of stored messages: it writes on its own time."""
    deadline = time.monotonic() + 60
    while services.indexer.busy and time.monotonic() < deadline:
        time.sleep(0.05)


@pytest.fixture
def alices(client, services, alice, admin, upstream):
    """One of each of Alice's objects (and an admin draft), made through the API."""
    headers = alice[1]
    fact = client.post("/api/facts", json={"category": "core", "fact": "Alice's cat is Miso"},
                       headers=headers).json()
    memory = client.post("/api/memory", json={"content": "Alice likes figs", "type": "note",
                                              "scope": "project", "project_id": "apollo"},
                         headers=headers).json()
    entry = add_document(client, headers, {  # and wait for its job: nothing runs after
        "title": "Alice's diary", "content": "Alice hid the key under the blue flowerpot."})
    upstream.script(Reply(chunks=["noted"]), Reply(chunks=["a map"]))
    conversation = chat(client, headers, "my secret plan")[0][1]["conversation_id"]
    answer = client.get(f"/api/conversations/{conversation}",
                        headers=headers).json()["messages"][1]
    pictured = client.post("/api/chat", headers=headers, json={
        "message": "my treasure map", "stream": False, "images": [{"url": PNG_URL}]}).json()
    image = client.get(f"/api/conversations/{pictured['conversation_id']}",
                       headers=headers).json()["messages"][0]["images"][0]
    draft = client.post("/api/posts", headers=admin[1], json={
        "title": "Draft", "content": "Not yet", "published": False}).json()
    settled(services)
    return {"fact": fact["id"], "memory": memory["id"], "entry": entry["id"],
            "job": entry["job_id"],
            "conversation": conversation, "draft": draft["id"], "image": image["id"],
            "answer": answer["id"]}


def fill(route: str, object_id: str) -> str:
    head, _, tail = route.partition("{")
    return head + object_id + tail.partition("}")[2]


def test_every_route_with_an_id_is_covered(client):
    templated = {r for r in app_routes(client) if "{" in r[1]}
    assert templated - NOT_AN_OBJECT == set(OWNED) | {r for r in ADMIN_ONLY if "{" in r[1]}
    # Router-level guards too (the admin API's); a sync guard comes wrapped (`func`).
    guarded = {(method, route.path) for route, handler in http_handlers(client)
               for method in handler.http_methods if method != "OPTIONS"
               if any(getattr(g, "func", g).__name__ == "admin_only"
                      for g in handler.resolve_guards())}
    assert guarded == set(ADMIN_ONLY)


def test_another_users_id_is_404_like_a_missing_one_and_changes_nothing(
    client, services, alices, bob
):
    # One seeding for every route (seeding embeds with the real model: seconds).
    before = db_digest(services)
    for (method, route), (kind, body) in sorted(OWNED.items()):
        foreign = client.request(method, fill(route, alices[kind]), json=body, headers=bob[1])
        missing = client.request(method, fill(route, "0" * 32), json=body, headers=bob[1])
        assert foreign.status_code == missing.status_code == 404, (method, route)
        assert foreign.json() == missing.json(), (method, route)
        assert db_digest(services) == before, (method, route)


def test_admin_routes_are_403_for_users_and_change_nothing(client, services, admin, bob):
    draft = client.post("/api/posts", headers=admin[1], json={
        "title": "Draft", "content": "Not yet", "published": False}).json()["id"]
    before = db_digest(services)
    for (method, route), body in sorted(ADMIN_ONLY.items(), key=repr):
        target = fill(route, draft) if "{" in route else route
        response = client.request(method, target, json=body, headers=bob[1])
        assert response.status_code == 403, (method, route)
        assert "admin" in response.json()["detail"], (method, route)
        assert db_digest(services) == before, (method, route)


def test_ids_in_bodies_queries_and_prompts_do_not_cross_users(
    client, services, alices, bob, upstream
):
    before = db_digest(services)
    response = client.post("/api/chat", headers=bob[1], json={
        "message": "hi", "conversation_id": alices["conversation"]})
    assert response.status_code == 404
    assert db_digest(services) == before
    assert client.get("/api/memory", params={"project_id": "apollo"},
                      headers=bob[1]).json() == {"memories": []}
    preview = client.post("/api/memory/injection-preview", headers=bob[1],
                          json={"project_id": "apollo", "query_text": "figs"}).json()
    assert preview["memory"] == [] and preview["semantic_memory"] == []
    assert client.get("/api/facts/search", params={"q": "cat Miso"},
                      headers=bob[1]).json() == {"results": []}
    found = client.post("/api/knowledge/search", json={"query": "key flowerpot"},
                        headers=bob[1]).json()
    assert found["results"] == []
    assert client.get("/api/knowledge", headers=bob[1]).json()["total"] == 0
    # Nothing of Alice's reaches the upstream in Bob's prompt either.
    upstream.script(Reply(chunks=["hm"]))
    chat(client, bob[1], "Where is the key? What is the cat called? My secret plan? Figs?")
    sent = str(upstream.requests[-1].body["messages"])
    for secret in ("Miso", "flowerpot", "figs", "my secret plan"):
        assert secret not in sent.replace("My secret plan? Figs?", "")
