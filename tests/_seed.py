"""Conversation rows written with plain SQL on the 0001 tables, until the chat store
exists; tests control the message times."""

from __future__ import annotations

from datetime import datetime

from store.clock import iso, new_id, now_iso


def conversation(db, user_id: str, *, title: str = "") -> str:
    conv_id, at = new_id(), now_iso()
    with db.transaction():
        db.execute(
            "INSERT INTO conversations(id, user_id, title, created_at, updated_at) "
            "VALUES ($id, $user, $title, $at, $at)",
            {"id": conv_id, "user": user_id, "title": title, "at": at},
        )
    return conv_id


def message(db, user_id: str, conv_id: str, content: str, *, role: str = "user",
            at: datetime | None = None) -> str:
    msg_id = new_id()
    with db.transaction():
        db.execute(
            "INSERT INTO messages(id, conversation_id, user_id, role, content, created_at) "
            "VALUES ($id, $conversation, $user, $role, $content, $at)",
            {"id": msg_id, "conversation": conv_id, "user": user_id, "role": role,
             "content": content, "at": iso(at) if at else now_iso()},
        )
    return msg_id
