"""Conversational recall: import conversations, search every stored message, and how
far their indexing has come. Next to the conversation routes of chat.py."""

from __future__ import annotations

import msgspec
from litestar import Request, Router, get, post
from litestar.di import NamedDependency
from litestar.params import FromQuery

from chatsvc._settings import Settings
from chatsvc._threads import in_thread, in_thread_shielded
from chatsvc.importing import Conversation, InvalidImport, parse
from chatsvc.recall import MODES, RecallService
from chatsvc.routes import _validate as check
from chatsvc.routes._body import limited_body
from store import Bounds, ImportStore, MessageHit, MessageIndexStore
from store.clock import iso, parse_moment

MAX_QUERY = 2000
MAX_RESULTS = 50


def _conversations(body: bytes, max_chars: int) -> list[Conversation]:
    return parse(msgspec.json.decode(body), max_chars=max_chars)


@post("/import", summary="Import conversations", status_code=202,
      request_max_body_size=None)
async def import_conversations(
    request: Request, settings: NamedDependency[Settings], imports: NamedDependency[ImportStore],
    recall: NamedDependency[RecallService],
) -> dict:
    body = await limited_body(request, settings.import_max_bytes)
    try:  # off the event loop: 8 MB of JSON take a while to read and check
        conversations = await in_thread(_conversations, body, settings.max_message_chars)
    except msgspec.DecodeError as exc:
        raise check.bad("body", str(exc)) from None
    except InvalidImport as exc:
        raise check.bad(exc.field, exc.message) from None
    found = await in_thread_shielded(imports.import_conversations, request.user.id,
                                     conversations)
    recall.index_soon()  # indexed in the background, never in the request
    return {"conversations": [{"id": f.conversation_id, "message_ids": f.message_ids}
                              for f in found]}


@get("/index-status", summary="How many of the caller's messages are indexed")
async def index_status(request: Request, messages: NamedDependency[MessageIndexStore]) -> dict:
    total, indexed = await in_thread(messages.status, request.user.id)
    return {"messages": total, "indexed": indexed}


def time_bound(field: str, value: str | None) -> str | None:
    """An `after`/`before` bound as a stored time (no zone: UTC), None when blank."""
    if value is None or not value.strip():
        return None
    try:
        return iso(parse_moment(value))
    except ValueError:
        raise check.bad(field, "must be an ISO-8601 time, e.g. 2023-05-08T13:56:00Z") from None


def hit_json(hit: MessageHit) -> dict:
    return {"message_id": hit.message_id, "conversation_id": hit.conversation_id,
            "role": hit.role, "name": hit.name, "content": hit.content,
            "created_at": hit.created_at, "score": hit.score}


@get("/search", summary="Search the caller's messages")
async def search(
    request: Request, recall: NamedDependency[RecallService], q: FromQuery[str] = "",
    limit: FromQuery[int] = 10, mode: FromQuery[str] = "hybrid",
    after: FromQuery[str | None] = None, before: FromQuery[str | None] = None,
) -> dict:
    if not q.strip():
        raise check.bad("q", "a search text is required")
    check.text("q", q, max_chars=MAX_QUERY)
    if mode not in MODES:
        raise check.bad("mode", f"must be one of {', '.join(MODES)}")
    bounds = Bounds(request.user.id, after=time_bound("after", after),
                    before=time_bound("before", before))
    if bounds.after and bounds.before and bounds.after >= bounds.before:  # ISO sorts
        raise check.bad("after", "must be before `before`")
    found = await recall.search(bounds, q, mode=mode,
                                limit=check.bounded("limit", limit, 1, MAX_RESULTS))
    return {"mode": found.mode, "degraded_reason": found.degraded_reason,
            "results": [hit_json(hit) for hit in found.hits]}


router = Router(path="/api/conversations", route_handlers=[import_conversations, index_status,
                                                           search], tags=["chat"])
