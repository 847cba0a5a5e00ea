"""A /v1 request's exchange kept as a turn of one of the user's conversations.

`Exchange.record` stores what the request's messages add (store.exchanges) before the
upstream is asked, so an upstream failure keeps the user's message; `answered` (the
relay's `on_finish`) stores a complete answer. The client's messages stay the truth
for the prompt: the stored conversation only lends it its pinned stable-prefix
snapshot (as on /api/chat), so the prefix stays byte-identical from turn to turn
(without a conversation, the next turn's "recent conversations" would list this one).
Storage failing never fails the request: it is logged and the answer still goes out;
the client sends the lost messages again with its next request, which stores them.

What is kept: the user's messages and the assistant's text answers, and the images
of the current question (as /api/chat keeps a message's: rows with it, files written
once they committed); earlier messages a request adds keep their text alone. An
assistant message that calls tools and the tools' results are the client's (it sends
them again with every request) and are not stored: a turn with tools is kept as its
question and its final text answer.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from chatsvc._threads import in_thread_shielded
from chatsvc.chat._gather import Sources
from chatsvc.chat._prepare import Prepared
from chatsvc.chat._relay import Outcome
from chatsvc.images import Image
from context import Message
from store import NotFound, StoreError
from store.chats import Conversation
from store.contract import ExchangeStore
from store.exchanges import Answer, Recorded, Said

log = logging.getLogger("chatsvc.chat")


def said_of(history: Sequence[Message], current: str) -> list[Said]:
    """The request's conversation as stored: its user messages and text answers."""
    kept = [Said(m.role, m.content) for m in history
            if m.role in ("user", "assistant") and not m.tool_calls and m.content.strip()]
    return [*kept, Said("user", current)]


@dataclass
class Exchange:
    sources: Sources
    store: ExchangeStore
    user_id: str
    said: list[Said]
    recorded: Recorded

    @classmethod
    async def record(cls, sources: Sources, store: ExchangeStore, user_id: str,
                     history: Sequence[Message], current: str, key: str | None,
                     images: Sequence[Image] = ()) -> Exchange | None:
        """The exchange with its question (and the question's `images`) stored; None
        when that failed (logged)."""
        said = said_of(history, current)
        try:
            recorded = await in_thread_shielded(
                store.record_question, user_id, said, key=key,
                images=[image.stored() for image in images])
        except StoreError as exc:
            log.warning("could not store a /v1 question (the answer goes out unstored): %s",
                        exc)
            return None
        if recorded.added and any(image.data is not None for image in images):
            await _save_files(sources, user_id, images)
        return cls(sources, store, user_id, said, recorded)

    @property
    def conversation(self) -> Conversation:
        return self.recorded.conversation

    async def answered(self, outcome: Outcome, *, prepared: Prepared, model: str) -> None:
        """Store a complete text answer, unless a retry's answer is stored already. A
        partial or failed one is not: the client did not get it, and will ask again.
        The indexer is woken here, not when the question was stored: embedding it then
        would run beside the turn's own query embedding, on the same cores; /api/chat
        wakes it after the answer too."""
        stored = await self._store_answer(outcome, prepared=prepared, model=model)
        if stored or self.recorded.added:
            self.sources.recall.index_soon()

    async def _store_answer(self, outcome: Outcome, *, prepared: Prepared, model: str) -> bool:
        if not (self.recorded.answer_wanted and outcome.status == "complete"
                and outcome.content and not outcome.tool_calls):
            return False
        usage = outcome.usage.as_json() if outcome.usage else None
        answer = Answer(
            outcome.content, prepared.mode, prepared.assembly.prefix_hash,
            {**usage, "finish_reason": outcome.finish_reason, "model": model} if usage else None,
            outcome.usage.cached_tokens if outcome.usage else None)
        try:
            await in_thread_shielded(self.store.record_answer, self.user_id, self.recorded,
                                     self.said, answer)
        except NotFound:
            log.info("conversation %s was deleted while answering; /v1 answer not stored",
                     self.conversation.id)
        except StoreError as exc:
            log.warning("could not store a /v1 answer (it went out): %s", exc)
        else:
            return True
        return False


async def _save_files(sources: Sources, user_id: str, images: Sequence[Image]) -> None:
    """The question's image files, once their rows committed (chatsvc.chat._turn's
    `_save_files`); one that fails to write is logged, the request goes on."""
    try:
        await in_thread_shielded(sources.images.save_files, user_id, images)
    except OSError:
        log.exception("could not write the image files of a /v1 message of user %s", user_id)
