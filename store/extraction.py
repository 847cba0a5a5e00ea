"""Conversation messages waiting for fact extraction (`messages.extracted_at IS NULL`).

`mark_processed` only succeeds when none of the messages was processed meanwhile,
so a batch that another run (a second process, say) already handled rolls back
with its caller's transaction instead of being applied twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from store._errors import StoreError
from store.clock import iso
from store.contract import Database


@dataclass(frozen=True)
class PendingMessage:
    id: str
    conversation_id: str
    role: str
    content: str
    created_at: str


class AlreadyProcessed(StoreError):
    """Some of the messages were marked processed by another run."""


class ExtractionQueue:
    def __init__(self, db: Database) -> None:
        self.db = db

    def users_with_pending(self) -> list[str]:
        rows = self.db.execute(
            "SELECT DISTINCT user_id FROM messages WHERE extracted_at IS NULL "
            "AND status != 'pending' AND off_branch = 0 ORDER BY user_id"
        ).fetchall()
        return [row["user_id"] for row in rows]

    def pending(self, user_id: str, *, limit: int) -> list[PendingMessage]:
        """The user's oldest unprocessed messages, in order. Answers still being
        streamed (status 'pending') wait for the next run; messages off their
        conversation's visible branch are not read (store.branches)."""
        return self.db.fetch(
            "SELECT id, conversation_id, role, content, created_at FROM messages "
            "WHERE user_id = $user AND extracted_at IS NULL AND status != 'pending' "
            "AND off_branch = 0 ORDER BY seq LIMIT $limit",
            {"user": user_id, "limit": limit}, PendingMessage,
        )

    def mark_processed(self, message_ids: list[str], *, at: datetime) -> None:
        with self.db.transaction():
            marked = sum(
                self.db.execute(
                    "UPDATE messages SET extracted_at = $at WHERE id = $id "
                    "AND extracted_at IS NULL",
                    {"at": iso(at), "id": message_id},
                ).rowcount
                for message_id in message_ids
            )
            if marked != len(set(message_ids)):
                raise AlreadyProcessed("messages were processed by another run meanwhile")

    def unprocessed_count(self, user_id: str) -> int:
        return self.db.scalar(
            "SELECT count(*) FROM messages WHERE user_id = $user AND extracted_at IS NULL "
            "AND off_branch = 0",
            {"user": user_id},
        )
