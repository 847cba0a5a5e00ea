"""Uploaded documents (POST /api/knowledge/upload): the request stores the file in
the database and answers at once; the indexer's `upload` job extracts, saves and
embeds it.

The request creates the entry empty, with source `upload:<new id>`: its id is the
202's `entry_id`, and the job's save replaces that same entry (by source). A job
resumed after a crash extracts again and saves the same entry ("unchanged"), then
embeds only the chunks still without a vector. Between the save and the embedding
the job asks the LLM for the entry's L0/L1 tiers, as `POST /api/knowledge/documents`
does after its response (`KnowledgeService.write_llm_tiers`): once per saved text,
and again on a resumed job whose entry has none yet; a failed or unusable answer
keeps the extractive tiers and the job goes on. A job that fails on the file (a
DocumentError) deletes the empty entry; the job's `error` says why. The entry is
pinned only once it has its text, so the prefix changes once.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import PurePosixPath

from chatsvc._settings import Settings
from chatsvc._threads import in_thread
from chatsvc.documents import DocumentError, Extracted, extract, sniff
from chatsvc.indexing import UPLOAD, Indexer
from chatsvc.knowledge import KnowledgeService
from store import Job, JobStore, Payload
from store.clock import new_id

SOURCE_PREFIX = "upload:"


@dataclass(frozen=True)
class UploadOptions:
    title: str | None = None  # None: the document's own title, else the file name
    source_type: str = "document"
    pinned: bool = False
    project_id: str | None = None


class Uploads:
    def __init__(self, settings: Settings, knowledge: KnowledgeService,
                 indexer: Indexer) -> None:
        self.settings = settings
        self.knowledge = knowledge
        self.indexer = indexer
        indexer.ingest = self.ingest

    async def accept(self, user_id: str, *, data: bytes, filename: str, content_type: str,
                     options: UploadOptions) -> Job:
        """The queued job (its `entry_id` set) for an upload already within the size limit."""
        source_id = SOURCE_PREFIX + new_id()
        saved = await self.knowledge.save(
            owner_id=user_id, title=options.title or _stem(filename), content="",
            source_type=options.source_type, source_id=source_id)
        payload = Payload(filename, content_type, data,
                          json.dumps({**asdict(options), "source_id": source_id}))
        return await self.indexer.enqueue(user_id, kind=UPLOAD, entry_id=saved.entry.id,
                                          payload=payload)

    async def ingest(self, job: Job, jobs: JobStore) -> str:
        """The upload job's first half: extract and save; the entry's id. Progress goes
        through `jobs`, the runner's lease-bound store."""
        payload = await in_thread(jobs.payload, job.id)
        if payload is None:
            raise DocumentError("the uploaded file is gone; upload it again")
        options = json.loads(payload.options)
        source_id = options.pop("source_id")
        options = UploadOptions(**options)
        try:
            doc = await in_thread(self._extract, job, payload, jobs)
        except DocumentError:
            if job.entry_id is not None:
                await in_thread(self.knowledge.knowledge.delete, job.entry_id)
            raise
        saved = await self.knowledge.save(
            owner_id=job.user_id, title=options.title or doc.title or _stem(payload.filename),
            content=doc.text, source_type=options.source_type,
            source_id=source_id, metadata={"filename": payload.filename,
                                                       "format": doc.format,
                                                       "pages": doc.pages},
            pinned=options.pinned, project_id=options.project_id)
        if self.knowledge.wants_llm_tiers(saved):
            await self.knowledge.write_llm_tiers(saved.entry.id, saved.entry.content_hash)
        return saved.entry.id

    def _extract(self, job: Job, payload: Payload, jobs: JobStore) -> Extracted:
        kind = sniff(payload.data, payload.filename, payload.content_type)
        return extract(payload.data, kind, max_bytes=self.settings.upload_max_bytes,
                       max_pages=self.settings.upload_max_pages,
                       progress=lambda done, total: jobs.progress(job.id, done, total=total))


def _stem(filename: str) -> str:
    return PurePosixPath(filename.replace("\\", "/")).name or "upload"
