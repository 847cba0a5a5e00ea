"""Everything a request needs, built once per process from the settings."""

from __future__ import annotations

from dataclasses import dataclass

from chatsvc._health import HealthChecker
from chatsvc._settings import Settings
from chatsvc.chat._llm import LLM
from chatsvc.embeddings import Embedder, build_embedder
from chatsvc.extraction import FactExtractor
from chatsvc.facts import FactService
from chatsvc.knowledge import KnowledgeService
from store import Chats, Database, Facts, Knowledge, Memories, Posts, Users
from store.fact_sheets import FactSheets


@dataclass
class Services:
    settings: Settings
    db: Database
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
        """Open the database (migrating it) and build the providers. No network I/O."""
        embedder = embedder or build_embedder(settings)
        db = Database(
            settings.database_path,
            embed_model=embedder.model,
            embed_dim=embedder.dim,
            sqlite_vec_path=settings.sqlite_vec_path,
        )
        health = HealthChecker(settings, db, embedder)
        facts = Facts(db)
        fact_service = FactService(facts, embedder)
        knowledge = Knowledge(db, rescore=settings.knowledge_rescore_candidates)
        return cls(
            settings=settings, db=db, users=Users(db), embedder=embedder, health=health,
            chats=Chats(db), llm=LLM(settings), fact_sheets=FactSheets(db),
            facts=facts, fact_service=fact_service,
            extractor=FactExtractor(settings, fact_service), memories=Memories(db),
            knowledge=KnowledgeService(settings, knowledge, embedder), posts=Posts(db),
        )

    async def aclose(self) -> None:
        await self.knowledge.aclose()
        await self.embedder.aclose()
        await self.health.aclose()
        await self.llm.aclose()
        await self.extractor.aclose()
        self.db.close()
