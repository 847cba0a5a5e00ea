"""Conversations and their messages.

A turn writes three times: the user message first (with the conversation, if
new), in one transaction, before anything can fail; an empty `pending` assistant
message when the answer starts streaming; that message's content and final status
(complete, interrupted, error) at the end. A process killed mid-answer leaves the
`pending` row, which the next start marks `interrupted`. Every query is scoped by
user id, so another user's conversation is NotFound exactly like a missing one.

A conversation runs one turn at a time, across processes and replicas: the first
write claims the conversation (`turn_id`, the question's id, until `turn_until`)
in the same statement that checks no other turn holds it, and the answer's write
frees it. A turn that dies without answering frees it when its claim lapses. With a
`TurnLease` the claim is its process's (`turn_owner`): it lapses a lease after the
last `renew_turns` of that process, never later than `turn_deadline` (the hold),
and `free_turns_of` frees at once what a process known dead held. `turn_stop` marks
a claim asked to stop (store.turn_events, which also keeps the events of the
conversation's latest streamed turn).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from store._errors import NotFound, StoreError, TurnInProgress
from store.branches import Branching
from store.chat_usage import Usage
from store.clock import iso, new_id, now_iso, utc_now
from store.contract import Database
from store.feedback import Rating
from store.images import ImageIn, add_images
from store.sql import record

TITLE_CHARS = 80
STATUSES = ("complete", "interrupted", "error")
# How long a turn may hold its conversation unless the caller says (chatsvc does).
TURN_HOLD_SECONDS = 300.0
_FREE = ("turn_id = NULL, turn_until = NULL, turn_stop = NULL, turn_owner = NULL, "
         "turn_deadline = NULL")


@dataclass(frozen=True)
class TurnLease:
    """A claim held for a live process: `owner` (unique per process) renews it
    (`Chats.renew_turns`) well within `seconds`, after which it lapses."""

    owner: str
    seconds: float


@dataclass(frozen=True)
class Conversation:
    id: str
    user_id: str
    title: str
    project_id: str | None
    snapshot: str | None
    created_at: str
    updated_at: str
    chosen_id: str | None = None  # the visible branch runs through it (store.branches)
    archived: bool = False


@dataclass(frozen=True)
class ChatMessage:
    id: str
    conversation_id: str
    role: str
    content: str
    status: str
    created_at: str
    name: str | None = None  # who spoke (OpenAI's `name`), when given
    mode: str | None = None
    prefix_hash: str | None = None
    usage: dict | None = None
    cached_tokens: int | None = None
    context: str | None = None  # the per-message block kept with a user message
    reply_to: str | None = None  # an answer's question
    # An answer that used tools: the messages after the question as sent upstream.
    tool_exchange: list[dict] | None = None
    parent_id: str | None = None  # the message it follows (None: a first message)


@dataclass(frozen=True)
class AssistantReply:
    """What the end of a turn stores."""

    id: str
    content: str
    status: str
    mode: str
    prefix_hash: str
    usage: dict | None
    cached_tokens: int | None
    # The question answered (it also names the turn that ends); the block sent with
    # it, kept with it when the layout retains blocks.
    question_id: str | None = None
    question_context: str | None = None
    tool_exchange: list[dict] | None = None


def title_for(message: str) -> str:
    line = " ".join(message.split())
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1].rstrip() + "…"


def _conversation(row) -> Conversation:
    return record(Conversation, row, archived=bool(row["archived"]))

def _message(row) -> ChatMessage:
    return record(ChatMessage, row, usage=json.loads(row["usage"]) if row["usage"] else None,
                  tool_exchange=json.loads(row["tool_exchange"]) if row["tool_exchange"] else None)

class Chats(Branching, Rating, Usage):
    def __init__(self, db: Database) -> None:
        self.db = db

    def get(self, user_id: str, conversation_id: str) -> Conversation:
        row = self.db.execute(
            "SELECT * FROM conversations WHERE id = $id AND user_id = $user",
            {"id": conversation_id, "user": user_id},
        ).fetchone()
        if row is None:
            raise NotFound(f"no conversation {conversation_id}")
        return _conversation(row)

    def list(self, user_id: str, *, limit: int = 100, offset: int = 0,
             archived: bool = False) -> list[Conversation]:
        """The user's conversations that are (`archived`) or are not archived."""
        rows = self.db.execute(
            "SELECT * FROM conversations WHERE user_id = $user AND archived = $archived "
            "ORDER BY updated_at DESC, id LIMIT $limit OFFSET $offset",
            {"user": user_id, "limit": limit, "offset": offset, "archived": int(archived)},
        ).fetchall()
        return [_conversation(row) for row in rows]

    def count(self, user_id: str, *, archived: bool = False) -> int:
        return self.db.scalar(
            "SELECT count(*) FROM conversations WHERE user_id = $user AND archived = $archived",
            {"user": user_id, "archived": int(archived)})

    def change(self, user_id: str, conversation_id: str, *, title: str | None = None,
               archived: bool | None = None) -> Conversation:
        """Rename or (un)archive; what is None stays. NotFound for another user's."""
        with self.db.transaction():
            self.get(user_id, conversation_id)
            self.db.execute(
                "UPDATE conversations SET title = coalesce($title, title), "
                "archived = coalesce($archived, archived) WHERE id = $id AND user_id = $user",
                {"title": title, "archived": None if archived is None else int(archived),
                 "id": conversation_id, "user": user_id})
            return self.get(user_id, conversation_id)

    def recent(
        self, user_id: str, *, before: Conversation | None = None, limit: int
    ) -> list[Conversation]:
        """The user's latest conversations by start, newest first; only those started
        before `before` when given, so the list (a stable-prefix layer) does not change
        while that conversation runs.
        """
        bound, exclude = (before.created_at, before.id) if before else ("\uffff", "")
        rows = self.db.execute(
            "SELECT * FROM conversations WHERE user_id = $user AND id != $exclude "
            "AND created_at < $bound ORDER BY created_at DESC, id LIMIT $limit",
            {"user": user_id, "exclude": exclude, "bound": bound, "limit": limit},
        ).fetchall()
        return [_conversation(row) for row in rows]

    def active_users(self, *, since: datetime, limit: int) -> list[str]:
        """Ids of the users with a conversation updated at `since` or later (a turn),
        the most recently active first, at most `limit` of them."""
        rows = self.db.execute(
            "SELECT user_id FROM conversations WHERE updated_at >= $since "
            "GROUP BY user_id ORDER BY max(updated_at) DESC, user_id LIMIT $limit",
            {"since": iso(since), "limit": limit},
        ).fetchall()
        return [row["user_id"] for row in rows]

    def messages(self, user_id: str, conversation_id: str) -> list[ChatMessage]:
        self.get(user_id, conversation_id)
        rows = self.db.execute(
            "SELECT * FROM messages WHERE conversation_id = $id AND user_id = $user ORDER BY seq",
            {"id": conversation_id, "user": user_id},
        ).fetchall()
        return [_message(row) for row in rows]

    def start_turn(
        self, user_id: str, content: str, *, conversation_id: str | None = None,
        project_id: str | None = None, name: str | None = None,
        hold_seconds: float = TURN_HOLD_SECONDS, lease: TurnLease | None = None,
        reply_id: str | None = None, edit: bool = False, parent_id: str | None = None,
        images: Sequence[ImageIn] = (),
    ) -> tuple[Conversation, ChatMessage]:
        """Store the user's message (creating the conversation when none is given) and
        claim the conversation for this turn, for `hold_seconds` at most (a lease's
        length, renewed, with `lease`); TurnInProgress while another holds it.
        The message follows the visible branch's last one, or with `edit` the answer
        `parent_id` (None: none), starting a branch there (store.branches).
        `reply_id`: the answer's empty `pending` row too, and the message's `images`, in
        the same transaction. One
        commit, not two: on SQLite every other connection that sees a commit drops its
        page cache and memory map, and a second commit landing while the turn searches
        cost its first read ~3 ms (docs/chat.md, Benchmark)."""
        message_id = new_id()
        claim = self._claim_terms(user_id, message_id, hold_seconds=hold_seconds, lease=lease)
        with self.db.transaction():
            parent = None
            if conversation_id is None:
                conversation_id = new_id()
                self.db.execute(
                    "INSERT INTO conversations(id, user_id, title, project_id, created_at, "
                    "updated_at, turn_id, turn_until, turn_owner, turn_deadline) VALUES ($id, "
                    "$user, $title, $project, $now, $now, $turn, $until, $owner, $deadline)",
                    {**claim, "id": conversation_id, "title": title_for(content),
                     "project": project_id},
                )
            else:
                if edit:
                    self.edit_parent(user_id, conversation_id, parent_id)
                self._claim(conversation_id, claim)
                # The previous turn's events (store.turn_events): a conversation keeps one.
                self.db.execute("DELETE FROM turn_events WHERE conversation_id = $id",
                                {"id": conversation_id})
                parent = parent_id if edit else self.tip(conversation_id)
            self.db.execute(
                "INSERT INTO messages(id, conversation_id, user_id, role, name, content, "
                "status, parent_id, created_at) VALUES ($id, $conversation, $user, 'user', "
                "$name, $content, 'complete', $parent, $now)",
                {"id": message_id, "conversation": conversation_id, "user": user_id,
                 "name": name, "content": content, "parent": parent, "now": claim["now"]},
            )
            add_images(self.db, user_id, message_id, images, claim["now"])
            if reply_id is not None:
                self._store_pending(user_id, conversation_id, message_id, reply_id)
            if edit:
                self.db.execute("UPDATE conversations SET chosen_id = $message WHERE id = $id",
                                {"message": message_id, "id": conversation_id})
                self.rebranch(conversation_id)
        return self.get(user_id, conversation_id), self._get_message(message_id)

    @staticmethod
    def _claim_terms(user_id: str, turn_id: str, *, hold_seconds: float,
                     lease: TurnLease | None) -> dict:
        """The values a claim of turn `turn_id` writes (`now` among them)."""
        moment = utc_now()
        held = min(hold_seconds, lease.seconds) if lease else hold_seconds
        return {"turn": turn_id, "until": iso(moment + timedelta(seconds=held)),
                "now": iso(moment), "user": user_id, "owner": lease.owner if lease else None,
                "deadline": iso(moment + timedelta(seconds=hold_seconds))}

    def _store_pending(self, user_id: str, conversation_id: str, question_id: str,
                       reply_id: str) -> None:
        """The empty `pending` answer to `question_id`, written before it streams."""
        self.db.execute(
            "INSERT INTO messages(id, conversation_id, user_id, role, content, status, "
            "reply_to, parent_id, created_at) VALUES ($id, $conversation, $user, "
            "'assistant', '', 'pending', $question, $question, $now)",
            {"id": reply_id, "conversation": conversation_id, "user": user_id,
             "question": question_id, "now": now_iso()},  # after the question's
        )

    def _claim(self, conversation_id: str, claim: dict) -> None:
        # One statement checks and takes the claim: SQLite serialises writers, and
        # PostgreSQL re-checks the condition on the row a concurrent claim updated.
        claimed = self.db.execute(
            "UPDATE conversations SET updated_at = $now, turn_id = $turn, turn_until = $until, "
            "turn_owner = $owner, turn_deadline = $deadline, turn_stop = NULL "
            "WHERE id = $id AND user_id = $user AND (turn_id IS NULL OR turn_until < $now)",
            {**claim, "id": conversation_id},
        )
        if claimed.rowcount == 0:
            self.get(claim["user"], conversation_id)  # NotFound when it is not theirs
            raise TurnInProgress(conversation_id)

    def renew_turns(self, owner: str, *, lease_seconds: float) -> int:
        """Extend every claim `owner` holds by `lease_seconds` from now, none past its
        deadline; how many. One statement for all of a process's turns (the index on
        `turn_owner` finds them)."""
        moment = utc_now()
        with self.db.transaction():
            return self.db.execute(
                "UPDATE conversations SET turn_until = CASE WHEN turn_deadline < $until "
                "THEN turn_deadline ELSE $until END "
                "WHERE turn_owner = $owner AND turn_deadline >= $now",
                {"owner": owner, "now": iso(moment),
                 "until": iso(moment + timedelta(seconds=lease_seconds))},
            ).rowcount

    def free_turns_of(self, owner: str) -> int:
        """Free every conversation `owner` holds (its process is known dead: it cannot
        renew, or answer); how many. Its `pending` answers stay for `interrupt_pending`."""
        with self.db.transaction():
            return self.db.execute(
                f"UPDATE conversations SET {_FREE} WHERE turn_owner = $owner",
                {"owner": owner},
            ).rowcount

    def end_turn(self, user_id: str, conversation_id: str, turn_id: str) -> None:
        """Free the conversation from a turn that ends without an answer to store, and
        drop the empty `pending` answer `start_turn` stored for it, if any (a dropped
        regenerated answer gives the branch back to the one it would have replaced)."""
        params = {"id": conversation_id, "user": user_id, "turn": turn_id}
        pending = ("SELECT id FROM messages WHERE reply_to = $turn AND conversation_id = $id "
                   "AND user_id = $user AND role = 'assistant' AND status = 'pending'")
        with self.db.transaction():
            moved = self.db.execute(
                f"UPDATE conversations SET chosen_id = $turn WHERE id = $id AND user_id = "
                f"$user AND chosen_id IN ({pending})", params).rowcount
            self.db.execute(f"DELETE FROM messages WHERE id IN ({pending})", params)
            if moved:
                self.rebranch(conversation_id)
            self._release(user_id, conversation_id, turn_id)

    def finish_turn(self, user_id: str, conversation_id: str, reply: AssistantReply) -> None:
        """Store the answer begun by `start_turn` (complete or partial) and touch the
        conversation. NotFound, writing nothing, if the conversation was deleted since."""
        if reply.status not in STATUSES:
            raise StoreError(f"invalid message status {reply.status!r}")
        now = now_iso()
        with self.db.transaction():
            updated = self.db.execute(
                "UPDATE messages SET content = $content, status = $status, mode = $mode, "
                "prefix_hash = $prefix, usage = $usage, cached_tokens = $cached, "
                "tool_exchange = $exchange WHERE id = $id AND conversation_id = $conversation "
                "AND user_id = $user AND role = 'assistant'",
                {"id": reply.id, "conversation": conversation_id, "user": user_id,
                 "content": reply.content, "status": reply.status, "mode": reply.mode,
                 "prefix": reply.prefix_hash,
                 "usage": json.dumps(reply.usage) if reply.usage else None,
                 "cached": reply.cached_tokens,
                 "exchange": json.dumps(reply.tool_exchange, ensure_ascii=False)
                 if reply.tool_exchange else None},
            )
            if updated.rowcount == 0:
                raise NotFound(f"no reply {reply.id} in conversation {conversation_id}")
            if reply.question_context:
                self.db.execute(
                    "UPDATE messages SET context = $context WHERE id = $id AND user_id = $user "
                    "AND role = 'user'",
                    {"context": reply.question_context, "id": reply.question_id,
                     "user": user_id},
                )
            self._touch(user_id, conversation_id, now)
            if reply.question_id:
                self._release(user_id, conversation_id, reply.question_id)

    def interrupt_pending(self) -> int:
        """Mark every `pending` answer `interrupted` (at start-up: left by a process that
        died mid-answer); returns how many."""
        with self.db.transaction():
            return self.db.execute(
                "UPDATE messages SET status = 'interrupted' WHERE status = 'pending'"
            ).rowcount

    def set_snapshot(self, user_id: str, conversation_id: str, snapshot: str) -> None:
        with self.db.transaction():
            self.db.execute(
                "UPDATE conversations SET snapshot = $snapshot, snapshot_at = $now "
                "WHERE id = $id AND user_id = $user",
                {"snapshot": snapshot, "now": now_iso(), "id": conversation_id,
                 "user": user_id},
            )

    def delete(self, user_id: str, conversation_id: str) -> None:
        with self.db.transaction():
            deleted = self.db.execute(
                "DELETE FROM conversations WHERE id = $id AND user_id = $user",
                {"id": conversation_id, "user": user_id},
            )
        if deleted.rowcount == 0:
            raise NotFound(f"no conversation {conversation_id}")

    def _touch(self, user_id: str, conversation_id: str, now: str) -> None:
        self.db.execute(
            "UPDATE conversations SET updated_at = $now WHERE id = $id AND user_id = $user",
            {"now": now, "id": conversation_id, "user": user_id},
        )

    def _release(self, user_id: str, conversation_id: str, turn_id: str) -> None:
        # Only this turn's claim: one that lapsed may have been taken by the next turn.
        self.db.execute(
            f"UPDATE conversations SET {_FREE} "
            "WHERE id = $id AND user_id = $user AND turn_id = $turn",
            {"id": conversation_id, "user": user_id, "turn": turn_id},
        )

    def _get_message(self, message_id: str) -> ChatMessage:
        row = self.db.execute(
            "SELECT * FROM messages WHERE id = $id", {"id": message_id}
        ).fetchone()
        return _message(row)
