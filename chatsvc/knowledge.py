"""Knowledge base orchestration: chunk -> save -> embed, tiers, search with degradation.

Indexing never waits on or fails because of the embedder or the LLM: chunks are
saved first (keyword search finds them at once); vectors follow from the
background indexer (a job the client can poll for documents sent over HTTP, the
backfill for posts), or inline for the CLI; LLM tiers are written by `write_llm_tiers`
(after the response, in the upload job, or after the CLI's last file), which leaves
the extractive ones in place on any failure.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from functools import partial

from chatsvc._errors import EmbeddingError, UpstreamError
from chatsvc._settings import Settings
from chatsvc._threads import in_thread
from chatsvc.embeddings import Embedder, embed_beside
from chatsvc.indexing import INDEX, REINDEX, Indexer
from chatsvc.llm import LLM
from context import Doc, fit_docs
from context.chunking import chunk_text
from context.tiers import extractive_tiers, parse_tiers, tier_messages
from context.tokens import get_tokenizer
from store import ChunkIn, Hit, Job, KnowledgeStore, NotFound, Post, VectorUnavailable
from store.hybrid import Ranking
from store.knowledge import Saved

log = logging.getLogger("chatsvc.knowledge")

EMBED_BATCH = 32
TIER_MAX_TOKENS = 600  # the answer: an abstract and a few overview points
SNIPPET_CHARS = 240
POST_SOURCE = "post"
# Extra hits asked for when entries are left out: the documents pinned whole share one
# docs budget of text, about fifteen chunks at the default sizes.
EXCLUDED_OVERFETCH = 30


def _wanted(limit: int, exclude: frozenset[str]) -> int:
    return limit + (EXCLUDED_OVERFETCH if exclude else 0)


@dataclass(frozen=True)
class SearchResult:
    mode: str
    degraded_reason: str | None
    hits: list[Hit]


def snippet(text: str, at: int) -> str:
    """About SNIPPET_CHARS of `text` starting a little before position `at`."""
    start = max(0, min(at - 40, len(text) - SNIPPET_CHARS))
    piece = text[start : start + SNIPPET_CHARS].strip()
    return ("…" if start else "") + piece + ("…" if start + SNIPPET_CHARS < len(text) else "")


class KnowledgeService:
    def __init__(
        self, settings: Settings, knowledge: KnowledgeStore, embedder: Embedder, llm: LLM,
        indexer: Indexer,
    ) -> None:
        self.settings = settings
        self.knowledge = knowledge
        self.embedder = embedder
        self.llm = llm
        self.indexer = indexer
        self.tokenizer = get_tokenizer(settings.tokenizer)

    # -- indexing ----------------------------------------------------------------------

    def prepare(self, title: str, content: str) -> tuple[list[ChunkIn], str, str]:
        """Chunks and extractive (abstract, overview): CPU work for a worker thread."""
        s = self.settings
        chunks = chunk_text(
            content, target_tokens=s.knowledge_chunk_tokens,
            max_chars=s.knowledge_chunk_max_chars, overlap_chars=s.knowledge_chunk_overlap_chars,
            tokenizer=self.tokenizer,
        )
        return [ChunkIn(c.text, c.language) for c in chunks], *extractive_tiers(title, content)

    async def save(
        self, *, owner_id: str | None, title: str, content: str, source_type: str,
        source_id: str | None = None, metadata: dict | None = None, pinned: bool = False,
        project_id: str | None = None,
    ) -> Saved:
        """Save (or replace, or keep) an entry with its chunks, without vectors, and pin
        it when `pinned` (in `project_id`).

        LLM tiers are not written here: callers run `write_llm_tiers` afterwards
        (a response background task, the upload job before it embeds, or the CLI after
        its last file) when `wants_llm_tiers`.
        """
        chunks, abstract, overview = await in_thread(self.prepare, title, content)
        saved = await in_thread(
            self.knowledge.save, owner_id=owner_id, title=title, content=content,
            source_type=source_type, chunks=chunks, source_id=source_id, metadata=metadata,
            abstract=abstract, overview=overview,
        )
        if pinned:
            entry = await in_thread(self.knowledge.pin, saved.entry.id, owner_id=owner_id,
                                    project_id=project_id)
            saved = replace(saved, entry=entry)
        return saved

    async def index(self, **document) -> Saved:
        """`save`, then embed the chunks here and now (the CLI: no request waits on it)."""
        saved = await self.save(**document)
        if saved.jobs:
            await self.embed_jobs(saved.jobs)
        return saved

    async def submit(self, user_id: str, **document) -> tuple[Saved, Job]:
        """`save` for `user_id`, and a job (theirs to poll) that embeds the chunks in the
        background. Also for an unchanged entry: it repairs vectors a crash left out."""
        saved = await self.save(owner_id=user_id, **document)
        return saved, await self.indexer.enqueue(user_id, kind=INDEX, entry_id=saved.entry.id)

    async def reindex(self, user_id: str, entry_id: str) -> Job:
        """A job that embeds every chunk of the entry again."""
        return await self.indexer.enqueue(user_id, kind=REINDEX, entry_id=entry_id)

    def wants_llm_tiers(self, saved: Saved) -> bool:
        """Whether to ask the LLM for the entry's tiers: on, and it has extractive ones
        (new or changed, or an earlier ask failed or was cut off by a restart)."""
        return self.settings.knowledge_llm_tiers != "off" and saved.entry.tiers_by != "llm"

    async def embed_jobs(self, jobs) -> bool:
        """Embed and store chunk vectors; False (and a log line) when that cannot happen now."""
        try:
            for start in range(0, len(jobs), EMBED_BATCH):
                batch = jobs[start : start + EMBED_BATCH]
                vectors = await self.embedder.embed_documents([j.text for j in batch])
                pairs = list(zip(batch, vectors, strict=True))
                await in_thread(self.knowledge.save_embeddings, pairs)
        except (EmbeddingError, VectorUnavailable) as exc:
            log.warning("chunks saved without vectors (backfill later): %s", exc)
            return False
        return True

    async def write_llm_tiers(self, entry_id: str, digest: str) -> bool:
        """Ask the LLM for L0/L1 once; keep the extractive tiers on any failure."""
        try:
            entry = await in_thread(self.knowledge.read, entry_id)
        except NotFound:
            return False  # deleted before its tiers were asked for
        messages = await in_thread(tier_messages, entry.title, entry.content,
                                   tokenizer=self.tokenizer)
        try:
            reply = await self.llm.complete(
                messages, temperature=0, max_tokens=TIER_MAX_TOKENS,
                timeout=self.settings.knowledge_tier_timeout_seconds,
            )
        except UpstreamError as exc:
            log.info("LLM tiers skipped for %s: %s", entry_id, exc)
            return False
        tiers = parse_tiers(reply)
        if tiers is None:
            log.info("LLM tiers for %s were unusable; keeping extractive ones", entry_id)
            return False
        return await in_thread(self.knowledge.set_tiers, entry_id, digest, *tiers)

    # -- posts -------------------------------------------------------------------------

    async def sync_post(self, post: Post | None, post_id: str) -> Saved | None:
        """Index a published post as a shared entry; drop it when unpublished or deleted."""
        if post is not None and post.published:
            saved = await self.save(
                owner_id=None, title=post.title, content=post.content,
                source_type=POST_SOURCE, source_id=post.id,
                metadata={"post_id": post.id, "excerpt": post.excerpt},
            )
            self.indexer.wake()  # the backfill embeds its chunks
            return saved
        await in_thread(self.knowledge.delete_source, None, POST_SOURCE, post_id)
        return None

    # -- pins --------------------------------------------------------------------------

    async def pinned_docs(self, user_id: str, project_id: str | None) -> list[Doc]:
        """The forms of the pinned documents (pin order) that fit CHATSVC_DOCS_TOKENS."""
        entries = await in_thread(self.knowledge.pinned, user_id, project_id)
        return await in_thread(fit_docs, entries, self.settings.docs_tokens,
                               tokenizer=self.tokenizer)

    # -- search ------------------------------------------------------------------------

    async def search(
        self, user_id: str, query: str, *, mode: str = "hybrid", limit: int = 10,
        source_type: str | None = None,
    ) -> SearchResult:
        """Search in `mode`; hybrid/semantic fall back to keyword when vectors cannot run."""
        reason = None
        if mode != "keyword":
            try:
                hits = await self._vector_search(user_id, query, mode, limit, source_type)
                return SearchResult(mode, None, hits)
            except EmbeddingError as exc:
                reason = f"embeddings unavailable: {exc}"
            except VectorUnavailable as exc:
                reason = f"vector store unavailable: {exc.reason}"
            log.warning("knowledge search degraded to keyword: %s", reason)
        hits = await in_thread(
            self.knowledge.keyword, query, viewer_id=user_id, source_type=source_type,
            limit=limit,
        )
        return SearchResult("keyword", reason, hits)

    def search_with_vector(
        self, user_id: str, query: str, query_vector, *, limit: int = 5,
        source_type: str | None = None, exclude: frozenset[str] = frozenset(),
        keyword: Ranking | None = None,
    ) -> list[Hit]:
        """Hybrid search for a chat turn that embedded the query already, leaving out the
        chunks of the entries in `exclude` (the prompt holds their full text already).
        Blocking: the turn runs it in the worker thread of its other searches. `keyword`:
        the keyword half, from `keyword_ahead` with the same arguments.

        Raises VectorUnavailable when the vector store cannot run (the chat falls back).
        """
        hits = self.knowledge.hybrid(query, query_vector, viewer_id=user_id,
                                     source_type=source_type, limit=_wanted(limit, exclude),
                                     keyword=keyword)
        return [hit for hit in hits if hit.entry_id not in exclude][:limit]

    def keyword_ahead(
        self, user_id: str, query: str, *, limit: int = 5, source_type: str | None = None,
        exclude: frozenset[str] = frozenset(),
    ) -> Ranking:
        """The keyword half of `search_with_vector`, taken while the query is embedded."""
        return self.knowledge.hybrid_keyword(query, viewer_id=user_id, source_type=source_type,
                                             limit=_wanted(limit, exclude))

    async def _vector_search(self, user_id, query, mode, limit, source_type):
        options = {"viewer_id": user_id, "source_type": source_type, "limit": limit}
        if mode == "semantic":
            vector = await self.embedder.embed_query(query)
            return await in_thread(self.knowledge.semantic, vector, **options)
        # Hybrid: with an embedding service, the keyword half is ranked during its wait.
        vector, keyword = await embed_beside(self.embedder, query, partial(
            self.knowledge.hybrid_keyword, query, **options))
        return await in_thread(self.knowledge.hybrid, query, vector, keyword=keyword, **options)
