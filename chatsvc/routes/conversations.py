"""The caller's conversations: list, read (the visible branch, with its messages'
images), rename or archive, switch branch, delete. Their turns are chat.py's."""

from __future__ import annotations

from dataclasses import dataclass

from litestar import Request, Router, delete, get, patch, put
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery, JSONBody

from chatsvc._threads import in_thread, in_thread_shielded
from chatsvc.extraction import FactExtractor
from chatsvc.facts import branched, delete_with_facts
from chatsvc.images import MessageImages, image_json
from chatsvc.routes import _validate as check
from store import ChatMessage, ChatStore
from store.chats import Conversation
from store.images import StoredImage

MAX_LIST = 200
MAX_TITLE = 500


@dataclass
class ConversationChanges:
    title: str | None = None
    archived: bool | None = None


@dataclass
class BranchChoice:
    message_id: str


def _summary(conversation: Conversation) -> dict:
    return {"id": conversation.id, "title": conversation.title,
            "archived": conversation.archived, "created_at": conversation.created_at,
            "updated_at": conversation.updated_at}


@get("/conversations", summary="The caller's conversations")
async def list_conversations(
    request: Request, chats: NamedDependency[ChatStore],
    limit: FromQuery[int] = 100, offset: FromQuery[int] = 0, archived: FromQuery[bool] = False,
) -> dict:
    """Archived ones only with `archived=true` (and then only those)."""
    found = await in_thread(chats.list, request.user.id,
                            limit=check.bounded("limit", limit, 1, MAX_LIST),
                            offset=check.bounded("offset", offset, 0, check.MAX_OFFSET),
                            archived=archived)
    total = await in_thread(chats.count, request.user.id, archived=archived)
    return {"conversations": [_summary(c) for c in found], "total": total}


async def _view(chats: ChatStore, images: MessageImages, user_id: str,
                conversation_id: str) -> dict:
    """The conversation with its visible branch: each message with its siblings' ids
    (itself among them), on an answer its feedback, and on a message sent with images
    their `images`."""
    view = await in_thread(chats.branch_view, user_id, conversation_id)
    ratings = await in_thread(chats.feedback, user_id, [m.id for m in view.messages])
    pictured = await in_thread(images.store.of_conversation, user_id, conversation_id)
    return {**_summary(view.conversation),
            "messages": [_message(m, view.siblings[m.id], ratings, pictured)
                         for m in view.messages]}


def _message(m: ChatMessage, siblings: list[str], ratings: dict,
             pictured: dict[str, list[StoredImage]]) -> dict:
    shown = {"id": m.id, "role": m.role, "name": m.name, "content": m.content,
             "created_at": m.created_at, "status": m.status, "reply_to": m.reply_to,
             "parent_id": m.parent_id, "sibling_ids": siblings,
             "feedback": feedback_json(ratings.get(m.id))}
    kept = pictured.get(m.id)
    return {**shown, "images": [image_json(i) for i in kept]} if kept else shown


def feedback_json(feedback) -> dict | None:
    return feedback and {"rating": feedback.rating, "comment": feedback.comment,
                         "updated_at": feedback.updated_at}


@get("/conversations/{conversation_id:str}", summary="One conversation (its visible branch)")
async def get_conversation(
    request: Request, chats: NamedDependency[ChatStore],
    images: NamedDependency[MessageImages], conversation_id: FromPath[str]
) -> dict:
    return await _view(chats, images, request.user.id, conversation_id)


@patch("/conversations/{conversation_id:str}", summary="Rename or archive a conversation")
async def change_conversation(
    request: Request, chats: NamedDependency[ChatStore], conversation_id: FromPath[str],
    data: JSONBody[ConversationChanges],
) -> dict:
    await check.strict_scalars(request, ConversationChanges)
    if data.title is None and data.archived is None:
        raise check.bad("body", "give `title` or `archived` (or both)")
    title = data.title
    if title is not None:
        title = " ".join(check.text("title", title, max_chars=MAX_TITLE).split())
    conversation = await in_thread_shielded(chats.change, request.user.id, conversation_id,
                                            title=title, archived=data.archived)
    return _summary(conversation)


@put("/conversations/{conversation_id:str}/branch", summary="Show another branch")
async def choose_branch(
    request: Request, chats: NamedDependency[ChatStore],
    extractor: NamedDependency[FactExtractor], images: NamedDependency[MessageImages],
    conversation_id: FromPath[str], data: JSONBody[BranchChoice],
) -> dict:
    """The branch through `message_id` becomes the visible one (history, extraction,
    recall); the facts resting only on the branch it replaces go."""
    user_id = request.user.id
    message_id = check.text("message_id", data.message_id, max_chars=MAX_TITLE)
    _, forgotten = await in_thread_shielded(
        branched, chats, extractor.facts, user_id, conversation_id,
        lambda: chats.choose(user_id, conversation_id, message_id))
    if forgotten:
        await extractor.regenerate_sheet(user_id)
    return await _view(chats, images, user_id, conversation_id)


@delete("/conversations/{conversation_id:str}", summary="Delete a conversation",
        status_code=204)
async def delete_conversation(
    request: Request, chats: NamedDependency[ChatStore],
    extractor: NamedDependency[FactExtractor], images: NamedDependency[MessageImages],
    conversation_id: FromPath[str],
) -> None:
    """The facts whose every quote was in it go with it, and the fact sheet is made
    again without them; so do the files of its images that no other message shows."""
    user_id = request.user.id
    forgotten = await in_thread_shielded(delete_with_facts, chats, extractor.facts, user_id,
                                         conversation_id)
    await in_thread_shielded(images.sweep, user_id)
    if forgotten:
        await extractor.regenerate_sheet(user_id)


router = Router(
    path="/api",
    route_handlers=[list_conversations, get_conversation, change_conversation, choose_branch,
                    delete_conversation],
    tags=["chat"],
)
