"""Conversational recall: search over a user's stored messages, and their indexing.

Indexing never runs inside a request: after messages are stored (a chat turn, an
import) `index_soon` wakes the background indexer, whose backfill of the messages
index keys them (full text at once, even while the embedder is down) and embeds them.
Search degrades like knowledge search: hybrid and semantic fall back to keyword
with a reason when the embeddings or the vector store are unavailable.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from functools import partial

from chatsvc._errors import EmbeddingError
from chatsvc._threads import in_thread
from chatsvc.embeddings import Embedder, embed_beside
from chatsvc.indexing import Indexer
from context import question_dates, question_parts
from store import Bounds, MessageHit, MessageIndexStore, VectorUnavailable
from store.clock import iso
from store.hybrid import Ranking
from store.recall import without_names

log = logging.getLogger("chatsvc.recall")

MODES = ("hybrid", "semantic", "keyword")


def turn_pool(limit: int) -> int:
    """A chat turn's rankings are cut at 2 x limit (not 50): it waits for them, and its
    block shows 5 at most."""
    return limit * 2


@dataclass(frozen=True)
class Found:
    mode: str  # the mode that ran
    degraded_reason: str | None
    hits: list[MessageHit]


class RecallService:
    def __init__(self, index: MessageIndexStore, embedder: Embedder, indexer: Indexer) -> None:
        self.index = index
        self.embedder = embedder
        self.indexer = indexer

    async def search(self, bounds: Bounds, query: str, *, mode: str = "hybrid",
                     limit: int = 10, asked_at: datetime | None = None) -> Found:
        """`query` searched in `mode`. A question of several parts (context.question_parts)
        is searched part by part, the rankings merged so that each part's best can reach
        the top. With `asked_at` (aware, in the asker's zone), the messages written in
        the time the question names (context.question_dates) rank higher (hybrid and
        keyword)."""
        prefer = preferred(bounds.user_id, query, asked_at)
        asked = question_parts.parts(query)
        # Read once for all the parts: what is embedded leaves their names out. Not read
        # where nothing is embedded (keyword search, or the vector store down).
        embeds = mode != "keyword" and self.index.db.vector_state.ok
        speakers = await in_thread(self.index.speakers, bounds.user_id) if embeds else []
        found = [await self._search(bounds, part, mode, limit, prefer, speakers)
                 for part in asked]
        return found[0] if len(found) == 1 else _merged(found, limit)

    async def _search(self, bounds: Bounds, query: str, mode: str, limit: int,
                      prefer: Bounds | None, speakers: Sequence[str]) -> Found:
        reason = None
        if mode != "keyword":
            try:
                self.index.db.require_vectors()  # before spending an embedding call
                hits = await self._vector_search(bounds, query, mode, limit, prefer,
                                                 speakers)
                return Found(mode, None, hits)
            except EmbeddingError as exc:
                reason = f"embeddings unavailable: {exc}"
            except VectorUnavailable as exc:
                reason = f"vector store unavailable: {exc.reason}"
            log.warning("conversation search degraded to keyword: %s", reason)
        hits = await in_thread(self.index.keyword, query, bounds, limit=limit, prefer=prefer)
        return Found("keyword", reason, hits)

    async def _vector_search(self, bounds: Bounds, query: str, mode: str, limit: int,
                             prefer: Bounds | None, speakers: Sequence[str]
                             ) -> list[MessageHit]:
        # What is embedded leaves out the `speakers`' names (store.recall._names: they
        # match nearly every key of a group chat alike); the keyword half and the
        # speaker's raise read the whole question.
        embedded = without_names(query, speakers)
        if mode == "semantic":
            vector = await self.embedder.embed_query(embedded)
            return await in_thread(self.index.semantic, vector, bounds, limit=limit)
        # Hybrid: with an embedding service, the keyword half is ranked during its wait.
        vector, keyword = await embed_beside(self.embedder, embedded, partial(
            self.index.hybrid_keyword, query, bounds, limit=limit))
        return await in_thread(self.index.hybrid, query, vector, bounds, limit=limit,
                               keyword=keyword, prefer=prefer)

    def excerpts(self, user_id: str, query: str, vector: Sequence[float], *,
                 limit: int, keyword: Ranking | None = None,
                 asked_at: datetime | None = None,
                 facts: Sequence[tuple[str, float]] | None = None) -> list[MessageHit]:
        """Hybrid search for a chat turn that embedded its query already (blocking: the
        turn runs it in the worker thread of its other searches). `keyword`: the keyword
        half, from `keyword_ahead` with the same arguments; `asked_at` as for `search`;
        `facts`: the user's facts nearest `vector` the turn found already, (fact id,
        similarity) best first, at least 2 x `limit` of them or all there are (the fact
        keys come from them: `MessageIndex.hybrid`)."""
        return self.index.hybrid(query, vector, Bounds(user_id), limit=limit,
                                 pool=turn_pool(limit), keyword=keyword,
                                 prefer=preferred(user_id, query, asked_at), facts=facts)

    def keyword_ahead(self, user_id: str, query: str, *, limit: int) -> Ranking:
        """The keyword half of `excerpts`, taken while the query is embedded."""
        return self.index.hybrid_keyword(query, Bounds(user_id), limit=limit,
                                         pool=turn_pool(limit))

    # -- indexing --------------------------------------------------------------------

    def index_soon(self) -> None:
        """The one call point after messages are stored: the background indexer keys
        (full text at once) and embeds them, never the request."""
        self.indexer.wake()


def preferred(user_id: str, query: str, asked_at: datetime | None) -> Bounds | None:
    """The dates of the time `query` names as of `asked_at` (context.question_dates), as
    the bounds a search prefers; None without either."""
    when = asked_at and question_dates.window(query, asked_at)
    return when and Bounds(user_id, after=iso(when.start), before=iso(when.end))


def _merged(found: list[Found], limit: int) -> Found:
    """The answers to a question's parts as one: their rankings fused
    (`question_parts.merged`, score 0..1), the mode that ran in the worst of them."""
    hits = {hit.message_id: hit for answer in found for hit in answer.hits}
    fused = question_parts.merged([[hit.message_id for hit in answer.hits] for answer in found],
                                  limit)
    degraded = next((answer for answer in found if answer.degraded_reason), found[0])
    return Found(degraded.mode, degraded.degraded_reason,
                 [replace(hits[message_id], score=score) for message_id, score in fused])
