"""Feedback on answers: `PUT /api/messages/{id}/feedback` (thumbs up or down, with an
optional comment) and `DELETE` to clear it. Counted in /metrics, kept in the export."""

from __future__ import annotations

from dataclasses import dataclass

from litestar import Request, Router, delete, put
from litestar.di import NamedDependency
from litestar.params import FromPath, JSONBody

from chatsvc import metrics
from chatsvc._threads import in_thread_shielded
from chatsvc.routes import _validate as check
from chatsvc.routes.conversations import feedback_json
from store import ChatStore
from store.branches import NotAnAnswer
from store.feedback import RATINGS

MAX_COMMENT = 2000


@dataclass
class FeedbackRequest:
    rating: str
    comment: str | None = None


@put("/messages/{message_id:str}/feedback", summary="Rate an answer")
async def rate(
    request: Request, chats: NamedDependency[ChatStore], message_id: FromPath[str],
    data: JSONBody[FeedbackRequest],
) -> dict:
    if data.rating not in RATINGS:
        raise check.bad("rating", "must be up or down")
    comment = data.comment
    if comment is not None:  # blank: no comment
        comment = check.text("comment", comment, max_chars=MAX_COMMENT, required=False).strip()
    try:
        given = await in_thread_shielded(chats.rate, request.user.id, message_id, data.rating,
                                         comment or None)
    except NotAnAnswer:
        raise check.bad("message_id", "is a question: feedback is for answers") from None
    metrics.feedback(given.rating)
    return {"message_id": message_id, **feedback_json(given)}


@delete("/messages/{message_id:str}/feedback", summary="Clear an answer's rating",
        status_code=204)
async def unrate(
    request: Request, chats: NamedDependency[ChatStore], message_id: FromPath[str]
) -> None:
    try:
        await in_thread_shielded(chats.unrate, request.user.id, message_id)
    except NotAnAnswer:
        raise check.bad("message_id", "is a question: feedback is for answers") from None


router = Router(path="/api", route_handlers=[rate, unrate], tags=["chat"])
