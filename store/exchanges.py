"""/v1 exchanges kept as turns of the user's conversations.

A /v1 client sends the whole conversation with every request. Each message it adds
is stored with its `chain`: the hash of the conversation's text up to and including
it (`chain_of`), so the stored message that ends the longest known prefix of a
request is one indexed lookup, and only what follows it is new. A retry (its
question stored already) adds nothing; its answer is stored only if none was.

Where a request belongs (`record_question`):
* named (`key`, the client's name for it, unique per user): that conversation,
  created on first sight; what follows the longest stored prefix in it is appended.
* unnamed: the conversation whose latest message ends the longest stored prefix
  (its stored messages are a prefix of the request's), else a new one. A request that
  forks a stored conversation (a prefix that ends before its latest message: the client
  regenerated or edited) starts a new conversation with all of its messages, and the
  forked one's stable-prefix snapshot.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass

from store.chats import Chats, Conversation, title_for
from store.clock import new_id, now_iso
from store.contract import Database
from store.images import ImageIn, add_images
from store.sql import in_list, record


@dataclass(frozen=True)
class Said:
    """One message of the client's conversation: user text or an assistant's answer."""

    role: str  # "user" | "assistant"
    content: str


@dataclass(frozen=True)
class Recorded:
    """Where a request's exchange stands once its question is recorded."""

    conversation: Conversation
    question_id: str  # the stored current question
    answer_wanted: bool  # its answer is not stored yet
    added: bool = True  # the question was stored now (with its images), not by a retry


@dataclass(frozen=True)
class Answer:
    content: str
    mode: str
    prefix_hash: str
    usage: dict | None
    cached_tokens: int | None


def chain_of(said: list[Said], start: str = "") -> list[str]:
    """Each message's hash of the conversation up to and including it (JSON-framed, so
    no two sequences of texts share one)."""
    chain, hashes = start, []
    for message in said:
        framed = json.dumps([chain, message.role, message.content], ensure_ascii=False)
        chain = hashlib.sha256(framed.encode()).hexdigest()
        hashes.append(chain)
    return hashes


@dataclass(frozen=True)
class _Match:
    index: int  # of the request's message that ends the stored prefix
    message_id: str
    conversation_id: str
    latest: bool  # it is its conversation's latest message


class Exchanges:
    def __init__(self, db: Database, chats: Chats) -> None:
        self.db = db
        self.chats = chats

    def record_question(self, user_id: str, said: list[Said], *, key: str | None = None,
                        images: Sequence[ImageIn] = ()) -> Recorded:
        """Store what `said` (ending with the current question, which keeps `images`)
        adds, as above, in one transaction (a SQLite write transaction excludes a
        concurrent retry's, which stores no images)."""
        chains = chain_of(said)
        with self.db.transaction():
            named = self._named(user_id, key) if key is not None else None
            scope = named.id if named else None
            match = self._longest(user_id, chains, scope) if key is None or named else None
            if match and match.index == len(said) - 1:  # a retry
                return Recorded(self.chats.get(user_id, match.conversation_id),
                                match.message_id, answer_wanted=match.latest, added=False)
            forked = None
            if key is None and match and not match.latest:
                forked, match = match.conversation_id, None  # a conversation of its own
            conversation_id = scope or (match.conversation_id if match else None)
            if conversation_id is None:
                conversation_id = self._create(user_id, said, key, forked)
            first = match.index + 1 if match else 0
            ids = self._append(user_id, conversation_id, said[first:], chains[first:])
            add_images(self.db, user_id, ids[-1], images, now_iso())
            return Recorded(self.chats.get(user_id, conversation_id), ids[-1],
                            answer_wanted=True)

    def record_answer(self, user_id: str, recorded: Recorded, said: list[Said],
                      answer: Answer) -> str:
        """Store the answer to `recorded`'s question (`said` is the request's conversation,
        ending with it); its id. NotFound when the conversation was deleted meanwhile."""
        chain = chain_of([Said("assistant", answer.content)], chain_of(said)[-1])[0]
        conversation_id, now = recorded.conversation.id, now_iso()
        with self.db.transaction():
            self.chats.get(user_id, conversation_id)  # NotFound once deleted
            answer_id = new_id()
            self.db.execute(
                "INSERT INTO messages(id, conversation_id, user_id, role, content, status, "
                "mode, prefix_hash, usage, cached_tokens, reply_to, parent_id, chain, "
                "created_at) VALUES ($id, $conversation, $user, 'assistant', $content, "
                "'complete', $mode, $prefix, $usage, $cached, $question, $question, $chain, "
                "$now)",
                {"id": answer_id, "conversation": conversation_id, "user": user_id,
                 "content": answer.content, "mode": answer.mode, "prefix": answer.prefix_hash,
                 "usage": json.dumps(answer.usage) if answer.usage else None,
                 "cached": answer.cached_tokens, "question": recorded.question_id,
                 "chain": chain, "now": now},
            )
            self._touch(user_id, conversation_id, now)
        return answer_id

    def _named(self, user_id: str, key: str) -> Conversation | None:
        row = self.db.execute(
            "SELECT * FROM conversations WHERE user_id = $user AND client_key = $key",
            {"user": user_id, "key": key},
        ).fetchone()
        return record(Conversation, row) if row else None

    def _longest(self, user_id: str, chains: list[str], scope: str | None) -> _Match | None:
        """The stored message ending the longest prefix of `chains` (in `scope`, one
        conversation, when given); a conversation's latest message first among equals."""
        marks, params = in_list("chain", chains)
        within = " AND m.conversation_id = $scope" if scope else ""
        rows = self.db.execute(
            "SELECT m.id, m.conversation_id, m.chain, m.seq = (SELECT max(seq) FROM messages "
            "WHERE conversation_id = m.conversation_id) AS latest FROM messages m "
            f"WHERE m.user_id = $user AND m.chain IN {marks}{within}",
            {**params, "user": user_id, "scope": scope},
        ).fetchall()
        position = {chain: index for index, chain in enumerate(chains)}
        found = [_Match(position[r["chain"]], r["id"], r["conversation_id"], bool(r["latest"]))
                 for r in rows]
        return max(found, key=lambda m: (m.index, m.latest), default=None)

    def _create(self, user_id: str, said: list[Said], key: str | None,
                forked: str | None) -> str:
        """A new conversation; one `forked` from another keeps its stable-prefix snapshot,
        so the client's chat, regenerated or edited, keeps its cached prefix."""
        conversation_id, now = new_id(), now_iso()
        first_user = next(m.content for m in said if m.role == "user")
        snapshot = self.chats.get(user_id, forked).snapshot if forked else None
        self.db.execute(
            "INSERT INTO conversations(id, user_id, title, client_key, snapshot, snapshot_at, "
            "created_at, updated_at) VALUES ($id, $user, $title, $key, $snapshot, "
            "$snapshot_at, $now, $now)",
            {"id": conversation_id, "user": user_id, "title": title_for(first_user),
             "key": key, "snapshot": snapshot, "snapshot_at": now if snapshot else None,
             "now": now},
        )
        return conversation_id

    def _append(self, user_id: str, conversation_id: str, said: list[Said],
                chains: list[str]) -> list[str]:
        """Store `said` after the visible branch's last message (store.branches), each
        message the parent of the next."""
        ids = [new_id() for _ in said]
        parents = [self.chats.tip(conversation_id), *ids[:-1]]
        rows = [{"id": ident, "conversation": conversation_id, "user": user_id,
                 "role": message.role, "content": message.content, "chain": chain,
                 "parent": parent, "now": now_iso()}
                for ident, message, chain, parent in zip(ids, said, chains, parents, strict=True)]
        self.db.executemany(
            "INSERT INTO messages(id, conversation_id, user_id, role, content, status, chain, "
            "parent_id, created_at) VALUES ($id, $conversation, $user, $role, $content, "
            "'complete', $chain, $parent, $now)", rows)
        self._touch(user_id, conversation_id, rows[-1]["now"])
        return ids

    def _touch(self, user_id: str, conversation_id: str, now: str) -> None:
        self.db.execute(
            "UPDATE conversations SET updated_at = $now WHERE id = $id AND user_id = $user",
            {"now": now, "id": conversation_id, "user": user_id},
        )

