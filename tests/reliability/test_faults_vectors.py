"""The vector store unusable at start-up, under real `chatsvc serve` processes.

Two ways: sqlite-vec cannot be loaded (CHATSVC_SQLITE_VEC_PATH=/nonexistent), and
a database indexed with another embedding model/dimension (CONFLICT). Either way
the service starts, says why in /health, chats in fallback mode, stores both
messages, answers search with 503 naming the fix, and saves writes without vectors.
"""

from __future__ import annotations

import threading

import httpx
import pytest

from chatsvc.testing import Reply, ServiceProcess
from store import SqliteDatabase


def _env(ollama, scripted, **extra) -> dict[str, str]:
    return {"CHATSVC_EMBEDDINGS": "ollama", "OLLAMA_URL": ollama.url,
            "LLM_BASE_URL": scripted.base_url, "CHATSVC_KNOWLEDGE_LLM_TIERS": "off", **extra}


@pytest.fixture(scope="module")
def degraded(tmp_path_factory, ollama, scripted):
    """{"no_vec": child, "conflict": child}, started side by side."""
    root = tmp_path_factory.mktemp("degraded")
    # Indexed before with a 384-d model; the service is now configured for 768-d.
    SqliteDatabase(root / "conflict" / "chatsvc.sqlite3", embed_model="old-model",
                   embed_dim=384).close()
    children = {
        "no_vec": ServiceProcess(root / "no_vec", _env(
            ollama, scripted, CHATSVC_SQLITE_VEC_PATH="/nonexistent")),
        "conflict": ServiceProcess(root / "conflict", _env(ollama, scripted)),
    }
    for child in children.values():
        child.token = child.add_user("carol")
    starters = [threading.Thread(target=child.start) for child in children.values()]
    for starter in starters:
        starter.start()
    for starter in starters:
        starter.join()
    yield children
    for child in children.values():
        child.stop()


CASES = [("no_vec", "sqlite-vec could not be loaded", "install sqlite-vec"),
         ("conflict", "CONFLICT", "reindex")]


@pytest.mark.parametrize("name, detail, fix", CASES)
def test_degraded_vector_store(degraded, scripted, name, detail, fix):
    child = degraded[name]
    assert child.process.poll() is None, child.log()
    headers = {"Authorization": f"Bearer {child.token}"}
    with httpx.Client(base_url=child.url, headers=headers, timeout=30) as http:
        health = http.get("/health")
        assert health.status_code == 200 and health.json()["status"] == "degraded"
        assert detail in health.json()["checks"]["vector_store"]["detail"]

        scripted.script(Reply(chunks=["fallback ", "answer"]))
        answer = http.post("/api/chat", json={"message": "what's new?", "stream": False})
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["mode"] == "fallback" and "vector store unavailable" in (
            body["degraded_reason"])
        messages = http.get(f"/api/conversations/{body['conversation_id']}").json()["messages"]
        assert [(m["role"], m["content"], m["status"]) for m in messages] == [
            ("user", "what's new?", "complete"), ("assistant", "fallback answer", "complete")]

        search = http.get("/api/facts/search", params={"q": "anything"})
        assert search.status_code == 503 and fix in search.json()["detail"]
        saved = http.post("/api/facts", json={"category": "core", "fact": "Owns a kayak"})
        assert saved.status_code == 201, saved.text
        memory = http.post("/api/memory", json={"content": "Prefers short answers",
                                                "type": "preference", "scope": "global"})
        assert memory.status_code == 201, memory.text
        preview = http.post("/api/memory/injection-preview", json={"query_text": "answers"})
        assert preview.status_code == 200 and preview.json()["degraded_reason"]
    assert child.crashes() == [], child.log()
