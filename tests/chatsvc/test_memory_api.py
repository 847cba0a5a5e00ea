"""/api/memory over HTTP: CRUD, validation, isolation, and the injection preview."""

import pytest

from chatsvc import Settings, SettingsError

PREVIEW = "/api/memory/injection-preview"


def add(client, headers, content, type="note", scope="global", **extra):
    response = client.post("/api/memory", headers=headers,
                           json={"content": content, "type": type, "scope": scope, **extra})
    assert response.status_code == 201, response.text
    return response.json()


def listed(client, headers, **params):
    response = client.get("/api/memory", headers=headers, params=params)
    assert response.status_code == 200
    return [m["content"] for m in response.json()["memories"]]


def preview(client, headers, **body):
    response = client.post(PREVIEW, headers=headers, json=body)
    assert response.status_code == 200, response.text
    return response.json()


def test_create_list_patch_delete(client, alice):
    _, headers = alice
    created = add(client, headers, "  I prefer concise answers  ", type="preference")
    assert created["content"] == "I prefer concise answers"
    assert (created["type"], created["scope"], created["origin"]) == (
        "preference", "global", "manual")
    assert created["project_id"] is None
    assert listed(client, headers) == ["I prefer concise answers"]

    response = client.patch(f"/api/memory/{created['id']}", headers=headers,
                            json={"scope": "project", "project_id": "p1"})
    assert response.status_code == 200
    assert (response.json()["scope"], response.json()["project_id"]) == ("project", "p1")
    assert listed(client, headers, project_id="p2") == []
    # Back to global: the project goes with it.
    response = client.patch(f"/api/memory/{created['id']}", headers=headers,
                            json={"scope": "global"})
    assert response.json()["project_id"] is None

    assert client.delete(f"/api/memory/{created['id']}", headers=headers).status_code == 204
    assert listed(client, headers) == []
    assert client.delete(f"/api/memory/{created['id']}", headers=headers).status_code == 404


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"content": "x", "type": "secret", "scope": "global"}, "type"),
        ({"content": "x", "type": "note", "scope": "team"}, "scope"),
        ({"content": "x", "type": "note", "scope": "project"}, "project_id"),
        ({"content": "x", "type": "note", "scope": "project", "project_id": " "}, "project_id"),
        ({"content": "x", "type": "note", "scope": "global", "project_id": "p1"}, "project_id"),
        ({"content": "   ", "type": "note", "scope": "global"}, "content"),
        ({"content": "x" * 2001, "type": "note", "scope": "global"}, "content"),
        ({"content": 42, "type": "note", "scope": "global"}, "content"),
        ({"type": "note", "scope": "global"}, "content"),
        ({"content": "x", "type": "note", "scope": "global", "pinned": True}, "pinned"),
    ],
)
def test_invalid_create_is_400_naming_the_field_and_writes_nothing(client, alice, body, field):
    _, headers = alice
    response = client.post("/api/memory", headers=headers, json=body)
    assert response.status_code == 400
    assert response.json()["detail"].startswith(f"{field}:")
    assert listed(client, headers) == []


def test_invalid_patch_is_400_and_changes_nothing(client, alice):
    _, headers = alice
    memory = add(client, headers, "likes tea")
    for body, field in [({"type": "secret"}, "type"), ({"content": ""}, "content"),
                        ({"scope": "project"}, "project_id"), ({}, "body")]:
        response = client.patch(f"/api/memory/{memory['id']}", headers=headers, json=body)
        assert response.status_code == 400
        assert response.json()["detail"].startswith(f"{field}:")
    assert client.get("/api/memory", headers=headers).json()["memories"] == [memory]


def test_a_project_filter_with_control_characters_is_400(client, alice):
    response = client.get("/api/memory", headers=alice[1], params={"project_id": "p1\x00"})
    assert response.status_code == 400, response.text
    assert response.json()["extra"][0]["key"] == "project_id"


def test_oversized_body_is_413(client, alice):
    _, headers = alice
    response = client.post("/api/memory", headers=headers,
                           json={"content": "x" * 300_000, "type": "note", "scope": "global"})
    assert response.status_code == 413


def test_another_users_memory_answers_404_like_a_missing_one(client, alice, bob):
    _, alice_headers = alice
    _, bob_headers = bob
    memory = add(client, alice_headers, "alice's secret plan")
    for path in (f"/api/memory/{memory['id']}", "/api/memory/no-such-id"):
        patched = client.patch(path, headers=bob_headers, json={"content": "mine now"})
        deleted = client.delete(path, headers=bob_headers)
        assert (patched.status_code, deleted.status_code) == (404, 404)
        assert patched.json() == deleted.json() == {"status_code": 404, "detail": "not found"}
    assert listed(client, bob_headers) == []
    bob_view = preview(client, bob_headers, query_text="secret plan")
    assert bob_view["memory"] == bob_view["semantic_memory"] == []
    assert listed(client, alice_headers) == ["alice's secret plan"]


def test_routes_need_a_token(client):
    assert client.get("/api/memory").status_code == 401
    assert client.post(PREVIEW, json={}).status_code == 401


def test_soft_deleted_memory_is_never_injected_or_recalled(client, alice):
    _, headers = alice
    gone = add(client, headers, "My favourite city is Lisbon", type="preference")
    add(client, headers, "I work as a nurse", type="profile")
    assert client.delete(f"/api/memory/{gone['id']}", headers=headers).status_code == 204
    result = preview(client, headers, query_text="What is my favourite city?")
    assert result["mode"] == "semantic"
    every = [m["id"] for m in result["memory"] + result["semantic_memory"]]
    assert gone["id"] not in every
    assert [m["content"] for m in result["memory"]] == ["I work as a nurse"]


def test_project_memories_stay_in_their_project(client, alice):
    _, headers = alice
    add(client, headers, "Use tabs in the Go service", scope="project", project_id="go-svc")
    add(client, headers, "Use 4 spaces in the Python tool", scope="project", project_id="py")
    add(client, headers, "Answer in English")

    def injected(**body):
        result = preview(client, headers, query_text="how should I indent code?", **body)
        return sorted(m["content"] for m in result["memory"] + result["semantic_memory"])

    assert injected() == ["Answer in English"]
    assert injected(project_id="py") == ["Answer in English", "Use 4 spaces in the Python tool"]
    assert injected(project_id="go-svc") == ["Answer in English", "Use tabs in the Go service"]


def test_stable_part_and_hash_do_not_depend_on_the_query(client, alice):
    _, headers = alice
    for i in range(6):
        add(client, headers, f"preference number {i}", type="preference")
    add(client, headers, "My dog Rex is afraid of thunderstorms")
    add(client, headers, "我住在杭州，喜欢喝龙井茶")
    runs = [preview(client, headers, query_text=q)
            for q in ("Tell me about my dog", "我喜欢喝什么茶？", "")]
    stable = [(r["memory"], r["stable_prefix_hash"]) for r in runs]
    assert stable[0] == stable[1] == stable[2]
    assert [r["mode"] for r in runs] == ["semantic", "semantic", "deterministic"]
    assert runs[2]["degraded_reason"] == "empty_query" and runs[2]["semantic_memory"] == []
    # Every change to the stored memory shows in the stable part at once.
    newest = add(client, headers, "one more preference", type="preference")
    after_add = preview(client, headers)
    assert after_add["memory"][0]["content"] == "one more preference"
    assert after_add["stable_prefix_hash"] != runs[0]["stable_prefix_hash"]
    client.patch(f"/api/memory/{newest['id']}", headers=headers, json={"content": "edited"})
    assert preview(client, headers)["memory"][0]["content"] == "edited"
    client.delete(f"/api/memory/{newest['id']}", headers=headers)
    assert preview(client, headers)["stable_prefix_hash"] == runs[0]["stable_prefix_hash"]


@pytest.mark.anyio
async def test_service_function_reports_version_and_reuses_a_query_vector(services, alice):
    user, _ = alice
    services.stores.memories.create(user.id, type="note", scope="global", content="likes jazz")
    vector = await services.embedder.embed_query("what music do I like?")
    result = await services.memory_service.injection(user.id, query_vector=vector)
    assert result.mode == "semantic" and result.degraded_reason is None
    assert result.version == services.stores.memories.version(user.id) == 1
    assert [m.content for m in result.memory] == ["likes jazz"]



def test_preview_validates_its_body(client, alice):
    _, headers = alice
    for body, field in [({"query_text": 5}, "query_text"), ({"project_id": ["p"]}, "project_id"),
                        ({"query": "tea"}, "query")]:
        response = client.post(PREVIEW, headers=headers, json=body)
        assert response.status_code == 400
        assert response.json()["detail"].startswith(f"{field}:")


def test_memory_settings_come_from_the_environment():
    settings = Settings.from_env({"CHATSVC_MEMORY_BASELINE_MAX_ITEMS": "7",
                                  "CHATSVC_MEMORY_QUERY_MAX_CHARS": "900",
                                  "CHATSVC_EMBEDDINGS": "local"})
    assert (settings.memory_baseline_max_items, settings.memory_query_max_chars) == (7, 900)
    with pytest.raises(SettingsError, match="CHATSVC_MEMORY_TOP_K"):
        Settings.from_env({"CHATSVC_MEMORY_TOP_K": "5000", "CHATSVC_EMBEDDINGS": "local"})
    with pytest.raises(SettingsError, match="CHATSVC_MEMORY_MAX_CHARS"):
        Settings.from_env({"CHATSVC_MEMORY_MAX_CHARS": "0", "CHATSVC_EMBEDDINGS": "local"})
