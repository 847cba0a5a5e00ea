"""Job leases on both backends: each job is claimed by one process at a time, its
owner's writes need the lease, and a lapsed lease lets another process take over.
A negative lease is one that ran out already (no sleeping in tests)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from store import ChunkIn, LeaseLost, QueueDepth
from store.backend import stores_for

LAPSED = -1.0


@pytest.fixture
def alice(users):
    return users.add("alice")[0]


def test_a_claim_takes_the_oldest_free_job_for_one_owner(stores, alice):
    first = stores.jobs.create(alice.id, kind="index")
    second = stores.jobs.create(alice.id, kind="index")
    claimed = stores.jobs.claim("a", lease_seconds=30)
    assert (claimed.id, claimed.owner) == (first.id, "a")
    assert stores.jobs.claim("b", lease_seconds=30).id == second.id
    assert stores.jobs.claim("c", lease_seconds=30) is None  # both held
    assert stores.jobs.depth().running == 2


def test_a_lapsed_lease_is_taken_over_and_the_old_owner_can_no_longer_write(stores, alice):
    job = stores.jobs.create(alice.id, kind="index")
    stores.jobs.claim("a", lease_seconds=LAPSED)
    stores.jobs.bound("a").start(job.id, total=10)
    stores.jobs.bound("a").progress(job.id, 4)
    assert stores.jobs.depth().expired == 1

    taken = stores.jobs.claim("b", lease_seconds=30)
    assert (taken.id, taken.owner, taken.status, taken.done) == (job.id, "b", "running", 4)
    with pytest.raises(LeaseLost):
        stores.jobs.bound("a").progress(job.id, 6)
    with pytest.raises(LeaseLost):
        stores.jobs.bound("a").finish(job.id)
    assert not stores.jobs.renew(job.id, "a", lease_seconds=30)
    assert stores.jobs.renew(job.id, "b", lease_seconds=30)
    done = stores.jobs.bound("b").finish(job.id)
    assert (done.status, done.done, done.owner) == ("done", 10, "b")
    assert stores.jobs.claim("c", lease_seconds=30) is None
    assert stores.jobs.depth() == QueueDepth(0, 0, 0)


def test_a_deferred_job_is_free_for_any_process_with_its_progress(stores, alice):
    job = stores.jobs.create(alice.id, kind="index")
    stores.jobs.claim("a", lease_seconds=30)
    stores.jobs.bound("a").start(job.id, total=5)
    stores.jobs.bound("a").progress(job.id, 2)
    waiting = stores.jobs.bound("a").defer(job.id, "waiting for the embedder")
    assert (waiting.status, waiting.owner, waiting.done) == ("queued", None, 2)
    assert stores.jobs.depth() == QueueDepth(1, 0, 0)
    assert stores.jobs.claim("b", lease_seconds=30).id == job.id


def test_concurrent_claims_on_two_handles_give_each_job_once(open_db, alice):
    one = stores_for(open_db())
    created = {one.jobs.create(alice.id, kind="index").id for _ in range(30)}
    handles = [one, stores_for(open_db())]

    def drain(index: int) -> list[str]:
        claimed = []
        while job := handles[index].jobs.claim(f"owner{index}", lease_seconds=30):
            claimed.append(job.id)
        return claimed

    with ThreadPoolExecutor(2) as pool:
        first, second = pool.map(drain, range(2))
    assert sorted(first + second) == sorted(created)  # none twice, none left


def test_the_backfill_leaves_the_chunks_of_an_entry_with_an_unfinished_job(stores, alice):
    saved = stores.knowledge.save(
        owner_id=alice.id, title="Doc", content="two chunks", source_type="document",
        chunks=[ChunkIn("chunk one", "en"), ChunkIn("chunk two", "en")])
    job = stores.jobs.create(alice.id, kind="index", entry_id=saved.entry.id)
    stores.jobs.claim("a", lease_seconds=LAPSED)  # even while its lease waits for a taker
    assert stores.knowledge.unembedded(limit=10) == []
    assert stores.knowledge.pending_count() == 2  # still counted as waiting
    stores.jobs.finish(job.id, error="the embedding service failed")
    assert len(stores.knowledge.unembedded(limit=10)) == 2  # the sweep's again
