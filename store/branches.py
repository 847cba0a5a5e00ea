"""The branches of a conversation: regenerated answers and edited questions.

Every message follows its `parent_id` (None: a first message), so a conversation is a
tree. Its visible branch runs through the conversation's `chosen_id` (None: the newest
first message) up to the first message and down through the newest reply at each
step: a turn that continues the branch changes nothing but adds its messages, and an
old continuation stays reachable by choosing one of its messages. `off_branch` marks
the messages not on the visible branch, so history, extraction and recall skip them
(`rebranch` keeps it true after every change of branch). `Branching` is a part of
`store.chats.Chats`, which it shares the turn claim with.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from store._errors import NotFound, StoreError, TurnInProgress
from store.clock import now_iso

if TYPE_CHECKING:
    from store.chats import ChatMessage, Conversation, TurnLease
    from store.contract import Database


class NothingToRegenerate(StoreError):
    """The visible branch does not end with an answer (empty, or a question left
    unanswered): there is no answer to make again."""


class NotAnAnswer(StoreError):
    """The message is a question where an answer is needed (a parent to edit from, a
    rating)."""


@dataclass(frozen=True)
class BranchView:
    conversation: Conversation
    messages: list[ChatMessage]  # the visible branch, in order
    siblings: dict[str, list[str]]  # message id -> the ids sharing its parent, oldest first


def visible(messages: Sequence[ChatMessage], chosen_id: str | None) -> list[ChatMessage]:
    """The visible branch of `messages` (in `seq` order), see the module docstring."""
    by_id = {m.id: m for m in messages}
    newest_reply = {m.parent_id: m for m in messages}  # later ones overwrite earlier
    node = by_id.get(chosen_id) if chosen_id else None
    node = node or newest_reply.get(None)
    if node is None:
        return []
    path, up = [], node
    while up is not None and len(path) <= len(messages):  # a corrupt cycle ends too
        path.append(up)
        up = by_id.get(up.parent_id) if up.parent_id else None
    path.reverse()
    while node.id in newest_reply:
        node = newest_reply[node.id]
        path.append(node)
    return path


def siblings(messages: Sequence[ChatMessage]) -> dict[str, list[str]]:
    children: dict[str | None, list[str]] = {}
    for m in messages:
        children.setdefault(m.parent_id, []).append(m.id)
    return {m.id: children[m.parent_id] for m in messages}


class Branching:
    """The branch operations of `Chats` (every query scoped by user id)."""

    db: Database

    def branch(self, user_id: str, conversation_id: str) -> list[ChatMessage]:
        """The visible branch; NotFound for a missing or foreign conversation."""
        conversation = self.get(user_id, conversation_id)
        return visible(self.messages(user_id, conversation_id), conversation.chosen_id)

    def branch_view(self, user_id: str, conversation_id: str) -> BranchView:
        with self.db.snapshot():
            conversation = self.get(user_id, conversation_id)
            messages = self.messages(user_id, conversation_id)
        return BranchView(conversation, visible(messages, conversation.chosen_id),
                          siblings(messages))

    def choose(self, user_id: str, conversation_id: str, message_id: str) -> None:
        """Make the branch through `message_id` the visible one (refused while a turn
        runs: its answer would land off the branch)."""
        with self.db.transaction():
            self._message_of(user_id, conversation_id, message_id)
            chosen = self.db.execute(
                "UPDATE conversations SET chosen_id = $message WHERE id = $id "
                "AND user_id = $user AND (turn_id IS NULL OR turn_until < $now)",
                {"message": message_id, "id": conversation_id, "user": user_id,
                 "now": now_iso()})
            if chosen.rowcount == 0:
                raise TurnInProgress(conversation_id)
            self.rebranch(conversation_id)

    def start_regenerate(
        self, user_id: str, conversation_id: str, *, reply_id: str, hold_seconds: float,
        lease: TurnLease | None = None,
    ) -> tuple[Conversation, ChatMessage]:
        """Claim the conversation for a new answer to the question the visible branch's
        last answer replies to, stored `pending` as that answer's sibling and made the
        visible one; (conversation, question). TurnInProgress while a turn runs,
        NothingToRegenerate when the branch does not end with an answer."""
        with self.db.transaction():
            last = next(reversed(self.branch(user_id, conversation_id)), None)
            answered = last is not None and last.role == "assistant" and last.parent_id
            # Claimed first: a running turn is a 409 of its own, whatever its branch shows
            # (refusing below rolls the claim back).
            self._claim(conversation_id, self._claim_terms(
                user_id, last.parent_id if answered else reply_id, hold_seconds=hold_seconds,
                lease=lease))
            if not answered:
                raise NothingToRegenerate(f"conversation {conversation_id} does not end "
                                          "with an answer")
            question = self._message_of(user_id, conversation_id, last.parent_id)
            self.db.execute("DELETE FROM turn_events WHERE conversation_id = $id",
                            {"id": conversation_id})
            self._store_pending(user_id, conversation_id, question.id, reply_id)
            self.db.execute("UPDATE conversations SET chosen_id = $reply WHERE id = $id",
                            {"reply": reply_id, "id": conversation_id})
            self.rebranch(conversation_id)
        return self.get(user_id, conversation_id), question

    def edit_parent(self, user_id: str, conversation_id: str, parent_id: str | None) -> None:
        """Check that a question may follow `parent_id` (None: start afresh): an answer
        of this conversation. NotFound, or NotAnAnswer."""
        if (parent_id is not None and
                self._message_of(user_id, conversation_id, parent_id).role != "assistant"):
            raise NotAnAnswer(f"message {parent_id} is not an answer")

    def tip(self, conversation_id: str) -> str | None:
        """The visible branch's last message: the newest one on it."""
        return self.db.scalar(
            "SELECT id FROM messages WHERE conversation_id = $id AND off_branch = 0 "
            "ORDER BY seq DESC LIMIT 1", {"id": conversation_id})

    def rebranch(self, conversation_id: str) -> None:
        """Mark each message of the conversation on or off its visible branch. A message
        leaving it is extracted again should it come back (its facts may have gone
        with it: chatsvc.facts)."""
        chosen = self.db.scalar("SELECT chosen_id FROM conversations WHERE id = $id",
                                {"id": conversation_id})
        rows = self.db.execute(
            "SELECT id, parent_id, off_branch FROM messages WHERE conversation_id = $id "
            "ORDER BY seq", {"id": conversation_id}).fetchall()
        on = {m.id for m in visible([_Node(r["id"], r["parent_id"]) for r in rows], chosen)}
        self.db.executemany(
            "UPDATE messages SET off_branch = 1, extracted_at = NULL WHERE id = $id",
            [{"id": r["id"]} for r in rows if r["id"] not in on and not r["off_branch"]])
        self.db.executemany(
            "UPDATE messages SET off_branch = 0 WHERE id = $id",
            [{"id": r["id"]} for r in rows if r["id"] in on and r["off_branch"]])

    def _message_of(self, user_id: str, conversation_id: str, message_id: str) -> ChatMessage:
        self.get(user_id, conversation_id)  # NotFound for another user's
        found = self.db.scalar(
            "SELECT id FROM messages WHERE id = $message AND conversation_id = $id "
            "AND user_id = $user", {"message": message_id, "id": conversation_id,
                                    "user": user_id})
        if found is None:
            raise NotFound(f"no message {message_id} in conversation {conversation_id}")
        return self._get_message(message_id)


@dataclass(frozen=True)
class _Node:
    """What `visible` reads of a message."""

    id: str
    parent_id: str | None
