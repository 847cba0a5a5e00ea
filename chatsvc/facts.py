"""Facts with embeddings: the glue between `store.facts` and the embedder.

Saving never fails because of embeddings: the vector is computed first and a
failure only leaves the fact for backfill (`chatsvc embed-facts`). Search needs
both the vector store and the embedder; either one missing raises, and the
HTTP layer answers 503 with the reason.
"""

from __future__ import annotations

import logging

from chatsvc._errors import EmbeddingError
from chatsvc._threads import in_thread
from chatsvc.embeddings import Embedder
from store import FactStore
from store.contract import EmbedJob
from store.facts import Fact, FactHit, check_fields, content_hash

log = logging.getLogger("chatsvc.facts")


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

    async def _document_vector(self, text: str) -> list[float] | None:
        if not self.store.db.vector_state.ok:
            return None
        try:
            return (await self.embedder.embed_documents([text]))[0]
        except EmbeddingError as exc:
            log.warning("fact saved without embedding, left for backfill: %s", exc)
            return None
