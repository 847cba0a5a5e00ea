"""Indexing survives a killed service and an embedder outage (issue 18 item 11).

A real `chatsvc serve` child embeds through the loopback Ollama
(tests/reliability/ollama_server.py): killed with SIGKILL in the middle of a
job and started again, the job resumes and every chunk gets its vector; a
document sent while Ollama is down waits (the job says why, /health counts what
waits) and is embedded as soon as Ollama is back, with no CLI run. Another
process taking a killed one's job over: test_replica_processes.py.
"""

from __future__ import annotations

import time

import httpx
import pytest

from chatsvc.testing import ServiceProcess, wait_for_job
from store import Knowledge
from tests.reliability._jobs import SMALL_CHUNKS, document, started
from tests.reliability.ollama_server import OllamaServer

SLOW_EMBED_SECONDS = 0.25  # per request (4 chunks): a 60-chunk job takes ~4 s
HEALTH_CACHE_SECONDS = 0.05


@pytest.fixture
def ollama():
    server = OllamaServer(slow_seconds=SLOW_EMBED_SECONDS).start()
    yield server
    server.stop()


@pytest.fixture
def child(tmp_path, ollama, scripted):
    service = ServiceProcess(tmp_path / "data", {
        "CHATSVC_EMBEDDINGS": "ollama",
        "OLLAMA_URL": ollama.url,
        "LLM_BASE_URL": scripted.base_url,
        "CHATSVC_KNOWLEDGE_LLM_TIERS": "off",
        "CHATSVC_EMBED_BREAKER_COOLDOWN": "0.2",
        "CHATSVC_EMBED_RETRIES": "0",
        "CHATSVC_HEALTH_CACHE_SECONDS": str(HEALTH_CACHE_SECONDS),
        # The killed process's lease on its job lapses soon after the restart.
        "CHATSVC_JOB_LEASE_SECONDS": "1",
        **SMALL_CHUNKS,
    })
    service.token = service.add_user("alice")
    yield service
    service.stop()


def _http(service: ServiceProcess) -> httpx.Client:
    return httpx.Client(base_url=service.url, timeout=30,
                        headers={"Authorization": f"Bearer {service.token}"})


def _waiting(service: ServiceProcess) -> dict:
    """/health's count of rows waiting for an embedding, read after its cache has passed:
    the start's last /health may be younger than the writes a test just made."""
    time.sleep(2 * HEALTH_CACHE_SECONDS)
    signed_in = {"Authorization": f"Bearer {service.token}"}  # the details need a token
    return httpx.get(f"{service.url}/health", headers=signed_in).json()["checks"][
        "embeddings_waiting"]


def test_a_job_killed_mid_way_resumes_after_a_restart(child, ollama):
    ollama.mode = "slow"
    with child, _http(child) as http:
        created = http.post("/api/knowledge/documents", json=document(60)).json()
        job = started(http, created["job_id"])
        child.process.kill()  # SIGKILL: no shutdown of any kind
        child.process.wait(10)
    assert job["status"] == "running" and 0 < job["done"] < job["total"], job
    ollama.mode = "ok"
    with child, _http(child) as http:
        finished = wait_for_job(http, None, created["job_id"], timeout=60)
        assert (finished["status"], finished["done"], finished["error"]) == (
            "done", created["chunks"], None)
        with child.database() as db:
            assert Knowledge(db).pending_count() == 0  # no chunk without a vector
        assert _waiting(child)["counts"]["knowledge"] == 0
        assert child.crashes() == []


def test_writes_while_the_embedder_is_down_are_embedded_when_it_is_back(child, ollama):
    ollama.stop()
    with child, _http(child) as http:
        created = http.post("/api/knowledge/documents", json=document(5))
        assert created.status_code == 202, created.text
        assert http.post("/api/facts", json={"category": "core",
                                             "fact": "Alice runs the night shift"}
                         ).status_code == 201
        job_url = f"/api/knowledge/jobs/{created.json()['job_id']}"
        deadline = time.monotonic() + 30
        while (job := http.get(job_url).json())["error"] is None:
            assert time.monotonic() < deadline, job
            time.sleep(0.05)
        assert job["status"] == "queued" and job["error"].startswith(
            "waiting for the embedding service"), job
        waiting = _waiting(child)
        assert not waiting["ok"] and waiting["counts"]["knowledge"] == created.json()["chunks"]
        assert waiting["counts"]["facts"] == 1

        ollama.start()  # back on the same port; nobody runs a CLI
        finished = wait_for_job(http, None, job["id"], timeout=30)
        assert (finished["status"], finished["error"]) == ("done", None)
        deadline = time.monotonic() + 30
        while any((waiting := _waiting(child))["counts"].values()):
            assert time.monotonic() < deadline, waiting
            time.sleep(0.1)
        assert waiting == {"ok": True, "detail": "nothing waits",
                           "counts": {"facts": 0, "memory": 0, "knowledge": 0, "messages": 0}}
        assert child.crashes() == []
