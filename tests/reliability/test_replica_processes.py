"""Two `chatsvc serve` replicas on one PostgreSQL (issue 23 item 5), real processes
with their own ports: what one indexes the other finds at once, and a job whose
replica is killed (SIGKILL) in the middle is finished by the other, resuming from
its saved progress with no chunk left without a vector and none embedded twice.
The kill is also run with two processes on one SQLite file, the way `--workers`
share it (uvicorn's own workers restart a killed one, which would blur who took
the job over)."""

from __future__ import annotations

import pytest

from chatsvc.testing import ServiceProcess, wait_for_job
from tests.chatsvc.knowledge_jobs import add_document
from tests.reliability._jobs import (
    SMALL_CHUNKS,
    document,
    embedded_again,
    job_row,
    owner_pid,
    started,
)
from tests.reliability.conftest import Replicas

LEASE_SECONDS = 2  # a dead replica's job is taken over ~2 s after it died


@pytest.fixture
def two_replicas_env() -> dict[str, str]:
    return {"CHATSVC_JOB_LEASE_SECONDS": str(LEASE_SECONDS),
            "CHATSVC_INDEX_INTERVAL": "0.5", **SMALL_CHUNKS}


def test_a_document_indexed_on_one_replica_is_found_on_the_other_at_once(two_replicas):
    with two_replicas.client(two_replicas.a) as on_a, \
            two_replicas.client(two_replicas.b) as on_b:
        created = add_document(on_a, {}, {"title": "Bees", "content": "\n\n".join(
            f"Hive {i} is inspected every {i + 2} days." for i in range(20))})
        for mode in ("keyword", "semantic", "hybrid"):
            found = on_b.post("/api/knowledge/search",
                              json={"query": "how often is hive 7 inspected", "mode": mode})
            assert found.status_code == 200, found.text
            assert found.json()["mode"] == mode, found.json()
            assert found.json()["results"][0]["entry_id"] == created["id"]
        # Bob, on the same replicas, does not see Alice's document.
        with two_replicas.client(two_replicas.b, "bob") as bob_on_b:
            assert bob_on_b.post("/api/knowledge/search",
                                 json={"query": "hive inspected"}).json()["results"] == []


def _kill_the_owner(replicas: Replicas, user_id: str, job_id: str
                    ) -> tuple[ServiceProcess, ServiceProcess]:
    """SIGKILL the replica holding the job's lease (the one sent the document nearly
    always: its write woke its indexer); (the killed, the survivor)."""
    owner = owner_pid(job_row(replicas.a, user_id, job_id))
    by_pid = {replicas.a.process.pid: (replicas.a, replicas.b),
              replicas.b.process.pid: (replicas.b, replicas.a)}
    assert owner in by_pid, (owner, list(by_pid))
    killed, survivor = by_pid[owner]
    killed.process.kill()  # no shutdown of any kind: its lease is left to lapse
    killed.process.wait(10)
    return killed, survivor


@pytest.mark.parametrize("two_replicas_backend", ["postgresql", "sqlite"])
def test_a_replica_killed_mid_job_leaves_the_job_to_the_other(two_replicas, replicas_ollama):
    replicas_ollama.mode = "slow"
    with two_replicas.client(two_replicas.a) as on_a:
        user_id = on_a.get("/api/me").json()["id"]
        created = add_document(on_a, {}, document(120), wait=False)
        started(on_a, created["job_id"])
    killed, survivor = _kill_the_owner(two_replicas, user_id, created["job_id"])
    at_kill = job_row(survivor, user_id, created["job_id"])
    sent_before = len(replicas_ollama.inputs)
    assert at_kill.status == "running" and 0 < at_kill.done < at_kill.total, at_kill
    replicas_ollama.mode = "ok"

    with two_replicas.client(survivor) as on_survivor:
        finished = wait_for_job(on_survivor, None, created["job_id"], timeout=60)
        checks = on_survivor.get("/health").json()["checks"]
    assert (finished["status"], finished["done"], finished["error"]) == (
        "done", created["chunks"], None)
    assert owner_pid(job_row(survivor, user_id, created["job_id"])) == survivor.process.pid
    assert checks["embeddings_waiting"]["counts"]["knowledge"] == 0  # every chunk has one
    assert checks["jobs"]["counts"] == {"queued": 0, "running": 0, "expired": 0}
    # The taker resumed where the saved progress ended: no chunk saved before the
    # kill was embedded again.
    assert embedded_again(survivor, replicas_ollama, entry_id=created["id"],
                          chunks=created["chunks"], saved=at_kill.done,
                          sent_before=sent_before) == set()
    assert killed.process.poll() is not None
