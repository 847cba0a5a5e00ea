"""Documents are embedded by a background job the client can poll (issue 18 item 8)."""

import time

import anyio
from litestar.testing import TestClient

from chatsvc import create_app
from chatsvc.testing import wait_for_job
from tests.chatsvc.knowledge_jobs import add_document

JOB_FIELDS = {"id", "status", "done", "total", "entry_id", "error"}


def _paragraphs(count: int) -> str:
    return "\n\n".join(f"Paragraph {i} says the rota for team {i} changes on day {i}."
                       for i in range(count))


def test_a_document_answers_202_and_its_job_shows_progress_to_done(small_chunks):
    _user, token = small_chunks.stores.users.add("alice")
    headers = {"Authorization": f"Bearer {token}"}
    with TestClient(create_app(services=small_chunks)) as client:
        # Let the start-up pass end first: a backfill running when the document lands
        # would embed its chunks before the job, which then has no progress to show.
        while small_chunks.indexer.busy:
            time.sleep(0.01)
        # Enough chunks that the job runs for seconds: with the bulk engine on every core,
        # 40 were embedded before a slower answer to the POST had come back.
        body = add_document(client, headers, {"title": "Rota", "content": _paragraphs(150)},
                            wait=False)
        assert set(body) == {"id", "chunks", "status", "pinned", "job_id"}
        assert body["chunks"] >= 100
        seen = []
        while not seen or seen[-1]["status"] not in ("done", "error"):
            job = client.get(f"/api/knowledge/jobs/{body['job_id']}", headers=headers).json()
            seen.append(job)
            time.sleep(0.01)
    assert set(seen[-1]) == JOB_FIELDS
    assert seen[-1] | {"id": None} == {"id": None, "status": "done", "done": body["chunks"],
                                       "total": body["chunks"], "entry_id": body["id"],
                                       "error": None}
    progress = {job["done"] for job in seen if job["status"] == "running"}
    assert any(0 < done < body["chunks"] for done in progress), seen
    assert small_chunks.stores.knowledge.pending_count() == 0


def test_jobs_are_private_and_unknown_ones_404(client, alice, bob):
    _, alice_headers = alice
    _, bob_headers = bob
    body = add_document(client, alice_headers, {"title": "Notes", "content": "Private."})
    url = f"/api/knowledge/jobs/{body['job_id']}"
    assert client.get(url, headers=alice_headers).json()["status"] == "done"
    for path, headers in ((url, bob_headers), ("/api/knowledge/jobs/nope", alice_headers)):
        response = client.get(path, headers=headers)
        assert response.status_code == 404 and response.json()["detail"] == "not found"


def test_the_job_list_is_the_callers_newest_first(client, alice, bob):
    _, headers = alice
    first = add_document(client, headers, {"title": "One", "content": "First."})
    second = add_document(client, headers, {"title": "Two", "content": "Second."}, wait=False)
    listed = client.get("/api/knowledge/jobs", headers=headers).json()["jobs"]
    assert [job["id"] for job in listed] == [second["job_id"], first["job_id"]]
    assert all(set(job) == JOB_FIELDS for job in listed)
    assert listed[1]["status"] == "done"
    one = client.get("/api/knowledge/jobs", headers=headers, params={"limit": 1}).json()
    assert [job["id"] for job in one["jobs"]] == [second["job_id"]]
    assert client.get("/api/knowledge/jobs", headers=bob[1]).json() == {"jobs": []}
    for limit in (0, 101):
        assert client.get("/api/knowledge/jobs", headers=headers,
                          params={"limit": limit}).status_code == 400


def test_resending_a_document_whose_chunks_lack_vectors_embeds_them(client, services, alice):
    user, headers = alice
    document = {"title": "Runbook", "content": "Restart the worker, then check the queue."}
    # What a crash mid-upload left: the entry and its chunks, no vectors.
    saved = anyio.run(lambda: services.knowledge.save(owner_id=user.id, source_type="document",
                                                      **document))
    assert services.stores.knowledge.pending_count(saved.entry.id) == 1
    body = add_document(client, headers, document)
    assert (body["status"], body["id"]) == ("unchanged", saved.entry.id)
    assert services.stores.knowledge.pending_count(saved.entry.id) == 0


def test_reindex_answers_202_with_a_job_and_follows_the_delete_rules(
    client, services, alice, bob, admin
):
    _, alice_headers = alice
    _, bob_headers = bob
    _, admin_headers = admin
    entry_id = add_document(client, alice_headers, {"title": "A", "content": "Alpha."})["id"]
    response = client.post(f"/api/knowledge/{entry_id}/reindex", headers=alice_headers)
    assert response.status_code == 202 and set(response.json()) == JOB_FIELDS
    job = wait_for_job(client, alice_headers, response.json()["id"])
    assert (job["status"], job["done"], job["total"], job["entry_id"]) == ("done", 1, 1,
                                                                            entry_id)
    assert client.post(f"/api/knowledge/{entry_id}/reindex",
                       headers=bob_headers).status_code == 404
    shared = anyio.run(lambda: services.knowledge.save(
        owner_id=None, title="Handbook", content="Shared.", source_type="document"))
    url = f"/api/knowledge/{shared.entry.id}/reindex"
    forbidden = client.post(url, headers=alice_headers)
    assert forbidden.status_code == 403 and "reindexed by admins" in forbidden.json()["detail"]
    assert client.post(url, headers=admin_headers).status_code == 202


def test_jobs_that_cannot_run_fail_saying_why(services, alice):
    user, headers = alice
    saved = anyio.run(lambda: services.knowledge.save(
        owner_id=user.id, title="Gone", content="Soon deleted.", source_type="document"))
    deleted = services.stores.jobs.create(user.id, kind="index", entry_id=saved.entry.id)
    services.stores.knowledge.delete(saved.entry.id)
    unknown = services.stores.jobs.create(user.id, kind="transcode")
    with TestClient(create_app(services=services)) as client:
        failed = [wait_for_job(client, headers, job.id) for job in (deleted, unknown)]
    assert [(job["status"], job["error"]) for job in failed] == [
        ("error", "the knowledge entry was deleted"), ("error", "unknown job kind 'transcode'")]
