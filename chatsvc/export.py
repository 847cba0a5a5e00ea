"""One user's data as one JSON document (`GET /api/export`, `chatsvc users export`).

The document is produced as text pieces, one conversation, fact, memory or entry at a
time, so an account of any size never sits in memory whole. Its `conversations` list
is the body `POST /api/conversations/import` takes; facts, memory and knowledge go
back through their own POST routes (docs/api.md, "Export and account deletion").
Only the user's own data is in it: shared knowledge entries and posts are not.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator

from chatsvc.facts import evidence_json, forget_json
from chatsvc.images import image_json
from store import NotFound, User
from store.backend import Stores
from store.clock import now_iso
from store.images import StoredImage

FORMAT = "chatsvc-export"
VERSION = 1
_PAGE = 200


def export_pieces(stores: Stores, user: User) -> Iterator[str]:
    """The export of `user`, as consecutive pieces of one JSON document."""
    head = {"format": FORMAT, "version": VERSION, "exported_at": now_iso(), "user": {
        "id": user.id, "name": user.name, "is_admin": user.is_admin, "timezone": user.timezone,
        "created_at": user.created_at,
    }}
    yield _json(head)[:-1]  # the closing brace comes after the lists
    for name, items in (("conversations", _conversations(stores, user.id)),
                        ("facts", _facts(stores, user.id)),
                        ("forgotten", map(forget_json, stores.facts.forgets(user.id, limit=None))),
                        ("fact_sheets", _fact_sheets(stores, user.id)),
                        ("memory", _memory(stores, user.id)),
                        ("knowledge", _knowledge(stores, user.id))):
        yield f', "{name}": ['
        for index, item in enumerate(items):
            yield ("" if index == 0 else ", ") + _json(item)
        yield "]"
    yield "}\n"


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


def _conversations(stores: Stores, user_id: str) -> Iterable[dict]:
    for conversation_id in stores.accounts.conversation_ids(user_id):
        try:  # one deleted meanwhile is simply not exported
            view = stores.chats.branch_view(user_id, conversation_id)
            messages = stores.chats.messages(user_id, conversation_id)
            images = stores.images.of_conversation(user_id, conversation_id)
        except NotFound:
            continue
        conversation, shown = view.conversation, {m.id for m in view.messages}
        ratings = stores.chats.feedback(user_id, [m.id for m in messages])
        # The import route's shape (plus status, times, parents and feedback): the visible
        # branch in `messages`, the other branches' messages in `off_branch`. An answer
        # that failed before any text has nothing to re-import, so it is left out.
        yield {"id": conversation.id, "title": conversation.title,
               "project_id": conversation.project_id, "archived": conversation.archived,
               "created_at": conversation.created_at, "updated_at": conversation.updated_at,
               "messages": [_message(m, ratings, images) for m in view.messages if m.content],
               "off_branch": [_message(m, ratings, images) for m in messages
                              if m.content and m.id not in shown]}


def _message(message, ratings: dict, images: dict[str, list[StoredImage]]) -> dict:
    named = {"name": message.name} if message.name else {}
    rated = ratings.get(message.id)
    feedback = {"feedback": {"rating": rated.rating, "comment": rated.comment,
                             "updated_at": rated.updated_at}} if rated else {}
    kept = images.get(message.id)
    pictured = {"images": [image_json(image) for image in kept]} if kept else {}
    return {"id": message.id, "role": message.role, "content": message.content, **named,
            "status": message.status, "parent_id": message.parent_id,
            "created_at": message.created_at, **feedback, **pictured}


def _facts(stores: Stores, user_id: str) -> Iterable[dict]:
    offset = 0
    while page := stores.facts.list(user_id, limit=_PAGE, offset=offset)[0]:
        evidence = stores.facts.evidence(user_id, [fact.id for fact in page])
        for fact in page:
            # The quotes name the exported conversations' and messages' ids.
            yield {"category": fact.category, "fact": fact.fact, "created_at": fact.created_at,
                   "updated_at": fact.updated_at, "mention_count": fact.mention_count,
                   "last_extracted_at": fact.last_extracted_at,
                   "evidence": [evidence_json(e) for e in evidence.get(fact.id, [])]}
        offset += len(page)


def _fact_sheets(stores: Stores, user_id: str) -> Iterable[dict]:
    for sheet in stores.fact_sheets.list(user_id):
        yield {"created_at": sheet.created_at, "fact_count": sheet.fact_count,
               "facts": json.loads(sheet.facts_json),
               "dedup_log": json.loads(sheet.dedup_log) if sheet.dedup_log else None}


def _memory(stores: Stores, user_id: str) -> Iterable[dict]:
    for memory in stores.memories.list(user_id):
        yield {"type": memory.type, "scope": memory.scope, "project_id": memory.project_id,
               "origin": memory.origin, "content": memory.content,
               "created_at": memory.created_at, "updated_at": memory.updated_at}


def _knowledge(stores: Stores, user_id: str) -> Iterable[dict]:
    for entry_id in stores.accounts.knowledge_ids(user_id):
        try:
            entry = stores.knowledge.read(entry_id)
        except NotFound:
            continue
        yield {"title": entry.title, "content": entry.content, "source_type": entry.source_type,
               "source_id": entry.source_id, "metadata": entry.metadata,
               "abstract": entry.abstract, "overview": entry.overview,
               "tiers_by": entry.tiers_by, "created_at": entry.created_at,
               "updated_at": entry.updated_at}
