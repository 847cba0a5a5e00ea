"""The factory that picks a backend and builds the domain stores on it.

`open_database` picks SQLite or PostgreSQL from a URL or path; `stores_for`
builds every domain store on that handle. The domain classes are the same for
both backends (they speak `store.contract.Database`), so callers
(chatsvc.Services) never learn which backend they hold.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from store import contract
from store.accounts import Accounts
from store.chats import Chats
from store.contract import Database
from store.exchanges import Exchanges
from store.extraction import ExtractionQueue
from store.fact_sheets import FactSheets
from store.facts import Facts
from store.images import Images
from store.jobs import Jobs
from store.knowledge import Knowledge
from store.memory import Memories
from store.posts import Posts
from store.recall import DEFAULT_KEYS, ConversationImports, MessageIndex
from store.turn_events import TurnEvents
from store.users import Users


@dataclass
class Stores:
    db: Database
    users: contract.UserStore
    facts: contract.FactStore
    fact_sheets: contract.FactSheetStore
    extraction: contract.ExtractionQueueStore
    memories: contract.MemoryStore
    knowledge: contract.KnowledgeStore
    posts: contract.PostStore
    chats: contract.ChatStore
    exchanges: contract.ExchangeStore  # /v1 requests kept as conversation turns
    turn_events: contract.TurnEventStore  # streamed turns' events, for re-attaching
    accounts: contract.AccountStore
    jobs: contract.JobStore
    messages: contract.MessageIndexStore  # conversational recall
    imports: contract.ImportStore
    images: contract.ImageStore  # user messages' images (by URL or a file's hash)


def open_database(
    *,
    database_url: str | None,
    sqlite_path: Path,
    embed_model: str,
    embed_dim: int,
    sqlite_vec_path: str | None = None,
) -> Database:
    """PostgreSQL when `database_url` is given, else the SQLite file at `sqlite_path`."""
    if database_url:
        from store.pg import PgDatabase  # needs psycopg (the `postgres` extra)

        return PgDatabase(database_url, embed_model=embed_model, embed_dim=embed_dim)
    from store.sqlite import SqliteDatabase

    return SqliteDatabase(sqlite_path, embed_model=embed_model, embed_dim=embed_dim,
                          sqlite_vec_path=sqlite_vec_path)


def stores_for(
    db: Database, *, knowledge_rescore: int = 400, recall_keys: str = DEFAULT_KEYS
) -> Stores:
    """Every domain store on `db`; `recall_keys` is the message index's key variant."""
    facts, memories = Facts(db), Memories(db)
    knowledge = Knowledge(db, rescore=knowledge_rescore)
    messages = MessageIndex(db, keys=recall_keys, rescore=knowledge_rescore, facts=facts)
    chats = Chats(db)
    return Stores(
        db=db, users=Users(db), facts=facts, fact_sheets=FactSheets(db),
        extraction=ExtractionQueue(db), memories=memories, knowledge=knowledge,
        posts=Posts(db), chats=chats, exchanges=Exchanges(db, chats),
        turn_events=TurnEvents(db), messages=messages,
        imports=ConversationImports(db),
        # Every store holding user data no foreign key reaches (vectors, full text).
        accounts=Accounts(db, parts=[facts, memories, knowledge, messages]),
        jobs=Jobs(db), images=Images(db),
    )
