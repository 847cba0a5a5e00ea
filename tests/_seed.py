"""Test rows written with plain SQL on the 0001 tables (conversations, messages,
facts, fact_extractions), for tests that must control ids and times exactly."""

from __future__ import annotations

import hashlib
from datetime import datetime

from store._clock import iso, new_id, now_iso


def conversation(db, user_id: str, *, title: str = "") -> str:
    conv_id, at = new_id(), now_iso()
    with db.transaction() as conn:
        conn.execute(
            "INSERT INTO conversations(id, user_id, title, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?)",
            (conv_id, user_id, title, at, at),
        )
    return conv_id


def message(db, user_id: str, conv_id: str, content: str, *, role: str = "user",
            at: datetime | None = None) -> str:
    msg_id = new_id()
    with db.transaction() as conn:
        conn.execute(
            "INSERT INTO messages(id, conversation_id, user_id, role, content, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (msg_id, conv_id, user_id, role, content, iso(at) if at else now_iso()),
        )
    return msg_id


def fact(db, user_id: str, category: str, text: str, *, fact_id: str | None = None,
         superseded_by: str | None = None) -> str:
    fact_id, at = fact_id or new_id(), now_iso()
    digest = hashlib.sha256(text.encode()).hexdigest()
    with db.transaction() as conn:
        conn.execute(
            "INSERT INTO facts(id, user_id, category, fact, content_hash, created_at, "
            "updated_at, superseded_by, valid_to) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (fact_id, user_id, category, text, digest, at, at, superseded_by,
             at if superseded_by else None),
        )
    return fact_id


def extraction(db, user_id: str, fact_id: str, at: datetime, message_id: str | None = None):
    with db.transaction() as conn:
        conn.execute(
            "INSERT INTO fact_extractions(fact_id, user_id, message_id, extracted_at) "
            "VALUES (?, ?, ?, ?)",
            (fact_id, user_id, message_id, iso(at)),
        )
