"""Persistence: SQLite + sqlite-vec (default, `store.sqlite`) or PostgreSQL + pgvector
(`store.pg`, for several replicas). No HTTP, no prompts: plain data in, plain data out.

`store.contract` is the interface: a `Database` handle per backend and one protocol
per domain. The domain classes (`Users`, `Facts`, ...) are written once, in portable
`$name` SQL (`store.sql`), on top of the handle; vector tables go through one
vector-index component per backend (`store.vectors`). `store.backend` opens a
backend and builds the domain stores on it.
"""

from store._errors import (
    ConstraintViolation,
    DatabaseBusy,
    NotFound,
    QueryFailed,
    StoreError,
    TurnInProgress,
    VectorUnavailable,
)
from store.accounts import Accounts
from store.chat_usage import ModelUsage
from store.chats import AssistantReply, ChatMessage, Chats, Conversation, TurnLease
from store.contract import (
    AccountStore,
    ChatStore,
    Database,
    EmbedJob,
    ExtractionQueueStore,
    FactSheetStore,
    FactStore,
    ImageStore,
    ImportStore,
    JobStore,
    KnowledgeStore,
    MemoryStore,
    MessageIndexStore,
    PostStore,
    Reindexable,
    TurnEventStore,
    UserStore,
    VectorState,
    VectorStatus,
)
from store.facts import Fact, FactHit, Facts, InvalidFact
from store.jobs import Job, Jobs, LeaseLost, Payload, QueueDepth
from store.knowledge import ChunkIn, Entry, EntryIn, Hit, Knowledge
from store.memory import Memories, Memory, MemorySnapshot
from store.posts import Post, Posts
from store.recall import Bounds, MessageHit, MessageIndex
from store.sqlite import SqliteDatabase
from store.users import Resolved, Token, User, UserExists, Users

__all__ = [
    "AccountStore",
    "Accounts",
    "AssistantReply",
    "Bounds",
    "ChatMessage",
    "ChatStore",
    "Chats",
    "ChunkIn",
    "ConstraintViolation",
    "Conversation",
    "Database",
    "DatabaseBusy",
    "EmbedJob",
    "Entry",
    "EntryIn",
    "ExtractionQueueStore",
    "Fact",
    "FactHit",
    "FactSheetStore",
    "FactStore",
    "Facts",
    "Hit",
    "ImageStore",
    "ImportStore",
    "InvalidFact",
    "Job",
    "JobStore",
    "Jobs",
    "Knowledge",
    "KnowledgeStore",
    "LeaseLost",
    "Memories",
    "Memory",
    "MemorySnapshot",
    "MemoryStore",
    "MessageHit",
    "MessageIndex",
    "MessageIndexStore",
    "ModelUsage",
    "NotFound",
    "Payload",
    "Post",
    "PostStore",
    "Posts",
    "QueryFailed",
    "QueueDepth",
    "Reindexable",
    "Resolved",
    "SqliteDatabase",
    "StoreError",
    "Token",
    "TurnEventStore",
    "TurnInProgress",
    "TurnLease",
    "User",
    "UserExists",
    "UserStore",
    "Users",
    "VectorState",
    "VectorStatus",
    "VectorUnavailable",
]
