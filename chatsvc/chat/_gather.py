"""Where each context layer comes from: one async method per source.

`Sources` is the narrow interface between the chat and the domain stores and
services: exactly what a turn reads, nothing else. Nothing here is ever made up:
a source with nothing to say gives an empty layer. Store calls run in worker
threads; the per-message searches all in one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from chatsvc._settings import Settings
from chatsvc._threads import in_thread
from chatsvc.chat._stopwatch import Stopwatch
from chatsvc.embeddings import Embedder
from chatsvc.fact_sheet import context_facts
from chatsvc.images import MessageImages
from chatsvc.knowledge import KnowledgeService
from chatsvc.memory import MemoryService
from chatsvc.recall import RecallService, turn_pool
from context import (
    ConversationSummary,
    Doc,
    Dynamic,
    Excerpt,
    FactHit,
    MemoryItem,
    Post,
    SheetFact,
    Snapshot,
    Snippet,
)
from store import ChatStore, Database, FactSheetStore, FactStore, PostStore, TurnLease
from store.chats import Conversation
from store.hybrid import Ranking
from store.recall import speaker

RECENT_CONVERSATIONS = 5
RELATED_FACTS = 10
KNOWLEDGE_SNIPPETS = 5
FALLBACK_POSTS = 3
# Earlier messages searched per turn: the block shows at most context.MAX_EXCERPTS, but
# the best hits are often in the visible history, which the block never repeats.
EARLIER_MESSAGES = 10
# The facts a turn reads: RELATED_FACTS for its block, and as many as conversation recall's
# ranking holds for the fact keys, from one search of the user's facts.
FACTS_SEARCHED = max(RELATED_FACTS, turn_pool(EARLIER_MESSAGES))


@dataclass(frozen=True)
class KeywordsAhead:
    """The keyword halves of a turn's hybrid searches, taken while its query is embedded
    by a service (`HeadStart`): the searches after it have only vectors left to rank."""

    knowledge: Ranking
    recall: Ranking


@dataclass
class Sources:
    """What a turn's context is read from, and the settings that bound it."""

    settings: Settings
    db: Database  # its vector state: whether semantic search can run at all
    embedder: Embedder
    chats: ChatStore
    fact_sheets: FactSheetStore
    facts: FactStore
    memory: MemoryService
    knowledge: KnowledgeService
    posts: PostStore
    recall: RecallService
    images: MessageImages  # user messages' images (rows and files)
    # This process's lease on the conversations its turns claim (TurnClaims renews it);
    # None: a claim holds for the turn's whole hold.
    turn_lease: TurnLease | None = None

    # -- stable layers (pinned per conversation) --------------------------------------

    async def fact_sheet(self, user_id: str) -> tuple[str | None, list[SheetFact]]:
        """(sheet id, entries in sheet order) of the user's latest fact sheet."""
        found = await in_thread(context_facts, self.fact_sheets, user_id)
        entries = [SheetFact(e["id"], e["category"], e["fact"], rank)
                   for rank, e in enumerate(found.entries)]
        return found.sheet_id, entries

    async def baseline_memory(self, user_id: str, project_id: str | None) -> list[MemoryItem]:
        """The deterministic memory baseline (query-independent), in its own order."""
        baseline = await self.memory.baseline(user_id, project_id)
        return [MemoryItem(m.id, m.type, m.content) for m in baseline]

    async def pinned_docs(self, user_id: str, project_id: str | None) -> list[Doc]:
        """The user's and everyone's pinned documents, each in the form that fits."""
        return await self.knowledge.pinned_docs(user_id, project_id)

    async def recent_conversations(
        self, user_id: str, conversation: Conversation | None
    ) -> list[ConversationSummary]:
        earlier = await in_thread(
            self.chats.recent, user_id, before=conversation, limit=RECENT_CONVERSATIONS
        )
        return [ConversationSummary(c.id, c.title, c.created_at) for c in earlier]

    # -- per-message layers (one query embedding, one worker thread) -------------------

    async def keywords_ahead(self, user_id: str, query: str, snapshot: Snapshot
                             ) -> KeywordsAhead:
        """What `searches` would rank by keyword, in one worker-thread hop."""
        return await in_thread(self._keywords_ahead, user_id, query, snapshot)

    def _keywords_ahead(self, user_id: str, query: str, snapshot: Snapshot) -> KeywordsAhead:
        return KeywordsAhead(
            self.knowledge.keyword_ahead(user_id, query, limit=KNOWLEDGE_SNIPPETS,
                                         exclude=_whole(snapshot.docs)),
            self.recall.keyword_ahead(user_id, query, limit=EARLIER_MESSAGES))

    async def searches(
        self, user_id: str, project_id: str | None, query: str, vector: list[float],
        snapshot: Snapshot, clock: Stopwatch, ahead: KeywordsAhead | None = None,
        asked_at: datetime | None = None,
    ) -> Dynamic:
        """The per-message layers: the four searches, each timed by `clock`, one after
        another in one worker thread. Not side by side: on 2 cores the GIL and the other
        threads made each of four parallel searches 3-8x slower than alone; and each hop
        to a worker thread waits for one to wake up, a core to be free and the event
        loop to take the answer back (docs/chat.md, Benchmark). `ahead`: their keyword
        halves, already taken; `asked_at`: the turn's time in the user's zone (the earlier
        messages of a time the message names rank higher)."""
        return await in_thread(self._searches, user_id, project_id, query, vector, snapshot,
                               clock, ahead, asked_at)

    def _searches(
        self, user_id: str, project_id: str | None, query: str, vector: list[float],
        snapshot: Snapshot, clock: Stopwatch, ahead: KeywordsAhead | None,
        asked_at: datetime | None,
    ) -> Dynamic:
        with clock("facts"):
            facts = self.related_facts(user_id, vector, limit=FACTS_SEARCHED)
        with clock("memory"):
            memories = self.semantic_memory(user_id, project_id, vector, snapshot.memory)
        with clock("knowledge"):
            snippets = self.knowledge_snippets(user_id, query, vector, snapshot.docs,
                                               ahead and ahead.knowledge)
        with clock("recall"):
            excerpts = self.earlier_messages(user_id, query, vector, ahead and ahead.recall,
                                             asked_at, [(f.id, 1.0 - f.distance) for f in facts])
        return Dynamic(facts=tuple(facts[:RELATED_FACTS]), memories=tuple(memories),
                       snippets=tuple(snippets), excerpts=tuple(excerpts))

    def related_facts(self, user_id: str, vector: list[float], *, limit: int = RELATED_FACTS
                      ) -> list[FactHit]:
        """The user's `limit` nearest live facts (KNN in the user's partition)."""
        hits = self.facts.search_by_vector(user_id, vector, limit=limit)
        return [FactHit(h.fact.id, h.fact.category, h.fact.fact, h.distance,
                        h.fact.last_extracted_at) for h in hits]

    def semantic_memory(
        self, user_id: str, project_id: str | None, vector: list[float],
        shown: Sequence[MemoryItem],
    ) -> list[MemoryItem]:
        """Recalled memories not in `shown` (the baseline the prompt holds), nearest first."""
        hits = self.memory.recall_near(user_id, vector, shown=shown, project_id=project_id)
        return [MemoryItem(m.id, m.type, m.content, distance) for m, distance in hits]

    def knowledge_snippets(
        self, user_id: str, query: str, vector: list[float], shown: Sequence[Doc],
        keyword: Ranking | None = None,
    ) -> list[Snippet]:
        """Hybrid (BM25 + vector, score fusion) knowledge search with the turn's query vector; no
        chunk of a document `shown` whole (the pinned prefix holds it), but chunks of
        the ones shown shortened, and of any pinned since."""
        hits = self.knowledge.search_with_vector(
            user_id, query, vector, limit=KNOWLEDGE_SNIPPETS, exclude=_whole(shown),
            keyword=keyword,
        )
        return [Snippet(h.chunk_id, h.title, h.text, h.score) for h in hits]

    def earlier_messages(self, user_id: str, query: str, vector: list[float],
                         keyword: Ranking | None = None, asked_at: datetime | None = None,
                         facts: Sequence[tuple[str, float]] | None = None) -> list[Excerpt]:
        """The user's stored messages (any conversation) that best match the query;
        `facts`: the FACTS_SEARCHED facts nearest `vector`, (id, similarity), found already."""
        hits = self.recall.excerpts(user_id, query, vector, limit=EARLIER_MESSAGES,
                                    keyword=keyword, asked_at=asked_at, facts=facts)
        return [Excerpt(h.message_id, h.conversation_id, speaker(h.role, h.name), h.content,
                        h.created_at, h.score) for h in hits]

    async def recent_posts(self) -> list[Post]:
        """The fallback block: the most recent published posts, newest first."""
        posts = await in_thread(self.posts.recent_published, FALLBACK_POSTS)
        return [Post(p.id, p.title, p.excerpt) for p in posts]


def _whole(shown: Sequence[Doc]) -> frozenset[str]:
    """The documents the stable prefix holds whole: search leaves their chunks out."""
    return frozenset(d.id for d in shown if d.tier == "full")
