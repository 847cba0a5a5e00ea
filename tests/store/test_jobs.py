"""The job store and the per-entry progress the indexer reads, on both backends."""

import numpy as np
import pytest

from store import ChunkIn, NotFound, Payload


@pytest.fixture
def people(users):
    return users.add("alice")[0], users.add("bob")[0]


def _entry(stores, owner, chunks: int):
    return stores.knowledge.save(
        owner_id=owner.id, title="Doc", content=f"{chunks} chunks", source_type="document",
        chunks=[ChunkIn(f"chunk {i}", "en") for i in range(chunks)])


def test_a_job_goes_queued_running_done_with_progress(stores, people):
    alice, _ = people
    saved = _entry(stores, alice, 3)
    job = stores.jobs.create(alice.id, kind="index", entry_id=saved.entry.id, total=3)
    assert (job.status, job.done, job.total, job.entry_id, job.error) == (
        "queued", 0, 3, saved.entry.id, None)
    assert stores.jobs.depth().queued == 1
    stores.jobs.start(job.id, total=3)
    stores.jobs.progress(job.id, 2)
    running = stores.jobs.get(alice.id, job.id)
    assert (running.status, running.done) == ("running", 2)
    assert stores.jobs.claim("a", lease_seconds=30).id == job.id  # resumable after a crash
    done = stores.jobs.finish(job.id)
    assert (done.status, done.done, done.error) == ("done", 3, None)
    assert stores.jobs.claim("b", lease_seconds=30) is None


def test_deferred_jobs_wait_with_a_reason_and_failed_ones_say_why(stores, people):
    alice, _ = people
    first = stores.jobs.create(alice.id, kind="index")
    second = stores.jobs.create(alice.id, kind="index")
    stores.jobs.start(first.id, total=5)
    stores.jobs.progress(first.id, 2)
    waiting = stores.jobs.defer(first.id, "waiting for the embedder: refused")
    assert (waiting.status, waiting.done, waiting.error) == (
        "queued", 2, "waiting for the embedder: refused")
    assert stores.jobs.start(first.id, total=5).error is None
    failed = stores.jobs.finish(second.id, error="the entry was deleted")
    assert (failed.status, failed.error) == ("error", "the entry was deleted")
    assert stores.jobs.claim("a", lease_seconds=30).id == first.id
    assert stores.jobs.claim("b", lease_seconds=30) is None


def test_another_users_job_is_not_found(stores, people):
    alice, bob = people
    job = stores.jobs.create(alice.id, kind="index")
    with pytest.raises(NotFound):
        stores.jobs.get(bob.id, job.id)
    with pytest.raises(NotFound):
        stores.jobs.get(alice.id, "missing")


def test_recent_lists_a_users_own_jobs_newest_first(stores, people):
    alice, bob = people
    first = stores.jobs.create(alice.id, kind="index")
    stores.jobs.create(bob.id, kind="index")
    second = stores.jobs.create(alice.id, kind="upload")
    stores.jobs.finish(first.id)
    assert [j.id for j in stores.jobs.recent(alice.id, limit=10)] == [second.id, first.id]
    assert [j.id for j in stores.jobs.recent(alice.id, limit=1)] == [second.id]


def test_deleting_the_entry_leaves_the_job_without_it(stores, people):
    alice, _ = people
    saved = _entry(stores, alice, 1)
    job = stores.jobs.create(alice.id, kind="index", entry_id=saved.entry.id)
    stores.knowledge.delete(saved.entry.id)
    assert stores.jobs.get(alice.id, job.id).entry_id is None


def test_entry_chunks_walk_in_order_with_their_vector_state(stores, people):
    alice, _ = people
    saved = _entry(stores, alice, 3)
    other = _entry(stores, alice, 2)
    knowledge = stores.knowledge
    vector = np.ones(8).tolist()
    knowledge.save_embeddings([(saved.jobs[1], vector)])
    walked = knowledge.entry_chunks(saved.entry.id, offset=0, limit=10)
    assert [job.row_id for job, _ in walked] == [job.row_id for job in saved.jobs]
    assert [current for _, current in walked] == [False, True, False]
    assert [j.row_id for j, _ in knowledge.entry_chunks(saved.entry.id, offset=2, limit=10)
            ] == [saved.jobs[2].row_id]
    assert knowledge.pending_count(saved.entry.id) == 2
    assert knowledge.pending_count(other.entry.id) == 2
    assert knowledge.pending_count() == 4


def test_every_reindexable_store_counts_what_waits(stores, people):
    alice, _ = people
    stores.facts.create(alice.id, category="core", fact="Likes tea")
    stores.memories.create(alice.id, type="preference", scope="global", content="Be brief")
    _entry(stores, alice, 2)
    assert (stores.facts.pending_count(), stores.memories.pending_count(),
            stores.knowledge.pending_count()) == (1, 1, 2)


def test_prune_deletes_only_jobs_that_ended_before_the_cutoff(stores, people):
    alice, _ = people
    done, failed, queued = (stores.jobs.create(alice.id, kind="index") for _ in range(3))
    stores.jobs.finish(done.id)
    stores.jobs.finish(failed.id, error="broken")
    assert stores.jobs.prune(finished_before="2000-01-01T00:00:00.000000Z") == 0
    assert stores.jobs.prune(finished_before="2999-01-01T00:00:00.000000Z") == 2
    assert stores.jobs.claim("a", lease_seconds=30).id == queued.id
    with pytest.raises(NotFound):
        stores.jobs.get(alice.id, done.id)


def test_an_upload_payload_is_kept_until_the_job_ends(stores, people):
    alice, _ = people
    data = bytes(range(256)) * 4  # every byte value: binary-safe on both backends
    payload = Payload("a.pdf", "application/pdf", data, '{"x": 1}')
    kept = stores.jobs.create(alice.id, kind="upload", payload=payload)
    failed = stores.jobs.create(alice.id, kind="upload", payload=payload)
    stores.jobs.start(kept.id, total=2)  # a crash here: the payload is still there
    assert stores.jobs.payload(kept.id) == payload
    stores.jobs.finish(kept.id)
    stores.jobs.finish(failed.id, error="no text")
    assert (stores.jobs.payload(kept.id), stores.jobs.payload(failed.id)) == (None, None)
