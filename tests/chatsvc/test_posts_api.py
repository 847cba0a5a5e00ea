import pytest


def _search_posts(client, headers, query):
    response = client.post("/api/knowledge/search", headers=headers,
                           json={"query": query, "source_type": "post", "mode": "hybrid"})
    assert response.status_code == 200
    return response.json()["results"]


def test_post_writes_are_admin_only(client, alice):
    _, headers = alice
    body = {"title": "t", "content": "c", "published": True}
    assert client.post("/api/posts", headers=headers, json=body).status_code == 403
    assert client.patch("/api/posts/x", headers=headers, json={"title": "u"}).status_code == 403
    assert client.delete("/api/posts/x", headers=headers).status_code == 403
    assert client.get("/api/posts", headers=headers).json() == {"posts": []}


def test_published_posts_are_indexed_reindexed_and_removed(client, admin, alice, services):
    _, admin_headers = admin
    _, alice_headers = alice
    created = client.post("/api/posts", headers=admin_headers, json={
        "title": "Ollama embedding EOF", "published": True,
        "content": "Long inputs made the Ollama runner crash with EOF. Chunks are now capped."})
    assert created.status_code == 201
    post = created.json()
    assert post["excerpt"].startswith("Long inputs made the Ollama runner crash")
    hits = _search_posts(client, alice_headers, "ollama runner crash")
    assert [h["source_id"] for h in hits] == [post["id"]]
    assert hits[0]["source_type"] == "post"

    changed = client.patch(f"/api/posts/{post['id']}", headers=admin_headers,
                           json={"content": "Graceful degradation serves recent posts."})
    assert changed.status_code == 200
    stale = client.post("/api/knowledge/search", headers=alice_headers,
                        json={"query": "runner crash", "mode": "keyword"})
    assert stale.json()["results"] == []
    hits = _search_posts(client, alice_headers, "graceful degradation")
    assert [h["source_id"] for h in hits] == [post["id"]]
    assert services.knowledge.knowledge.stats(viewer_id="x")["by_source_type"] == {"post": 1}

    client.patch(f"/api/posts/{post['id']}", headers=admin_headers, json={"published": False})
    assert _search_posts(client, alice_headers, "graceful degradation") == []
    assert client.get(f"/api/posts/{post['id']}", headers=alice_headers).status_code == 404
    assert client.get(f"/api/posts/{post['id']}", headers=admin_headers).status_code == 200

    client.patch(f"/api/posts/{post['id']}", headers=admin_headers, json={"published": True})
    assert len(_search_posts(client, alice_headers, "graceful degradation")) == 1
    assert client.delete(f"/api/posts/{post['id']}", headers=admin_headers).status_code == 204
    assert _search_posts(client, alice_headers, "graceful degradation") == []
    assert client.get(f"/api/posts/{post['id']}", headers=admin_headers).status_code == 404


def test_drafts_are_not_indexed_and_hidden_from_users(client, admin, alice):
    _, admin_headers = admin
    _, alice_headers = alice
    client.post("/api/posts", headers=admin_headers,
                json={"title": "Secret draft", "content": "Unreleased roadmap.", "excerpt": "E"})
    assert _search_posts(client, alice_headers, "roadmap") == []
    assert client.get("/api/posts", headers=alice_headers).json()["posts"] == []
    listed = client.get("/api/posts", headers=admin_headers).json()["posts"]
    assert [(p["title"], p["published"], p["excerpt"]) for p in listed] == [
        ("Secret draft", False, "E")]


@pytest.mark.parametrize(("method", "body", "field"), [
    ("post", {"content": "c"}, "title"),
    ("post", {"title": "", "content": "c"}, "title"),
    ("post", {"title": "t", "content": "c", "published": "yes"}, "published"),
    ("patch", {"author": "x"}, "author"),
    ("patch", {"published": "yes"}, "published"),
    ("patch", {"title": 3}, "title"),
    ("patch", {}, "body"),  # changed nothing, yet bumped updated_at
])
def test_bad_post_bodies_are_400_naming_the_field(client, admin, method, body, field):
    _, headers = admin
    post = client.post("/api/posts", headers=headers,
                       json={"title": "Keep", "content": "Same.", "published": True}).json()
    url = "/api/posts" if method == "post" else f"/api/posts/{post['id']}"
    response = getattr(client, method)(url, headers=headers, json=body)
    assert response.status_code == 400 and field in response.json()["detail"]
    kept = client.get(f"/api/posts/{post['id']}", headers=headers).json()
    assert (kept["title"], kept["updated_at"]) == ("Keep", post["updated_at"])
    assert len(client.get("/api/posts", headers=headers).json()["posts"]) == 1


def test_patch_of_a_missing_post_is_404(client, admin):
    _, headers = admin
    assert client.patch("/api/posts/nope", headers=headers, json={"title": "x"}).status_code == 404
    assert client.delete("/api/posts/nope", headers=headers).status_code == 404
