"""Knowledge base routes: add documents (indexed by a background job), list and poll
jobs, search, browse, read (L2), pin, reindex, delete."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from litestar import Request, Response, Router, delete, get, patch, post
from litestar.background_tasks import BackgroundTask
from litestar.di import NamedDependency
from litestar.exceptions import PermissionDeniedException
from litestar.params import FromPath, FromQuery, JSONBody

from chatsvc._settings import Settings
from chatsvc._threads import in_thread
from chatsvc.knowledge import KnowledgeService, snippet
from chatsvc.memory import MAX_PROJECT_ID_CHARS
from chatsvc.routes import _validate as check
from chatsvc.routes._upload import upload
from store import Entry, Hit, Job, JobStore, KnowledgeStore
from store.fts import first_hit

MAX_TITLE = 500
MAX_QUERY = 2000
MAX_SOURCE_ID = 1000


@dataclass
class DocumentIn:
    title: str
    content: str
    source_type: str = "document"
    source_id: str | None = None
    metadata: dict[str, Any] | None = None
    pinned: bool = False
    project_id: str | None = None  # pinned into this project's conversations only


@dataclass
class PinIn:
    pinned: bool
    project_id: str | None = None
    scope: Literal["user", "global"] = "user"  # global: a shared entry, for everyone


@dataclass
class SearchIn:
    query: str
    mode: Literal["hybrid", "semantic", "keyword"] = "hybrid"
    limit: int = 10
    source_type: str | None = None


def entry_summary(entry: Entry) -> dict:
    return {
        "id": entry.id, "title": entry.title, "source_type": entry.source_type,
        "source_id": entry.source_id, "abstract": entry.abstract, "overview": entry.overview,
        "chunks": entry.chunks, "shared": entry.owner_id is None,
        "created_at": entry.created_at, "updated_at": entry.updated_at,
        "pinned": entry.pinned_at is not None, "pinned_at": entry.pinned_at,
        "project_id": entry.pinned_project_id,
    }


def entry_full(entry: Entry) -> dict:
    return {**entry_summary(entry), "content": entry.content, "metadata": entry.metadata,
            "tiers_by": entry.tiers_by}


def hit_json(hit: Hit, query: str) -> dict:
    return {
        "id": hit.chunk_id, "entry_id": hit.entry_id, "title": hit.title,
        "source_type": hit.source_type, "source_id": hit.source_id,
        "chunk_index": hit.chunk_index, "abstract": hit.abstract, "overview": hit.overview,
        "snippet": snippet(hit.text, first_hit(hit.text, query)), "score": hit.score,
    }


@post("/documents", summary="Add a document", status_code=202)
async def add_document(
    request: Request, knowledge: NamedDependency[KnowledgeService],
    settings: NamedDependency[Settings], data: JSONBody[DocumentIn],
) -> Response:
    await check.strict_scalars(request, DocumentIn)
    title = check.text("title", data.title, max_chars=MAX_TITLE).strip()
    content = check.text("content", data.content, max_chars=settings.max_body_bytes)
    check.source_type(data.source_type)
    if data.source_id is not None:
        check.text("source_id", data.source_id, max_chars=MAX_SOURCE_ID)
    saved, job = await knowledge.submit(
        request.user.id, title=title, content=content, source_type=data.source_type,
        source_id=data.source_id, metadata=data.metadata,
        pinned=data.pinned, project_id=_pin_project(data.pinned, data.project_id),
    )
    background = None
    if knowledge.wants_llm_tiers(saved):
        background = BackgroundTask(
            knowledge.write_llm_tiers, saved.entry.id, saved.entry.content_hash
        )
    body = {"id": saved.entry.id, "chunks": saved.entry.chunks, "status": saved.status,
            "pinned": saved.entry.pinned_at is not None, "job_id": job.id}
    # 202: stored and searchable by keyword now; vectors follow in the job.
    return Response(body, status_code=202, background=background)


def job_json(job: Job) -> dict:
    return {"id": job.id, "status": job.status, "done": job.done, "total": job.total,
            "entry_id": job.entry_id, "error": job.error}


@get("/jobs", summary="The caller's indexing jobs, newest first")
async def list_jobs(request: Request, jobs: NamedDependency[JobStore],
                    limit: FromQuery[int] = 20) -> dict:
    check.bounded("limit", limit, 1, 100)
    return {"jobs": [job_json(job) for job in
                     await in_thread(jobs.recent, request.user.id, limit=limit)]}


@get("/jobs/{job_id:str}", summary="An indexing job's progress")
async def get_job(request: Request, jobs: NamedDependency[JobStore], job_id: FromPath[str]
                  ) -> dict:
    return job_json(await in_thread(jobs.get, request.user.id, job_id))


@post("/{entry_id:str}/reindex", summary="Embed an entry's chunks again", status_code=202)
async def reindex(
    request: Request, knowledge: NamedDependency[KnowledgeService],
    knowledge_store: NamedDependency[KnowledgeStore], entry_id: FromPath[str],
) -> dict:
    await _writable(request, knowledge_store, entry_id, "reindexed")
    return job_json(await knowledge.reindex(request.user.id, entry_id))


@post("/search", summary="Search the knowledge base", status_code=200)
async def search(
    request: Request, knowledge: NamedDependency[KnowledgeService], data: JSONBody[SearchIn]
) -> dict:
    await check.strict_scalars(request, SearchIn)
    query = check.text("query", data.query, max_chars=MAX_QUERY)
    check.bounded("limit", data.limit, 1, 50)
    check.source_type(data.source_type)
    result = await knowledge.search(request.user.id, query, mode=data.mode, limit=data.limit,
                                    source_type=data.source_type)
    return {"mode": result.mode, "degraded_reason": result.degraded_reason,
            "results": [hit_json(hit, query) for hit in result.hits]}


@get(summary="Browse entries")
async def list_entries(
    request: Request,
    knowledge_store: NamedDependency[KnowledgeStore], source_type: FromQuery[str | None] = None,
    pinned: FromQuery[bool | None] = None, limit: FromQuery[int] = 50, offset: FromQuery[int] = 0,
) -> dict:
    check.source_type(source_type)
    check.bounded("limit", limit, 1, 200)
    check.bounded("offset", offset, 0, check.MAX_OFFSET)
    entries, total = await in_thread(
        knowledge_store.list, viewer_id=request.user.id, source_type=source_type,
        pinned=pinned, limit=limit, offset=offset,
    )
    return {"entries": [entry_summary(e) for e in entries], "total": total}


@get("/stats", summary="Counts by source type")
async def stats(request: Request, knowledge_store: NamedDependency[KnowledgeStore]) -> dict:
    return await in_thread(knowledge_store.stats, viewer_id=request.user.id)


@get("/{entry_id:str}", summary="One entry with its full content (L2)")
async def get_entry(
    request: Request, knowledge_store: NamedDependency[KnowledgeStore], entry_id: FromPath[str]
) -> dict:
    entry = await in_thread(knowledge_store.get, entry_id, viewer_id=request.user.id)
    return entry_full(entry)


def _pin_project(pinned: bool, project_id: str | None) -> str | None:
    if project_id is not None:
        if not pinned:
            raise check.bad("project_id", 'is only allowed with "pinned": true')
        check.text("project_id", project_id, max_chars=MAX_PROJECT_ID_CHARS)
    return project_id


def _pin_owner(request: Request, entry: Entry, data: PinIn) -> str | None:
    """The owner the pin is set for: the user's own entry, or a shared one for everyone."""
    if entry.owner_id is not None:
        if data.scope == "global":
            raise check.bad("scope", "only shared entries are pinned for everyone; "
                                     'leave it out (or "user") for your own')
        return entry.owner_id
    if not request.user.is_admin:
        raise PermissionDeniedException("shared entries can be pinned by admins only")
    if data.pinned and (data.scope != "global" or data.project_id is not None):
        raise check.bad("scope", 'a shared entry is pinned for every user: send "scope": '
                                 '"global" and no project_id')
    return None


@patch("/{entry_id:str}", summary="Pin or unpin an entry")
async def set_pin(
    request: Request, knowledge_store: NamedDependency[KnowledgeStore], entry_id: FromPath[str],
    data: JSONBody[PinIn],
) -> dict:
    await check.strict_scalars(request, PinIn)
    project_id = _pin_project(data.pinned, data.project_id)
    entry = await in_thread(knowledge_store.get, entry_id, viewer_id=request.user.id)
    owner_id = _pin_owner(request, entry, data)
    if data.pinned:
        entry = await in_thread(knowledge_store.pin, entry_id, owner_id=owner_id,
                                project_id=project_id)
    else:
        entry = await in_thread(knowledge_store.unpin, entry_id, owner_id=owner_id)
    return entry_summary(entry)


@delete("/{entry_id:str}", summary="Delete an entry")
async def delete_entry(
    request: Request, knowledge_store: NamedDependency[KnowledgeStore], entry_id: FromPath[str]
) -> None:
    await _writable(request, knowledge_store, entry_id, "deleted")
    await in_thread(knowledge_store.delete, entry_id)


async def _writable(request: Request, knowledge_store: KnowledgeStore, entry_id: str,
                    action: str) -> None:
    """NotFound unless the caller sees the entry; 403 for a shared one unless admin."""
    entry = await in_thread(knowledge_store.get, entry_id, viewer_id=request.user.id)
    if entry.owner_id is None and not request.user.is_admin:
        raise PermissionDeniedException(f"shared entries can be {action} by admins only")


router = Router(
    path="/api/knowledge",
    route_handlers=[add_document, upload, list_jobs, get_job, search, list_entries, stats,
                    get_entry, set_pin, reindex, delete_entry],
    tags=["knowledge"],
)
