"""The tools: what an agent may do with the caller's own data.

Each tool is an async function whose first parameter is the `Caller`; the others
are its arguments, typed and with defaults, so MCP (and the chat turn's tool loop)
derive the argument schema from the signature and the description from the
docstring. The user is never an argument: every tool reads and writes as the
caller, exactly as the HTTP routes do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from litestar.exceptions import ValidationException

from chatsvc._errors import EmbeddingError
from chatsvc._services import Services
from chatsvc._threads import in_thread
from chatsvc._zones import in_user_zone
from chatsvc.memory import InvalidMemory, MemoryFields
from chatsvc.routes import checks as check
from chatsvc.routes.facts import facts_json
from chatsvc.routes.knowledge import MAX_QUERY, MAX_TITLE, hit_json
from chatsvc.routes.memory import memory_json
from chatsvc.routes.recall import hit_json as message_json
from chatsvc.routes.recall import search_bounds
from context.tokens import get_tokenizer
from store import NotFound, User, VectorUnavailable
from store.clock import utc_now

READ_TOKENS = 2000  # one read_knowledge page: enough to answer from, small enough to afford
MAX_RESULTS = 20


class ToolError(Exception):
    """A tool call the caller can correct (bad argument, unknown id): its text goes
    back to the agent as the tool's error result."""


@dataclass(frozen=True)
class Caller:
    services: Services
    user: User


def _checked(field: str, value: str, *, max_chars: int) -> str:
    try:
        return check.text(field, value, max_chars=max_chars)
    except ValidationException as exc:
        raise ToolError(exc.detail) from None


def _limit(value: int) -> int:
    if not 1 <= value <= MAX_RESULTS:
        raise ToolError(f"limit must be between 1 and {MAX_RESULTS}")
    return value


async def search_knowledge(
    caller: Caller, query: str,
    mode: Literal["hybrid", "semantic", "keyword"] = "hybrid", limit: int = 5,
    source_type: str | None = None,
) -> dict:
    """Search the user's knowledge base (their documents and shared ones). Returns
    snippets with the entry id; read a whole entry with read_knowledge."""
    query = _checked("query", query, max_chars=MAX_QUERY)
    result = await caller.services.knowledge.search(
        caller.user.id, query, mode=mode, limit=_limit(limit), source_type=source_type
    )
    return {"mode": result.mode, "degraded_reason": result.degraded_reason,
            "results": [hit_json(hit, query) for hit in result.hits]}


async def read_knowledge(caller: Caller, id: str, offset: int = 0) -> dict:
    """Read a knowledge entry's full text (by entry id), one page of about 2000
    tokens at a time; pass `next_offset` back as `offset` for the next page."""
    try:
        entry = await in_thread(caller.services.stores.knowledge.get, id,
                                viewer_id=caller.user.id)
    except NotFound:
        raise ToolError(f"no knowledge entry {id!r}") from None
    if not 0 <= offset <= len(entry.content):
        raise ToolError(f"offset must be between 0 and {len(entry.content)}")
    page = _page(entry.content[offset:], caller.services.settings.tokenizer)
    end = offset + len(page)
    return {"id": entry.id, "title": entry.title, "offset": offset, "text": page,
            "total_chars": len(entry.content),
            "next_offset": end if end < len(entry.content) else None}


def _page(text: str, tokenizer_name: str) -> str:
    tokenizer = get_tokenizer(tokenizer_name)
    tokens = tokenizer.encode(text)
    if len(tokens) <= READ_TOKENS:
        return text
    return tokenizer.encoding.decode(tokens[:READ_TOKENS])


async def search_facts(caller: Caller, query: str, limit: int = 10) -> dict:
    """Search the facts learned about the user, nearest in meaning first."""
    query = _checked("query", query, max_chars=MAX_QUERY)
    try:
        hits = await caller.services.fact_service.search(caller.user.id, query, limit=_limit(limit))
    except (EmbeddingError, VectorUnavailable) as exc:
        raise ToolError(f"fact search is unavailable right now: {exc}") from None
    found = await facts_json(caller.services.fact_service.store, caller.user.id,
                             [h.fact for h in hits])
    return {"results": [{**fact, "distance": h.distance}
                        for fact, h in zip(found, hits, strict=True)]}


async def search_conversations(
    caller: Caller, query: str, after: str | None = None, before: str | None = None,
    limit: int = 10,
) -> dict:
    """Search what the user and the assistant said in earlier conversations (hybrid
    keyword + meaning); `after` / `before` are ISO-8601 times that bound the dates. A time
    the query names ("last May") is read from now in the user's zone."""
    query = _checked("query", query, max_chars=MAX_QUERY)
    try:
        bounds = search_bounds(caller.user.id, after, before)
    except ValidationException as exc:
        raise ToolError(exc.detail) from None
    found = await caller.services.recall.search(
        bounds, query, limit=_limit(limit),
        asked_at=in_user_zone(utc_now(), caller.user.timezone))
    return {"mode": found.mode, "degraded_reason": found.degraded_reason,
            "results": [message_json(hit) for hit in found.hits]}


async def search_memory(caller: Caller, query: str, limit: int = 10) -> dict:
    """Search the user's saved memories (preferences, instructions, profile, notes)."""
    query = _checked("query", query, max_chars=MAX_QUERY)
    hits, reason = await caller.services.memory_service.search(
        caller.user.id, query, limit=_limit(limit)
    )
    return {"degraded_reason": reason,
            "results": [{**memory_json(m), "distance": d} for m, d in hits]}


async def remember(
    caller: Caller, content: str,
    type: Literal["preference", "instruction", "profile", "note"] = "note",
) -> dict:
    """Save something the user asked you to remember (a global memory, marked as
    learned). Only when the user asked for it."""
    fields = MemoryFields(type=type, scope="global", project_id=None, content=content)
    try:
        memory = await caller.services.memory_service.create(
            caller.user.id, fields, origin="learned"
        )
    except InvalidMemory as exc:
        raise ToolError(str(exc)) from None
    return memory_json(memory)


async def index_document(
    caller: Caller, title: str, content: str, source_type: str = "document"
) -> dict:
    """Add a text document to the user's knowledge base (plain text or Markdown; no
    URLs are fetched). Sending the same title and content again changes nothing."""
    title = _checked("title", title, max_chars=MAX_TITLE).strip()
    content = _checked("content", content, max_chars=caller.services.settings.max_body_bytes)
    try:
        check.source_type(source_type)
    except ValidationException as exc:
        raise ToolError(exc.detail) from None
    saved = await caller.services.knowledge.index(
        owner_id=caller.user.id, title=title, content=content, source_type=source_type,
    )
    return {"id": saved.entry.id, "chunks": saved.entry.chunks, "status": saved.status}


TOOLS = (search_knowledge, read_knowledge, search_conversations, search_facts, search_memory,
         remember, index_document)
