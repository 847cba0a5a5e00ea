"""Conversational recall: import conversations, search every stored message, and how
far their indexing has come. Next to the conversation routes of chat.py."""

from __future__ import annotations

from datetime import datetime

import msgspec
from litestar import Request, Router, get, post
from litestar.di import NamedDependency
from litestar.params import FromQuery

from chatsvc._settings import Settings
from chatsvc._threads import in_thread, in_thread_shielded
from chatsvc._zones import in_user_zone
from chatsvc.importing import Conversation, InvalidImport, parse
from chatsvc.recall import MODES, RecallService
from chatsvc.routes import _validate as check
from chatsvc.routes._body import limited_body
from store import Bounds, ImportStore, MessageHit, MessageIndexStore
from store.clock import iso, utc_now

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


def search_bounds(user_id: str, after: str | None, before: str | None) -> Bounds:
    """The dates a search may return (`after`/`before`, blank: none; no zone: UTC); a 400
    naming the field for a bad time, or an `after` not before `before`."""
    start, end = _moment_or_none("after", after), _moment_or_none("before", before)
    check.in_order("after", start, "`before`", end)
    return Bounds(user_id, after=start and iso(start), before=end and iso(end))


def _moment_or_none(field: str, value: str | None) -> datetime | None:
    return check.moment(field, value) if value and value.strip() else None


def hit_json(hit: MessageHit) -> dict:
    return {"message_id": hit.message_id, "conversation_id": hit.conversation_id,
            "role": hit.role, "name": hit.name, "content": hit.content,
            "created_at": hit.created_at, "score": hit.score}


@get("/search", summary="Search the caller's messages")
async def search(
    request: Request, recall: NamedDependency[RecallService], q: FromQuery[str] = "",
    limit: FromQuery[int] = 10, mode: FromQuery[str] = "hybrid",
    after: FromQuery[str | None] = None, before: FromQuery[str | None] = None,
    asked_at: FromQuery[str | None] = None,
) -> dict:
    if not q.strip():
        raise check.bad("q", "a search text is required")
    check.text("q", q, max_chars=MAX_QUERY)
    if mode not in MODES:
        raise check.bad("mode", f"must be one of {', '.join(MODES)}")
    bounds = search_bounds(request.user.id, after, before)
    asked = in_user_zone(_moment_or_none("asked_at", asked_at) or utc_now(), request.user.timezone)
    found = await recall.search(bounds, q, mode=mode,
                                limit=check.bounded("limit", limit, 1, MAX_RESULTS),
                                asked_at=asked)
    return {"mode": found.mode, "degraded_reason": found.degraded_reason,
            "results": [hit_json(hit) for hit in found.hits]}


router = Router(path="/api/conversations", route_handlers=[import_conversations, index_status,
                                                           search], tags=["chat"])
