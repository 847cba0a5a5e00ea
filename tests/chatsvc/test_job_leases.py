"""The indexer keeps the lease of the job it runs: a job that outlasts its lease many
times over is never free for another process to claim while it runs (the real local
embedder, a lease of 0.3 s)."""

import time

import pytest
from litestar.testing import TestClient

from chatsvc import Services, Settings, create_app
from tests.chatsvc.knowledge_jobs import add_document

LEASE_SECONDS = 0.3


@pytest.fixture
def short_lease(monkeypatch, local_embedder):
    monkeypatch.setenv("CHATSVC_JOB_LEASE_SECONDS", str(LEASE_SECONDS))
    monkeypatch.setenv("CHATSVC_CHUNK_MAX_CHARS", "120")
    monkeypatch.setenv("CHATSVC_CHUNK_OVERLAP_CHARS", "10")
    opened = Services.open(Settings.from_env(), embedder=local_embedder)
    yield opened
    opened.stores.db.close()


def test_a_running_job_keeps_its_lease_until_it_ends(short_lease):
    jobs = short_lease.stores.jobs
    user, token = short_lease.stores.users.add("alice")
    headers = {"Authorization": f"Bearer {token}"}
    content = "\n\n".join(f"Paragraph {i} says the rota for team {i} changes on day {i}."
                          for i in range(120))
    with TestClient(create_app(services=short_lease)) as client:
        body = add_document(client, headers, {"title": "Rota", "content": content},
                            wait=False)
        started = time.monotonic()
        polls = 0
        # Another process's claims, all the while the job runs: none may succeed.
        while (job := jobs.get(user.id, body["job_id"])).status not in ("done", "error"):
            assert jobs.claim("another-process", lease_seconds=60) is None, job
            polls += 1
            time.sleep(LEASE_SECONDS / 4)
        ran = time.monotonic() - started
    assert job.status == "done" and job.owner == short_lease.indexer.owner, job
    assert ran > 3 * LEASE_SECONDS and polls > 10, (ran, polls)  # it outlasted the lease
