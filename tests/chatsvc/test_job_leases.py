"""The indexer keeps the lease of the job it runs: a job that outlasts its lease many
times over is never free for another process to claim while it runs (the real local
embedder, a lease of 1 s, renewed every third of it); a runner whose lease was taken
over stops at its first write and leaves the job to the taker."""

import time

import anyio
import pytest
from litestar.testing import TestClient

from chatsvc import create_app
from chatsvc.indexing import INDEX
from chatsvc.indexing._job import Work, run_job
from store import ChunkIn
from tests.chatsvc.knowledge_jobs import add_document

# Short, but with room for a renewal delayed by a loaded machine (0.3 s was not: seen
# once at a load average of 13 on 2 cores).
LEASE_SECONDS = 1.0


@pytest.fixture
def short_lease(monkeypatch, request):
    """`small_chunks`' services with a lease a test can outlast."""
    monkeypatch.setenv("CHATSVC_JOB_LEASE_SECONDS", str(LEASE_SECONDS))
    return request.getfixturevalue("small_chunks")


def test_a_running_job_keeps_its_lease_until_it_ends(short_lease):
    jobs = short_lease.stores.jobs
    user, token = short_lease.stores.users.add("alice")
    headers = {"Authorization": f"Bearer {token}"}
    content = "\n\n".join(f"Paragraph {i} says the rota for team {i} changes on day {i}."
                          for i in range(240))
    with TestClient(create_app(services=short_lease)) as client:
        body = add_document(client, headers, {"title": "Rota", "content": content},
                            wait=False)
        started = time.monotonic()
        # Until the indexer claims it the job is queued, and anyone may claim it (on a
        # loaded machine the first poll can come before the indexer's claim).
        while jobs.get(user.id, body["job_id"]).status == "queued":
            assert time.monotonic() - started < 30, "the indexer never claimed the job"
            time.sleep(0.01)
        polls = 0
        # Another process's claims, all the while the job runs: none may succeed.
        while (job := jobs.get(user.id, body["job_id"])).status not in ("done", "error"):
            assert jobs.claim("another-process", lease_seconds=60) is None, job
            polls += 1
            time.sleep(LEASE_SECONDS / 4)
        ran = time.monotonic() - started
    assert job.status == "done" and job.owner == short_lease.indexer.owner, job
    assert ran > 2 * LEASE_SECONDS and polls > 8, (ran, polls)  # it outlasted the lease


def test_a_runner_that_lost_its_lease_leaves_the_job_to_the_taker(services):
    user, _ = services.stores.users.add("alice")
    jobs, knowledge = services.stores.jobs, services.stores.knowledge
    saved = knowledge.save(owner_id=user.id, title="Doc", content="forty chunks",
                           source_type="document",
                           chunks=[ChunkIn(f"chunk {i}", "en") for i in range(40)])
    job = jobs.create(user.id, kind=INDEX, entry_id=saved.entry.id)
    claimed = jobs.claim("stalled", lease_seconds=-1)  # its lease lapsed at once...
    assert jobs.claim("taker", lease_seconds=60).id == job.id  # ...and was taken over
    work = Work(jobs.bound("stalled"), knowledge, services.embedder.embed_bulk)
    left = anyio.run(run_job, claimed, work)
    assert (left.status, left.owner, left.done, left.error) == ("queued", "taker", 0, None)
    assert knowledge.pending_count(saved.entry.id) == 40  # the stalled runner embedded none


def test_a_second_app_on_the_same_services_is_refused_while_the_first_runs(services):
    """Two lifespans on two event loops would trade the indexer's wake-up event (seen as
    a shutdown crash in CI); the second one is told to open its own services."""
    with TestClient(create_app(services=services)), \
            pytest.raises(BaseExceptionGroup) as refused, \
            TestClient(create_app(services=services)):
        pass
    assert refused.group_contains(RuntimeError, match="one Services per app")
    with TestClient(create_app(services=services)) as again:  # one after the other is fine
        assert again.get("/health").status_code == 200
