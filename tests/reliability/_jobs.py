"""Indexing jobs killed in the middle (test_indexing, test_replicas_pg): a document of
many small chunks, the process that holds a job's lease, and what was embedded after."""

from __future__ import annotations

import time

import httpx

from chatsvc.testing import ServiceProcess
from store import Job, Jobs, Knowledge
from tests.reliability.ollama_server import OllamaServer

# Small chunks: a document of a hundred paragraphs makes a job of a hundred chunks.
SMALL_CHUNKS = {"CHATSVC_CHUNK_MAX_CHARS": "150", "CHATSVC_CHUNK_OVERLAP_CHARS": "10"}


def document(paragraphs: int) -> dict:
    return {"title": "Runbook", "content": "\n\n".join(
        f"Step {i}: drain node {i}, roll the service, then watch queue {i}."
        for i in range(paragraphs))}


def started(http: httpx.Client, job_id: str, *, timeout: float = 30) -> dict:
    """The job once its first batch of chunks is saved (`done` > 0)."""
    deadline = time.monotonic() + timeout
    while (job := http.get(f"/api/knowledge/jobs/{job_id}").json())["done"] == 0:
        assert time.monotonic() < deadline, job
        time.sleep(0.02)
    return job


def job_row(service: ServiceProcess, user_id: str, job_id: str) -> Job:
    """The job as stored, with its lease (`owner`, `lease_until`)."""
    with service.database() as db:
        return Jobs(db).get(user_id, job_id)


def owner_pid(job: Job) -> int:
    return int(job.owner.split(":")[1])  # chatsvc._instance.process_owner: host:pid:random


def embedded_again(service: ServiceProcess, ollama: OllamaServer, *, entry_id: str,
                   chunks: int, saved: int, sent_before: int) -> set[str]:
    """Texts embedded after request number `sent_before` that are not among the
    entry's chunks after the first `saved` (which a job that resumed from its saved
    progress may embed): empty when nothing was embedded twice."""
    with service.database() as db:
        texts = [job.text for job, _ in Knowledge(db).entry_chunks(entry_id, offset=0,
                                                                   limit=chunks)]
    prefix = service.settings.embed_document_prefix  # the model's, sent before each text
    after = {text.removeprefix(prefix)
             for request in ollama.inputs[sent_before:] for text in request}
    assert after, "nothing was embedded after the kill"
    return after - set(texts[saved:])
