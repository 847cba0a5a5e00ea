"""The store interface and the factory that picks its backend.

`DatabaseLike` is what every backend's database offers; the domain contract is
the public methods of the SQLite classes (`Users`, `Facts`, `Memories`, ...),
which the PostgreSQL classes subclass, overriding only the vector, full-text and
dialect-specific queries. `open_database` picks the backend from a URL or path,
`stores_for` builds its domain stores: callers (chatsvc.Services) never learn
which backend they hold.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from store._db import Database
from store.chats import Chats
from store.contract import VectorState
from store.extraction import ExtractionQueue
from store.fact_sheets import FactSheets
from store.facts import Facts
from store.knowledge import Knowledge
from store.memory import Memories
from store.posts import Posts
from store.users import Users


class DatabaseLike(Protocol):
    """Connections, transactions, vector state and job locks of one backend."""

    dialect: str
    path: object  # file path or redacted URL: logs, health, cache keys
    embed_model: str
    embed_dim: int
    vector_state: VectorState

    def connection(self): ...

    def transaction(self) -> AbstractContextManager: ...

    def require_vectors(self): ...

    def reset_vectors(self) -> None: ...

    def describe(self) -> str: ...

    def bulk_vectors(self) -> AbstractContextManager[None]: ...

    def job_lock(self, job: str, key: str, *, wait: bool) -> AbstractContextManager[bool]: ...

    def close(self) -> None: ...


@dataclass
class Stores:
    db: DatabaseLike
    users: Users
    facts: Facts
    fact_sheets: FactSheets
    extraction: ExtractionQueue
    memories: Memories
    knowledge: Knowledge
    posts: Posts
    chats: Chats


def open_database(
    *,
    database_url: str | None,
    sqlite_path: Path,
    embed_model: str,
    embed_dim: int,
    sqlite_vec_path: str | None = None,
) -> DatabaseLike:
    """PostgreSQL when `database_url` is given, else the SQLite file at `sqlite_path`."""
    if database_url:
        from store.pg import PgDatabase  # needs psycopg (the `postgres` extra)

        return PgDatabase(database_url, embed_model=embed_model, embed_dim=embed_dim)
    return Database(sqlite_path, embed_model=embed_model, embed_dim=embed_dim,
                    sqlite_vec_path=sqlite_vec_path)


def stores_for(db: DatabaseLike, *, knowledge_rescore: int = 400) -> Stores:
    """Every domain store on `db`, each of the class its backend needs."""
    if db.dialect == "postgresql":
        from store.pg import PgFacts, PgKnowledge, PgMemories

        facts, memories, knowledge = PgFacts(db), PgMemories(db), PgKnowledge(db)
    else:
        facts, memories = Facts(db), Memories(db)
        knowledge = Knowledge(db, rescore=knowledge_rescore)
    return Stores(
        db=db, users=Users(db), facts=facts, fact_sheets=FactSheets(db),
        extraction=ExtractionQueue(db), memories=memories, knowledge=knowledge,
        posts=Posts(db), chats=Chats(db),
    )
