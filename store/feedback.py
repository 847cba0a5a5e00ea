"""Feedback on answers: a thumbs up or down with an optional comment, one per answer
(`PUT /api/messages/{id}/feedback`). A part of `store.chats.Chats`; the rows go with
their message (foreign key)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from store._errors import NotFound
from store.branches import NotAnAnswer
from store.clock import now_iso
from store.sql import in_list, record

if TYPE_CHECKING:
    from store.contract import Database

RATINGS = ("up", "down")


@dataclass(frozen=True)
class Feedback:
    message_id: str
    rating: str  # "up" | "down"
    comment: str | None
    updated_at: str


class Rating:
    db: Database

    def rate(self, user_id: str, message_id: str, rating: str, comment: str | None
             ) -> Feedback:
        """Set (or replace) the feedback on one of the user's answers. NotFound for a
        missing or foreign message, NotAnAnswer for a question."""
        with self.db.transaction():
            self._answer(user_id, message_id)
            self.db.execute(
                "INSERT INTO message_feedback(message_id, user_id, rating, comment, updated_at) "
                "VALUES ($id, $user, $rating, $comment, $now) ON CONFLICT(message_id) DO UPDATE "
                "SET rating = excluded.rating, comment = excluded.comment, "
                "updated_at = excluded.updated_at",
                {"id": message_id, "user": user_id, "rating": rating, "comment": comment,
                 "now": now_iso()})
        return self.feedback(user_id, [message_id])[message_id]

    def unrate(self, user_id: str, message_id: str) -> None:
        """Clear the feedback (none: nothing to do). NotFound as `rate`."""
        with self.db.transaction():
            self._answer(user_id, message_id)
            self.db.execute("DELETE FROM message_feedback WHERE message_id = $id "
                            "AND user_id = $user", {"id": message_id, "user": user_id})

    def feedback(self, user_id: str, message_ids: Sequence[str]) -> dict[str, Feedback]:
        """message id -> its feedback, for those of `message_ids` that have some."""
        if not message_ids:
            return {}
        ids, params = in_list("id", list(message_ids))
        rows = self.db.execute(
            "SELECT message_id, rating, comment, updated_at FROM message_feedback "
            f"WHERE user_id = $user AND message_id IN {ids}", {**params, "user": user_id})
        return {row["message_id"]: record(Feedback, row) for row in rows}

    def _answer(self, user_id: str, message_id: str) -> None:
        role = self.db.scalar("SELECT role FROM messages WHERE id = $id AND user_id = $user",
                              {"id": message_id, "user": user_id})
        if role is None:
            raise NotFound(f"no message {message_id}")
        if role != "assistant":
            raise NotAnAnswer(f"message {message_id} is a question: feedback is for answers")
