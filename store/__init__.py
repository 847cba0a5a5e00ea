"""SQLite + sqlite-vec persistence. No HTTP, no prompts: plain data in, plain data out.

`Database` owns the file, connections, migrations and vector tables; one small
class per domain (`Users`, ...) holds that domain's SQL.
"""

from store._db import Database, VectorState
from store._errors import NotFound, StoreError, VectorUnavailable
from store.knowledge import ChunkIn, Entry, Hit, Knowledge
from store.posts import Post, Posts
from store.users import User, UserExists, Users

__all__ = [
    "ChunkIn",
    "Database",
    "Entry",
    "Hit",
    "Knowledge",
    "NotFound",
    "Post",
    "Posts",
    "StoreError",
    "User",
    "UserExists",
    "Users",
    "VectorState",
    "VectorUnavailable",
]
