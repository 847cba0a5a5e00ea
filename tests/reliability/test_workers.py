"""`chatsvc serve --workers 2` on one SQLite file: both processes answer, nothing is lost."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from chatsvc.testing import ServiceProcess


@pytest.fixture
def two_workers(tmp_path, ollama, scripted):
    child = ServiceProcess(tmp_path / "data", {
        "CHATSVC_WORKERS": "2",
        "CHATSVC_EMBEDDINGS": "ollama",
        "OLLAMA_URL": ollama.url,
        "LLM_BASE_URL": scripted.base_url,
        "CHATSVC_KNOWLEDGE_LLM_TIERS": "off",
    })
    child.tokens = [child.add_user(f"user{i}") for i in range(6)]
    with child:
        yield child


def test_two_workers_share_one_store(two_workers, ollama):
    ollama.mode = "ok"
    # uvicorn's supervisor plus two worker processes, each with its own app.
    assert len(two_workers.pids()) >= 3

    def turn(token: str) -> dict:
        headers = {"Authorization": f"Bearer {token}"}
        answer = httpx.post(f"{two_workers.url}/api/chat", headers=headers, timeout=30,
                            json={"message": "hello from a worker test", "stream": False})
        assert answer.status_code == 200, answer.text
        conversation = answer.json()["conversation_id"]
        return httpx.get(f"{two_workers.url}/api/conversations/{conversation}",
                         headers=headers, timeout=10).json()

    with ThreadPoolExecutor(6) as pool:
        conversations = list(pool.map(turn, two_workers.tokens * 2))
    for stored in conversations:
        assert [m["role"] for m in stored["messages"]] == ["user", "assistant"]
        assert stored["messages"][1]["status"] == "complete"
    assert "Traceback" not in two_workers.log_path.read_text()
