"""Imported conversations: written whole in one transaction, found again by hash.

A conversation's content hash covers its title and every message as given, so
importing the same conversation again writes nothing and answers the same ids.
Imported messages are indexed like live ones, in the background.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from store.chats import title_for
from store.clock import new_id, now_iso
from store.contract import Database


@dataclass(frozen=True)
class ImportedMessage:
    role: str  # user | assistant
    content: str
    name: str | None = None
    created_at: str | None = None  # ISO-8601 UTC as store.clock.iso writes it


@dataclass(frozen=True)
class Imported:
    conversation_id: str
    message_ids: list[str]  # in input order
    created: bool  # False: found by its hash, nothing written


def conversation_hash(title: str | None, messages: list[ImportedMessage]) -> str:
    canonical = json.dumps([title, [[m.role, m.name, m.content, m.created_at]
                                    for m in messages]], ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class ConversationImports:
    def __init__(self, db: Database) -> None:
        self.db = db

    def import_conversations(
        self, user_id: str, conversations: list[tuple[str | None, list[ImportedMessage]]]
    ) -> list[Imported]:
        """(title, messages) each; all or nothing. Untimed messages get the import time."""
        with self.db.transaction():
            return [self._one(user_id, title, messages) for title, messages in conversations]

    def _one(self, user_id: str, title: str | None, messages: list[ImportedMessage]) -> Imported:
        digest = conversation_hash(title, messages)
        found = self.db.scalar(
            "SELECT id FROM conversations WHERE user_id = $user AND content_hash = $hash",
            {"user": user_id, "hash": digest})
        if found is not None:
            ids = [row["id"] for row in self.db.execute(
                "SELECT id FROM messages WHERE conversation_id = $id ORDER BY seq", {"id": found})]
            return Imported(found, ids, created=False)
        now = now_iso()
        times = [m.created_at or now for m in messages]
        conversation_id = new_id()
        ids = [new_id() for _ in messages]
        self.db.execute(
            "INSERT INTO conversations(id, user_id, title, content_hash, created_at, updated_at) "
            "VALUES ($id, $user, $title, $hash, $first, $last)",
            {"id": conversation_id, "user": user_id, "hash": digest,
             "title": title_for(title or _first_user_text(messages)),
             "first": min(times, default=now), "last": max(times, default=now)})
        self.db.executemany(
            "INSERT INTO messages(id, conversation_id, user_id, role, name, content, status, "
            "parent_id, created_at) VALUES ($id, $conversation, $user, $role, $name, $content, "
            "'complete', $parent, $at)",
            [{"id": message_id, "conversation": conversation_id, "user": user_id,
              "role": m.role, "name": m.name, "content": m.content, "parent": parent, "at": at}
             for message_id, parent, m, at
             in zip(ids, [None, *ids][:len(ids)], messages, times, strict=True)])
        return Imported(conversation_id, ids, created=True)


def _first_user_text(messages: list[ImportedMessage]) -> str:
    return next((m.content for m in messages if m.role == "user"), "")
