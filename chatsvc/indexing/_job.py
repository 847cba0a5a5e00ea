"""Running one job: `RUNNERS` maps each job kind to the coroutine that does it.

Knowledge jobs embed an entry's chunks, moving the job's `done` as they go:
`index` embeds the chunks without a current vector, `reindex` every chunk. Both
walk the entry's chunks in order from the job's `done`, so a job resumed after
a crash picks up where its last saved batch ended. An `upload` job first turns
its stored file into the entry (`Work.ingest`, progress over PDF pages), then
embeds like `index`. The embedder being down sends the job back to the queue
with the reason (it resumes when the embedder is back); anything that will not
get better by waiting ends it in `error`, a DocumentError with its own text.
A runner whose lease ran out (LeaseLost: another process took the job over)
stops at its next write and leaves the job to the taker.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, replace

from chatsvc._errors import EmbeddingError, EmbeddingUnavailable
from chatsvc._threads import in_thread
from chatsvc.documents import DocumentError
from store import Job, JobStore, KnowledgeStore, LeaseLost, NotFound, VectorUnavailable

log = logging.getLogger("chatsvc.indexing")

INDEX, REINDEX, UPLOAD = "index", "reindex", "upload"
JOB_BATCH = 16  # chunks per progress step

EmbedMany = Callable[[list[str]], Awaitable[list[list[float]]]]
# An upload job and the jobs as its runner writes them -> the id of its saved entry.
Ingest = Callable[[Job, JobStore], Awaitable[str]]


@dataclass(frozen=True)
class Work:
    """What a runner works with."""

    jobs: JobStore
    knowledge: KnowledgeStore
    embed: EmbedMany
    ingest: Ingest | None = None  # chatsvc.uploads, once the app wired it


Runner = Callable[[Job, Work], Awaitable[Job]]


class EmbedderDown(Exception):
    """The job went back to the queue: retry when the embedder answers again."""


async def run_job(job: Job, work: Work) -> Job:
    """Run `job` to `done` or `error`; EmbedderDown when it was deferred instead."""
    runner = RUNNERS.get(job.kind)
    if runner is None:
        return await in_thread(work.jobs.finish, job.id, error=f"unknown job kind {job.kind!r}")
    try:
        return await runner(job, work)
    except LeaseLost as exc:
        log.warning("indexing job %s left to its new owner: %s", job.id, exc)
        return await in_thread(work.jobs.get, job.user_id, job.id)
    except EmbeddingUnavailable as exc:
        await in_thread(work.jobs.defer, job.id, f"waiting for the embedding service: {exc}")
        raise EmbedderDown(str(exc)) from None
    except DocumentError as exc:
        reason = str(exc)
    except NotFound:
        reason = "the knowledge entry was deleted"
    except VectorUnavailable as exc:
        reason = f"vector store unavailable: {exc.reason}"
    except EmbeddingError as exc:
        reason = f"the embedding service failed: {exc}"
    except Exception as exc:  # a bug must end the job, not loop on it forever
        log.exception("indexing job %s failed", job.id)
        reason = f"internal error ({type(exc).__name__}); see the server log"
    return await in_thread(work.jobs.finish, job.id, error=reason)


async def embed_chunks(knowledge: KnowledgeStore, embed: EmbedMany, entry_id: str, *,
                       start: int = 0, every: bool = False) -> AsyncIterator[int]:
    """Embed the entry's chunks in order from `start`, those without a current vector (or
    `every` one), yielding how many are done after each batch: a job's `done` (the CLI
    shows the same count)."""
    done = start
    while batch := await in_thread(knowledge.entry_chunks, entry_id, offset=done,
                                   limit=JOB_BATCH):
        todo = [chunk for chunk, current in batch if every or not current]
        if todo:
            vectors = await embed([chunk.text for chunk in todo])
            await in_thread(knowledge.save_embeddings, list(zip(todo, vectors, strict=True)))
        done += len(batch)
        yield done


async def _embed_entry(job: Job, work: Work) -> Job:
    if job.entry_id is None:
        raise NotFound(f"job {job.id} has no entry")
    entry = await in_thread(work.knowledge.read, job.entry_id)
    await in_thread(work.jobs.start, job.id, total=entry.chunks)
    async for done in embed_chunks(work.knowledge, work.embed, entry.id, start=job.done,
                                   every=job.kind == REINDEX):
        await in_thread(work.jobs.progress, job.id, done)
    return await in_thread(work.jobs.finish, job.id)


async def _upload(job: Job, work: Work) -> Job:
    if work.ingest is None:
        raise RuntimeError("upload jobs need Work.ingest")
    entry_id = await work.ingest(job, work.jobs)
    # Chunks from the start: `done` counted pages so far.
    await in_thread(work.jobs.progress, job.id, 0)
    return await _embed_entry(replace(job, entry_id=entry_id, done=0), work)


RUNNERS: dict[str, Runner] = {INDEX: _embed_entry, REINDEX: _embed_entry, UPLOAD: _upload}
KINDS = tuple(RUNNERS)
