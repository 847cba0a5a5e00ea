"""Two chatsvc instances (two Services, two apps) against one PostgreSQL database, as
behind a load balancer: what one writes the other serves, and a per-user job runs once."""

from __future__ import annotations

import json
import threading
import time

import pytest
from litestar.testing import TestClient

from chatsvc import Services, Settings, create_app
from chatsvc.testing import Reply, ScriptedUpstream, wait_for_job
from tests._pg import drop_schema, new_schema
from tests.chatsvc.knowledge_jobs import add_document

EXTRACTED = {"new_facts": [{"category": "core", "fact": "Moved to Lyon last year", "evidence": [
                 {"message": "m1", "quote": "I moved to Lyon last year."}]}],
             "referenced": [], "superseded": [], "forget": []}


@pytest.fixture
def upstream():
    with ScriptedUpstream() as server:
        yield server


@pytest.fixture
def replicas(pg_server_url, upstream, local_embedder, monkeypatch):
    schema, url = new_schema(pg_server_url)
    monkeypatch.setenv("CHATSVC_DATABASE_URL", url)
    monkeypatch.setenv("LLM_BASE_URL", upstream.base_url)
    monkeypatch.setenv("LLM_TIMEOUT", "1")  # the hung first request gives up after 1 s
    opened = [Services.open(Settings.from_env(), embedder=local_embedder) for _ in range(2)]
    clients = [TestClient(create_app(services=s)) for s in opened]
    for client in clients:
        client.__enter__()
    yield opened, clients
    for client, services in zip(clients, opened, strict=True):
        client.__exit__(None, None, None)
        services.stores.db.close()
    drop_schema(pg_server_url, schema)


def test_a_fact_written_through_one_instance_is_found_through_the_other(replicas):
    (a, _), (client_a, client_b) = replicas
    _, token = a.stores.users.add("alice")
    headers = {"Authorization": f"Bearer {token}"}
    created = client_a.post("/api/facts", json={"category": "core", "fact": "Alice keeps bees"},
                            headers=headers)
    assert created.status_code == 201, created.text
    found = client_b.get("/api/facts/search", params={"q": "beekeeping hobby"}, headers=headers)
    assert found.status_code == 200, found.text
    assert [r["id"] for r in found.json()["results"]][:1] == [created.json()["id"]]
    health = client_b.get("/health", headers=headers).json()
    assert health["checks"]["database"]["detail"].startswith("postgresql")


def test_fact_extraction_for_a_user_runs_on_one_instance_only(replicas, upstream):
    (a, b), (client_a, client_b) = replicas
    user, token = a.stores.users.add("alice")
    headers = {"Authorization": f"Bearer {token}"}
    a.stores.chats.start_turn(user.id, "I moved to Lyon last year.")
    # A's first LLM request hangs (until its 1 s timeout; the retry gets the answer),
    # so A holds the user's job lock while B is asked to extract the same user.
    upstream.script(Reply(hang=True), Reply(chunks=[json.dumps(EXTRACTED)]))
    answers = {}
    worker = threading.Thread(
        target=lambda: answers.update(a=client_a.post("/api/facts/extract", headers=headers))
    )
    worker.start()
    deadline = time.monotonic() + 10
    while not upstream.requests and time.monotonic() < deadline:
        time.sleep(0.02)
    assert upstream.requests, "instance A never asked the LLM"
    answers["b"] = client_b.post("/api/facts/extract", headers=headers)
    worker.join(timeout=30)

    assert answers["b"].status_code == 200
    assert answers["b"].json()["new_facts"] == 0
    assert "another instance" in answers["b"].json()["errors"][0]
    assert answers["a"].json()["new_facts"] == 1
    assert len(upstream.requests) == 2  # A's hung request and its retry; none from B
    facts = client_b.get("/api/facts", headers=headers).json()
    assert [f["fact"] for f in facts["facts"]] == ["Moved to Lyon last year"]
    # Nothing is left for a later run on either instance.
    assert b.extractor.queue.unprocessed_count(user.id) == 0


def test_a_document_sent_to_one_instance_is_indexed_and_polled_through_the_other(
    replicas
):
    (a, _), (client_a, client_b) = replicas
    _, token = a.stores.users.add("alice")
    headers = {"Authorization": f"Bearer {token}"}
    content = "\n\n".join(f"Hive {i} is inspected every {i + 2} days." for i in range(40))
    created = add_document(client_a, headers, {"title": "Bees", "content": content},
                           wait=False)
    job = wait_for_job(client_b, headers, created["job_id"])
    assert (job["status"], job["done"], job["total"]) == ("done", created["chunks"],
                                                          created["chunks"])
    assert a.stores.knowledge.pending_count() == 0
    found = client_b.post("/api/knowledge/search", headers=headers,
                          json={"query": "how often are hives inspected", "mode": "semantic"})
    assert found.json()["results"][0]["entry_id"] == created["id"]
