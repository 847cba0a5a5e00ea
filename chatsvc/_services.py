"""The process's long-lived objects, built once from the settings.

`Services` only holds them: routes receive single pieces through Litestar's
dependency injection (`chatsvc.routes.DEPENDENCIES`) and domain code is handed
what it uses, never the whole container.
"""

from __future__ import annotations

from dataclasses import dataclass

from chatsvc._admission import StreamSlots
from chatsvc._health import HealthChecker
from chatsvc._jwt import JwtVerifier
from chatsvc._settings import Settings
from chatsvc.chat import Sources, TurnClaims
from chatsvc.embeddings import Embedder, PriorityEmbedder, build_embedder, with_priority
from chatsvc.extraction import FactExtractor
from chatsvc.facts import FactService
from chatsvc.images import ImageFiles, MessageImages
from chatsvc.indexing import Indexer
from chatsvc.knowledge import KnowledgeService
from chatsvc.llm import LLM
from chatsvc.memory import MemoryService
from chatsvc.recall import RecallService
from chatsvc.uploads import Uploads
from chatsvc.warmup import Warmup
from store.backend import Stores, open_database, stores_for


@dataclass
class Services:
    settings: Settings
    stores: Stores  # the database and one store per domain
    embedder: PriorityEmbedder  # interactive calls first, bulk (the indexer's) after
    llm: LLM
    health: HealthChecker
    fact_service: FactService
    memory_service: MemoryService
    knowledge: KnowledgeService
    extractor: FactExtractor
    recall: RecallService  # conversation search and message indexing
    sources: Sources  # what a chat turn reads
    claims: TurnClaims  # this process's leases on its turns' conversations (the app runs it)
    slots: StreamSlots  # chat turns each user runs in this process
    indexer: Indexer  # background jobs and backfill; services call `indexer.wake()`
    uploads: Uploads  # uploaded files: stored by the request, turned into entries by jobs
    images: MessageImages  # user messages' images: rows and their files under the data dir
    warmup: Warmup  # loads what the first turn reads, at start-up (the app runs it)
    jwt: JwtVerifier | None  # JWT bearer tokens, when CHATSVC_JWT_* configures them

    @classmethod
    def open(cls, settings: Settings, *, embedder: Embedder | None = None) -> Services:
        """Open the database (migrating it) and build the providers. Besides a
        PostgreSQL connection (CHATSVC_DATABASE_URL), no network I/O."""
        embedder = with_priority(embedder or build_embedder(settings), settings)
        db = open_database(
            database_url=settings.database_url,
            sqlite_path=settings.database_path,
            embed_model=embedder.model,
            embed_dim=embedder.dim,
            sqlite_vec_path=settings.sqlite_vec_path,
        )
        stores = stores_for(db, knowledge_rescore=settings.knowledge_rescore_candidates,
                            recall_keys=settings.recall_keys)
        fact_service = FactService(stores.facts, embedder)
        memory_service = MemoryService(stores.memories, embedder, settings)
        llm = LLM(settings)  # the one upstream client: chat, extraction, knowledge tiers
        extractor = FactExtractor(settings, llm, fact_service, db=db, sheets=stores.fact_sheets,
                                  queue=stores.extraction, users=stores.users)
        indexer = Indexer(stores, embedder, interval=settings.index_interval_seconds,
                          lease_seconds=settings.job_lease_seconds)
        knowledge = KnowledgeService(settings, stores.knowledge, embedder, llm, indexer)
        recall = RecallService(stores.messages, embedder, indexer)
        uploads = Uploads(settings, knowledge, indexer)
        images = MessageImages(stores.images, ImageFiles(settings.data_dir / "images"))
        claims = TurnClaims(stores.chats, settings.data_dir,
                            lease_seconds=settings.turn_lease_seconds)
        sources = Sources(
            settings=settings, db=db, embedder=embedder, chats=stores.chats,
            fact_sheets=stores.fact_sheets, facts=stores.facts, memory=memory_service,
            knowledge=knowledge, posts=stores.posts, recall=recall, images=images,
            turn_lease=claims.lease,
        )
        warmup = Warmup(settings, sources, stores.chats, llm)
        return cls(
            settings=settings, stores=stores, embedder=embedder, llm=llm,
            health=HealthChecker(settings, stores, embedder, warmup), fact_service=fact_service,
            memory_service=memory_service, knowledge=knowledge, extractor=extractor,
            recall=recall, sources=sources, claims=claims,
            slots=StreamSlots(settings.max_streams_per_user), indexer=indexer, uploads=uploads,
            images=images, warmup=warmup,
            jwt=JwtVerifier(settings) if settings.jwt_enabled else None,
        )

    async def aclose(self) -> None:
        await self.embedder.aclose()
        await self.health.aclose()
        await self.llm.aclose()
        self.stores.db.close()
