"""Facts with embeddings: the glue between `store.facts` and the embedder.

Saving never fails because of embeddings: the vector is computed first and a
failure only leaves the fact for backfill (`chatsvc embed-facts`). Search needs
both the vector store and the embedder; either one missing raises, and the
HTTP layer answers 503 with the reason.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from chatsvc._errors import EmbeddingError
from chatsvc._threads import in_thread
from chatsvc.embeddings import Embedder
from store import ChatStore, FactStore
from store.contract import EmbedJob
from store.facts import Evidence, Fact, FactHit, Forget, check_fields, content_hash

log = logging.getLogger("chatsvc.facts")

T = TypeVar("T")


def evidence_json(evidence: Evidence) -> dict:
    """A fact's quote as the API and the export show it."""
    return {"message_id": evidence.message_id, "conversation_id": evidence.conversation_id,
            "quote": evidence.quote, "said_at": evidence.said_at}


def forget_json(forget: Forget) -> dict:
    """A forget request as the API and the export show it (never what was forgotten)."""
    return {"id": forget.id, "forgotten_at": forget.forgotten_at, "facts": forget.facts,
            "message_id": forget.message_id, "conversation_id": forget.conversation_id}


def delete_with_facts(chats: ChatStore, facts: FactStore, user_id: str,
                      conversation_id: str) -> list[str]:
    """Delete the conversation and, in the same transaction, the facts whose every quote
    was in it; the ids of those facts. NotFound (nothing changed) for another user's."""
    with chats.db.transaction():
        chats.get(user_id, conversation_id)
        forgotten = facts.forget_conversation(user_id, conversation_id)
        chats.delete(user_id, conversation_id)
    if forgotten:
        log.info("conversation %s deleted with %d facts resting on it", conversation_id,
                 len(forgotten))
    return forgotten


def branched(chats: ChatStore, facts: FactStore, user_id: str, conversation_id: str,
             change: Callable[[], T]) -> tuple[T, list[str]]:
    """`change()`, which changes the conversation's visible branch (store.branches), and
    in the same transaction the deletion of the facts whose every quote is now off it;
    (what `change` returned, the ids of those facts)."""
    with chats.db.transaction():
        result = change()
        forgotten = facts.forget_abandoned(user_id, conversation_id)
    if forgotten:
        log.info("%d facts of conversation %s rested only on an abandoned branch",
                 len(forgotten), conversation_id)
    return result, forgotten


class FactService:
    def __init__(self, store: FactStore, embedder: Embedder) -> None:
        self.store = store
        self.embedder = embedder

    async def create(self, user_id: str, *, category: str, fact: str) -> Fact:
        text = check_fields(category, fact)
        vector = await self._document_vector(text)
        return await in_thread(
            self.store.create, user_id, category=category, fact=text, embedding=vector
        )

    async def update(
        self, user_id: str, fact_id: str, *, category: str | None = None, fact: str | None = None
    ) -> Fact:
        """Re-embeds when the text changes; without a vector the old one is dropped."""
        current = await in_thread(self.store.get, user_id, fact_id)
        text = check_fields(category, fact)
        changed = text is not None and text != current.fact
        vector = await self._document_vector(text) if changed else None
        return await in_thread(
            self.store.update, user_id, fact_id, category=category, fact=text, embedding=vector
        )

    async def delete(self, user_id: str, fact_id: str) -> None:
        await in_thread(self.store.delete, user_id, fact_id)

    async def search(
        self, user_id: str, query: str, *, limit: int = 10, max_distance: float = 1.0
    ) -> list[FactHit]:
        """Raises VectorUnavailable / EmbeddingError when search cannot run."""
        self.store.db.require_vectors()  # before spending an embedding call
        vector = await self.embedder.embed_query(query)
        return await in_thread(
            self.store.search_by_vector, user_id, vector, limit=limit, max_distance=max_distance
        )

    async def index(self, facts: list[Fact]) -> int:
        """Embed `facts` in one batch (e.g. just extracted); best effort, returns how many."""
        if not facts or not self.store.db.vector_state.ok:
            return 0
        try:
            vectors = await self.embedder.embed_documents([f.fact for f in facts])
        except EmbeddingError as exc:
            log.warning("%d facts left for backfill: %s", len(facts), exc)
            return 0
        jobs = [EmbedJob(f.id, f.fact, content_hash(f.fact)) for f in facts]
        await in_thread(self.store.save_embeddings, list(zip(jobs, vectors, strict=True)))
        return len(facts)

    async def vectors(self, texts: list[str]) -> list[list[float] | None]:
        """The texts' document vectors in one batch; all None when vectors are off or
        the embedder failed (the facts are then saved for backfill)."""
        if not texts or not self.store.db.vector_state.ok:
            return [None] * len(texts)
        try:
            return list(await self.embedder.embed_documents(texts))
        except EmbeddingError as exc:
            log.warning("%d facts saved without embedding, left for backfill: %s",
                        len(texts), exc)
            return [None] * len(texts)

    async def _document_vector(self, text: str) -> list[float] | None:
        return (await self.vectors([text]))[0]
