
import pytest
from litestar.testing import TestClient

from chatsvc import Services, create_app
from chatsvc.testing import wait_for_job
from tests.chatsvc.knowledge_jobs import add_document

DOCS = [
    ("Deploying with Docker", "Build the image with docker build. Run it with docker compose up."),
    ("Password reset", "Users reset a forgotten password from the login page by email link."),
    ("向量数据库", "向量数据库用于存储文本嵌入，并支持相似度检索。"),
]


def _add(client, headers, title, content, *, wait=True, **extra):
    return add_document(client, headers, {"title": title, "content": content, **extra},
                        wait=wait)


def _search(client, headers, query, **extra):
    response = client.post("/api/knowledge/search", headers=headers,
                           json={"query": query, **extra})
    assert response.status_code == 200, response.text
    return response.json()


def test_add_search_read_and_delete_own_entry(client, alice):
    _, headers = alice
    ids = [_add(client, headers, title, content)["id"] for title, content in DOCS]
    body = _search(client, headers, "how do I reset my password")
    assert body["mode"] == "hybrid" and body["degraded_reason"] is None
    top = body["results"][0]
    assert top["entry_id"] == ids[1]
    assert set(top) == {"id", "entry_id", "title", "source_type", "source_id", "chunk_index",
                        "abstract", "overview", "snippet", "score"}
    assert top["abstract"].startswith("Users reset") and "password" in top["snippet"]
    assert _search(client, headers, "向量检索", mode="semantic")["results"][0]["entry_id"] == ids[2]
    assert _search(client, headers, "docker", mode="keyword")["results"][0]["entry_id"] == ids[0]

    entry = client.get(f"/api/knowledge/{ids[0]}", headers=headers).json()
    assert entry["content"] == DOCS[0][1] and entry["shared"] is False
    assert {"abstract", "overview", "metadata"} <= set(entry)
    listing = client.get("/api/knowledge", headers=headers, params={"limit": 2}).json()
    assert listing["total"] == 3 and len(listing["entries"]) == 2
    assert client.get("/api/knowledge/stats", headers=headers).json() == {
        "total": 3, "by_source_type": {"document": 3}}
    assert client.delete(f"/api/knowledge/{ids[0]}", headers=headers).status_code == 204
    assert client.get(f"/api/knowledge/{ids[0]}", headers=headers).status_code == 404


def test_same_document_twice_is_unchanged(client, alice):
    _, headers = alice
    first = _add(client, headers, "Doc", "Some text here.", source_id="doc-1")
    second = _add(client, headers, "Doc", "Some text here.", source_id="doc-1")
    assert (first["status"], second["status"]) == ("created", "unchanged")
    assert second["id"] == first["id"]
    third = _add(client, headers, "Doc", "Other text now.", source_id="doc-1")
    assert third["status"] == "replaced" and third["id"] == first["id"]


def test_other_users_entries_are_invisible_and_404(client, alice, bob):
    _, alice_headers = alice
    _, bob_headers = bob
    entry_id = _add(client, alice_headers, "Notes", "Alice keeps the launch codes here.")["id"]
    for mode in ("hybrid", "semantic", "keyword"):
        assert _search(client, bob_headers, "launch codes", mode=mode)["results"] == []
    assert client.get(f"/api/knowledge/{entry_id}", headers=bob_headers).status_code == 404
    assert client.delete(f"/api/knowledge/{entry_id}", headers=bob_headers).status_code == 404
    assert client.get("/api/knowledge/missing", headers=bob_headers).status_code == 404
    assert client.get("/api/knowledge/stats", headers=bob_headers).json()["total"] == 0
    assert client.get(f"/api/knowledge/{entry_id}", headers=alice_headers).status_code == 200


def test_shared_entries_are_searchable_by_all_and_deletable_by_admins_only(
    client, services, alice, admin
):
    import anyio

    saved = anyio.run(lambda: services.knowledge.index(
        owner_id=None, title="Handbook", content="The office opens at nine.",
        source_type="document", source_id="/docs/handbook.md"))
    _, alice_headers = alice
    _, admin_headers = admin
    hits = _search(client, alice_headers, "when does the office open")["results"]
    assert hits[0]["entry_id"] == saved.entry.id and hits[0]["source_id"] == "/docs/handbook.md"
    url = f"/api/knowledge/{saved.entry.id}"
    forbidden = client.delete(url, headers=alice_headers)
    assert forbidden.status_code == 403
    assert client.get(url, headers=alice_headers).status_code == 200
    assert client.delete(url, headers=admin_headers).status_code == 204
    assert client.get(url, headers=alice_headers).status_code == 404


@pytest.mark.parametrize(("body", "field"), [
    ({"content": "x"}, "title"),
    ({"title": " ", "content": "x"}, "title"),
    ({"title": "t", "content": ""}, "content"),
    ({"title": "t", "content": "x", "source_type": "Bad Type!"}, "source_type"),
    ({"title": "t", "content": "x", "metadata": [1]}, "metadata"),
])
def test_bad_documents_are_400_naming_the_field(client, alice, body, field):
    _, headers = alice
    response = client.post("/api/knowledge/documents", headers=headers, json=body)
    assert response.status_code == 400
    assert field in response.json()["detail"]
    assert client.get("/api/knowledge/stats", headers=headers).json()["total"] == 0


@pytest.mark.parametrize(("body", "field"), [
    ({}, "query"),
    ({"query": "  "}, "query"),
    ({"query": "x", "mode": "fuzzy"}, "mode"),
    ({"query": "x", "limit": 0}, "limit"),
    ({"query": "x", "limit": 51}, "limit"),
    ({"query": "x", "limit": "5"}, "limit"),  # Litestar would convert these to 5 and 1
    ({"query": "x", "limit": 1.0}, "limit"),
])
def test_bad_searches_are_400_naming_the_field(client, alice, body, field):
    _, headers = alice
    response = client.post("/api/knowledge/search", headers=headers, json=body)
    assert response.status_code == 400 and field in response.json()["detail"]


def test_fts_syntax_through_the_api_never_fails(client, alice):
    _, headers = alice
    _add(client, headers, "Ops", "NEAR the AND gate: a * star.")
    for query in ['"', "AND", "NEAR(", "*", ":", 'a:"b" NEAR(c* AND', "。"]:
        for mode in ("keyword", "hybrid"):
            assert client.post("/api/knowledge/search", headers=headers,
                               json={"query": query, "mode": mode}).status_code == 200


def test_search_degrades_to_keyword_when_embeddings_are_unavailable(embedder_down):
    _services, client, headers = embedder_down
    created = _add(client, headers, "Backups", "Nightly backups run at two.", wait=False)
    assert created["chunks"] == 1  # saved without vectors, still searchable
    for mode in ("hybrid", "semantic"):
        body = _search(client, headers, "nightly backups", mode=mode)
        assert body["mode"] == "keyword"
        assert "embeddings unavailable" in body["degraded_reason"]
        assert body["results"][0]["entry_id"] == created["id"]
    assert _search(client, headers, "backups", mode="keyword")["degraded_reason"] is None


def test_search_degrades_when_the_vector_store_conflicts(settings, local_embedder, tmp_path):
    services = Services.open(settings, embedder=local_embedder)
    _user, token = services.stores.users.add("dave")
    services.stores.db.close()
    # Pretend the file was indexed by another model: a dimension CONFLICT.
    from store import SqliteDatabase

    other = SqliteDatabase(settings.database_path, embed_model="x", embed_dim=384)
    other.connection().execute("UPDATE meta SET value = '768' WHERE key = 'embedding_dim'")
    other.close()
    services = Services.open(settings, embedder=local_embedder)
    try:
        assert not services.stores.db.vector_state.ok
        headers = {"Authorization": f"Bearer {token}"}
        with TestClient(create_app(services=services)) as client:
            created = _add(client, headers, "Rota", "The on-call rota changes weekly.",
                           wait=False)
            job = wait_for_job(client, headers, created["job_id"])
            assert job["status"] == "error" and "run `chatsvc reindex`" in job["error"]
            body = _search(client, headers, "on-call rota")
            assert body["mode"] == "keyword"
            assert "vector store unavailable" in body["degraded_reason"]
            assert body["results"][0]["entry_id"] == created["id"]
    finally:
        services.stores.db.close()


def test_chat_hook_searches_with_a_precomputed_query_vector(services, alice):
    user, _ = alice

    async def run():
        await services.knowledge.index(owner_id=user.id, title="Rota", source_type="document",
                                       content="The on-call rota hands over on Mondays.")
        vector = await services.embedder.embed_query("when is the on-call handover")
        return services.knowledge.search_with_vector(user.id, "on-call handover", vector)

    import anyio

    hits = anyio.run(run)
    assert [h.title for h in hits] == ["Rota"]
    assert hits[0].text.startswith("The on-call rota")
