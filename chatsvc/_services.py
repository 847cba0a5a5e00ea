"""Everything a request needs, built once per process from the settings."""

from __future__ import annotations

from dataclasses import dataclass

from chatsvc._health import HealthChecker
from chatsvc._settings import Settings
from chatsvc.embeddings import Embedder, build_embedder
from chatsvc.knowledge import KnowledgeService
from store import Database, Knowledge, Posts, Users


@dataclass
class Services:
    settings: Settings
    db: Database
    users: Users
    embedder: Embedder
    health: HealthChecker
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
        knowledge = Knowledge(db, rescore=settings.knowledge_rescore_candidates)
        return cls(
            settings=settings, db=db, users=Users(db), embedder=embedder, health=health,
            knowledge=KnowledgeService(settings, knowledge, embedder), posts=Posts(db),
        )

    async def aclose(self) -> None:
        await self.knowledge.aclose()
        await self.embedder.aclose()
        await self.health.aclose()
        self.db.close()
