"""Everything a request needs, built once per process from the settings."""

from __future__ import annotations

from dataclasses import dataclass

from chatsvc._health import HealthChecker
from chatsvc._settings import Settings
from chatsvc.embeddings import Embedder, build_embedder
from chatsvc.extraction import FactExtractor
from chatsvc.facts import FactService
from chatsvc.knowledge import KnowledgeService
from chatsvc.llm import LLM
from store import Chats, Facts, Memories, Posts, Users
from store.backend import DatabaseLike, open_database, stores_for
from store.fact_sheets import FactSheets


@dataclass
class Services:
    settings: Settings
    db: DatabaseLike
    users: Users
    embedder: Embedder
    health: HealthChecker
    chats: Chats
    llm: LLM
    fact_sheets: FactSheets
    facts: Facts
    fact_service: FactService
    extractor: FactExtractor
    memories: Memories
    knowledge: KnowledgeService
    posts: Posts

    @classmethod
    def open(cls, settings: Settings, *, embedder: Embedder | None = None) -> Services:
        """Open the database (migrating it) and build the providers. Besides a
        PostgreSQL connection (CHATSVC_DATABASE_URL), no network I/O."""
        embedder = embedder or build_embedder(settings)
        db = open_database(
            database_url=settings.database_url,
            sqlite_path=settings.database_path,
            embed_model=embedder.model,
            embed_dim=embedder.dim,
            sqlite_vec_path=settings.sqlite_vec_path,
        )
        stores = stores_for(db, knowledge_rescore=settings.knowledge_rescore_candidates)
        fact_service = FactService(stores.facts, embedder)
        llm = LLM(settings)  # the one upstream client: chat, extraction, knowledge tiers
        extractor = FactExtractor(settings, llm, fact_service, db=db, sheets=stores.fact_sheets,
                                  queue=stores.extraction)
        return cls(
            settings=settings, db=db, users=stores.users, embedder=embedder,
            health=HealthChecker(settings, db, embedder), chats=stores.chats, llm=llm,
            fact_sheets=stores.fact_sheets, facts=stores.facts, fact_service=fact_service,
            extractor=extractor, memories=stores.memories,
            knowledge=KnowledgeService(settings, stores.knowledge, embedder, llm),
            posts=stores.posts,
        )

    async def aclose(self) -> None:
        await self.embedder.aclose()
        await self.health.aclose()
        await self.llm.aclose()
        self.db.close()
