"""Persistence: SQLite + sqlite-vec (default) or PostgreSQL + pgvector (store/pg, for
several replicas). No HTTP, no prompts: plain data in, plain data out.

`Database` owns the file, connections, migrations and vector tables; one small
class per domain (`Users`, `Facts`, ...) holds that domain's SQL. `store.backend`
picks the backend and builds the domain stores for it.
"""

from store._db import Database
from store._errors import DatabaseBusy, NotFound, StoreError, VectorUnavailable
from store.chats import AssistantReply, ChatMessage, Chats, Conversation
from store.contract import EmbedJob, Reindexable, VectorState, VectorStatus
from store.facts import Fact, FactHit, Facts, InvalidFact
from store.knowledge import ChunkIn, Entry, Hit, Knowledge
from store.memory import Memories, Memory, MemorySnapshot
from store.posts import Post, Posts
from store.users import User, UserExists, Users

__all__ = [
    "AssistantReply",
    "ChatMessage",
    "Chats",
    "ChunkIn",
    "Conversation",
    "Database",
    "DatabaseBusy",
    "EmbedJob",
    "Entry",
    "Fact",
    "FactHit",
    "Facts",
    "Hit",
    "InvalidFact",
    "Knowledge",
    "Memories",
    "Memory",
    "MemorySnapshot",
    "NotFound",
    "Post",
    "Posts",
    "Reindexable",
    "StoreError",
    "User",
    "UserExists",
    "Users",
    "VectorState",
    "VectorStatus",
    "VectorUnavailable",
]
